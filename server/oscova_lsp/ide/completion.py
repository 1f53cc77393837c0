"""Completion: variables, filters, tags and template paths inside `{{ }}`/`{% %}`; keys and values in
definitions (provider types, agent ids, tool names, model names, template paths)."""

from __future__ import annotations

import bisect
import dataclasses
import os
import re
import threading
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from jinja2.defaults import DEFAULT_FILTERS
from oscova_runtime.catalogue import (
    BUILTIN_TOOLS,
    PROVIDERS_BY_TYPE,
    SELECTABLE_TOOLS,
    provider_types,
)
from oscova_runtime.definition import AgentDefinition

from ..analysis.files import DefinitionFile, EvalFile, ParsedFile, TemplateFile, template_facts
from ..analysis.text import LineIndex, Position, Range
from ..analysis.workspace import Workspace
from . import eval_files
from .model import CompletionItem, ItemKind
from .queries import bindings_for

_TAGS = ("if", "elif", "else", "endif", "for", "endfor", "set", "endset", "include", "import", "from",
         "extends", "block", "endblock", "macro", "endmacro", "call", "endcall", "filter", "endfilter",
         "with", "endwith", "raw", "endraw")
_PATH_RE = re.compile(r"""\b(?:include|import|extends|from)\s+(['"])([^'"]*)$""")
_KEY_TYPED_RE = re.compile(r"^(\s*)([A-Za-z_]*)$")
_ITEM_RE = re.compile(r"^(\s*)-\s+(?:type:\s*)?['\"]?([\w.-]*)$")
_VALUE_RE = re.compile(r"^(\s*)(?:-\s+)?([A-Za-z_]+):\s*(.*)$")
_PARENT_RE = re.compile(r"^(\s*)([A-Za-z_]+):\s*(?:#.*)?$")
_TOP_KEY_RE = re.compile(r"^([A-Za-z_]+)\s*:")
_ID_RE = re.compile(r"^id:\s*['\"]?([A-Za-z0-9][A-Za-z0-9_.-]*)", re.MULTILINE)
_BOOL_KEYS = frozenset(name for name, f in AgentDefinition.model_fields.items()
                       if f.annotation is bool or name == "compaction")

LIMIT = 50
"""At most this many items are sent; past it the list is marked incomplete and narrowed as the user types."""


@dataclass(frozen=True, slots=True)
class Completions:
    items: list[CompletionItem]
    incomplete: bool = False


def complete(ws: Workspace, parsed: ParsedFile, pos: Position) -> Completions:
    """The items at `pos`, narrowed to the word typed so far and capped at `LIMIT`."""
    items = _complete(ws, parsed, pos)
    if isinstance(items, Completions):
        return items
    if len(items) <= LIMIT:
        return Completions(items)
    ordered = sorted(items, key=lambda item: item.sort_text or item.label)
    picked = _first_matches([item.label.lower() for item in ordered], _typed(parsed, items[0].replace), LIMIT)
    return Completions([ordered[i] for i in picked], incomplete=True)


def _typed(parsed: ParsedFile, replace: Range | None) -> str:
    """The word typed so far (what an item replaces), lower-cased."""
    if replace is None:
        return ""
    lines = parsed.lines
    return parsed.text[lines.offset(replace.start):lines.offset(replace.end)].lower()


def _first_matches(labels: Sequence[str], typed: str, limit: int) -> list[int]:
    """The indexes of the first `limit` labels (lower-cased, in their order) that start with `typed`, then of
    those that hold its letters in order: the items a client keeps as the user types, best first."""
    out: list[int] = []
    for index, label in enumerate(labels):
        if label.startswith(typed):
            out.append(index)
            if len(out) == limit:
                return out
    if typed:
        letters = re.compile(".*?".join(map(re.escape, typed)))
        for index, label in enumerate(labels):
            if not label.startswith(typed) and letters.search(label):
                out.append(index)
                if len(out) == limit:
                    break
    return out


Found = list[CompletionItem] | Completions
"""Items still to narrow, or (agent ids, narrowed on their index) the answer."""


