"""The checks of one file against the workspace: which rule families run on which kind of file, in one place.

Each family's rules, words and checks are in `rules/`; this module only dispatches to them.
"""

from __future__ import annotations

from .diagnostics import Diagnostic, Problem, Related
from .files import DefinitionFile, EvalFile, HostFile, ParsedFile, TemplateFile
from .lint import lint_table
from .rules import agent_tools, configuration, definition, evals, providers, references, templates, tools
from .rules.common import Check, Context
from .rules.registry import RULES
from .workspace import Workspace


def problem_diagnostic(path: str, problem: Problem) -> Diagnostic:
    """A finding of the file's parse, at its rule's default severity."""
    related = tuple(Related(path, rng, message) for rng, message in problem.related)
    fixes = (problem.fix,) if problem.fix is not None else ()
    return Diagnostic(path, problem.range, problem.code, problem.message, RULES[problem.code].severity, related, fixes)


CHECKS: dict[type[ParsedFile], tuple[Check, ...]] = {
    DefinitionFile: (providers.null_entries, definition.duplicate_id, providers.check, agent_tools.check, tools.check,
                     references.instructions_file, configuration.definition_grants, definition.model, templates.check_inline,
                     references.inline_references),
    TemplateFile: (references.include_cycle, references.template_references, templates.check_file),
    HostFile: (configuration.check, references.host_templates, lint_table),
    EvalFile: (evals.check,),
}
"""Which checks run on which kind of file. Each takes `(ctx, parsed)` and says nothing where its subject is
missing (a definition that does not validate, a host configuration that does not parse): a new check is a
function in its rule family's module and one entry here."""


class Checker:
    """Computes the diagnostics of one file against the workspace's current state."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self.context = Context(workspace)

    def check(self, path: str) -> list[Diagnostic]:
        parsed = self.ws.files.get(path)
        if parsed is None:
            return []
        self.context.begin()
        out = [problem_diagnostic(path, p) for p in parsed.problems]
        for check in CHECKS.get(type(parsed), ()):
            out += check(self.context, parsed)
        return out
