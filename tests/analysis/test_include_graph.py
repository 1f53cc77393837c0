"""Templates that include each other: the checker's cost is linear in the include graph, cycles are
reported once and cut, and acyclic workspaces are checked exactly as before (every use, every includer)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from pathlib import Path

from oscova_lsp.analysis.files import DefinitionFile, TemplateFile
from oscova_lsp.analysis.template_uses import TemplateUse, direct_uses
from oscova_lsp.analysis.workspace import Workspace

from tests.support.cli_zygote import module_command
from tests.support.include_graph import HOST, clique, cycle, write_include_graph

from .support import make_workspace


def check_json(root: Path) -> tuple[list[dict], float]:
    start = time.perf_counter()
    result = subprocess.run(module_command("check", str(root), "--format", "json"),
                            capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - start
    assert result.returncode == 1, result.stderr
    return json.loads(result.stdout), elapsed


def cycle_reports(found: list[dict]) -> list[dict]:
    return [d for d in found if d["code"] == "OSC040" and "closes a cycle" in d["message"]]


def test_check_of_a_30_template_include_clique_is_fast_and_reports_the_cycle_once(tmp_path: Path) -> None:
    n = 30
    write_include_graph(tmp_path, clique(n))
    found, elapsed = check_json(tmp_path)
    assert elapsed < 20, f"check took {elapsed:.1f} s"  # main: exponential (9 templates took 43 s)
    cycles = cycle_reports(found)
    assert len(cycles) == 1, cycles
    assert cycles[0]["path"].endswith("t000.j2")
    assert "`templates/t000.j2` → `templates/t001.j2` → `templates/t000.j2`" in cycles[0]["message"]
    # Every template is still checked against its uses: its unbound variable is reported, once, and the
    # message names a bounded number of the 29 or 30 uses.
    unbound = [d for d in found if d["code"] == "OSC101"]
    assert sorted(Path(d["path"]).name for d in unbound) == [f"t{i:03d}.j2" for i in range(n)]
    assert all("`missing" in d["message"] and " more)" in d["message"] for d in unbound)
    assert max(len(d["message"]) for d in found) < 700


def test_check_of_a_500_template_include_cycle_is_fast_and_reports_it_once(tmp_path: Path) -> None:
    n = 500
    write_include_graph(tmp_path, cycle(n))
    found, elapsed = check_json(tmp_path)
    assert elapsed < 20, f"check took {elapsed:.1f} s"  # main: 131.6 s
    cycles = cycle_reports(found)
    assert len(cycles) == 1, cycles
    message = cycles[0]["message"]
    assert "a cycle of 500 templates" in message and "… 495 more … → `templates/t000.j2`" in message
    assert cycles[0]["range"]["start"] == {"line": 1, "character": 11}  # the include's path
    assert len([d for d in found if d["code"] == "OSC101"]) == n


def test_self_include_is_a_cycle_and_fixing_it_clears_the_report(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ninstructions_file: t.j2\n",
        "t.j2": 'Hi {{ user_name }}\n{% include "t.j2" %}\n',
    })
    found = ws.diagnostics("t.j2", "OSC040")
    assert [d.message for d in found] == [
        "`include` of `t.j2` closes a cycle of 1 template: `t.j2` → `t.j2`; rendering recurses until Jinja "
        "gives up unless a condition stops it"]
    assert ws.codes("t.j2") == ["OSC040"]
    ws.write("t.j2", "Hi {{ user_name }}\n")
    assert ws.codes("t.j2") == []


def test_an_edit_that_breaks_the_cycle_is_seen_at_once(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "a.agent.yaml": "id: a\ninstructions_file: a.j2\n",
        "a.j2": '{% include "b.j2" %}',
        "b.j2": '{% include "c.j2" %}',
        "c.j2": '{{ nope }}{% include "b.j2" %}',
    })
    assert [d.path for d in ws.diagnostics(code="OSC040")] == [ws.path("b.j2")]
    assert "`b.j2` → `c.j2` → `b.j2`" in ws.diagnostics("b.j2", "OSC040")[0].message
    affected = ws.write("c.j2", "{{ nope }}")
    assert ws.path("b.j2") in affected
    assert ws.diagnostics(code="OSC040") == []
    [diag] = ws.diagnostics("c.j2", "OSC101")
    assert "(for agent `a` instructions via b.j2)" in diag.message


def test_an_included_template_is_checked_with_every_includer(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "oscova.toml": HOST + '\n[environment]\ntemplate = "env.j2"\n',
        "a.agent.yaml": "id: a\ninstructions_file: a.j2\n",
        "b.agent.yaml": 'id: b\ninstructions: |\n  {% set extra = 1 %}{% include "shared.j2" %}\n',
        "a.j2": '{% include "shared.j2" %}',
        "env.j2": '{% include "shared.j2" %}',
        "shared.j2": "{{ user_name }} {{ os }} {{ extra }}",
    })
    by_name = {d.message.split("`")[1]: d.message for d in ws.diagnostics("shared.j2", "OSC101")}
    assert "for the environment template via env.j2" in by_name["user_name"]
    assert "agent `a`" not in by_name["user_name"]
    assert "for agent `a` instructions via a.j2" in by_name["os"]
    assert "agent `b` instructions via b.agent.yaml" in by_name["os"]
    # `extra` is set by b's instructions: bound there, unbound for a and the environment.
    assert "agent `b`" not in by_name["extra"] and "agent `a` instructions via a.j2" in by_name["extra"]


# ------------------------------------------------------------------- the uses as before, on acyclic graphs


def path_uses(ws: Workspace, path: str, visiting: frozenset[str] = frozenset()) -> list[TemplateUse]:
    """The uses as main enumerated them (every path through the include graph): the reference."""
    if path in visiting:
        return []
    visiting = visiting | {path}
    uses = direct_uses(ws, path)
    for referrer in sorted(ws.template_referrers.get(path, ())):
        parsed = ws.files.get(referrer)
        if isinstance(parsed, TemplateFile) and parsed.facts is not None:
            refs = [r for r in parsed.facts.references if ws.resolve_template(r.path) == path]
            with_context = any(r.with_context for r in refs)
            local = parsed.facts.local_names if with_context else frozenset()
            for use in path_uses(ws, referrer, visiting):
                uses.append(TemplateUse(use.renderer, use.label, use.agent_path, use.owner_path, (*use.via, referrer),
                                        use.extra_bound | local, use.no_context or not with_context))
        elif isinstance(parsed, DefinitionFile) and parsed.inline is not None:
            refs = [r for r in parsed.inline.facts.references if ws.resolve_template(r.path) == path]
            if refs:
                with_context = any(r.with_context for r in refs)
                label = f"agent `{parsed.raw_id or os.path.basename(referrer)}` instructions"
                uses.append(TemplateUse("personal", label, referrer, referrer, (referrer,),
                                        parsed.inline.facts.local_names if with_context else frozenset(),
                                        not with_context))
    return uses


def collapsed(uses: list[TemplateUse]) -> list[tuple[object, ...]]:
    """Paths that end alike are one use, bound by what every one of them binds; in first-seen order."""
    out: dict[tuple[object, ...], frozenset[str]] = {}
    for u in uses:
        key = (u.renderer, u.label, u.agent_path, u.owner_path, u.via[-1] if u.via else None, u.no_context)
        out[key] = out[key] & u.extra_bound if key in out else u.extra_bound
    return [(*key, bound) for key, bound in out.items()]


def random_dag_workspace(root: Path, rng: random.Random) -> None:
    n = rng.randint(2, 9)
    root.mkdir()
    (root / "oscova.toml").write_text(HOST + '\n[environment]\ntemplate = "t1.j2"\n'
                                      '\n[providers.crm]\nclass = "x.Crm"\ntemplate = "t0.j2"\nvariables = ["account"]\n')
    for i in range(n):
        lines = [f"{{% set s{i} = 1 %}}{{{{ user_name }}}}{{{{ account }}}}{{{{ s0 }}}}{{{{ s1 }}}}"]
        for j in range(i + 1, n):  # edges only forward: acyclic
            if rng.random() < 0.5:
                kind = rng.choice(["include", "import", "import_ctx", "from"])
                lines.append({"include": f'{{% include "t{j}.j2" %}}',
                              "import": f'{{% import "t{j}.j2" as m{j} %}}',
                              "import_ctx": f'{{% import "t{j}.j2" as m{j} with context %}}',
                              "from": f'{{% from "t{j}.j2" import x %}}'}[kind])
        (root / f"t{i}.j2").write_text("\n".join(lines) + "\n")
    for k in range(rng.randint(1, 3)):
        target = rng.randrange(n)
        if rng.random() < 0.5:
            (root / f"a{k}.agent.yaml").write_text(f"id: a{k}\ninstructions_file: t{target}.j2\n")
        else:
            (root / f"a{k}.agent.yaml").write_text(
                f'id: a{k}\ninstructions: |\n  {{% set s1 = 2 %}}{{% include "t{target}.j2" %}}\n')


def test_uses_on_acyclic_graphs_are_mains_uses_with_identical_paths_merged(tmp_path: Path) -> None:
    rng = random.Random(16)
    for case in range(60):
        root = tmp_path / f"w{case}"
        random_dag_workspace(root, rng)
        ws = make_workspace(root, {}, host=None).analysis.workspace
        for template in sorted(p.path for p in ws.templates()):
            assert collapsed(ws.template_uses(template)) == collapsed(path_uses(ws, template)), (case, template)