def _complete(ws: Workspace, parsed: ParsedFile, pos: Position) -> Found:
    text, lines = parsed.text, parsed.lines
    offset = lines.offset(pos)
    if isinstance(parsed, TemplateFile):
        region = jinja_region(text, offset, 0)
        return _template(ws, parsed, lines, offset, region) if region else []
    if isinstance(parsed, DefinitionFile):
        region = jinja_region(text, offset, lines.line_start(pos.line))
        if region is not None:
            return _template(ws, parsed, lines, offset, region)
        return _definition(ws, parsed, lines, pos, offset)
    if isinstance(parsed, EvalFile):
        return eval_files.complete(ws, parsed, pos)
    return []


def jinja_region(text: str, offset: int, low: int) -> tuple[str, int] | None:
    """(`{{` or `{%`, the offset after the opener) when `offset` is inside an unclosed expression or tag."""
    best = -1
    opener = ""
    for candidate in ("{{", "{%"):
        i = text.rfind(candidate, low, offset)
        if i > best:
            best, opener = i, candidate
    if best == -1:
        return None
    closer = "}}" if opener == "{{" else "%}"
    if text.find(closer, best + 2, offset) != -1 or text.find("#}", best + 2, offset) != -1:
        return None
    return opener, best + 2


def _partial(text: str, offset: int, word: str = r"[A-Za-z0-9_]") -> int:
    pattern = re.compile(word)
    start = offset
    while start > 0 and pattern.match(text[start - 1]):
        start -= 1
    return start


def _template(ws: Workspace, parsed: ParsedFile, lines: LineIndex, offset: int,
              region: tuple[str, int]) -> list[CompletionItem]:
    text = parsed.text
    opener, code_start = region
    code = text[code_start:offset]
    path_match = _PATH_RE.search(code)
    if path_match is not None:
        start = offset - len(path_match.group(2))
        return _template_paths(ws, ws.root, lines.range(start, offset))
    start = _partial(text, offset)
    replace = lines.range(start, offset)
    before = text[code_start:start].rstrip()
    if before.endswith("."):
        return []
    if before.endswith("|") or re.search(r"\bis\s*(?:not\s*)?$", before):
        return [CompletionItem(name, ItemKind.FUNCTION, "Jinja filter", replace=replace)
                for name in sorted(DEFAULT_FILTERS)] if before.endswith("|") else []
    items: list[CompletionItem] = []
    if opener == "{%" and not before.lstrip("-+ \t\r\n"):
        items += [CompletionItem(tag, ItemKind.KEYWORD, "Jinja tag", replace=replace, sort_text=f"2{tag}")
                  for tag in _TAGS]
    bindings = bindings_for(ws, parsed)
    jinja_globals = []
    for name, all_found in sorted(bindings.items()):
        found = [b for b in all_found if b.binder.offered and b.binder.kind != "jinja"]
        if not found:
            if any(b.binder.kind == "jinja" for b in all_found):
                jinja_globals.append(name)
            continue
        renderers = sorted({b.renderer for b in found})
        meaning = found[0].meaning
        uses = "; ".join(sorted({b.use_label for b in found}))
        items.append(CompletionItem(
            name, ItemKind.VARIABLE, f"{', '.join(renderers)}",
            f"`{name}`: {meaning}\n\nBound by the `{'`, `'.join(renderers)}` provider for {uses}.",
            replace=replace, sort_text=f"0{name}"))
    facts = template_facts(parsed)
    for name in sorted((facts.local_names if facts else frozenset()) - set(bindings)):
        items.append(CompletionItem(name, ItemKind.VARIABLE, "set in this template", replace=replace,
                                    sort_text=f"1{name}"))
    for name in jinja_globals:
        items.append(CompletionItem(name, ItemKind.FUNCTION, "Jinja global", replace=replace, sort_text=f"3{name}"))
    return items


def _template_paths(ws: Workspace, base: str, replace: Range, exclude: str | None = None) -> list[CompletionItem]:
    out = []
    for parsed in sorted(ws.templates(), key=lambda p: p.path):
        if parsed.path == exclude:
            continue
        rel = os.path.relpath(parsed.path, base).replace(os.sep, "/")
        uses = ws.template_uses(parsed.path)
        detail = ", ".join(sorted({u.renderer for u in uses})) or "unused template"
        out.append(CompletionItem(rel, ItemKind.FILE, detail, replace=replace))
    return out


