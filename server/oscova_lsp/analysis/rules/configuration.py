"""What the host gives the agents: a model to run on (OSC042) and workspace grants inside the root (OSC043)
that are not the whole disk or the home folder (OSC044), in a definition's `workspaces` and in
`[environment] workspace_directories` alike."""

from __future__ import annotations

from oscova_runtime.grants import grant_outside, grant_too_wide

from ..diagnostics import Diagnostic
from ..files import DefinitionFile, HostFile
from ..toml_source import TomlDocument
from ..yaml_source import Path, YamlDocument
from .common import Context, first_line, value_place
from .rule import INFO, E, Rule, W

NO_MODELS = Rule(
    "OSC042", INFO, "host configuration", "No model is configured",
    """The host configuration has no `[models.NAME]` table: the workspace is checked, but its agents
cannot run until a model endpoint is configured (any OpenAI-compatible server, e.g. a local Ollama:
`[models.default]` with `model` and `base_url`). Reported once, on `oscova.toml`, not on every agent.""")


EMPTY_VARIABLE = Rule(
    "OSC045", W, "host configuration", "An empty `[variables]` value",
    """A personal variable declared with an empty value renders empty wherever a template uses it, as an
unbound one would, only without OSC101. It is what the "declare it in `[variables]`" quick fix leaves for you to
fill in.""")


def check(ctx: Context, parsed: HostFile) -> list[Diagnostic]:
    config, doc = ctx.host_configuration(parsed)
    if config is None or doc is None:
        return []
    out: list[Diagnostic] = []
    prefix = parsed.prefix
    for name, value in config.variables.items():
        if isinstance(value, str) and not value.strip():
            key = (*prefix, "variables", name)
            out.append(EMPTY_VARIABLE.diagnostic(parsed.path, doc.key_range(key) or value_place(doc, key),
                                                 f"`{name}` is empty in `[variables]`: every template renders it "
                                                 "empty; give it a value"))
    if not config.models:
        rng = doc.key_range(prefix) if prefix else None
        out.append(NO_MODELS.diagnostic(parsed.path, rng or first_line(parsed.lines),
                                        "no `[models]` section: the agents are checked but cannot run; add "
                                        "`[models.default]` with `model` and `base_url` (any OpenAI-compatible "
                                        "server, e.g. a local Ollama)"))
    return out + grants(ctx, parsed.path, doc, (*prefix, "environment", "workspace_directories"),
                        config.environment.workspace_directories)


GRANT_OUTSIDE = Rule(
    "OSC043", E, "definitions, host configuration", "A workspace grant outside the workspace root",
    """A folder in a definition's `workspaces` or in `[environment] workspace_directories` resolves
outside the workspace root (after `..` and symlinks). The agent's tools do not get it at run time unless
the host configuration says so explicitly: `[host] allow_outside_workspaces = true`.""")

GRANT_TOO_WIDE = Rule(
    "OSC044", W, "definitions, host configuration", "A workspace grant of `/` or the home folder",
    """A workspace grant is the whole file system, the home folder, or a folder holding it: the agent's
file tools could read and (with approval) write everything there, keys and dotfiles included. Reported
whether or not `[host] allow_outside_workspaces = true` lets it through: grant the folder the agent needs.""")


def definition_grants(ctx: Context, parsed: DefinitionFile) -> list[Diagnostic]:
    """OSC043 and OSC044 on a definition's `workspaces`."""
    agent = ctx.agent(parsed)
    if agent is None:
        return []
    return grants(ctx, parsed.path, agent.doc, ("workspaces",), agent.definition.workspaces)


def grants(ctx: Context, path: str, doc: YamlDocument | TomlDocument, key: Path, folders: list[str]) -> list[Diagnostic]:
    """OSC043 for a grant leaving the root without `[host] allow_outside_workspaces`; OSC044 for `/` or
    the home folder, which are never granted silently, allowed or not."""
    out: list[Diagnostic] = []
    ws = ctx.ws
    allowed = ws.host.host.allow_outside_workspaces
    for index, folder in enumerate(folders):
        rng = value_place(doc, (*key, index), key)
        if not allowed and grant_outside(ws.root, folder, real_path=ws.real_path):
            out.append(GRANT_OUTSIDE.diagnostic(path, rng, f"workspace grant `{folder}` is outside the workspace "
                                                "root: it is ignored at run time unless "
                                                "`[host] allow_outside_workspaces = true`"))
        too_wide = grant_too_wide(ws.root, folder, real_path=ws.real_path, home=ws.home_folder())
        if too_wide:
            out.append(GRANT_TOO_WIDE.diagnostic(path, rng, f"workspace grant `{folder}`: {too_wide} to the agent's "
                                                 "tools"))
    return out
