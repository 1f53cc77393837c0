"""Which names the renderer of a template binds, and who binds each: the one answer the checks (OSC101,
OSC105), completion, hover and inlay hints all read.

A template is rendered in one or more *uses* (`Workspace.template_uses`): by the personal provider as an
agent's instructions, by the environment or memory provider, by a custom provider, possibly reached
through includes or an import without context. For each use, a name is bound by the renderer's variables
(the catalogue's tables in `oscova_runtime.catalogue`, `[variables]` keys, a custom provider's declared
`variables`), by a Jinja default global (in every use, with context or not), or by an including template's
`set`. Names the template binds itself (`set`, `for`, `with`, macro arguments) are not here: the scoping
is `jinja_source`'s, and a use of such a name is never free.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from oscova_runtime.catalogue import (
    JINJA_GLOBALS,
    PROVIDERS_BY_TYPE,
    UNTRUSTED_BUILTIN_VARIABLES,
    custom_provider_variables,
    environment_variables,
    memory_variables,
    personal_variables,
)
from oscova_runtime.host_config import CustomProviderSettings, HostConfig

from .files import DefinitionFile, HostFile, ParsedFile
from .template_uses import TemplateUse
from .text import Range
from .workspace import Workspace

SELF_DELIMITED_VARIABLES = frozenset({"agent_memory"})
"""Values that arrive wrapped in their own tag pair (the memory provider renders `<agent_memory>…</agent_memory>`)."""

BinderKind = Literal["provider", "variables", "custom", "jinja", "template"]


@dataclass(frozen=True, slots=True)
class Binder:
    """Who binds a name: a built-in provider, a `[variables]` key (bound by `personal`), a custom provider,
    a Jinja default global, or an including template's `set`."""

    renderer: str
    """The provider type or custom provider name; `jinja` or `template` for the other two kinds."""
    kind: BinderKind
    meaning: str
    class_name: str | None = None
    """The provider's class (its default state key), for a provider."""
    untrusted: str | None = None
    """Why the value is untrusted data (OSC105), or None."""
    offered: bool = True
    """False: bound, but completion does not offer it (`current_time` in standing instructions)."""

    @property
    def words(self) -> str:
        """How a message names the binder."""
        if self.kind == "jinja":
            return "Jinja"
        if self.kind == "template":
            return "an including template"
        if self.kind == "custom":
            return f"the custom provider `{self.renderer}`"
        return f"the `{self.renderer}` provider"


@dataclass(frozen=True, slots=True)
class Binding:
    """One binder of a name for one use of a template."""

    binder: Binder
    use: TemplateUse

    @property
    def renderer(self) -> str:
        return self.binder.renderer

    @property
    def meaning(self) -> str:
        return self.binder.meaning

    @property
    def use_label(self) -> str:
        return self.use.label


JINJA_MEANING = "A Jinja default global."
_JINJA: dict[str, Binder] = {name: Binder("jinja", "jinja", JINJA_MEANING) for name in sorted(JINJA_GLOBALS)}
_SET_BY_INCLUDER = Binder("template", "template", "Set by an including template.")


def _untrusted(renderer: str, name: str, custom: CustomProviderSettings | None) -> str | None:
    if name in SELF_DELIMITED_VARIABLES and renderer == "memory":
        return None  # the value already is a labelled block: another tag pair would nest it
    if name in UNTRUSTED_BUILTIN_VARIABLES:
        return "file-backed personal context" if name == "user_context" else "memory file contents"
    if custom is not None and not custom.trusted:
        return f"the `{renderer}` provider has `trusted = false`"
    return None


def _binder(renderer: str, name: str, meaning: str, custom: CustomProviderSettings | None) -> Binder:
    if custom is not None:
        return Binder(renderer, "custom", meaning, custom.class_name, _untrusted(renderer, name, custom))
    spec = PROVIDERS_BY_TYPE[renderer]
    var = next((v for v in spec.variables if v.name == name), None)
    return Binder(renderer, "provider" if var is not None else "variables", meaning, spec.class_name,
                  _untrusted(renderer, name, None), var.offered if var is not None else True)


_RENDERERS: dict[tuple[str, bool], tuple[HostConfig, Mapping[str, Binder]]] = {}
"""The last answer of `renderer_binders` per renderer, with the host configuration it was computed for."""