def _definition(ws: Workspace, parsed: DefinitionFile, lines: LineIndex, pos: Position,
                offset: int) -> Found:
    line_start = lines.line_start(pos.line)
    before = parsed.text[line_start:offset]
    key_match = _KEY_TYPED_RE.match(before)
    if key_match is not None:
        start = offset - len(key_match.group(2))
        replace = lines.range(start, offset)
        if key_match.group(1) == "":
            return _keys(parsed, replace, pos.line)
        if _parent_key(lines, pos.line, len(key_match.group(1))) == "context_providers":
            return [CompletionItem(k, ItemKind.PROPERTY, insert_text=f"{k}: ", replace=replace)
                    for k in ("type", "state_key")]
        return []
    item_match = _ITEM_RE.match(before)
    if item_match is not None:
        start = offset - len(item_match.group(2))
        key = "context_providers" if "type:" in before else _parent_key(lines, pos.line, len(item_match.group(1)))
        return _values(ws, parsed, key, lines.range(start, offset)) if key else []
    value_match = _VALUE_RE.match(before)
    if value_match is not None:
        key, rest = value_match.group(2), value_match.group(3)
        if key == "type":
            key = "context_providers"
        elif key == "state_key":
            return []
        partial = re.split(r"[\[,{]\s*", rest)[-1].lstrip("'\"")
        if partial != rest.lstrip("'\"") and key not in ("agent_tools", "tools", "pinned_tools", "context_providers",
                                                          "skills", "workspaces"):
            return []
        start = offset - len(partial)
        return _values(ws, parsed, key, lines.range(start, offset))
    return []


class _AgentIndex:
    """The agent ids of a workspace, in the order completion lists them (exposed agents first), with what an
    item shows. Parsed files are never changed once added, so an entry stays right while its definition is
    the same object: after a change only the changed definitions are read again, and a request otherwise
    only filters and caps. Kept per root, so copies of a workspace (snapshots) share it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: tuple[weakref.ref[Workspace], int] | None = None
        """The workspace and generation the index was last brought up to date with."""
        self.keys: list[str] = []
        """The items' sort texts, sorted."""
        self.items: list[CompletionItem] = []
        """Aligned with `keys`; without `replace`, which each request sets."""
        self.labels: list[str] = []
        """Lower-cased ids, aligned with `keys`."""
        self.entries: dict[str, tuple[CompletionItem, DefinitionFile]] = {}
        """Agent id -> its item and the definition it was read from."""

    @contextmanager
    def current(self, ws: Workspace) -> Iterator[_AgentIndex]:
        """The index brought up to date with `ws`, held for reading."""
        with self._lock:
            if self._seen is None or self._seen[0]() is not ws or self._seen[1] != ws.generation:
                self._update(ws)
                self._seen = (weakref.ref(ws), ws.generation)
            yield self

    def _update(self, ws: Workspace) -> None:
        kept = 0
        for agent_id in ws.defs_by_id:
            target = ws.definition_by_id(agent_id)
            entry = self.entries.get(agent_id)
            if entry is None or entry[1] is not target:
                self._drop(agent_id)
                if target is not None:
                    self._add(agent_id, target)
            kept += target is not None
        if kept != len(self.entries):  # ids no definition has any more
            for agent_id in [i for i in self.entries if i not in ws.defs_by_id]:
                self._drop(agent_id)

    def _drop(self, agent_id: str) -> None:
        found = self.entries.pop(agent_id, None)
        if found is not None:
            at = bisect.bisect_left(self.keys, found[0].sort_text or "")
            del self.keys[at], self.items[at], self.labels[at]

    def _add(self, agent_id: str, target: DefinitionFile) -> None:
        definition = target.definition
        exposed = bool(definition and definition.exposed_as_tool)
        doc = (definition.description or "") if definition else ""
        detail = (definition.display_name if definition else agent_id) + ("" if exposed else " (not exposed_as_tool)")
        key = ("0" if exposed else "1") + agent_id
        item = CompletionItem(agent_id, ItemKind.AGENT, detail, doc or None, sort_text=key)
        at = bisect.bisect_left(self.keys, key)
        self.keys.insert(at, key)
        self.items.insert(at, item)
        self.labels.insert(at, agent_id.lower())
        self.entries[agent_id] = (item, target)


_AGENT_INDEXES: dict[str, _AgentIndex] = {}
_ROOTS_KEPT = 8
"""Indexes of this many workspace roots are kept (a server has one per root; tests open many)."""


