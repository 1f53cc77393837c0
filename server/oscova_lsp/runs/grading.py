"""Grading one run of an evaluation: what the run did (`RunFacts`), each assertion against it, and the judge.

Grading reads facts only, never a model or the network: a live evaluation and `--rescore` grade alike. The
judge's verdicts are facts too, asked for once by the live run (`JUDGE_PROMPT`) and kept with the run.

What the workspace and a model's reply decide is bounded: an assertion's patterns (a `regex`, a schema's
`pattern` and `patternProperties`) run with the `regex` package's time limit, `GRADING_SECONDS` for all the
patterns of one assertion; a schema's `$ref` resolves inside the schema only (a registry whose retrieval refuses:
nothing is fetched) and a `$ref` cycle is a sentence; a judge's reply is read only up to `MAX_VERDICT_CHARS`
and `MAX_VERDICT_DEPTH`. Each limit fails its assertion with a sentence saying which.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import regex
from oscova_runtime.evaluation import Expectation

JUDGE_PROMPT = """\
You grade one answer of an AI agent against a rubric. Read the user's input, the agent's answer and the \
rubric, then reply with one JSON object and nothing else: {"verdict": "pass", "reason": "..."} when the \
answer meets the rubric, {"verdict": "fail", "reason": "..."} when it does not. The reason is one sentence.

Rubric: {rubric}

User's input:
{input}

Agent's answer:
{answer}"""
"""The judge's fixed prompt (docs/evaluations.md quotes it): `{rubric}`, `{input}` and `{answer}` are filled in."""


@dataclass
class Verdict:
    passed: bool
    reason: str
    prompt: str = ""
    """The judge's request, as sent (kept with the run like any model call)."""
    reply: str = ""
    """The judge's answer as it came, or why there is none."""


