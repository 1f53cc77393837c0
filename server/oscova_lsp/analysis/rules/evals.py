"""Evaluation files against the workspace: the agent (OSC050), its tools (OSC051), the models (OSC052),
assertions that cannot hold as written (OSC053–OSC056), and a matrix too large to run (OSC057)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from oscova_runtime.catalogue import agent_tool_names
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.evaluation import MAX_EVAL_RUNS, Evaluation, Expectation, schema_problem, too_many_runs

from ..diagnostics import Diagnostic, Fix, TextEdit
from ..files import EvalFile
from ..suggest import did_you_mean
from ..toml_source import toml_key
from ..yaml_source import Path, YamlDocument
from .common import Context, value_place
from .rule import E, Rule, W

UNKNOWN_AGENT = Rule(
    "OSC050", E, "evaluations", "`agent` names no known agent",
    """No definition in the workspace has this id, so the evaluation has nothing to run.""",
    "use the closest agent id")

UNKNOWN_TOOL = Rule(
    "OSC051", W, "evaluations", "An assertion names a tool the agent does not have",
    """`tools`, `tool_called` and `no_tool` name tools by the names the model sees. A name the agent is
not given (its `tools`, `pinned_tools`, `agent_tools` and the tools of its providers) is never called, so
`tools` and `tool_called` always fail and `no_tool` always passes.""",
    "use the closest tool of the agent")

UNKNOWN_MODEL = Rule(
    "OSC052", E, "evaluations", "`models` or `judge` names no configured model",
    """The evaluation runs on (or grades with) a model that has no `[models.NAME]` table in the host
