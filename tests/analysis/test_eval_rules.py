"""Evaluation files (`*.eval.yaml`): one fixture per finding, with its exact range and its quick fix.

⟨ and ⟩ in a fixture mark the range the diagnostic must cover.
"""

from __future__ import annotations

from pathlib import Path

from oscova_lsp.analysis.diagnostics import Severity

from .support import BASE_HOST, apply_fix, make_workspace
from .test_rules import assert_marked, fix_then_clean

TRIAGE = """\
id: triage
tools: [read_file, current_datetime]
agent_tools: [lookup]
memory: true
"""
LOOKUP = "id: lookup\nexposed_as_tool: true\n"
HOST = BASE_HOST + '\n[models.local]\nmodel = "llama3.1:8b"\nbase_url = "http://127.0.0.1:11434/v1"\n'


def workspace(tmp_path: Path, evaluation: str, *, host: str | None = HOST):
    return make_workspace(tmp_path, {"triage.agent.yaml": TRIAGE, "lookup.agent.yaml": LOOKUP,
                                     "t.eval.yaml": evaluation}, host=host)


CLEAN = """\
agent: triage
models: [default, local]
repeat: 3
pass_rate: 0.6
cases:
  - name: region
    input: "502s in eu-west"
    variables: { team: payments }
    expect:
      - status: completed
      - contains: "eu-west"
      - regex: "eu-(west|east)"
      - json_schema: { type: object, required: [region] }
      - tools: { mode: in_order, calls: [lookup, read_file] }
      - tool_called: { name: read_file, arguments: { path: "runbooks/eu.md" } }
      - no_tool: [memory_save]
      - judge: "Names the affected region."
      - max_tokens: 4000
      - instructions_contain: "Platform"
"""


def test_a_valid_evaluation_has_no_findings(tmp_path: Path) -> None:
    ws = workspace(tmp_path, CLEAN)
    assert ws.diagnostics("t.eval.yaml") == []


def test_osc050_unknown_agent_with_closest_id(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "agent: ⟨triag⟩\ncases:\n  - name: a\n    input: hi\n")
    found = assert_marked(ws, "t.eval.yaml", "OSC050", Severity.ERROR)
    assert found[0].message == "no agent has the id `triag`: the evaluation has nothing to run; did you mean `triage`?"
    assert fix_then_clean(ws, "t.eval.yaml", "OSC050").title == "Use agent `triage`"


def test_osc051_tools_the_agent_is_not_given(tmp_path: Path) -> None:
    ws = workspace(tmp_path, """\
agent: triage
cases:
  - name: a
    input: hi
    expect:
      - tools: { mode: exact, calls: [lookup, ⟨read_fle⟩] }
      - tool_called: { name: ⟨write_file⟩ }
      - no_tool: [memory_save, ⟨todo_write⟩]
""")
    found = assert_marked(ws, "t.eval.yaml", "OSC051", Severity.WARNING)
    assert found[0].message == ("unknown tool `read_fle`: agent `triage` is not given it, so no run calls it; "
                                "did you mean `read_file`?")
    assert "memory_save" not in " ".join(d.message for d in found)  # the memory provider gives it
    assert [d.fixes[0].title for d in found if d.fixes] == ["Use tool `read_file`"]
    apply_fix(ws, found[0].fixes[0])
    assert "calls: [lookup, read_file]" in (tmp_path / "t.eval.yaml").read_text()
    assert len(ws.diagnostics("t.eval.yaml", "OSC051")) == 2


def test_osc052_unknown_models_and_judge(tmp_path: Path) -> None:
    ws = workspace(tmp_path, """\
agent: triage
models: [default, ⟨locl⟩]
judge: ⟨grader⟩
cases:
  - name: a
    input: hi
""")
    found = assert_marked(ws, "t.eval.yaml", "OSC052", Severity.ERROR)
    assert found[0].message == ("model `locl` is not configured in `[models]` (configured: `default`, `local`); "
                                "add `[models.locl]`; did you mean `local`?")
    assert not found[1].fixes
    assert found[0].fixes[0].title == "Use model `local`"
    apply_fix(ws, found[0].fixes[0])
    assert [d.message.split(" is")[0] for d in ws.diagnostics("t.eval.yaml", "OSC052")] == ["model `grader`"]


def test_osc053_regex_that_does_not_compile(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "agent: triage\ncases:\n  - name: a\n    input: hi\n    expect:\n"
                             "      - regex: ⟨\"eu-(west\"⟩\n")
    found = assert_marked(ws, "t.eval.yaml", "OSC053", Severity.ERROR)
    assert found[0].message == "the regex does not compile: missing ) at position 8"  # the `regex` package's words


def test_osc054_json_schema_that_is_not_a_schema(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "agent: triage\ncases:\n  - name: a\n    input: hi\n    expect:\n"
                             "      - json_schema: ⟨{ type: objekt }⟩\n")
    found = assert_marked(ws, "t.eval.yaml", "OSC054", Severity.ERROR)
    assert found[0].message.startswith("not a JSON Schema: at `type`: 'objekt' is not valid")