@dataclass
class RunFacts:
    """What one run did, as grading reads it; recorded with the evaluation so `--rescore` needs no model (read back,
    its shape checked, by `evals.read_results`)."""

    case: str
    model: str
    repeat: int
    input: str = ""
    status: str = "failed"
    text: str = ""
    error: str | None = None
    incomplete: str | None = None
    """Why a `completed` run's answer is not the model's whole answer (cut off, or stopped by a guard)."""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """`{name, arguments}` in the order the model asked for them (a parallel round in its order)."""
    tokens: int = 0
    model_calls: int = 0
    duration_ms: float = 0.0
    instructions: str | None = None
    """The assembled instructions, when a case asks about them (`instructions_contain`)."""
    transcript: str | None = None
    judged: dict[str, Verdict] = field(default_factory=dict)
    """Rubric -> the judge's verdict."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def describe(expectation: Expectation) -> str:
    """The assertion as written, on one line (`contains: "eu-west"`)."""
    value = expectation.value
    shown = value.model_dump(exclude_defaults=False) if hasattr(value, "model_dump") else value
    return f"{expectation.kind}: {json.dumps(shown, ensure_ascii=False)}"


def grade(expectation: Expectation, facts: RunFacts) -> str | None:
    """None when the run meets the assertion, else what happened, in a sentence."""
    kind, value = expectation.kind, expectation.value
    check = _CHECKS[kind]
    return check(value, facts)


def _status(value: str, facts: RunFacts) -> str | None:
    if facts.status == value:
        return None
    return f"expected the run to end `{value}`; it ended `{facts.status}`" + (f": {facts.error}" if facts.error else "")


def _answer(facts: RunFacts) -> str:
    shown = facts.text if len(facts.text) <= 300 else facts.text[:300] + "…"
    return f"the answer was {json.dumps(shown, ensure_ascii=False)}" if facts.text else "the answer was empty"


def _contains(value: str, facts: RunFacts) -> str | None:
    return None if value in facts.text else f"expected the answer to contain {json.dumps(value)}; {_answer(facts)}"


def _not_contains(value: str, facts: RunFacts) -> str | None:
    return f"expected the answer not to contain {json.dumps(value)}; {_answer(facts)}" if value in facts.text else None


def _equals(value: str, facts: RunFacts) -> str | None:
    return None if facts.text.strip() == value.strip() else f"expected the answer {json.dumps(value)}; {_answer(facts)}"


GRADING_SECONDS = 1.0
"""The time the patterns of one assertion may take on one answer, in all (a `regex`, a schema's `pattern`s): a
pattern that backtracks for minutes on a hostile answer fails its assertion instead."""


class PatternTooSlow(Exception):
    """A pattern stopped at its time limit; the message is the sentence."""


class Deadline:
    """The end of one assertion's time for patterns."""

    def __init__(self, seconds: float = GRADING_SECONDS) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def search(self, pattern: str, text: str, what: str) -> bool:
        """Whether `pattern` matches somewhere in `text` (the `regex` package's syntax, a superset of Python's
        `re`); PatternTooSlow past the deadline. `what`: how the sentence names the pattern."""
        try:
            return regex.search(pattern, text, timeout=max(self.end - time.monotonic(), 0.001),
                                concurrent=True) is not None
        except TimeoutError:
            raise PatternTooSlow(f"{what} /{pattern}/ took longer than {self.seconds:g} s on the answer "
                                 f"({len(text):,} characters) and was stopped") from None


def _regex(value: str, facts: RunFacts) -> str | None:
    try:
        regex.compile(value)
    except regex.error as error:
        return f"the regex does not compile: {error}"
    try:
        found = Deadline().search(value, facts.text, "the regex")
    except PatternTooSlow as slow:
        return str(slow)
    return None if found else f"expected the answer to match /{value}/; {_answer(facts)}"


def _json_schema(value: Any, facts: RunFacts) -> str | None:
    import jsonschema
    import referencing.exceptions
    from oscova_runtime.evaluation import schema_problem

    problem = schema_problem(value)
    if problem is not None:
        return f"not a JSON Schema: {problem}"
    try:
        answer = json.loads(facts.text)
    except (ValueError, RecursionError):
        return f"expected a JSON answer; {_answer(facts)}"
    try:
        error = jsonschema.exceptions.best_match(schema_validator(value, Deadline()).iter_errors(answer))
    except PatternTooSlow as slow:
        return f"the answer does not validate against the schema: {slow}"
    except referencing.exceptions.Unresolvable as unresolvable:
        return (f"the schema refers to {getattr(unresolvable, 'ref', '') or unresolvable}, which is not fetched: a "
                "`json_schema` assertion resolves `$ref` only inside its own schema")
    except RecursionError:
        return "the schema refers to itself without end (a `$ref` cycle), so no answer can be checked against it"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"the answer does not validate against the schema: {(f'at `{where}`: ' if where else '') + error.message}"


def _refuse_retrieval(uri: str) -> Any:
    """The registry's retrieval of a `$ref` outside the schema: nothing is fetched, from the network or disk."""
    import referencing.exceptions

    raise referencing.exceptions.NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class


def schema_validator(schema: Any, deadline: Deadline) -> Any:
    """A validator of `schema` (its `$schema`'s draft, 2020-12 by default) whose `$ref`s resolve inside it only and
    whose patterns (`pattern`, `patternProperties`, and the properties `additionalProperties` leaves to them) run
    within `deadline`. `unevaluatedProperties` beside `patternProperties` would run them without one, so such a
    schema is refused with a sentence (PatternTooSlow)."""
    import jsonschema
    from jsonschema.exceptions import ValidationError
    from referencing import Registry

    base = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    if "unevaluatedProperties" in _keys(schema) and "patternProperties" in _keys(schema):
        raise PatternTooSlow("`unevaluatedProperties` beside `patternProperties` is not graded: its patterns would "
                             "run without a time limit")

    def pattern(validator: Any, value: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if validator.is_type(instance, "string") and not deadline.search(value, instance, "the pattern"):
            yield ValidationError(f"{instance!r} does not match {value!r}")

    def matching(patterns: Any, name: str) -> list[str]:
        return [p for p in patterns if deadline.search(p, name, "the property pattern")]

    def pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        for name, value in instance.items():
            for found in matching(patterns, name):
                yield from validator.descend(value, patterns[found], path=name, schema_path=found)

    def additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[ValidationError]:
        if not validator.is_type(instance, "object"):
            return
        named, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
        extras = [k for k in instance if k not in named and not matching(patterns, k)]
        if validator.is_type(extra, "object"):
            for name in extras:
                yield from validator.descend(instance[name], extra, path=name)
        elif not extra and extras:
            yield ValidationError(f"Additional properties are not allowed ({', '.join(map(repr, sorted(extras)))} "
                                  f"{'was' if len(extras) == 1 else 'were'} unexpected)")

    bounded = jsonschema.validators.extend(base, {"pattern": pattern, "patternProperties": pattern_properties,
                                                  "additionalProperties": additional_properties})
    return bounded(schema, registry=Registry(retrieve=_refuse_retrieval))  # type: ignore[call-arg]


def _keys(schema: Any) -> set[str]:
    """Every key of every object in `schema` (a tree of JSON values), without recursion."""
    found: set[str] = set()
    pending = [schema]
    while pending:
        value = pending.pop()
        if isinstance(value, dict):
            found.update(k for k in value if isinstance(k, str))
            pending.extend(value.values())
        elif isinstance(value, list):
            pending.extend(value)
    return found


def sequence(names: list[str]) -> str:
    return " → ".join(names) if names else "(no calls)"


def _tools(value: Any, facts: RunFacts) -> str | None:
    expected, actual = list(value.calls), [call["name"] for call in facts.tool_calls]
    if value.mode == "exact":
        ok = actual == expected
    elif value.mode == "in_order":
        remaining = iter(actual)
        ok = all(name in remaining for name in expected)  # a subsequence: `in` advances the iterator
    else:
        ok = not (Counter(expected) - Counter(actual))
    if ok:
        return None
    return f"tool calls ({value.mode}) differ\n  expected: {sequence(expected)}\n  actual:   {sequence(actual)}"


def _tool_called(value: Any, facts: RunFacts) -> str | None:
    calls = [call for call in facts.tool_calls if call["name"] == value.name]
    for call in calls:
        given = call.get("arguments")
        arguments: dict[str, Any] = given if isinstance(given, dict) else {}
        if all(key in arguments and arguments[key] == want for key, want in value.arguments.items()):
            return None
    if not calls:
        return f"expected a call of `{value.name}`; the run called: {sequence([c['name'] for c in facts.tool_calls])}"
    seen = "; ".join(json.dumps(c.get("arguments"), ensure_ascii=False) for c in calls)
    return f"expected a call of `{value.name}` with {json.dumps(value.arguments, ensure_ascii=False)}; its calls had {seen}"


def _no_tool(value: list[str], facts: RunFacts) -> str | None:
    called = [call["name"] for call in facts.tool_calls if call["name"] in value]
    return f"expected no call of {', '.join(f'`{n}`' for n in value)}; the run called " \
           f"{', '.join(f'`{n}`' for n in dict.fromkeys(called))}" if called else None


def _judge(value: str, facts: RunFacts) -> str | None:
    verdict = facts.judged.get(value)
    if verdict is None:
        return "this rubric was not graded in the recorded run: a `judge` assertion needs a live run (`oscova-lsp eval`)"
    return None if verdict.passed else f"the judge says it does not meet the rubric: {verdict.reason}"


def _at_most(what: str, attribute: str) -> Any:
    def check(value: int, facts: RunFacts) -> str | None:
        used = getattr(facts, attribute)
        return None if used <= value else f"expected at most {value} {what}; the run used {used:g}"

    return check


def _instructions_contain(value: str, facts: RunFacts) -> str | None:
    if facts.instructions is None:
        return "the assembled instructions were not recorded for this run"
    return None if value in facts.instructions else f"expected the assembled instructions to contain {json.dumps(value)}"


_CHECKS: dict[str, Any] = {
    "status": _status, "contains": _contains, "not_contains": _not_contains, "equals": _equals, "regex": _regex,
    "json_schema": _json_schema, "tools": _tools, "tool_called": _tool_called, "no_tool": _no_tool,
    "judge": _judge, "max_tokens": _at_most("tokens", "tokens"),
    "max_model_calls": _at_most("model calls", "model_calls"),
    "max_duration_ms": _at_most("milliseconds", "duration_ms"), "instructions_contain": _instructions_contain,
}


MAX_SIDE_CHARS = 100_000
"""The most of one side of a diff a failure carries (a longer answer is cut, and says so)."""


def sides(expectation: Expectation, facts: RunFacts) -> tuple[str, str] | None:
    """What a failed assertion on the run's output expected and what the run gave, as two texts for a diff
    view (`equals`, `contains`: the text and the answer; `tools`: a call a line; `tool_called`: the call with
    its arguments and the calls of that tool); None where there is no second text to set beside the answer."""
    kind, value = expectation.kind, expectation.value
    if kind in ("equals", "contains"):
        expected, actual = str(value), facts.text
    elif kind == "tools":
        expected, actual = "\n".join(value.calls), "\n".join(str(call["name"]) for call in facts.tool_calls)
    elif kind == "tool_called":
        calls = [c for c in facts.tool_calls if c["name"] == value.name] or facts.tool_calls
        expected = _call_line(value.name, value.arguments)
        actual = "\n".join(_call_line(c["name"], c.get("arguments")) for c in calls)
    else:
        return None
    return _bounded(expected), _bounded(actual)


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_SIDE_CHARS else f"{text[:MAX_SIDE_CHARS]}\n… cut: {len(text)} characters in all"


def _call_line(name: str, arguments: Any) -> str:
    return f"{name} {json.dumps(arguments, ensure_ascii=False, sort_keys=True)}"


def judge_messages(rubric: str, input: str, answer: str) -> str:
    """The judge's prompt for one rubric and run (no `str.format`: braces in answers stay as they are)."""
    return JUDGE_PROMPT.replace("{rubric}", rubric).replace("{input}", input).replace("{answer}", answer)


MAX_VERDICT_CHARS = 20_000
"""The longest judge reply read: a verdict is one JSON object with a one-sentence reason."""
MAX_VERDICT_DEPTH = 20
"""How deep the JSON of a verdict may nest before it is read (a verdict nests one level)."""


def _depth(text: str) -> int:
    """How deep the brackets of `text` nest, strings left out (one pass, no recursion)."""
    depth = deepest = 0
    quoted = escaped = False
    for char in text:
        if quoted:
            escaped, quoted = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            quoted = True
        elif char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}]":
            depth -= 1
    return deepest


