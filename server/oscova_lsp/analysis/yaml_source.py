"""YAML with positions: a plain value tree plus the source span of every key and value.

Parsing never raises: a document comes back with its problems (OSC001 syntax or bounds, OSC004
duplicate keys). Aliases are followed with a budget, and nesting depth is bounded, so an alias bomb or a
pathological nesting costs milliseconds, not minutes.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from .diagnostics import Problem
from .rules import syntax
from .rules.syntax import MAX_DEPTH, MAX_EXPANDED_NODES
from .text import LineIndex, Range

try:  # libyaml is an order of magnitude faster; PyYAML's wheels ship it.
    _Loader: Any = yaml.CSafeLoader
    _composer_init: Any = yaml.cyaml.CParser.__init__
except AttributeError:  # pragma: no cover - pure-Python PyYAML build
    _Loader = yaml.SafeLoader
    _composer_init = _Loader.__init__

_STR_TAG: str = _Loader.DEFAULT_SCALAR_TAG
_SEQ_TAG: str = _Loader.DEFAULT_SEQUENCE_TAG
_MAP_TAG: str = _Loader.DEFAULT_MAPPING_TAG
_MERGE_TAG = "tag:yaml.org,2002:merge"
_BOOL_TAG = "tag:yaml.org,2002:bool"
_PLAIN_TAGS: dict[str, str] = {}
"""The tag of short plain scalars resolved so far: the safe resolver's answer depends on the value alone."""
_PLAIN_TAGS_BOUND = 1 << 14
_PLAIN_TAG_LENGTH = 64


