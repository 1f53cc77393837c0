"""Templates nobody on the team wrote: each fixture is a few lines of a public repository's template (named in
its comment), made an agent's instructions, where the checker once reported what Jinja does not do."""

from __future__ import annotations

from pathlib import Path

from .support import make_workspace

AGENT = "id: a\ninstructions_file: ../templates/t.j2\n"


def check(tmp_path: Path, template: str) -> tuple[list[tuple[str, object]], list[object]]:
    """The template's diagnostics as (code, range), and the ranges marked in it."""
    ws = make_workspace(tmp_path, {"agents/a.agent.yaml": AGENT, "templates/t.j2": template})
    found = [(d.code, d.range) for d in ws.diagnostics("templates/t.j2")]
    return found, list(ws.marked("templates/t.j2"))


# --------------------------------------------------------------------------------------------------
# Positions after a character outside the Basic Multilingual Plane (two UTF-16 code units)


def test_a_variable_after_an_emoji_is_reported_on_its_name(tmp_path: Path) -> None:
    # bmad-code-org/BMAD-METHOD, src/bmm/workflows/4-implementation/dev-story/checklist.md
    found, marked = check(tmp_path, "📊 **Completion Score:** {{⟨completed_items⟩}}/{{⟨total_items⟩}} items passed\n")
    assert found == [("OSC101", marked[0]), ("OSC101", marked[1])]


def test_a_syntax_error_after_an_emoji_is_reported_on_its_construct(tmp_path: Path) -> None:
    # bmad-code-org/BMAD-METHOD, src/bmm/workflows/4-implementation/epic-execute/steps/step-05-summary.md
    found, marked = check(tmp_path, "📈 | Statements | ⟨{%} | n |⟩\n")
    assert found == [("OSC100", marked[0])]


def test_a_missing_include_after_an_emoji_is_reported_on_its_path(tmp_path: Path) -> None:
    found, marked = check(tmp_path, "🚀 {% include ⟨'parts/missing.j2'⟩ %}\n")
    assert [code for code, _ in found] == ["OSC040"]
    assert found[0][1] == marked[0]


def test_a_variable_after_an_emoji_in_inline_instructions_is_reported_on_its_name(tmp_path: Path) -> None:
    # oxy-hq/oxy, examples/agents/*.agent.yml: `system_instructions: |` blocks, here with an emoji before a value
    ws = make_workspace(tmp_path, {"agents/a.agent.yaml": "id: a\ninstructions: |\n  📊 Today: {{ ⟨date⟩ }}\n"})
    assert [(d.code, d.range) for d in ws.diagnostics("agents/a.agent.yaml")] == [
        ("OSC101", ws.marked("agents/a.agent.yaml")[0])]


# --------------------------------------------------------------------------------------------------
# Uses that rendering reaches only where the name is defined: after a test that an undefined value fails or
# makes false, and inside a loop over it. The test (or the loop) is reported; what it guards is not.


def unbound(tmp_path: Path, template: str) -> tuple[list[tuple[object, str]], list[object]]:
    """The OSC101 and OSC109 diagnostics as (range, the words after the colon), and the marked ranges."""
    ws = make_workspace(tmp_path, {"agents/a.agent.yaml": AGENT, "templates/t.j2": template})
    found = [(d.range, d.message.split(": ", 1)[1]) for d in ws.diagnostics("templates/t.j2")
             if d.code in ("OSC101", "OSC109")]
    return found, list(ws.marked("templates/t.j2"))


def test_the_list_a_loop_runs_over_is_defined_inside_the_loop(tmp_path: Path) -> None:
    # chujiezheng/chat_templates, chat_templates/qwen2.5-instruct.jinja
    found, marked = unbound(tmp_path, """\
        {%- for message in ⟨messages⟩ %}
            {%- if message.role == "tool" %}
                {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}<|im_start|>user{% endif %}
                {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}<|im_end|>{% endif %}
            {%- endif %}
        {%- endfor %}
        """)
    assert found == [(marked[0], "it is undefined, so the loop never runs")]


