"""The provider list of a definition as the configured host builds it: no null entry (OSC010), no state key
twice (OSC011) or the chat history's (OSC012), no unknown type (OSC013), no provider that contributes nothing
(OSC014). What is checked is the plan `catalogue.plan_providers` returns: the list the host builds."""

from __future__ import annotations

from oscova_runtime.catalogue import CHAT_HISTORY_STATE_KEY, PlannedProvider, ProviderPlan, provider_types
from oscova_runtime.definition import AgentDefinition, ProviderEntry

from ..diagnostics import Diagnostic, Fix, Related, TextEdit
from ..files import DefinitionFile
from ..suggest import did_you_mean
from ..text import Position, Range
from ..yaml_source import Path, YamlDocument
from .common import Context, value_place
from .rule import INFO, E, Rule

NULL_ENTRY = Rule(
    "OSC010", E, "definitions", "A null entry in `context_providers`",
    """`- null`, `- ~` or a bare `-` in `context_providers` is a null provider. The provider list of an
agent build request must not contain null entries: the agent fails when it is built, not before.""",
    "remove the entry")

STATE_KEY_TAKEN = Rule(
    "OSC011", E, "definitions", "Two providers of the assembled list share a state key",
    """Every context provider has state keys (by default its class name), and agent construction throws
when two providers share one. This happens when a provider is listed in `context_providers` while the
default order already has it (for example `memory` with `memory: true`), or when one type is listed twice
without distinct `state_key` values.""",
    "set a unique `state_key`")

CHAT_HISTORY_KEY = Rule(
    "OSC012", E, "definitions", "A provider's state key equals the chat-history provider's",
    """The chat-history provider (`InMemoryChatHistoryProvider`) is always attached; agent construction
throws when a context provider shares its state key.""",
    "set another `state_key`")

UNKNOWN_PROVIDER = Rule(
    "OSC013", E, "definitions", "Unknown provider type",
    """The `context_providers` entry names neither a built-in provider type nor a custom provider
declared under `[providers.NAME]` in `oscova.toml`.""",
    "use the closest type")

CONTRIBUTES_NOTHING = Rule(
    "OSC014", INFO, "definitions", "A listed provider contributes nothing under the host's conditions",
    """The provider is built but, with this host configuration, has nothing to contribute: for example
`memory` with no `[host] user_id`, `library` without the Library grant, or `todo` while the host has todo
support off.""")


def null_entries(ctx: Context, parsed: DefinitionFile) -> list[Diagnostic]:
    """OSC010 on each null entry the parse left out of the list (also while the file is broken)."""
    doc = parsed.doc
    if doc is None:
        return []
    return [_null_entry(parsed.path, doc, index) for index in parsed.null_entries]


def _null_entry(path: str, doc: YamlDocument, index: int) -> Diagnostic:
    message = "null entry in `context_providers`: the agent fails when it is built"
    span = doc.span(("context_providers", index))
    if span is None:  # the index comes from this document's own list; without its span, no fix
        return NULL_ENTRY.diagnostic(path, doc.best_range(("context_providers",)), message)
    text = doc.text
    dash = text.rfind("-", 0, span.start_offset + 1)
    if span.start_offset == span.end_offset and dash != -1:
        # A bare `-`: the item is the dash itself.
        rng = doc.lines.range(dash, dash + 1)
    else:
        rng = span.value
    line = rng.start.line
    stripped = doc.lines.line_text(line).strip()
    alone_on_its_line = stripped.startswith("-") and stripped.lstrip("- ").split("#")[0].strip() in (
        "", "null", "~", "Null", "NULL")
    # A block item alone on its line goes with its line; a flow item (`[a, null]`) goes by itself.
    delete = Range(Position(line, 0), Position(line + 1, 0)) if alone_on_its_line else rng
    return NULL_ENTRY.diagnostic(path, rng, message, Fix("Remove the null entry", (TextEdit(path, delete, ""),)))