class _Composer(_Loader):
    """The safe loader's composer with the same tags, for less: libyaml calls the Python resolver for every node
    (`resolve`, and `descend_resolver`/`ascend_resolver` around it), and the general resolver's work there was a
    third of composing a definition.

    The path resolvers that descend/ascend track are never registered on the safe loaders (`_compose` keeps the
    loader itself if one were), so these do nothing; a plain scalar's tag is the implicit resolvers' answer for
    its value (remembered: keys and values repeat), any other node's the default of its kind.
    """

    def __init__(self, stream: str) -> None:
        _composer_init(self, stream)  # the parser alone: the constructor's and the path resolvers' state go unused

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            if not implicit[0]:
                return _STR_TAG  # quoted, or tagged `!`: without path resolvers, a string
            resolvers = self.yaml_implicit_resolvers
            if value[:1] not in resolvers and None not in resolvers:
                return _STR_TAG  # no implicit resolver for its first character (and none for any character)
            tag = _PLAIN_TAGS.get(value)
            if tag is None:
                tag = _Loader.resolve(self, kind, value, implicit)
                if len(value) <= _PLAIN_TAG_LENGTH:
                    if len(_PLAIN_TAGS) >= _PLAIN_TAGS_BOUND:
                        _PLAIN_TAGS.clear()
                    _PLAIN_TAGS[value] = tag
            return tag
        return _SEQ_TAG if kind is yaml.SequenceNode else _MAP_TAG

    def descend_resolver(self, current_node: Any, current_index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass


def _compose(text: str) -> yaml.Node | None:
    """What `yaml.compose(text, Loader=_Loader)` gives, through `_Composer` while no path resolver is registered."""
    node: yaml.Node | None = yaml.compose(text, Loader=_Loader if _Loader.yaml_path_resolvers else _Composer)
    return node

Path = tuple[str | int, ...]

_SCALAR_CONSTRUCTOR = SafeConstructor()
_FLOW_DEPTH_RE = re.compile(r"[\[\]{}]")


# Not frozen, but a value all the same (nothing assigns to a span; it hashes by its fields as a frozen one does):
# one is built for every node of every file, and a frozen dataclass's __init__ (an object.__setattr__ call per
# field) costs three times a plain one, an eighth of reading a definition.
@dataclass(slots=True, unsafe_hash=True)
class Span:
    """Where one value sits in the file: the key (for mapping values) and the value node."""

    key: Range | None
    value: Range
    style: str | None = None
    """The scalar style: None plain, `'`, `"`, `|` or `>`; `[`/`{` for flow and `-`/`:` block collections."""
    start_offset: int = 0
    end_offset: int = 0


@dataclass
class YamlDocument:
    text: str
    lines: LineIndex
    value: Any = None
    spans: dict[Path, Span] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    ok: bool = True
    """False when the document has a syntax error (OSC001)."""
    recovered: bool = False
    """With a syntax error, `value` and `spans` hold what the lines around the broken ones say."""

    def span(self, path: Path) -> Span | None:
        """One span; the methods below go through it (a cached document decodes spans one at a time)."""
        return self.spans.get(path)

    def key_range(self, path: Path) -> Range | None:
        span = self.span(path)
        if span is None:
            return None
        return span.key or span.value

    def value_range(self, path: Path) -> Range | None:
        span = self.span(path)
        return span.value if span else None

    def best_range(self, path: Path) -> Range:
        """The value at `path`, else the nearest enclosing value that exists, else the first line."""
        for end in range(len(path), -1, -1):
            span = self.span(path[:end])
            if span is not None and (end > 0 or span.value.start != span.value.end):
                return span.value
        return self.lines.line_range(0)


class _Budget(Exception):
    def __init__(self, message: str, node: yaml.Node) -> None:
        super().__init__(message)
        self.node = node


def _flow_depth_exceeds(text: str, bound: int) -> bool:
    """A cheap guard before libyaml's recursive composer sees pathological flow nesting."""
    if text.count("[") + text.count("{") <= bound:  # never deeper than its openers
        return False
    depth = 0
    for match in _FLOW_DEPTH_RE.finditer(text):
        if match.group() in "[{":
            depth += 1
            if depth > bound:
                return True
        else:
            depth = max(depth - 1, 0)
    return False


def _indent_depth_exceeds(text: str, bound: int) -> bool:
    """Block nesting deeper than `bound` needs lines indented by more than `bound` columns."""
    if " " * (bound * 2 + 1) not in text:  # no line is indented that far
        return False
    return any(len(line) - len(line.lstrip(" ")) > bound * 2 for line in text.splitlines() if line.strip())


def parse_yaml(text: str) -> YamlDocument:
    doc = YamlDocument(text=text, lines=LineIndex(text))
    if _flow_depth_exceeds(text, MAX_DEPTH) or _indent_depth_exceeds(text, MAX_DEPTH * 2):
        doc.ok = False
        doc.problems.append(syntax.CANNOT_READ.problem(doc.lines.line_range(0), syntax.nests_too_deep()))
        return doc
    try:
        node = _compose(text)
    except yaml.MarkedYAMLError as exc:
        doc.ok = False
        where = _error_position(text, doc.lines, exc)
        rng = _mark_range(doc.lines, *where) if where else doc.lines.line_range(0)
        problem = " ".join(p for p in (exc.context, exc.problem) if p) or "invalid YAML"
        doc.problems.append(syntax.yaml_syntax_error(rng, problem))
        node = _recover(text, doc.lines, exc)
        if node is None:
            return doc
        doc.recovered = True
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        doc.ok = False
        doc.problems.append(syntax.yaml_error(doc.lines.line_range(0), exc))
        return doc
    if node is None:
        return doc
    builder = _Builder(doc, aliased="&" in text)
    try:
        doc.value = builder.build(node, (), None, 0)
    except _Budget as exc:
        doc.ok = False
        doc.value = None
        doc.spans.clear()
        doc.problems.append(syntax.CANNOT_READ.problem(_node_range(doc.lines, exc.node), str(exc)))
    return doc


MAX_RECOVERIES = 20


def _error_position(text: str, lines: LineIndex, exc: yaml.MarkedYAMLError) -> tuple[int, int] | None:
    """(line, column) of a syntax error; at the end of the text, what was left open, else the last text."""
    mark = exc.problem_mark or exc.context_mark
    if mark is None:
        return None
    end = len(text.rstrip())
    if mark.index >= end:
        if exc.context_mark is not None and exc.context_mark.index < end:
            mark = exc.context_mark  # "unexpected end of stream": point at what was left open
        elif end > 0:
            pos = lines.position(end - 1)
            return pos.line, len(lines.line_text(pos.line).rstrip()) - 1
    return mark.line, mark.column


def _recover(text: str, lines: LineIndex, exc: yaml.MarkedYAMLError) -> yaml.Node | None:
    """The document read with its broken lines blanked (every other line and column kept), so that what can
    be read (the `id`, the other keys) still counts for the other files; None when nothing can be read."""
    chars = list(text)
    for _ in range(MAX_RECOVERIES):
        blanked = False
        current = "".join(chars)
        for where in (_error_position(current, lines, exc), exc.context_mark, exc.problem_mark):
            line = where[0] if isinstance(where, tuple) else where.line if where is not None else -1
            if not 0 <= line < lines.line_count:
                continue
            start = lines.line_start(line)
            end = start + len(lines.line_text(line))
            if any(not chars[i].isspace() for i in range(start, end)):
                chars[start:end] = " " * (end - start)
                blanked = True
                break
        if not blanked:
            return None
        try:
            return _compose("".join(chars))
        except yaml.MarkedYAMLError as again:
            exc = again
        except (yaml.YAMLError, RecursionError, ValueError):
            return None
    return None


def _mark_range(lines: LineIndex, line: int, column: int) -> Range:
    start = lines.position_of_char(line, column)
    end_col = column + 1 if column < len(lines.line_text(line)) else column
    return Range(start, lines.position_of_char(line, end_col))


def _node_range(lines: LineIndex, node: yaml.Node) -> Range:
    start, end = node.start_mark, node.end_mark
    return lines.range_of_chars(start.line, start.column, end.line, end.column)


class _Builder:
    """The value tree and the spans of a composed document.

    Per node, the common case goes first without the general one's calls (a str scalar, a str key); a node can be
    reached twice only through an alias, so a text without an anchor (`&`) skips the alias bookkeeping."""

    def __init__(self, doc: YamlDocument, aliased: bool = True) -> None:
        self.doc = doc
        self.spans = doc.spans
        self.range_of = doc.lines.range_of_chars
        self.expanded = 0
        self.seen: set[int] | None = set() if aliased else None

    def build(self, node: yaml.Node, path: Path, key: Range | None, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise _Budget(syntax.nests_too_deep(), node)
        # A node reached a second time is reached through an alias: only those count against the budget (a long
        # document without an alias reaches each node once), and the first place is the one recorded.
        first_visit = True
        if self.seen is not None:
            first_visit = id(node) not in self.seen
            if first_visit:
                self.seen.add(id(node))
            else:
                self.expanded += 1
                if self.expanded > MAX_EXPANDED_NODES:
                    raise _Budget(syntax.aliases_expand_too_far(), node)
        is_scalar = isinstance(node, yaml.ScalarNode)
        if first_visit or path not in self.spans:
            start, end = node.start_mark, node.end_mark
            style = (node.style or None) if is_scalar else "[" if node.flow_style else "-"  # as `Span.style` says
            self.spans[path] = Span(key, self.range_of(start.line, start.column, end.line, end.column), style,
                                    start.index, end.index)
        if is_scalar:
            return node.value if node.tag == _STR_TAG else self._scalar(node)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, path, depth)
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*path, i), None, depth + 1) for i, item in enumerate(node.value)]
        return None  # pragma: no cover

    def _scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag == _STR_TAG:
            return node.value  # the common case, without the constructor's dispatch
        if node.tag == "tag:yaml.org,2002:timestamp":
            return node.value  # Dates stay text: every date-like field of the format is a string.
        if node.tag == _BOOL_TAG:  # the format's flags: what `construct_yaml_bool` gives, without its two calls
            return SafeConstructor.bool_values[node.value.lower()]
        constructor = SafeConstructor.yaml_constructors.get(node.tag)
        if constructor is None:
            return node.value
        try:
            return constructor(_SCALAR_CONSTRUCTOR, node)
        except (yaml.YAMLError, ValueError, TypeError):
            return node.value

    def _mapping(self, node: yaml.MappingNode, path: Path, depth: int) -> dict[Any, Any]:
        result: dict[Any, Any] = {}
        first_key: dict[Any, yaml.Node] = {}
        merged: list[yaml.Node] = []
        range_of = self.range_of
        for key_node, value_node in node.value:
            tag = key_node.tag
            if tag == _STR_TAG and isinstance(key_node, yaml.ScalarNode):
                key = key_node.value  # a str: hashable, and its own path component
                child_key = key
            elif tag == _MERGE_TAG:
                merged.append(value_node)
                continue
            else:
                key = self._scalar(key_node) if isinstance(key_node, yaml.ScalarNode) else str(key_node.start_mark)
                try:
                    hash(key)
                except TypeError:
                    key = str(key)
                child_key = key if isinstance(key, str | int) else str(key)
            start, end = key_node.start_mark, key_node.end_mark
            key_range = range_of(start.line, start.column, end.line, end.column)
            if key in first_key:
                self.doc.problems.append(syntax.duplicate_yaml_key(key_range, key, _node_range(self.doc.lines,
                                                                                               first_key[key])))
            else:
                first_key[key] = key_node
            result[key] = self.build(value_node, (*path, child_key), key_range, depth + 1)
        for merge_node in merged:
            sources = merge_node.value if isinstance(merge_node, yaml.SequenceNode) else [merge_node]
            for source in sources:
                value = self.build(source, (*path, "<<"), None, depth + 1)
                if isinstance(value, dict):
                    for k, v in value.items():
                        result.setdefault(k, v)
        return result