def test_a_test_that_reads_from_a_name_guards_its_branches(tmp_path: Path) -> None:
    # vllm-project/vllm, examples/tool_chat_template_llama3.1_json.jinja
    found, marked = unbound(tmp_path, """\
        {%- if ⟨messages⟩[0]['role'] == 'system' %}
            {%- set system_message = messages[0]['content']|trim %}
            {%- set messages = messages[1:] %}
        {%- else %}
            {%- set system_message = "" %}{{ messages | length }}
        {%- endif %}
        {{- system_message }}
        """)
    assert found == [(marked[0], "it is undefined, and using it here fails the rendering")]


def test_an_attribute_tested_for_definedness_guards_its_object(tmp_path: Path) -> None:
    # geerlingguy/ansible-role-nginx, templates/vhost.j2
    found, marked = unbound(tmp_path, """\
        {% if ⟨item⟩.server_name_redirect is defined %}
        server {
            server_name  {{ item.server_name_redirect }};
            return       301 $scheme://{{ item.server_name.split(' ')[0] }}$request_uri;
        }
        {% endif %}
        """)
    assert found == [(marked[0], "it is undefined, and using it here fails the rendering")]


def test_a_length_test_guards_its_block(tmp_path: Path) -> None:
    # openstack/kolla-ansible, ansible/roles/fluentd/templates/conf/output/00-local.conf.j2
    found, marked = unbound(tmp_path, """\
        {% if ⟨fluentd_opensearch_cacert⟩ | length > 0 %}
               ca_file {{ fluentd_opensearch_cacert }}
        {% endif %}
        """)
    assert [rng for rng, _ in found] == marked


def test_an_iterable_test_is_true_of_an_undefined_value(tmp_path: Path) -> None:
    # vllm-project/vllm, examples/tool_chat_template_hermes.jinja: `is iterable` passes an undefined value (it
    # iterates as empty), so the length test after it is what keeps the block from rendering.
    found, marked = unbound(tmp_path, """\
        {%- if ⟨tools⟩ is iterable and ⟨tools⟩ | length > 0 %}
            {%- for tool in tools %}{{- tool.name }}{%- endfor %}
        {%- endif %}
        """)
    assert found == [(rng, "it is undefined, so the test is false and its block never renders") for rng in marked]
    found, _ = unbound(tmp_path, "{% if tools is iterable %}{{ tools | length }} tools{% endif %}\n")
    assert [words for _, words in found] == ["it is undefined, yet the test is true", "it is undefined where it is used here"]


def test_a_loop_over_the_range_of_a_length_never_runs_for_an_undefined_value(tmp_path: Path) -> None:
    # oxy-hq/oxy, demo_project/workflows/external-factors-correlation.procedure.yml (a `template` block)
    found, marked = unbound(tmp_path, """\
        {% for i in range(⟨factor_significance⟩ | length) %}
        {% if factor_significance.factor_name[i] %}
        **{{factor_significance.factor_name[i]}}**: {{factor_significance.correlation_coefficient[i]}}
        {% endif %}
        {% endfor %}
        """)
    assert [rng for rng, _ in found] == marked


# --------------------------------------------------------------------------------------------------
# Syntax


def test_what_follows_a_raw_block_left_open_is_text_not_variables(tmp_path: Path) -> None:
    # microsoft/promptflow, src/promptflow-devkit/promptflow/_cli/data/entry_flow/flow.dag.yaml.jinja2, with its
    # `{% endraw %}` not typed yet: Jinja reads the rest as raw text, so `main_node_name` is no variable.
    found, marked = check(tmp_path, "    reference: ⟨{% raw %}⟩${{ main_node_name }}.output}\n- name: {{ main_node_name }}\n")
    assert found == [("OSC100", marked[0])]