def parse_verdict(reply: str) -> Verdict:
    """The judge's reply as a verdict; a reply that is not the asked-for JSON is a failed verdict that says so.
    The object is the text from the first `{` to the last `}` (found without a pattern), read only within
    `MAX_VERDICT_CHARS` and `MAX_VERDICT_DEPTH`."""
    text = reply.strip()
    if len(text) > MAX_VERDICT_CHARS:
        return Verdict(False, f"the judge's reply is {len(text):,} characters, over the {MAX_VERDICT_CHARS:,} a "
                              "verdict may take; it was not read")
    start, end = text.find("{"), text.rfind("}")
    candidate = text[start:end + 1] if 0 <= start < end else text
    if _depth(candidate) > MAX_VERDICT_DEPTH:
        return Verdict(False, f"the judge's reply nests deeper than the {MAX_VERDICT_DEPTH} levels a verdict may "
                              "take; it was not read")
    try:
        data = json.loads(candidate)
        verdict = str(data["verdict"]).strip().lower()
        reason = str(data.get("reason", "")).strip() or "(no reason given)"
    except (ValueError, KeyError, TypeError, RecursionError):
        shown = text if len(text) <= 200 else text[:200] + "…"
        return Verdict(False, f"the judge's reply is not the verdict JSON the prompt asks for: {json.dumps(shown)}")
    if verdict not in ("pass", "fail"):
        return Verdict(False, f"the judge's verdict is {json.dumps(verdict)}, not \"pass\" or \"fail\"")
    return Verdict(verdict == "pass", reason)
