"""One fixture per code: files in, the code with its exact range, severity and quick fix out.

⟨ and ⟩ in a fixture mark the range the diagnostic must cover.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oscova_lsp.analysis.diagnostics import Severity

from .support import apply_fix, make_workspace


def only(ws, name, code):
    found = ws.diagnostics(name, code)
    assert found, f"{code} not reported in {name}: {ws.diagnostics(name)}"
    return found


def assert_marked(ws, name, code, severity):
    found = only(ws, name, code)
    assert [d.range for d in found] == ws.marked(name)
    assert all(d.severity is severity for d in found)
    assert all(d.path == ws.path(name) for d in found)
    return found


def fix_then_clean(ws, name, code, title_part=None):
    """Applies the first fix of the diagnostic and asserts that the code is gone from the file."""
    diag = only(ws, name, code)[0]
    assert diag.fixes, f"{code} carries no quick fix"
    fix = next(f for f in diag.fixes if title_part is None or title_part in f.title)
    apply_fix(ws, fix)
    assert code not in ws.codes(name), ws.diagnostics(name)
    return fix


# ---------------------------------------------------------------------------------------- files


def test_osc001_yaml_syntax_error(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ntools: ⟨[⟩read_file\nname: x: y\n"})
    diag = only(ws, "a.agent.yaml", "OSC001")[0]
    assert diag.severity is Severity.ERROR
    assert "YAML syntax error" in diag.message


def test_osc001_toml_syntax_error(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"oscova.toml": "[host]\nuser_id = \n"}, host=None)
    diag = only(ws, "oscova.toml", "OSC001")[0]
    assert diag.range.start.line == 1
    assert "TOML syntax error" in diag.message


def test_osc001_invalid_utf8_and_binary(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\n"})
    (tmp_path / "b.agent.yaml").write_bytes(b"id: \xff\xfe\n")
    (tmp_path / "c.j2").write_bytes(b"\x00\x01binary")
    ws.analysis.load(jobs=1)
    assert "not valid UTF-8" in only(ws, "b.agent.yaml", "OSC001")[0].message
    assert "binary" in only(ws, "c.j2", "OSC001")[0].message


def test_osc001_alias_bomb(tmp_path: Path) -> None:
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n'
    for level in "bcdefghi":
        prev = chr(ord(level) - 1)
        bomb += f"{level}: &{level} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
    ws = make_workspace(tmp_path, {"bomb.agent.yaml": "id: bomb\n" + bomb})
    assert "alias" in only(ws, "bomb.agent.yaml", "OSC001")[0].message


def test_osc002_schema_violation(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\nmemory: ⟨sometimes⟩\ntool_mode: ⟨fast⟩\n"})
    found = assert_marked(ws, "a.agent.yaml", "OSC002", Severity.ERROR)
    assert "boolean" in found[0].message and "'direct' or 'search'" in found[1].message


def test_osc002_missing_id_and_both_instruction_sources(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "⟨name⟩: no id here\n",
        "b.agent.yaml": "id: b\ninstructions: hi\n⟨instructions_file⟩: b.j2\n",
        "b.j2": "hello",
    })
    assert "missing required key `id`" in assert_marked(ws, "a.agent.yaml", "OSC002", Severity.ERROR)[0].message
    assert "cannot both be set" in assert_marked(ws, "b.agent.yaml", "OSC002", Severity.ERROR)[0].message


def test_osc002_in_host_configuration(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"oscova.toml": '[host]\ntool_mode = ⟨"fast"⟩\n'}, host=None)
    assert_marked(ws, "oscova.toml", "OSC002", Severity.ERROR)


def test_osc003_unknown_key_with_closest_key_fix(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\n⟨descripton⟩: typo\n"})
    assert_marked(ws, "a.agent.yaml", "OSC003", Severity.WARNING)
    fix = fix_then_clean(ws, "a.agent.yaml", "OSC003")
    assert fix.title == "Rename to `description`"
    assert (tmp_path / "a.agent.yaml").read_text() == "id: a\ndescription: typo\n"


def test_osc003_unknown_key_in_host_table(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"oscova.toml": '[user]\n⟨nmae⟩ = "Bob"\n'}, host=None)
    assert_marked(ws, "oscova.toml", "OSC003", Severity.WARNING)
    fix_then_clean(ws, "oscova.toml", "OSC003")


def test_osc004_duplicate_yaml_key_points_at_both(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\n⟨name⟩: x\n⟨name⟩: y\n"})
    first, second = ws.marked("a.agent.yaml")
    diag = only(ws, "a.agent.yaml", "OSC004")
    assert [d.range for d in diag] == [second]
    assert diag[0].related[0].range == first


def test_osc004_duplicate_toml_key_keeps_checking_the_rest(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"oscova.toml": '[variables]\nteam = "a"\n⟨team⟩ = "b"\n[host]\nbogus = 1\n'},
                        host=None)
    assert_marked(ws, "oscova.toml", "OSC004", Severity.ERROR)
    assert "OSC003" in ws.codes("oscova.toml")  # the file is still validated past the duplicate


def test_osc005_two_definitions_share_an_id(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: ⟨same⟩\n", "b.agent.yaml": "id: ⟨same⟩\n"})
    a = assert_marked(ws, "a.agent.yaml", "OSC005", Severity.ERROR)[0]
    b = assert_marked(ws, "b.agent.yaml", "OSC005", Severity.ERROR)[0]
    assert a.related[0].path == ws.path("b.agent.yaml") and b.related[0].path == ws.path("a.agent.yaml")
    # Renaming one clears both: the other file is re-checked as a dependent.
    affected = ws.write("b.agent.yaml", "id: other\n")
    assert ws.path("a.agent.yaml") in affected
    assert "OSC005" not in ws.codes("a.agent.yaml")


@pytest.mark.parametrize("entry", ["- null", "- ~", "-"])
def test_osc010_null_provider_entry_removed_by_fix(tmp_path: Path, entry: str) -> None:
    text = f"id: a\ncontext_providers:\n  - environment\n  ⟨{entry[0]}⟩{entry[1:]}\n"
    if entry != "-":
        text = f"id: a\ncontext_providers:\n  - environment\n  - ⟨{entry[2:]}⟩\n"
    ws = make_workspace(tmp_path, {"a.agent.yaml": text})
    assert_marked(ws, "a.agent.yaml", "OSC010", Severity.ERROR)
    fix_then_clean(ws, "a.agent.yaml", "OSC010")
    assert (tmp_path / "a.agent.yaml").read_text() == "id: a\ncontext_providers:\n  - environment\n"


def test_osc011_listed_provider_that_the_default_order_has(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\nmemory: true\ncontext_providers:\n  - ⟨memory⟩\n"})
    diag = assert_marked(ws, "a.agent.yaml", "OSC011", Severity.ERROR)[0]
    assert "MemoryContextProvider" in diag.message and "default order" in diag.message
    fix_then_clean(ws, "a.agent.yaml", "OSC011")
    assert "state_key: MemoryContextProvider2" in (tmp_path / "a.agent.yaml").read_text()


def test_osc011_two_entries_of_one_type_without_distinct_state_keys(tmp_path: Path) -> None:
    host = '[providers.tickets]\nclass = "p.t:TicketProvider"\n'
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ncontext_providers:\n  - tickets\n  - type: tickets\n    x: 1\n",
    }, host=host)
    diag = only(ws, "a.agent.yaml", "OSC011")[0]
    assert diag.range.start.line == 3
    assert diag.related[0].range.start.line == 2
    fix_then_clean(ws, "a.agent.yaml", "OSC011")


def test_osc011_a_state_key_copied_in_oscova_toml_is_fixed_where_it_was_copied(tmp_path: Path) -> None:
    """Two custom providers whose `state_keys` were copied from one another: the clash comes from the host
    configuration, so the fix edits it there, and the message names both providers, not positions."""
    host = ('[providers.tickets]\nclass = "p.t:TicketProvider"\nstate_keys = ["TicketProvider"]\n\n'
            '[providers.audit]\nclass = "p.a:AuditProvider"\nstate_keys = ["TicketProvider"]\n')
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ncontext_providers: [tickets, audit]\n"}, host=host)
    [diag] = only(ws, "a.agent.yaml", "OSC011")
    assert diag.message == ("`audit` has the state key `TicketProvider`, which the earlier entry `tickets` already "
                            "uses; `audit` takes it from `[providers.audit] state_keys` in oscova.toml: the agent "
                            "fails when it is built")
    assert "position" not in diag.message
    [fix] = diag.fixes
    assert fix.title == "Set `[providers.audit] state_keys` to `AuditProvider`"
    assert {edit.path for edit in fix.edits} == {ws.path("oscova.toml")}
    fix_then_clean(ws, "a.agent.yaml", "OSC011")
    assert 'state_keys = ["AuditProvider"]' in (tmp_path / "oscova.toml").read_text()
    assert (tmp_path / "a.agent.yaml").read_text() == "id: a\ncontext_providers: [tickets, audit]\n"


def test_osc011_not_reported_when_the_default_order_lacks_it(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ncontext_providers: [memory]\n"})
    assert "OSC011" not in ws.codes("a.agent.yaml")


def test_osc012_state_key_of_the_chat_history_provider(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ncontext_providers:\n  - type: environment\n    state_key: ⟨InMemoryChatHistoryProvider⟩\n",
    })
    assert_marked(ws, "a.agent.yaml", "OSC012", Severity.ERROR)
    fix_then_clean(ws, "a.agent.yaml", "OSC012")


def test_osc013_unknown_provider_type_with_closest_type(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ncontext_providers: [⟨memroy⟩]\n"})
    assert_marked(ws, "a.agent.yaml", "OSC013", Severity.ERROR)
    fix = fix_then_clean(ws, "a.agent.yaml", "OSC013")
    assert fix.title == "Use provider type `memory`"


def test_osc014_listed_provider_contributes_nothing(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ncontext_providers:\n  - ⟨memory⟩\n"},
                        host='[models.default]\nmodel = "m"\n')
    diag = assert_marked(ws, "a.agent.yaml", "OSC014", Severity.INFORMATION)[0]
    assert "user_id" in diag.message


def test_osc020_unknown_agent_with_closest_id(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\nagent_tools: [⟨reseacher⟩]\n",
        "r.agent.yaml": "id: researcher\nexposed_as_tool: true\n",
    })
    assert_marked(ws, "a.agent.yaml", "OSC020", Severity.WARNING)
    fix_then_clean(ws, "a.agent.yaml", "OSC020")


def test_osc021_not_exposed_fix_edits_the_other_file(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\nagent_tools: [⟨helper⟩]\n",
        "h.agent.yaml": "id: helper\ninstructions: I help.\n",
    })
    diag = assert_marked(ws, "a.agent.yaml", "OSC021", Severity.WARNING)[0]
    assert diag.related[0].path == ws.path("h.agent.yaml")
    assert {e.path for e in diag.fixes[0].edits} == {ws.path("h.agent.yaml")}
    fix_then_clean(ws, "a.agent.yaml", "OSC021")
    assert "exposed_as_tool: true" in (tmp_path / "h.agent.yaml").read_text()


def test_osc022_cycle_shows_the_path(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\nexposed_as_tool: true\nagent_tools: [⟨b⟩]\n",
        "b.agent.yaml": "id: b\nexposed_as_tool: true\nagent_tools: [⟨c⟩]\n",
        "c.agent.yaml": "id: c\nexposed_as_tool: true\nagent_tools: [⟨a⟩]\n",
    })
    diag = assert_marked(ws, "a.agent.yaml", "OSC022", Severity.WARNING)[0]
    assert "`a` → `b` → `c` → `a`" in diag.message
    assert_marked(ws, "c.agent.yaml", "OSC022", Severity.WARNING)
    # Breaking the cycle in one file clears it in the others.
    ws.write("c.agent.yaml", "id: c\nexposed_as_tool: true\n")
    assert "OSC022" not in ws.codes()


def test_osc030_tool_contributed_twice(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ntools: [read_file, ⟨read_file⟩]\n",
        "b.agent.yaml": "id: b\ntool_mode: search\ntools: [⟨read_file⟩]\npinned_tools: [read_file]\n",
        "c.agent.yaml": "id: c\nvision: true\ntools: [⟨analyze_image⟩]\n",
        "d.agent.yaml": "id: d\nagent_tools: [helper]\ntools: [⟨helper⟩]\n",
        "h.agent.yaml": "id: helper\nexposed_as_tool: true\n",
    }, host='[models.default]\nmodel = "m"\n[tools.helper]\ncallable = "m:helper"\n')
    for name in ("a.agent.yaml", "c.agent.yaml", "d.agent.yaml"):
        assert_marked(ws, name, "OSC030", Severity.WARNING)
    assert "OSC030" in ws.codes("b.agent.yaml")
    fix_then_clean(ws, "a.agent.yaml", "OSC030")
    assert (tmp_path / "a.agent.yaml").read_text() == "id: a\ntools: [read_file]\n"


def test_osc031_unknown_tool(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ntools:\n  - ⟨reed_file⟩\n"})
    assert_marked(ws, "a.agent.yaml", "OSC031", Severity.WARNING)
    fix_then_clean(ws, "a.agent.yaml", "OSC031")


def test_osc040_missing_templates_everywhere(tmp_path: Path) -> None:
    host = '[environment]\ntemplate = ⟨"templates/env.j2"⟩\n[models.default]\nmodel = "m"\n'
    ws = make_workspace(tmp_path, {
        "oscova.toml": host,
        "a.agent.yaml": "id: a\ninstructions_file: ⟨missing.j2⟩\n",
        "b.agent.yaml": 'id: b\ninstructions: |\n  Hi {% include ⟨"nope.j2"⟩ %}\n',
        "c.agent.yaml": "id: c\ninstructions_file: t.j2\n",
        "t.j2": '{% include ⟨"gone.j2"⟩ %}{% include "gone2.j2" ignore missing %}',
    }, host=None)
    for name in ("oscova.toml", "a.agent.yaml", "b.agent.yaml", "t.j2"):
        assert_marked(ws, name, "OSC040", Severity.ERROR)
    # Creating the template clears the diagnostic of the file that includes it.
    affected = ws.write("gone.j2", "here now")
    assert ws.path("t.j2") in affected
    assert "OSC040" not in ws.codes("t.j2")


def test_osc041_unconfigured_model(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\nmodel: ⟨defualt⟩\n"})
    assert_marked(ws, "a.agent.yaml", "OSC041", Severity.ERROR)
    fix_then_clean(ws, "a.agent.yaml", "OSC041")


def test_osc100_template_syntax_error(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"t.j2": "fine\n⟨{% for x in %}⟩\n"})
    assert_marked(ws, "t.j2", "OSC100", Severity.ERROR)


def test_osc100_in_inline_instructions(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ninstructions: 'Hi {{ agent_name'\n"})
    assert "OSC100" in ws.codes("a.agent.yaml")


def test_osc101_unbound_variable_names_renderer_and_binder(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ninstructions: |\n  Hello {{ user_name }}.\n  Memory: {{ ⟨agent_memory⟩ }}\n",
    })
    diag = assert_marked(ws, "a.agent.yaml", "OSC101", Severity.ERROR)[0]
    assert "`personal`" in diag.message and "`memory` provider binds it" in diag.message


def test_osc101_fixes_closest_name_and_declare_variable(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ninstructions_file: t.j2\n",
        "t.j2": "Hi {{ ⟨user_nme⟩ }} from {{ ⟨region⟩ }}",
    })
    assert_marked(ws, "t.j2", "OSC101", Severity.ERROR)
    first = ws.diagnostics("t.j2", "OSC101")[0]
    assert first.fixes[0].title == "Use `user_name`"
    apply_fix(ws, first.fixes[0])
    second = ws.diagnostics("t.j2", "OSC101")[0]
    declare = next(f for f in second.fixes if "[variables]" in f.title)
    assert declare.edits[0].path == ws.path("oscova.toml")
    apply_fix(ws, declare)
    # Declaring the variable in the host re-checks every template.
    ws.analysis.update(ws.path("oscova.toml"), (tmp_path / "oscova.toml").read_text())
    assert "OSC101" not in ws.codes("t.j2")


def test_osc101_template_used_by_two_renderers_names_the_affected_use(tmp_path: Path) -> None:
    host = (
        '[providers.tickets]\nclass = "p.t:Tickets"\ntemplate = "tickets.j2"\nvariables = ["open_tickets"]\n'
        '[models.default]\nmodel = "m"\n'
    )
    ws = make_workspace(tmp_path, {
        "oscova.toml": host,
        "a.agent.yaml": "id: a\ninstructions_file: common.j2\n",
        "tickets.j2": '<t>{% include "common.j2" %}</t>',
        "common.j2": "Owner {{ user_name }}: <t>{{ ⟨open_tickets⟩ }}</t>",
    }, host=None)
    diags = ws.diagnostics("common.j2", "OSC101")
    # Two problems, one per variable, each naming only the use it affects.
    by_name = {ws.analysis.workspace.files[ws.path("common.j2")].text[
        ws.analysis.workspace.files[ws.path("common.j2")].lines.offset(d.range.start):
        ws.analysis.workspace.files[ws.path("common.j2")].lines.offset(d.range.end)]: d for d in diags}
    assert set(by_name) == {"user_name", "open_tickets"}
    assert "agent `a` instructions" in by_name["open_tickets"].message
    assert "tickets" not in by_name["open_tickets"].message.split("(for ")[1].split(")")[0]
    assert "`tickets` provider" in by_name["user_name"].message
    assert by_name["open_tickets"].range == ws.marked("common.j2")[0]


def test_osc101_two_agents_with_different_bindings(tmp_path: Path) -> None:
    """A template shared by a shared and a private agent: user_context is fine for one only."""
    ws = make_workspace(tmp_path, {
        "shared.agent.yaml": "id: shared-agent\nshared: true\ninstructions_file: common.j2\n",
        "private.agent.yaml": "id: private-agent\ninstructions_file: common.j2\n",
        "common.j2": "<ctx>{{ ⟨user_context⟩ }}</ctx>",
    })
    diag = assert_marked(ws, "common.j2", "OSC103", Severity.WARNING)[0]
    assert "private-agent" in diag.message and "shared-agent" not in diag.message


def test_osc101_loop_set_and_macro_variables_are_bound(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ninstructions_file: t.j2\n",
        "t.j2": (
            "{% set greeting = 'hi' %}{{ greeting }}\n"
            "{% for item in range(3) %}{{ item }} {{ loop.index }}{% endfor %}\n"
            "{% macro m(arg, other=1) %}{{ arg }} {{ other }} {{ caller() }}{% endmacro %}\n"
            "{% set ns = namespace(count=0) %}{{ lipsum(1) }} {{ dict(a=1) }} {{ ns.count }}\n"
        ),
    })
    assert ws.codes("t.j2") == []


def test_osc101_include_sees_the_includers_variables(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ninstructions_file: outer.j2\n",
        "outer.j2": '{% set title = "x" %}{% include "inner.j2" %}',
        "inner.j2": "{{ title }} {{ agent_name }} {{ ⟨nope⟩ }}",
    })
    assert_marked(ws, "inner.j2", "OSC101", Severity.ERROR)


RUNBOOK = "Follow the runbook step by step and write down what you checked. " * 40  # ~560 tokens of fixed text
LONG_RUNBOOK = RUNBOOK * 2  # ~1,120 tokens: past OpenAI's 1,024-token minimum cacheable prefix
GPT = '[host]\nuser_id = "alice"\n[models.default]\nmodel = "gpt-4o-mini"\n'
LOCAL = '[host]\nuser_id = "alice"\n[models.default]\nmodel = "gpt-4o-mini"\nbase_url = "http://127.0.0.1:8080/v1"\n'


def test_osc102_current_time_in_standing_instructions(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"oscova.toml": LOCAL,
                                   "a.agent.yaml": "id: a\ninstructions: 'Now: {{ ⟨current_time⟩ }}'\n"}, host=None)
    [found] = assert_marked(ws, "a.agent.yaml", "OSC102", Severity.WARNING)
    assert found.message == ("`current_time` changes every minute, so in standing instructions it ends the request's "
                             "cacheable prefix on every run; a local server reuses any common prefix of the previous "
                             "request")
    fix_then_clean(ws, "a.agent.yaml", "OSC102")
    assert "current_date" in (tmp_path / "a.agent.yaml").read_text()


def test_osc102_not_where_no_prefix_is_cached(tmp_path: Path) -> None:
    """A short prompt for OpenAI (which caches prefixes of 1,024 tokens or more): nothing to break; a long one is."""
    ws = make_workspace(tmp_path, {"oscova.toml": GPT,
                                   "a.agent.yaml": "id: a\ninstructions: 'Now: {{ current_time }}'\n"}, host=None)
    assert "OSC102" not in ws.codes("a.agent.yaml")
    ws.write("a.agent.yaml", f"id: a\ninstructions: |\n  Now: {{{{ current_time }}}}\n  {LONG_RUNBOOK}\n")
    [found] = ws.diagnostics("a.agent.yaml", "OSC102")
    assert found.message.endswith("OpenAI caches a prompt prefix of 1,024 tokens or more, and this template alone "
                                  "has 1,124")


def test_osc108_current_date_before_the_fixed_text(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "oscova.toml": GPT, "a.agent.yaml": "id: a\ninstructions_file: a.j2\n",
        "a.j2": f"You are the support agent.\nToday is {{{{ ⟨current_date⟩ }}}}.\n{LONG_RUNBOOK}\n"}, host=None)
    [found] = assert_marked(ws, "a.j2", "OSC108", Severity.WARNING)
    from oscova_runtime import tokens
    count = tokens.tokenizer_for("gpt-4o-mini").count
    after = count(f".\n{LONG_RUNBOOK}\n")
    total = count(f"You are the support agent.\nToday is .\n{LONG_RUNBOOK}\n")
    assert found.message == (f"`{{{{ current_date }}}}` on line 2 changes daily, so the request's cacheable prefix ends "
                             f"there: at least the {after:,} tokens of this template's fixed text after it are sent "
                             f"again each day; OpenAI caches a prompt prefix of 1,024 tokens or more, and this template alone has {total:,}")
    assert found.fixes == ()  # moving the line changes what the prompt says: not a mechanical fix


def test_osc108_not_below_the_endpoints_minimum_cacheable_prefix(tmp_path: Path) -> None:
    """~600 tokens after the value, in a request below OpenAI's 1,024-token minimum: no prefix of it is ever
    cached, so moving the value saves nothing."""
    ws = make_workspace(tmp_path, {
        "oscova.toml": GPT, "a.agent.yaml": "id: a\ninstructions_file: a.j2\n",
        "a.j2": f"Today is {{{{ current_date }}}}.\n{RUNBOOK}\n"}, host=None)
    assert "OSC108" not in ws.codes("a.j2")


def test_osc108_on_a_local_server_which_reuses_any_prefix(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "oscova.toml": LOCAL, "a.agent.yaml": "id: a\ninstructions_file: a.j2\n",
        "a.j2": f"Today is {{{{ current_date }}}}.\n{RUNBOOK}\n"}, host=None)
    [found] = ws.diagnostics("a.j2", "OSC108")
    assert "a local server reuses any common prefix of the previous request" in found.message


def test_osc108_minimum_is_overridable_per_model(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "oscova.toml": GPT + "cache_min_tokens = 4096\n", "a.agent.yaml": "id: a\ninstructions_file: a.j2\n",
        "a.j2": f"Today is {{{{ current_date }}}}.\n{LONG_RUNBOOK}\n"}, host=None)
    assert "OSC108" not in ws.codes("a.j2")
    ws.write("oscova.toml", LOCAL + "cache_min_tokens = 128\n")
    assert "OSC108" in ws.codes("a.j2")


def test_osc108_not_for_a_value_at_the_end_nor_under_256_tokens_of_fixed_text(tmp_path: Path) -> None:
    short = "Follow the runbook step by step and write down what you checked. " * 12  # ~170 tokens
    ws = make_workspace(tmp_path, {
        "oscova.toml": LOCAL,
        "end.agent.yaml": "id: end\ninstructions_file: end.j2\n", "end.j2": f"{RUNBOOK}\nToday is {{{{ current_date }}}}.\n",
        "short.agent.yaml": "id: short\ninstructions_file: short.j2\n", "short.j2": f"Today is {{{{ current_date }}}}.\n{short}\n",
        "late.agent.yaml": "id: late\ninstructions_file: late.j2\n",
        "late.j2": f"{RUNBOOK}\nYou talk with {{{{ user_name }}}} on {{{{ current_date }}}}.\n{short}\n",
    }, host=None)
    assert "OSC108" not in ws.codes("end.j2") + ws.codes("short.j2") + ws.codes("late.j2")


def test_osc108_per_user_values_and_inline_instructions_likewise(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "oscova.toml": GPT,
        "a.agent.yaml": f"id: a\ninstructions: |\n  You help {{{{ ⟨user_name⟩ }}}} ({{{{ user_email }}}}).\n  {LONG_RUNBOOK}\n",
    }, host=None)
    [found] = assert_marked(ws, "a.agent.yaml", "OSC108", Severity.WARNING)
    assert found.message.startswith("`{{ user_name }}` on line 3 changes per user, so the request's cacheable prefix")
    assert "sent again for each user" in found.message
    ws.write("a.agent.yaml", "id: a\ninstructions: |\n  {RUNBOOK}\n  You help {{ user_name }} ({{ user_email }}).\n"
             .replace("{RUNBOOK}", LONG_RUNBOOK))
    assert "OSC108" not in ws.codes("a.agent.yaml")


def test_osc108_never_fires_on_a_workspace_of_small_requests(tmp_path: Path) -> None:
    """Fifty generated agents whose templates put `{{ user_name }}` before ~300 tokens of fixed text: each
    request is a few hundred tokens, below every hosted endpoint's minimum cacheable prefix, so nothing is
    cached whatever the order."""
    steps = "".join(f"{n}. Check the customer's account, the open tickets and the runbook entry {n} first.\n"
                    for n in range(1, 21))
    files = {"oscova.toml": GPT}
    for i in range(50):
        files[f"agents/a{i}.agent.yaml"] = f"id: a{i}\ninstructions_file: ../templates/a{i}.j2\n"
        files[f"templates/a{i}.j2"] = (f"You are agent {i} of the support desk.\nBe brief.\nBe exact.\n"
                                       f"You help {{{{ user_name }}}} today.\n{steps}")
    ws = make_workspace(tmp_path, files, host=None)
    from oscova_runtime import tokens
    assert tokens.tokenizer_for("gpt-4o-mini").count(steps) > 256  # worth moving, were anything cached
    found = [d for d in ws.diagnostics() if d.code == "OSC108"]
    assert found == []


def test_osc103_user_context_in_a_private_agent(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\ninstructions: |\n  <c>{{ ⟨user_context⟩ }}</c>\n"})
    assert_marked(ws, "a.agent.yaml", "OSC103", Severity.WARNING)
    ws.write("a.agent.yaml", "id: a\nshared: true\ninstructions: |\n  <c>{{ user_context }}</c>\n")
    assert "OSC103" not in ws.codes("a.agent.yaml")


def test_osc104_memory_prompt_without_agent_memory(tmp_path: Path) -> None:
    host = '[memory]\nsystem_prompt = "memory.j2"\n[models.default]\nmodel = "m"\n'
    ws = make_workspace(tmp_path, {"oscova.toml": host, "memory.j2": "⟨Remember things.⟩\n"}, host=None)
    assert_marked(ws, "memory.j2", "OSC104", Severity.INFORMATION)
    ws.write("memory.j2", "<m>{{ agent_memory }}</m>\n")
    assert ws.codes("memory.j2") == []


def test_osc105_untrusted_value_outside_delimiter_and_wrap_fix(tmp_path: Path) -> None:
    host = (
        '[memory]\nsystem_prompt = "memory.j2"\n'
        '[providers.tickets]\nclass = "p.t:Tickets"\ntemplate = "tickets.j2"\nvariables = ["open_tickets"]\n'
        '[providers.trusted]\nclass = "p.t:Trusted"\ntemplate = "trusted.j2"\nvariables = ["facts"]\ntrusted = true\n'
    )
    ws = make_workspace(tmp_path, {
        "oscova.toml": host,
        "memory.j2": "Notes: {{ agent_memory }}\n",  # it carries its own <agent_memory> tags
        "tickets.j2": "{{ ⟨open_tickets⟩ }} <tickets>{{ open_tickets }}</tickets>",
        "trusted.j2": "{{ facts }}",
    }, host=None)
    assert "OSC105" not in ws.codes("memory.j2")
    assert_marked(ws, "tickets.j2", "OSC105", Severity.WARNING)
    assert ws.codes("trusted.j2") == []
    fix_then_clean(ws, "tickets.j2", "OSC105")
    assert (tmp_path / "tickets.j2").read_text().startswith("<open_tickets>{{ open_tickets }}</open_tickets>")


def test_osc106_working_directory_in_environment_template(tmp_path: Path) -> None:
    host = '[environment]\ntemplate = "env.j2"\n[models.default]\nmodel = "m"\n'
    ws = make_workspace(tmp_path, {"oscova.toml": host, "env.j2": "In {{ ⟨working_directory⟩ }} on {{ os }}"},
                        host=None)
    assert_marked(ws, "env.j2", "OSC106", Severity.WARNING)
    assert "OSC101" not in ws.codes("env.j2")


def test_osc107_unused_template_checked_as_instructions(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"orphan.j2": "⟨Hello {{ agent_name }}⟩\n", "used.j2": "x",
                                   "a.agent.yaml": "id: a\ninstructions_file: used.j2\n"})
    assert_marked(ws, "orphan.j2", "OSC107", Severity.HINT)
    assert "OSC107" not in ws.codes("used.j2")
    # Using it from a definition clears the hint.
    ws.write("a.agent.yaml", "id: a\ninstructions_file: orphan.j2\n")
    assert "OSC107" not in ws.codes("orphan.j2")


def test_osc101_imported_template_sees_no_variables_without_context(tmp_path: Path) -> None:
    """Jinja renders an imported template without the render context unless the import says `with context`."""
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ninstructions_file: main.j2\n",
        "main.j2": '{% from "macros.j2" import hi %}{% import "ctx.j2" as c with context %}{{ hi() }}{{ c.x() }}',
        "macros.j2": "{% macro hi(who='x') %}{{ who }} {{ ⟨agent_name⟩ }}{% endmacro %}",
        "ctx.j2": "{% macro x() %}{{ agent_name }}{% endmacro %}",
    })
    diag = assert_marked(ws, "macros.j2", "OSC101", Severity.ERROR)[0]
    assert "main.j2 imports this template without context" in diag.message and "with context" in diag.message
    assert ws.codes("ctx.j2") == []
    ws.write("main.j2", '{% from "macros.j2" import hi with context %}{{ hi() }}')
    assert ws.codes("macros.j2") == []