def renderer_binders(host: HostConfig, renderer: str, *, no_context: bool = False) -> Mapping[str, Binder]:
    """Name -> binder for a template rendered by `renderer` (provider type or custom provider name).

    Jinja's default globals are bound everywhere, under the provider's variables (which shadow them);
    a template reached without context (`import` without `with context`) sees those globals only.
    Computed once per host configuration (a new configuration is a new object)."""
    known = _RENDERERS.get((renderer, no_context))
    if known is not None and known[0] is host:
        return known[1]
    bound = _renderer_binders(host, renderer, no_context)
    _RENDERERS[(renderer, no_context)] = (host, bound)
    return bound


def _renderer_binders(host: HostConfig, renderer: str, no_context: bool) -> dict[str, Binder]:
    bound = dict(_JINJA)
    if no_context:
        return bound
    custom = None
    if renderer == "personal":
        meanings = personal_variables(host)  # built-ins, then `[variables]` keys
    elif renderer == "environment":
        meanings = environment_variables()
    elif renderer == "memory":
        meanings = memory_variables()
    else:
        custom = host.providers.get(renderer)
        meanings = custom_provider_variables(renderer, custom) if custom is not None else {}
    for name, meaning in meanings.items():
        bound[name] = _binder(renderer, name, meaning, custom)
    return bound


@dataclass(frozen=True, slots=True)
class TemplateBindings:
    """The uses of one template and, for each, what binds each name."""

    uses: tuple[TemplateUse, ...]
    unused: bool
    """No agent or provider renders the template: completion and hover take it for agent instructions; the
    checks report its syntax only."""
    _maps: tuple[Mapping[str, Binder], ...]
    """Aligned with `uses`; one mapping shared by the uses of one renderer (a partial may have thousands)."""
    _distinct: tuple[Mapping[str, Binder], ...] = field(init=False, repr=False, compare=False)
    """The mappings of `_maps`, each once (in the order of the first use of each)."""
    _kinds: tuple[tuple[Mapping[str, Binder], frozenset[str]], ...] = field(init=False, repr=False, compare=False)
    """The distinct (mapping, names set by includers) of the uses: the uses that bind alike, each kind once."""

    def __post_init__(self) -> None:
        # The checks ask of each name a template uses: made once here, not for every name.
        distinct: tuple[Mapping[str, Binder], ...]
        kinds: tuple[tuple[Mapping[str, Binder], frozenset[str]], ...]
        if len(self._maps) == 1:  # most templates: one use
            distinct, kinds = self._maps, ((self._maps[0], self.uses[0].extra_bound),)
        else:
            distinct = tuple({id(names): names for names in self._maps}.values())
            kinds = tuple({(id(names), use.extra_bound): (names, use.extra_bound)
                           for use, names in zip(self.uses, self._maps, strict=True)}.values())
        object.__setattr__(self, "_distinct", distinct)
        object.__setattr__(self, "_kinds", kinds)

    def binder(self, index: int, name: str) -> Binder | None:
        """Who binds `name` in the use `uses[index]`, or None: it renders empty there."""
        found = self._maps[index].get(name)
        if found is not None:
            return found
        return _SET_BY_INCLUDER if name in self.uses[index].extra_bound else None

    def unbound_uses(self, name: str) -> list[TemplateUse]:
        """The uses in which `name` renders empty."""
        for names, extra_bound in self._kinds:
            if name not in names and name not in extra_bound:
                break
        else:
            return []  # the common case: every use binds it
        return [use for use, names in zip(self.uses, self._maps, strict=True)
                if name not in names and name not in use.extra_bound]

    def untrusted(self, name: str) -> str | None:
        """Why `name` is untrusted data where a renderer binds it (OSC105), or None."""
        for names in self._distinct:  # one mapping per renderer
            binder = names.get(name)
            if binder is not None and binder.untrusted:
                return binder.untrusted
        return None

    def provider_names(self, uses: list[TemplateUse]) -> set[str]:
        """The names the renderers of `uses` (some of `self.uses`) bind, Jinja's globals aside."""
        wanted = {id(use) for use in uses}
        maps = {id(names): names for use, names in zip(self.uses, self._maps, strict=True) if id(use) in wanted}
        return {name for names in maps.values() for name, binder in names.items() if binder.kind != "jinja"}

    def by_name(self) -> dict[str, list[Binding]]:
        """Every name bound in some use, with its binders, one per use (uses that differ only in their
        includer bind alike: listed once)."""
        out: dict[str, dict[tuple[int, str], Binding]] = {}
        for use, names in zip(self.uses, self._maps, strict=True):
            for name, binder in [*names.items(), *((name, _SET_BY_INCLUDER) for name in use.extra_bound)]:
                found = out.setdefault(name, {})
                key = (id(binder), use.label)  # binders are shared per renderer: identity is enough
                if key not in found:
                    found[key] = Binding(binder, use)
        return {name: list(found.values()) for name, found in out.items()}