def test_a_tag_of_a_jinja_extension_says_the_renderer_does_not_load_it(tmp_path: Path) -> None:
    # ckan/ckan, ckan/templates/admin/snippets/data_type.html (`do`) and
    # ckanext/datastore/templates/datastore/snippets/api_info.html (`trans`); Ansible enables `do`,
    # `break` and `continue`, so its roles' templates use them too.
    ws = make_workspace(tmp_path, {"agents/a.agent.yaml": AGENT, "templates/t.j2": """\
        {% set items = [] %}{% do items.append(user_name) %}
        {% trans url="https://docs.ckan.org" %}See <a href="{{ url }}">the docs</a>{% endtrans %}
        {% for i in items %}{% if i %}{% break %}{% endif %}{% endfor %}
        """})
    messages = [d.message for d in ws.diagnostics("templates/t.j2", "OSC100")]
    assert [m.split(".")[0] for m in messages] == [
        "template syntax error: Encountered unknown tag 'do'",
        "template syntax error: Encountered unknown tag 'trans'",
        "template syntax error: Encountered unknown tag 'break'"]
    assert messages[0].endswith("(`do` is a tag of Jinja's `jinja2.ext.do` extension, which oscova does not load)")
    assert messages[1].endswith("(`trans` is a tag of Jinja's `jinja2.ext.i18n` extension, which oscova does not load)")
    assert "`jinja2.ext.loopcontrols`" in messages[2]


# --------------------------------------------------------------------------------------------------
# Includes


def test_an_include_of_a_template_nothing_renders_is_not_checked(tmp_path: Path) -> None:
    """Another tool's templates resolve includes their own way (Ansible from the role, promptflow's generator from
    the template's folder): a template no agent renders gets OSC107 and its syntax errors, nothing else."""
    ws = make_workspace(tmp_path, {
        "agents/a.agent.yaml": "id: a\ninstructions: Hello.\n",
        # openstack/kolla-ansible, ansible/roles/nova-cell/templates/nova.conf.j2
        "ansible/roles/nova-cell/templates/nova.conf.j2": "[libvirt]\n{% include 'nova.conf.d/libvirt.conf.j2' %}\n",
        "ansible/roles/nova-cell/templates/nova.conf.d/libvirt.conf.j2": "connection_uri = {{ uri }}\n",
        # microsoft/promptflow, scripts/readme/ghactions_driver/workflow_templates/basic_workflow.yml.jinja2
        "workflow_templates/basic_workflow.yml.jinja2": "{% extends \"workflow_skeleton.yml.jinja2\" %}\n"
                                                        "{% block steps %}{% endblock steps %}\n",
        "workflow_templates/workflow_skeleton.yml.jinja2": "name: {{ name }}\n{% block steps %}{% endblock %}\n",
    })
    for template in ("ansible/roles/nova-cell/templates/nova.conf.j2", "workflow_templates/basic_workflow.yml.jinja2"):
        assert ws.codes(template) == ["OSC107"], [d.message for d in ws.diagnostics(template)]


def test_an_include_whose_path_is_computed_is_not_reported_missing(tmp_path: Path) -> None:
    # openstack/kolla-ansible, ansible/roles/cron/templates/cron-logrotate-global.conf.j2
    found, _ = check(tmp_path, """\
        {% for service in ["nova"] %}
        {%     include ["cron-logrotate-" ~ service ~ ".conf.j2", "parts/default.j2"] %}
        {%     include "cron-logrotate-" ~ service ~ ".conf.j2" ignore missing %}
        {% endfor %}
        """)
    assert found == []


def test_an_include_of_a_list_needs_one_of_its_templates(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "agents/a.agent.yaml": AGENT, "parts/default.j2": "Default {{ user_name }}.\n",
        "templates/t.j2": "{% include ['parts/special.j2', 'parts/default.j2'] %}\n"})
    assert ws.codes("templates/t.j2") == []
    assert ws.codes("parts/default.j2") == []  # rendered through the include: not OSC107


# --------------------------------------------------------------------------------------------------
# Inline instructions in quoted and indented YAML scalars


def inline(tmp_path: Path, definition: str) -> tuple[list[object], list[object]]:
    ws = make_workspace(tmp_path, {"agents/a.agent.yaml": definition})
    return [d.range for d in ws.diagnostics("agents/a.agent.yaml", "OSC101")], ws.marked("agents/a.agent.yaml")


def test_a_variable_after_an_escape_in_double_quotes_is_reported_on_its_name(tmp_path: Path) -> None:
    # openstack/kolla-ansible, ansible/roles/prechecks/tasks/package_checks.yml: `\"` inside a double-quoted value
    found, marked = inline(tmp_path, 'id: a\ninstructions: "Run {{ ⟨python⟩ }} -c \\"import docker\\" for '
                                     '{{ ⟨service⟩ }}.\\n📦 \\u00e9t\\u00e9 {{ ⟨season⟩ }}"\n')
    assert found == marked


