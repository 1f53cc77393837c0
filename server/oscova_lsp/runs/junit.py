"""JUnit XML, the Ant/Jenkins layout CI systems read: the one writer of `oscova-lsp test --format junit` and
`oscova-lsp eval --format junit`. Each report says what its suites and cases are (`JUnitSuite`, `JUnitCase`); this
counts them and writes the XML. XML holds no control character: every text is escaped as on a terminal (a name or a
path on one line)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal
from xml.etree import ElementTree

from ..reporting import printable, printable_line

Outcome = Literal["passed", "failure", "error"]


@dataclass(frozen=True, slots=True)
class JUnitCase:
    name: str
    classname: str
    file: str
    seconds: float
    line: int | None = None
    outcome: Outcome = "passed"
    message: str = ""
    """The failure's or error's one-line summary."""
    kind: str = ""
    """The failure's or error's `type`."""
    text: str = ""
    """The failure's or error's body."""
    output: str | None = None
    """`system-out`."""


@dataclass(frozen=True, slots=True)
class JUnitSuite:
    name: str
    cases: list[JUnitCase] = field(default_factory=list)


def _counts(cases: Sequence[JUnitCase]) -> dict[str, str]:
    return {"tests": str(len(cases)), "failures": str(sum(c.outcome == "failure" for c in cases)),
            "errors": str(sum(c.outcome == "error" for c in cases))}


def _seconds(cases: Sequence[JUnitCase]) -> str:
    return f"{sum(c.seconds for c in cases):.3f}"


def junit_xml(name: str, suites: Sequence[JUnitSuite]) -> str:
    everything = [case for suite in suites for case in suite.cases]
    top = ElementTree.Element("testsuites", {"name": name, **_counts(everything), "time": _seconds(everything)})
    for suite in suites:
        element = ElementTree.SubElement(top, "testsuite", {"name": printable_line(suite.name), **_counts(suite.cases),
                                                            "skipped": "0", "time": _seconds(suite.cases)})
        for case in suite.cases:
            attributes = {"name": printable_line(case.name), "classname": printable_line(case.classname),
                          "file": printable_line(case.file)}
            if case.line is not None:
                attributes["line"] = str(case.line)
            attributes["time"] = f"{case.seconds:.3f}"
            testcase = ElementTree.SubElement(element, "testcase", attributes)
            if case.output is not None:
                ElementTree.SubElement(testcase, "system-out").text = printable(case.output)
            if case.outcome != "passed":
                problem = ElementTree.SubElement(testcase, case.outcome,
                                                 {"message": printable(case.message), "type": case.kind})
                problem.text = printable(case.text)
    ElementTree.indent(top)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(top, encoding="unicode")
