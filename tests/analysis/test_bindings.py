"""The checks and the editor features answer "which names does the renderer of this template bind,
and who binds each" alike. A name the checker reports as unbound (OSC101) is one hover calls unbound, one
that gets no inlay hint and one completion does not offer; a name it accepts is offered and explained.

Every template of one workspace uses the same names; each is rendered differently (agent instructions,
the environment template, the memory prompt, a custom provider's template, imported without context,
included with context), so each name is bound in some and unbound in others.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from oscova_lsp.analysis.engine import Analysis
from oscova_lsp.analysis.text import LineIndex
from oscova_lsp.ide import completion, hints, hover
from oscova_lsp.ide.queries import variable_occurrences

from .support import make_workspace

NAMES = ("user_name", "team", "os", "agent_memory", "account", "range", "namespace", "lipsum", "not_declared",
         "agent_name", "workspace_directories")
USES = " ".join(f"{{{{ {name} }}}}" for name in NAMES)
PROBE = "{{  }}"
"""Where completion is asked, at the end of every template (offered names do not depend on the position)."""

HOST = """\
[variables]
team = "Platform"

[environment]
template = "env.j2"

[memory]
system_prompt = "memory.j2"

[providers.crm]
class = "crm:Crm"
template = "crm.j2"
variables = ["account"]

[models.default]
model = "m"
"""

FILES = {
    "a.agent.yaml": "id: a\ninstructions_file: instructions.j2\ncontext_providers: [crm]\n",
    "instructions.j2": f'{{% import "macros.j2" as m %}}{{% include "part.j2" %}}{{{{ m.greet() }}}}\n{USES}\n',
    "macros.j2": f"{{% macro greet() %}}{USES}{{% endmacro %}}\n",
    "part.j2": f"{USES}\n",
    "env.j2": f"<agent_memory>{USES}</agent_memory>\n",
    "memory.j2": f"<agent_memory>{USES}</agent_memory>\n",
    "crm.j2": f"<account>{USES}</account>\n",
}
TEMPLATES = sorted(name for name in FILES if name.endswith(".j2"))


@pytest.fixture(scope="module")
def analysis(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    root: Path = tmp_path_factory.mktemp("bindings")
    files = {name: text + (PROBE if name.endswith(".j2") else "") for name, text in FILES.items()}
    return make_workspace(root, {"oscova.toml": HOST, **files}).analysis


def _unbound_by_checker(analysis: Analysis, path: str) -> set[tuple[int, int]]:
    return {(d.range.start.line, d.range.start.character) for d in analysis.diagnostics(path) if d.code == "OSC101"}


@pytest.mark.parametrize("template", TEMPLATES)
def test_hover_and_hints_agree_with_the_unbound_variable_check(analysis: Analysis, template: str) -> None:
    ws = analysis.workspace
    path = str(Path(analysis.root) / template)
    parsed = ws.files[path]
    unbound = _unbound_by_checker(analysis, path)
    hinted = {(h.position.line, h.position.character) for h in hints.inlay_hints(ws, parsed)}
    disagreements = []
    for occ in variable_occurrences(parsed):
        at = (occ.range.start.line, occ.range.start.character)
        found = hover.hover(ws, parsed, occ.range.start)
        text = found.markdown.split("\n\n---\n\n")[0] if found else ""
        hover_bound = bool(text) and "not bound" not in text and "renders empty" not in text
        checker_bound = at not in unbound
        if hover_bound != checker_bound:
            disagreements.append(f"{occ.name}: checker bound={checker_bound}, hover: {text!r}")
        provider_bound = checker_bound and occ.name not in ("range", "namespace", "lipsum")
        if ((occ.range.end.line, occ.range.end.character) in hinted) != provider_bound:
            disagreements.append(f"{occ.name}: checker bound={checker_bound}, inlay hint={not provider_bound}")
    assert not disagreements, "\n".join(disagreements)


@pytest.mark.parametrize("template", TEMPLATES)
def test_completion_offers_exactly_the_names_the_checker_accepts(analysis: Analysis, template: str) -> None:
    ws = analysis.workspace
    path = str(Path(analysis.root) / template)
    parsed = ws.files[path]
    unbound = _unbound_by_checker(analysis, path)
    accepted = {occ.name for occ in variable_occurrences(parsed)
                if (occ.range.start.line, occ.range.start.character) not in unbound}
    probe = LineIndex(parsed.text).position(parsed.text.rindex(PROBE) + 3)
    items = completion.complete(ws, parsed, probe).items
    offered = {item.label for item in items}
    assert offered & set(NAMES) == accepted


def test_a_variables_key_used_where_personal_does_not_render_names_its_binder(tmp_path: Path) -> None:
    """OSC101 on a `[variables]` key in the environment template says who binds it, and points at the key,
    as hover does."""
    ws = make_workspace(tmp_path, {"oscova.toml": HOST, "env.j2": "On {{ os }} for {{ team }}.\n",
                                   "a.agent.yaml": "id: a\n"})
    [diag] = ws.diagnostics("env.j2", "OSC101")
    assert "the `personal` provider binds it" in diag.message
    assert [(r.path, r.range.start.line) for r in diag.related] == [(ws.path("oscova.toml"), 1)]
    env = ws.analysis.workspace.files[ws.path("env.j2")]
    found = hover.hover(ws.analysis.workspace, env, diag.range.start)
    assert found is not None and "the `personal` provider binds it" in found.markdown