def _agent_index(ws: Workspace) -> _AgentIndex:
    index = _AGENT_INDEXES.get(ws.root)
    if index is None:
        while len(_AGENT_INDEXES) >= _ROOTS_KEPT:
            _AGENT_INDEXES.pop(next(iter(_AGENT_INDEXES)))
        index = _AGENT_INDEXES[ws.root] = _AgentIndex()
    return index


def _agent_ids(ws: Workspace, parsed: DefinitionFile, replace: Range) -> Completions:
    """Every other agent's id, narrowed to the word typed and capped at `LIMIT` like any list."""
    own = _ID_RE.search(parsed.text)
    own_id = parsed.raw_id or (own.group(1) if own else None)
    with _agent_index(ws).current(ws) as index:
        total = len(index.items) - (1 if own_id in ws.defs_by_id else 0)
        if total <= LIMIT:
            picked: list[int] = list(range(len(index.items)))
        else:
            picked = _first_matches(index.labels, _typed(parsed, replace), LIMIT + 1)
        items = [dataclasses.replace(index.items[i], replace=replace) for i in picked
                 if index.items[i].label != own_id]
    return Completions(items[:LIMIT], incomplete=total > LIMIT)


def _parent_key(lines: LineIndex, line: int, indent: int) -> str | None:
    for n in range(line - 1, -1, -1):
        text = lines.line_text(n)
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        width = len(text) - len(text.lstrip(" "))
        match = _PARENT_RE.match(text)
        if match is not None and width <= indent:
            return match.group(2)
        if width == 0 and not text.startswith("-"):
            return None
    return None


def _keys(parsed: DefinitionFile, replace: Range, line: int) -> list[CompletionItem]:
    # From the text, not the parse: while a key is being typed the YAML rarely parses.
    lines = parsed.lines
    present = {m.group(1) for n in range(lines.line_count) if n != line
               for m in [_TOP_KEY_RE.match(lines.line_text(n))] if m is not None}
    out = []
    for name, field in AgentDefinition.model_fields.items():
        if name in present:
            continue
        out.append(CompletionItem(name, ItemKind.PROPERTY, _type_name(field.annotation), field.description,
                                  insert_text=f"{name}: ", replace=replace))
    return out


def _type_name(annotation: object) -> str:
    text = getattr(annotation, "__name__", None) or str(annotation)
    return text.replace("typing.", "").replace("oscova_runtime.definition.", "")


def _values(ws: Workspace, parsed: DefinitionFile, key: str, replace: Range) -> Found:
    host = ws.host
    if key == "agent_tools":
        return _agent_ids(ws, parsed, replace)
    if key in ("tools", "pinned_tools"):
        out = [CompletionItem(name, ItemKind.TOOL, "built-in tool", BUILTIN_TOOLS[name].description
                              + (" Needs approval." if BUILTIN_TOOLS[name].approval_required else ""),
                              replace=replace) for name in sorted(SELECTABLE_TOOLS)]
        out += [CompletionItem(name, ItemKind.TOOL, f"custom tool ({tool.callable})", tool.description,
                               replace=replace) for name, tool in sorted(host.tools.items())]
        return out
    if key == "context_providers":
        out = []
        for name in provider_types(host):
            spec = PROVIDERS_BY_TYPE.get(name)
            if spec is not None:
                out.append(CompletionItem(name, ItemKind.PROVIDER, spec.class_name,
                                          f"{spec.summary}\n\nApplies when: {spec.applies_when}.", replace=replace))
            else:
                custom = host.providers[name]
                out.append(CompletionItem(name, ItemKind.PROVIDER, f"custom provider ({custom.class_})",
                                          replace=replace))
        return out
    if key == "model":
        return [CompletionItem(name, ItemKind.MODEL, model.model, replace=replace)
                for name, model in sorted(host.models.items())]
    if key == "instructions_file":
        return _template_paths(ws, os.path.dirname(parsed.path), replace)
    if key == "tool_mode":
        return [CompletionItem(v, ItemKind.VALUE, replace=replace) for v in ("direct", "search")]
    if key in _BOOL_KEYS:
        return [CompletionItem(v, ItemKind.VALUE, replace=replace) for v in ("true", "false")]
    return []