def check(ctx: Context, parsed: DefinitionFile) -> list[Diagnostic]:
    agent = ctx.agent(parsed)
    if agent is None:
        return []
    definition, doc, plan = agent.definition, agent.doc, agent.plan
    out: list[Diagnostic] = []
    path = parsed.path
    for unknown in plan.unknown:
        out.append(_unknown_type(ctx, parsed, definition, doc, unknown.entry_index, unknown.type))
    owners: dict[str, PlannedProvider] = {}
    for provider in plan.providers:
        for key in provider.state_keys:
            if key == CHAT_HISTORY_STATE_KEY:
                out.append(_state_key_problem(ctx, parsed, doc, provider, key, None, _taken(plan)))
                continue
            first = owners.get(key)
            if first is None:
                owners[key] = provider
                continue
            out.append(_state_key_problem(ctx, parsed, doc, provider, key, first, _taken(plan)))
        if provider.origin == "listed" and provider.inactive_reason and provider.entry_index is not None:
            rng = _entry_range(doc, _file_index(parsed, provider.entry_index))
            out.append(CONTRIBUTES_NOTHING.diagnostic(
                path, rng, f"`{provider.type}` contributes nothing here: {provider.inactive_reason}"))
    return out


def _taken(plan: ProviderPlan) -> frozenset[str]:
    """Every state key of the plan's providers (a clash's fix picks one outside them): made only for a clash."""
    return frozenset(k for p in plan.providers for k in p.state_keys)


def _unknown_type(ctx: Context, parsed: DefinitionFile, definition: AgentDefinition, doc: YamlDocument,
                  entry_index: int, type_name: str) -> Diagnostic:
    path, host = parsed.path, ctx.ws.host
    file_index = _file_index(parsed, entry_index)
    entry = definition.context_providers[entry_index]
    type_path: Path = ("context_providers", file_index) if isinstance(entry, str) else (
        "context_providers", file_index, "type")
    rng = doc.value_range(type_path) or _entry_range(doc, file_index)
    choice = did_you_mean(type_name, provider_types(host))
    fix = Fix(f"Use provider type `{choice.name}`", (TextEdit(path, rng, choice.name),)) if choice else None
    known = ", ".join(f"`{t}`" for t in provider_types(host))
    return UNKNOWN_PROVIDER.diagnostic(path, rng, f"unknown provider type `{type_name}`"
                                       + (choice.words if choice else f" (known: {known})"), fix)


def _entry_range(doc: YamlDocument, index: int) -> Range:
    return value_place(doc, ("context_providers", index), ("context_providers",))


def _file_index(parsed: DefinitionFile, index: int) -> int:
    """Index among non-null entries -> index in the file's list."""
    original = index
    for null in sorted(parsed.null_entries):
        if null <= original:
            original += 1
    return original