def test_a_variable_after_a_doubled_quote_in_single_quotes_is_reported_on_its_name(tmp_path: Path) -> None:
    # The same value single-quoted, as Ansible's `when:` lines quote theirs (no public agent file at hand uses it).
    found, marked = inline(tmp_path, "id: a\ninstructions: 'Run {{ ⟨python⟩ }} -c ''import docker'' for {{ ⟨service⟩ }}'\n")
    assert found == marked


def test_a_block_with_an_indentation_indicator_keeps_its_extra_indentation(tmp_path: Path) -> None:
    # `|2` keeps the spaces past two columns in the value (no public agent file at hand uses it).
    found, marked = inline(tmp_path, "id: a\ninstructions: |-2\n    Hi {{ ⟨v1⟩ }}\n  and {{ ⟨v2⟩ }}\n")
    assert found == marked


def test_a_filter_that_fails_on_an_undefined_value_says_the_rendering_fails(tmp_path: Path) -> None:
    # geerlingguy/ansible-role-nginx, templates/nginx.conf.j2: `indent` reads the value's lines, so an undefined
    # value fails the rendering instead of printing nothing (as `upper` or `trim` would).
    found, marked = unbound(tmp_path, """\
        log_format {{ ⟨nginx_log_format⟩|indent(23) }};
        {{ ⟨nginx_extra_http_options⟩ | trim }}
        """)
    assert found == [(marked[0], "it is undefined, and using it here fails the rendering"),
                     (marked[1], "it renders empty")]


def test_an_item_looked_up_with_an_undefined_key_is_undefined(tmp_path: Path) -> None:
    # openstack/kolla-ansible, ansible/roles/mariadb/templates/galera.cnf.j2: `groups[undefined]` finds nothing, so
    # its length is 0 and the loop inside the test's block never runs without `mariadb_shard_group`.
    found, marked = unbound(tmp_path, """\
        {% set groups = {"db": ["a", "b"]} %}
        gcomm://{% if (groups[⟨mariadb_shard_group⟩] | length) > 1 %}{% for host in groups[mariadb_shard_group] %}{{ host }}{% endfor %}{% endif %}
        {% if "a" in groups[⟨shard⟩] %}{{ shard }}{% endif %}
        """)
    assert [rng for rng, _ in found] == marked


def test_long_chains_of_conditions_do_not_slow_the_guard_analysis_down() -> None:
    """Each `and` asks what its left side proves: without keeping values per node, a chain of n terms costs n² per
    name (60 tests of 100 terms took 26 s; here about 1 s). A bound against blow-ups, not a speed budget."""
    import time

    from oscova_lsp.analysis.jinja_source import analyze_template

    # vllm-project/vllm, examples/tool_chat_template_hermes.jinja: `tool.return is defined and tool.return.description
    # is defined`, lengthened
    text = "".join("{% if " + " and ".join(f"t{i}_{j}.return is defined" for j in range(100)) + " %}x{% endif %}\n"
                   for i in range(60))
    start = time.perf_counter()
    facts = analyze_template(text)
    assert time.perf_counter() - start < 15
    assert len(facts.free_uses) == 6000 and not facts.syntax_errors


def test_a_name_in_a_test_is_told_what_the_whole_test_does(tmp_path: Path) -> None:
    # vllm-project/vllm, examples/tool_chat_template_llama3.1_json.jinja (`tools is not none`) and
    # openstack/kolla-ansible, ansible/roles/fluentd/templates/conf/output/00-local.conf.j2 (`| length > 0`)
    found, marked = unbound(tmp_path, """\
        {%- if ⟨tools⟩ is not none %}Environment: ipython{% endif %}
        {% if ⟨cacert⟩ | length > 0 %}ca_file set{% endif %}
        """)
    assert found == [(marked[0], "it is undefined, yet the test is true"),
                     (marked[1], "it is undefined, so the test is false and its block never renders")]