def inline_use(parsed: DefinitionFile) -> TemplateUse:
    """The one use of a definition's inline `instructions`: the personal provider renders them."""
    agent = parsed.raw_id or os.path.basename(parsed.path)
    return TemplateUse("personal", f"agent `{agent}` instructions", parsed.path, parsed.path)


def template_bindings(ws: Workspace, parsed: ParsedFile) -> TemplateBindings:
    """The bindings of a template file (through every use) or of a definition's inline instructions."""
    if isinstance(parsed, DefinitionFile):
        uses: list[TemplateUse] = [inline_use(parsed)]
        unused = False
    else:
        uses = ws.template_uses(parsed.path)
        unused = not uses
        if unused:
            uses = [TemplateUse("personal", "agent instructions", None, None)]
    host = ws.host
    maps = tuple(renderer_binders(host, use.renderer, no_context=use.no_context) for use in uses)
    return TemplateBindings(tuple(uses), unused, maps)


@dataclass(frozen=True, slots=True)
class Declaration:
    """Where the host configuration declares a name its binder binds."""

    binder: Binder
    path: str | None = None
    range: Range | None = None


def binders(ws: Workspace, name: str) -> list[Declaration]:
    """Everything in this host that binds `name` in some template, with where the host configuration declares
    it (a `[user]` key, a `[variables]` key, a custom provider's `variables`): built-in providers first,
    Jinja last."""
    host_file = ws.host_file if ws.host_file is not None and ws.host_file.config is not None else None
    host = ws.host
    out: list[Declaration] = []

    def declared(binder: Binder, rng: Range | None) -> Declaration:
        return Declaration(binder, host_file.path if host_file is not None and rng is not None else None, rng)

    for spec in PROVIDERS_BY_TYPE.values():
        for var in spec.variables:
            if var.name == name:
                user_key = ("user", name.removeprefix("user_")) if name.startswith("user_") else None
                out.append(declared(_binder(spec.type, name, var.meaning, None),
                                    _key_range(host_file, user_key) if user_key else None))
    if name in host.variables:
        out.append(declared(renderer_binders(host, "personal")[name], _key_range(host_file, ("variables", name))))
    for provider_name, provider in host.providers.items():
        if name in provider.variables:
            meaning = custom_provider_variables(provider_name, provider)[name]
            out.append(declared(_binder(provider_name, name, meaning, provider),
                                _declared_in_list(host_file, ("providers", provider_name, "variables"), name)))
    if name in _JINJA:
        out.append(Declaration(_JINJA[name]))
    return out


def _key_range(host: HostFile | None, key: tuple[str, ...]) -> Range | None:
    if host is None or host.doc is None:
        return None
    return host.doc.key_range((*host.prefix, *key))


def _declared_in_list(host: HostFile | None, key: tuple[str, ...], word: str) -> Range | None:
    """The quoted `word` inside the list at `key` of the host configuration, else the list's key."""
    if host is None or host.doc is None:
        return None
    path = (*host.prefix, *key)
    where = host.doc.value_range(path)
    if where is not None:
        lines = host.lines
        start, end = lines.offset(where.start), lines.offset(where.end)
        for quote in ('"', "'"):
            i = host.text.find(f"{quote}{word}{quote}", start, end)
            if i != -1:
                return lines.range(i + 1, i + 1 + len(word))
    return host.doc.key_range(path)