def _state_key_problem(ctx: Context, parsed: DefinitionFile, doc: YamlDocument, provider: PlannedProvider, key: str,
                       first: PlannedProvider | None, taken: frozenset[str]) -> Diagnostic:
    """OSC012 (`first` None: the key of the chat-history provider) or OSC011 (the key `first` has), with the fix
    where the key comes from: the entry's `state_key`, or a custom provider's `state_keys` in the host file."""
    rule = CHAT_HISTORY_KEY if first is None else STATE_KEY_TAKEN
    path, definition = parsed.path, parsed.definition
    # A default provider colliding can only be the chat-history key (and a plan implies a definition).
    if provider.entry_index is None or definition is None:
        rng = doc.key_range(("id",)) or doc.best_range(())
        return rule.diagnostic(path, rng, f"`{provider.type}` has the state key `{key}`")
    file_index = _file_index(parsed, provider.entry_index)
    entry = definition.context_providers[provider.entry_index]
    key_path: Path = ("context_providers", file_index, "state_key")
    explicit = doc.value_range(key_path) if isinstance(entry, ProviderEntry) and entry.state_key else None
    rng = explicit or _entry_range(doc, file_index)
    new_key = _unique_state_key(provider, taken)
    configured = None if explicit else _configured_state_key(ctx, provider, key, new_key)
    if configured is not None:
        fix: Fix | None = configured
        source = f"; `{provider.type}` takes it from `[providers.{provider.type}] state_keys` in oscova.toml"
    else:
        edits = _state_key_edits(path, doc, file_index, entry, new_key)
        fix = Fix(f"Set `state_key: {new_key}`", edits) if edits else None
        source = ""
    if first is None:
        message = (f"`{provider.type}` uses the state key `{key}`, which belongs to the chat-history provider "
                   f"that every agent has{source}: the agent fails when it is built")
        return rule.diagnostic(path, rng, message, fix)
    related = (Related(path, _provider_origin_range(parsed, doc, first),
                       f"`{first.type}` ({first.class_name}) already has the state key `{key}`"),)
    where = (f"`{first.type}` of the default order" if first.origin == "default"
             else f"the earlier entry `{first.type}`")
    message = (f"`{provider.type}` has the state key `{key}`, which {where} already uses{source}: the agent fails "
               "when it is built")
    return rule.diagnostic(path, rng, message, fix, related=related)


def _configured_state_key(ctx: Context, provider: PlannedProvider, key: str, new_key: str) -> Fix | None:
    """The fix of a clash that a custom provider's `state_keys` in the host file causes: that entry, changed."""
    custom, host_file = provider.custom, ctx.ws.host_file
    if custom is None or not custom.state_keys or key not in custom.state_keys or host_file is None \
            or host_file.doc is None:
        return None
    index = custom.state_keys.index(key)
    rng = host_file.doc.value_range((*host_file.prefix, "providers", provider.type, "state_keys", index))
    if rng is None:
        return None
    return Fix(f"Set `[providers.{provider.type}] state_keys` to `{new_key}`",
               (TextEdit(host_file.path, rng, f'"{new_key}"'),))


def _provider_origin_range(parsed: DefinitionFile, doc: YamlDocument, provider: PlannedProvider) -> Range:
    if provider.entry_index is not None:
        return _entry_range(doc, _file_index(parsed, provider.entry_index))
    trigger = {"memory": "memory", "skills": "skills", "todo": "todo", "vision": "vision",
               "agent_tools": "agent_tools", "tool_search": "tool_mode"}.get(provider.type)
    for key in (trigger, "default_providers", "id"):
        if key and doc.key_range((key,)):
            return doc.key_range((key,))  # type: ignore[return-value]
    return doc.best_range(())


def _state_key_edits(path: str, doc: YamlDocument, index: int, entry: str | ProviderEntry,
                     new_key: str) -> tuple[TextEdit, ...]:
    item_path: Path = ("context_providers", index)
    item = doc.span(item_path)
    if item is None:  # no span to edit: the diagnostic goes without a quick fix
        return ()
    if isinstance(entry, str):
        return (TextEdit(path, item.value, f"{{type: {entry}, state_key: {new_key}}}"),)
    existing = doc.value_range((*item_path, "state_key"))
    if existing is not None:
        return (TextEdit(path, existing, new_key),)
    type_span = doc.span((*item_path, "type"))
    if type_span is None:
        return ()
    if item.style == "[":
        return (TextEdit(path, Range(type_span.value.end, type_span.value.end), f", state_key: {new_key}"),)
    indent = type_span.key.start.character if type_span.key else type_span.value.start.character
    return (TextEdit(path, Range(type_span.value.end, type_span.value.end),
                     f"\n{' ' * indent}state_key: {new_key}"),)


def _unique_state_key(provider: PlannedProvider, taken: frozenset[str]) -> str:
    """The provider's class name when no provider of the list uses it, else with the first free number."""
    if provider.class_name not in taken:
        return provider.class_name
    n = 2
    while f"{provider.class_name}{n}" in taken:
        n += 1
    return f"{provider.class_name}{n}"