def test_osc055_judge_without_a_judge_model(tmp_path: Path) -> None:
    host = HOST.replace("[models.default]", "[models.hosted]")
    evaluation = ("agent: triage\nmodels: [local]\ncases:\n  - name: a\n    input: hi\n    expect:\n"
                  "      - ⟨judge⟩: Names the region.\n")
    ws = workspace(tmp_path, evaluation, host=host)
    found = assert_marked(ws, "t.eval.yaml", "OSC055", Severity.ERROR)
    assert found[0].message == ("no judge model: no `judge` is set, so it is `default`, which `[models]` does not "
                                "configure; set `judge:` to a configured model")
    (tmp_path / "t.eval.yaml").write_text(evaluation.replace("⟨", "").replace("⟩", "") + "judge: local\n")
    ws.analysis.update(ws.path("t.eval.yaml"), (tmp_path / "t.eval.yaml").read_text())
    assert "OSC055" not in ws.codes("t.eval.yaml")


def test_osc056_tool_called_arguments_the_tool_cannot_take(tmp_path: Path) -> None:
    ws = workspace(tmp_path, """\
agent: triage
cases:
  - name: a
    input: hi
    expect:
      - tool_called: { name: read_file, arguments: { ⟨paht⟩: runbooks/eu.md } }
      - tool_called: { name: read_file, arguments: { path: ⟨[1, 2]⟩ } }
""")
    found = assert_marked(ws, "t.eval.yaml", "OSC056", Severity.WARNING)
    assert found[0].message == "`read_file` has no parameter `paht` (it takes `path`); did you mean `path`?"
    assert found[1].message == "`read_file` cannot take this `path`: [1, 2] is not of type 'string'"
    assert found[0].fixes[0].title == "Rename to `path`"
    apply_fix(ws, found[0].fixes[0])
    assert len(ws.diagnostics("t.eval.yaml", "OSC056")) == 1


def test_schema_findings_point_at_the_key_or_value(tmp_path: Path) -> None:
    ws = workspace(tmp_path, """\
agent: triage
repeat: ⟨many⟩
cases:
  - name: a
    input: hi
    ⟨expct⟩: []
    expect:
      - ⟨contain⟩: eu-west
      - ⟨{ contains: a, equals: b }⟩
      - max_tokens: ⟨-1⟩
      - tools: { mode: ⟨sorted⟩, calls: [lookup] }
""")
    schema = ws.diagnostics("t.eval.yaml", "OSC002")
    unknown = ws.diagnostics("t.eval.yaml", "OSC003")
    marks = ws.marked("t.eval.yaml")
    assert [d.range for d in unknown] == [marks[1], marks[2]]
    assert unknown[0].message == "unknown key `expct`; did you mean `expect`?"
    assert unknown[1].message == "unknown key `contain`; did you mean `contains`?"
    assert sorted((d.range for d in schema), key=lambda r: r.start.line) == [marks[0], marks[3], marks[4], marks[5]]
    assert any("exactly one key" in d.message and "this one has 2: contains, equals" in d.message for d in schema)


def test_an_evaluation_that_is_not_a_mapping_or_has_no_cases(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {"a.agent.yaml": "id: a\n", "list.eval.yaml": "- agent: a\n",
                                   "empty.eval.yaml": "agent: a\ncases: []\n", "none.eval.yaml": ""})
    assert ws.diagnostics("list.eval.yaml")[0].message == "an evaluation must be a YAML mapping"
    assert "at least 1 item" in ws.diagnostics("empty.eval.yaml", "OSC002")[0].message
    assert [d.message for d in ws.diagnostics("none.eval.yaml")] == ["missing required key `agent`",
                                                                     "missing required key `cases`"]


def test_renaming_the_agent_rechecks_its_evaluations(tmp_path: Path) -> None:
    ws = workspace(tmp_path, "agent: triage\ncases:\n  - name: a\n    input: hi\n")
    assert ws.codes("t.eval.yaml") == []
    affected = ws.write("triage.agent.yaml", TRIAGE.replace("id: triage", "id: triage2"))
    assert ws.path("t.eval.yaml") in affected
    assert ws.codes("t.eval.yaml") == ["OSC050"]
    affected = ws.write("triage.agent.yaml", TRIAGE.replace("read_file, ", ""))
    assert ws.path("t.eval.yaml") in affected and ws.codes("t.eval.yaml") == []


def test_osc057_a_matrix_over_the_runs_one_evaluation_may_make(tmp_path: Path) -> None:
    cases = "".join(f"  - name: c{n}\n    input: hi\n" for n in range(6))
    ws = workspace(tmp_path, f"agent: triage\nmodels: [default, local]\nrepeat: ⟨1000⟩\ncases:\n{cases}")
    [found] = assert_marked(ws, "t.eval.yaml", "OSC057", Severity.ERROR)
    assert found.message == ("6 cases × 2 models × 1,000 repeats make 12,000 runs, over the 10,000 one evaluation "
                             "may make; lower `repeat`, run on fewer models or split the cases")
    at_the_limit = "".join(f"  - name: c{n}\n    input: hi\n" for n in range(5))
    ws = workspace(tmp_path / "limit", f"agent: triage\nmodels: [default, local]\nrepeat: 1000\ncases:\n{at_the_limit}")
    assert "OSC057" not in ws.codes("t.eval.yaml")
