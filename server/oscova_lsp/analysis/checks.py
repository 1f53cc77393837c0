"""The checks of one file against the workspace: which rule families run on which kind of file, in one place.

Each family's rules, words and checks are in `rules/`; this module only dispatches to them.
"""

from __future__ import annotations

from oscova_runtime.catalogue import plan_providers

from .diagnostics import Diagnostic, Problem, Related
from .files import DefinitionFile, EvalFile, HostFile, TemplateFile
from .lint import lint_table
from .rules import agent_tools, definition, evals, host, providers, references, templates, tools
from .rules.common import Context
from .rules.registry import RULES
from .workspace import Workspace


def problem_diagnostic(path: str, problem: Problem) -> Diagnostic:
    """A finding of the file's parse, at its rule's default severity."""
    related = tuple(Related(path, rng, message) for rng, message in problem.related)
    fixes = (problem.fix,) if problem.fix is not None else ()
    return Diagnostic(path, problem.range, problem.code, problem.message, RULES[problem.code].severity, related, fixes)


class Checker:
    """Computes the diagnostics of one file against the workspace's current state."""

    def __init__(self, workspace: Workspace) -> None:
        self.ws = workspace
        self.context = Context(workspace)

    def check(self, path: str) -> list[Diagnostic]:
        parsed = self.ws.files.get(path)
        if parsed is None:
            return []
        out = [problem_diagnostic(path, p) for p in parsed.problems]
        if isinstance(parsed, DefinitionFile):
            out += self._definition(parsed)
        elif isinstance(parsed, TemplateFile):
            out += self._template(parsed)
        elif isinstance(parsed, HostFile):
            out += self._host(parsed)
        elif isinstance(parsed, EvalFile):
            out += evals.check(self.context, parsed)
        return out

    def _definition(self, parsed: DefinitionFile) -> list[Diagnostic]:
        ctx, doc = self.context, parsed.doc
        out = providers.null_entries(parsed)
        if doc is None or "*" in parsed.borrowed:  # the file is broken; others see its last good facts
            return out
        out += definition.duplicate_id(ctx, parsed, doc)
        agent = parsed.definition
        if agent is None:
            return out
        plan = plan_providers(agent, self.ws.host, requested=True)  # what the configured host builds
        out += providers.check(ctx, parsed, agent, doc, plan)
        if "agent_tools" not in parsed.borrowed:
            out += agent_tools.check(ctx, parsed, agent, doc)
        out += tools.check(ctx, parsed, agent, doc, plan)
        out += references.instructions_file(ctx, parsed, agent, doc)
        out += host.grants(ctx, parsed.path, doc, ("workspaces",), agent.workspaces)
        out += definition.model(ctx, parsed, agent, doc)
        if parsed.inline is not None and "instructions" not in parsed.borrowed:
            out += templates.check_inline(ctx, parsed, doc) + references.template_references(ctx, parsed)
        return out

    def _template(self, parsed: TemplateFile) -> list[Diagnostic]:
        ctx = self.context
        return [*references.include_cycle(ctx, parsed), *references.template_references(ctx, parsed),
                *templates.check_file(ctx, parsed)]

    def _host(self, parsed: HostFile) -> list[Diagnostic]:
        ctx, config, doc = self.context, parsed.config, parsed.doc
        if config is None or doc is None or parsed.borrowed:
            return []
        return [*host.check(ctx, parsed, doc, config), *references.host_templates(ctx, parsed, doc, config),
                *lint_table(parsed, doc, config)]
