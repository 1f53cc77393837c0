"""Every template path leads to a file inside the workspace root, and templates do not include each other in a
circle (OSC040): `instructions_file`, the template paths and `[memory] root` of the host configuration, and a
template's `include`, `import`, `from` and `extends`."""

from __future__ import annotations

import os

from oscova_runtime.paths import OUTSIDE_ROOT

from ..diagnostics import Diagnostic
from ..files import DefinitionFile, HostFile, TemplateFile, reference_ranges, template_facts
from ..template_uses import LISTED_USES
from ..yaml_source import Path
from .common import Context, value_place
from .rule import E, Rule

MISSING_TEMPLATE = Rule(
    "OSC040", E, "definitions, host configuration, templates",
    "A referenced template does not exist or is outside the workspace root",
    """An `instructions_file`, a template path in `oscova.toml`, or an `include`, `import`, `from` or
`extends` in a template names a file that does not exist, or one outside the workspace root (an absolute
path, `..`, or a symlink leading out). `instructions_file` is relative to the definition file that names
it; template paths in `oscova.toml` and in templates resolve against the workspace root. Files outside the
root are never read: not by the checker, not by preview, not by runs. `[memory] root` is held to the same
boundary: memory outside the workspace root is never read or written.

A template that no agent or provider renders (another tool's, whose paths resolve its own way) is only held to
the boundary: its missing templates and cycles are not reported (OSC107). A path the template computes
(`"parts/" ~ name ~ ".j2"`) is not checked; of a list of paths (`{% include ["a.j2", "b.j2"] %}`), which
renders the first that exists, none is reported missing.

Templates that include each other, directly or through others, are reported here too: once for each
group of templates that reach each other, on the reference of the group's first template (by path) into
the group. Rendering such a template recurses until Jinja gives up, unless a condition stops the
recursion.""")

ROOT_BASE = "the workspace root"
"""What template paths in templates and in the host configuration are relative to."""


def template_missing(value: str, base: str) -> str:
    """A template path that names no file; `base` is what the path is relative to (`ROOT_BASE`, or the
    definition file for `instructions_file`)."""
    return f"template `{value}` does not exist (relative to {base})"


def template_outside_root(value: str) -> str:
    """A template path that leads outside the root (absolute, `..`, a symlink): never read."""
    return f"template `{value}` is {OUTSIDE_ROOT}"


def memory_root_outside(value: str) -> str:
    """A `[memory] root` that leads outside the root: memory is never read or written there."""
    return f"`[memory] root` `{value}` leads outside the workspace root: memory is never read or written there"


def instructions_file(ctx: Context, parsed: DefinitionFile) -> list[Diagnostic]:
    """The definition's `instructions_file`, relative to the definition file."""
    agent = ctx.agent(parsed)
    if agent is None:
        return []
    definition, doc = agent.definition, agent.doc
    value = definition.instructions_file
    if not value or "instructions_file" in parsed.borrowed_keys:
        return []
    path = parsed.path
    target = ctx.ws.resolve_relative(path, value)
    if not ctx.ws.inside(target):
        return [MISSING_TEMPLATE.diagnostic(path, value_place(doc, ("instructions_file",)), template_outside_root(value))]
    if target not in ctx.ws.files and not ctx.ws.is_file(target):
        return [MISSING_TEMPLATE.diagnostic(path, value_place(doc, ("instructions_file",)),
                                            template_missing(value, f"the definition file {ctx.rel(path)}"))]
    return []


def template_references(ctx: Context, parsed: TemplateFile | DefinitionFile) -> list[Diagnostic]:
    """A template's (or inline instructions') `include`, `import`, `from` and `extends`, from the root."""
    out: list[Diagnostic] = []
    ws = ctx.ws
    facts = template_facts(parsed)
    # A target that was read is inside the root; one that is indexed but unread may be a link leading out.
    if facts is None or all(t in ws.files and ws.files[t].skipped is None for t in ws.reference_targets(parsed, facts)):
        return out  # the common case, without mapping every reference to its range
    rendered = not isinstance(parsed, TemplateFile) or ws.is_rendered(parsed.path)
    for ref, rng in reference_ranges(parsed):
        target = ws.resolve_template(ref.path)
        if not ws.inside(target):
            out.append(MISSING_TEMPLATE.diagnostic(parsed.path, rng, template_outside_root(ref.path)))
            continue
        if ref.ignore_missing or not rendered:
            continue  # a template no agent renders (another tool's, resolving paths its own way): OSC107 says so
        if target in ws.files or ws.is_file(target):
            continue
        out.append(MISSING_TEMPLATE.diagnostic(parsed.path, rng, template_missing(ref.path, ROOT_BASE)))
    return out


def inline_references(ctx: Context, parsed: DefinitionFile) -> list[Diagnostic]:
    """The references of a definition's inline `instructions` (while they are its own, not borrowed)."""
    if parsed.inline is None or "instructions" in parsed.borrowed_keys or ctx.agent(parsed) is None:
        return []
    return template_references(ctx, parsed)


def include_cycle(ctx: Context, parsed: TemplateFile) -> list[Diagnostic]:
    """Templates that include each other, reported once: at the first template of the cycle, on its
    reference into it. The checks follow the cycle only as far as it adds uses."""
    found = ctx.ws.include_cycle(parsed.path) if ctx.ws.is_rendered(parsed.path) else None
    if found is None:
        return []
    target, cycle = found
    ref, rng = next((ref, rng) for ref, rng in reference_ranges(parsed)
                    if ctx.ws.resolve_template(ref.path) == target)
    shown = cycle if len(cycle) <= LISTED_USES + 2 else [*cycle[:LISTED_USES], "", cycle[-1]]
    names = [f"`{ctx.rel(p)}`" if p else f"… {len(cycle) - LISTED_USES - 1} more …" for p in shown]
    size = len(cycle) - 1
    return [MISSING_TEMPLATE.diagnostic(
        parsed.path, rng, f"`{ref.kind}` of `{ref.path}` closes a cycle of {size} template{'s' if size != 1 else ''}: "
                          f"{' → '.join(names)}; rendering recurses until Jinja gives up unless a condition stops it")]


def host_templates(ctx: Context, parsed: HostFile) -> list[Diagnostic]:
    """The template paths of the host configuration, from the root, and `[memory] root` inside it."""
    config, doc = ctx.host_configuration(parsed)
    if config is None or doc is None:
        return []
    out: list[Diagnostic] = []
    prefix = parsed.prefix
    candidates: list[tuple[Path, str | None]] = [
        (("environment", "template"), config.environment.template),
        (("memory", "system_prompt"), config.memory.system_prompt),
    ]
    candidates += [(("providers", name, "template"), p.template) for name, p in config.providers.items()]
    for key_path, value in candidates:
        if not value:
            continue
        target = ctx.ws.resolve_template(value)
        rng = value_place(doc, (*prefix, *key_path))
        if not ctx.ws.inside(target):
            out.append(MISSING_TEMPLATE.diagnostic(parsed.path, rng, template_outside_root(value)))
            continue
        if target in ctx.ws.files or ctx.ws.is_file(target):
            continue
        out.append(MISSING_TEMPLATE.diagnostic(parsed.path, rng, template_missing(value, ROOT_BASE)))
    memory_root = config.memory.root
    if not ctx.ws.inside(os.path.normpath(os.path.join(ctx.ws.root, memory_root))):
        rng = value_place(doc, (*prefix, "memory", "root"))
        out.append(MISSING_TEMPLATE.diagnostic(parsed.path, rng, memory_root_outside(memory_root)))
    return out