configuration, so those runs cannot start.""",
    "use the closest configured model")

BAD_REGEX = Rule(
    "OSC053", E, "evaluations", "A `regex` that does not compile",
    """The pattern is not a valid regular expression (the syntax of the `regex` package, which grading matches
with: Python's `re` and more), so the assertion fails every run.""")

BAD_JSON_SCHEMA = Rule(
    "OSC054", E, "evaluations", "A `json_schema` that is not a JSON Schema",
    """The value does not validate against the JSON Schema meta-schema of its `$schema` (draft 2020-12 by
default), so no answer can be checked against it.""")

NO_JUDGE = Rule(
    "OSC055", E, "evaluations", "A `judge` assertion with no judge model",
    """`judge` assertions are graded by the model the evaluation's `judge` names (`default` when it is not
set); that model is not configured, so the assertion fails every run.""")

BAD_ARGUMENTS = Rule(
    "OSC056", W, "evaluations", "`tool_called` arguments the tool cannot take",
    """The arguments do not fit the tool's parameters (an argument it does not have, or a value of the
wrong type), so no call of the tool can match them. Checked for the built-in tools, whose parameters are
known without running anything.""",
    "rename it to the closest parameter")

TOO_MANY_RUNS = Rule(
    "OSC057", E, "evaluations", "The evaluation would make too many runs",
    f"""Every case runs `repeat` times on every model, so the evaluation makes cases × models × repeat runs. Past
{MAX_EVAL_RUNS:,} runs `oscova-lsp eval` refuses it before making any, and so does the editor's Run eval: such a
matrix holds hours of model calls and more memory than a machine has. Lower `repeat`, run on fewer models, or
split the cases into several files.""")


def check(ctx: Context, parsed: EvalFile) -> list[Diagnostic]:
    evaluation, doc = parsed.evaluation, parsed.doc
    if evaluation is None or doc is None:
        return []
    out = _models(ctx, parsed, evaluation, doc)
    too_many = too_many_runs(len(evaluation.cases), len(evaluation.models), evaluation.repeat)
    if too_many is not None:
        rng = doc.value_range(("repeat",)) or doc.key_range(("cases",)) or value_place(doc, ("cases",))
        out.append(TOO_MANY_RUNS.diagnostic(parsed.path, rng, too_many))
    for place, expectation in _expectations(evaluation):
        out += _assertion(ctx, parsed, evaluation, doc, place, expectation)
    target = ctx.ws.definition_by_id(evaluation.agent)
    if target is None:
        return [_unknown_agent(ctx, parsed, evaluation, doc), *out]
    if target.definition is not None:
        out += _tools(ctx, parsed, evaluation, doc, target.definition)
    return out


def _expectations(evaluation: Evaluation) -> Iterable[tuple[Path, Expectation]]:
    for c, case in enumerate(evaluation.cases):
        for e, expectation in enumerate(case.expect):
            yield ("cases", c, "expect", e), expectation


def _unknown_agent(ctx: Context, parsed: EvalFile, evaluation: Evaluation, doc: YamlDocument) -> Diagnostic:
    rng = value_place(doc, ("agent",))
    choice = did_you_mean(evaluation.agent, ctx.ws.defs_by_id)
    fix = Fix(f"Use agent `{choice.name}`", (TextEdit(parsed.path, rng, choice.name),)) if choice else None
    return UNKNOWN_AGENT.diagnostic(parsed.path, rng, f"no agent has the id `{evaluation.agent}`: the evaluation "
                                    "has nothing to run" + (choice.words if choice else ""), fix)


def _models(ctx: Context, parsed: EvalFile, evaluation: Evaluation, doc: YamlDocument) -> list[Diagnostic]:
    host_file, models = ctx.ws.host_file, ctx.ws.host.models
    if host_file is None or host_file.config is None:
        return []  # no host configuration to compare with: `check` says the workspace has none
    written: list[tuple[Path, str]] = [(("models", i), name) for i, name in enumerate(evaluation.models)]
    if doc.value_range(("judge",)) is not None:
        written.append((("judge",), evaluation.judge))
    out = []
    for where, name in written:
        if name in models:
            continue
        rng = value_place(doc, where, where[:1])
        configured = ", ".join(f"`{m}`" for m in models) or "none"
        choice = did_you_mean(name, models)
        fix = Fix(f"Use model `{choice.name}`", (TextEdit(parsed.path, rng, choice.name),)) if choice else None
        out.append(UNKNOWN_MODEL.diagnostic(parsed.path, rng, f"model `{name}` is not configured in `[models]` "
                                            f"(configured: {configured}); add `[models.{toml_key(name)}]`"
                                            + (choice.words if choice else ""), fix))
    return out


def _assertion(ctx: Context, parsed: EvalFile, evaluation: Evaluation, doc: YamlDocument, place: Path,
               expectation: Expectation) -> list[Diagnostic]:
    kind, value = expectation.kind, expectation.value
    rng = value_place(doc, (*place, kind), place)
    if kind == "regex":
        import regex  # only for files with a `regex` assertion

        try:
            regex.compile(value)
        except regex.error as error:
            return [BAD_REGEX.diagnostic(parsed.path, rng, f"the regex does not compile: {error}")]
    elif kind == "json_schema":
        problem = schema_problem(value)
        if problem is not None:
            return [BAD_JSON_SCHEMA.diagnostic(parsed.path, rng, f"not a JSON Schema: {problem}")]
    elif kind == "judge" and ctx.ws.host_file is not None and evaluation.judge not in ctx.ws.host.models:
        named = "`judge` names" if doc.value_range(("judge",)) is not None else "no `judge` is set, so it is"
        return [NO_JUDGE.diagnostic(parsed.path, doc.key_range((*place, kind)) or rng,
                                    f"no judge model: {named} `{evaluation.judge}`, which `[models]` does not "
                                    f"configure; set `judge:` to a configured model")]
    return []


def _tools(ctx: Context, parsed: EvalFile, evaluation: Evaluation, doc: YamlDocument,
           definition: AgentDefinition) -> list[Diagnostic]:
    given = agent_tool_names(definition, ctx.ws.host)
    out: list[Diagnostic] = []
    for place, expectation in _expectations(evaluation):
        for where, name in _named_tools(place, expectation):
            if name in given:
                continue
            rng = value_place(doc, where, place)
            choice = did_you_mean(name, given)
            fix = Fix(f"Use tool `{choice.name}`", (TextEdit(parsed.path, rng, choice.name),)) if choice else None
            out.append(UNKNOWN_TOOL.diagnostic(parsed.path, rng, f"unknown tool `{name}`: agent "
                                               f"`{definition.id}` is not given it, so no run calls it"
                                               + (choice.words if choice else ""), fix))
        if expectation.tool_called is not None and expectation.tool_called.name in given:
            out += _arguments(parsed, doc, place, expectation.tool_called.name, expectation.tool_called.arguments)
    return out


def _named_tools(place: Path, expectation: Expectation) -> list[tuple[Path, str]]:
    if expectation.tools is not None:
        return [((*place, "tools", "calls", i), name) for i, name in enumerate(expectation.tools.calls)]
    if expectation.tool_called is not None:
        return [((*place, "tool_called", "name"), expectation.tool_called.name)]
    if expectation.no_tool is not None:
        return [((*place, "no_tool", i), name) for i, name in enumerate(expectation.no_tool)]
    return []


@functools.cache
def builtin_parameters() -> dict[str, dict[str, Any]]:
    """The parameter schemas of the selectable built-in tools, from the functions a run builds."""
    from oscova_runtime.tools import BuiltinToolContext, builtin_tools

    return {name: function.parameters for name, function in builtin_tools(BuiltinToolContext()).items()}


def _arguments(parsed: EvalFile, doc: YamlDocument, place: Path, tool: str,
               arguments: dict[str, Any]) -> list[Diagnostic]:
    schema = builtin_parameters().get(tool)
    if schema is None:
        return []  # a custom or agent tool: its parameters are known only once a run imports it
    properties: dict[str, Any] = schema.get("properties", {})
    out = []
    at: Callable[[str], Path] = lambda key: (*place, "tool_called", "arguments", key)  # noqa: E731
    for key, value in arguments.items():
        if key not in properties:
            rng = doc.key_range(at(key)) or value_place(doc, at(key), place)
            choice = did_you_mean(key, properties)
            fix = Fix(f"Rename to `{choice.name}`", (TextEdit(parsed.path, rng, choice.name),)) if choice else None
            takes = ", ".join(f"`{p}`" for p in properties) or "no arguments"
            out.append(BAD_ARGUMENTS.diagnostic(parsed.path, rng, f"`{tool}` has no parameter `{key}` (it takes "
                                                f"{takes})" + (choice.words if choice else ""), fix))
            continue
        problem = _value_problem(properties[key], value)
        if problem is not None:
            out.append(BAD_ARGUMENTS.diagnostic(parsed.path, value_place(doc, at(key), place),
                                                f"`{tool}` cannot take this `{key}`: {problem}"))
    return out


def _value_problem(schema: dict[str, Any], value: Any) -> str | None:
    import jsonschema

    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
    return error.message if error is not None else None