_LINE_BREAK_RE = re.compile(r"\r\n|\r|\n")
_SUPPRESS_RE = re.compile(r"#\s*oscova:\s*ignore(?:\[(?P<codes>[A-Za-z0-9_,\s]*)\])?")


def yaml_suppressions(text: str) -> dict[int, frozenset[str] | None]:
    """Line -> suppressed codes (None: all) from `# oscova: ignore[...]` comments.

    A comment applies to its own line; a comment alone on a line applies to the next line too.
    """
    result: dict[int, frozenset[str] | None] = {}
    if "oscova:" not in text:
        return result
    for number, line in enumerate(_LINE_BREAK_RE.split(text)):  # LSP's line breaks (str.splitlines has more)
        match = _SUPPRESS_RE.search(line)
        if not match:
            continue
        codes = _codes(match.group("codes"))
        _merge(result, number, codes)
        if line.lstrip().startswith("#"):
            _merge(result, number + 1, codes)
    return result


def _codes(raw: str | None) -> frozenset[str] | None:
    if raw is None:
        return None
    codes = frozenset(c.strip().upper() for c in raw.split(",") if c.strip())
    return codes or None


def _merge(result: dict[int, frozenset[str] | None], line: int, codes: frozenset[str] | None) -> None:
    if line in result:
        existing = result[line]
        result[line] = None if existing is None or codes is None else existing | codes
    else:
        result[line] = codes


def iter_paths(spans: dict[Path, Span], prefix: Path) -> Iterator[Path]:
    n = len(prefix)
    for path in spans:
        if len(path) == n + 1 and path[:n] == prefix:
            yield path
