"""Jinja's tree of a template, as `Environment.parse` makes it, faster: the tokens come from one pass over the
text with Jinja's own patterns (`tokens`), and Jinja's parser takes a short way for a variable alone."""

from __future__ import annotations

import re
from ast import literal_eval
from typing import Any

from jinja2 import Environment, nodes
from jinja2 import lexer as _lexer
from jinja2.parser import Parser

from .jinja_parser import parse_tokens


class _Environment(Environment):
    """Jinja's default environment, whose templates are tokenized by `tokens` where it can (Jinja's own lexer
    where it cannot): the same tokens, in about a third of the time."""

    def _tokenize(self, source: str, name: str | None, filename: str | None = None,
                  state: str | None = None) -> _lexer.TokenStream:
        made = tokens(source) if state is None and not self.extensions else None
        if made is None:
            return super()._tokenize(source, name, filename, state)
        return _lexer.TokenStream(iter(made), name, filename)


_ENV = _Environment(autoescape=False)
_NOT_PLAIN = frozenset({"not", "true", "false", "True", "False", "none", "None"})
"""Names an expression does not read as a variable when alone (`not …`, constants)."""


class _Parser(Parser):
    """Jinja's parser, with a short way through its fifteen levels of expression rules for the commonest
    expression: one variable alone before the tag's end (`{{ name }}`, `{% if name %}`). It makes the node those
    rules make there; anything else goes the whole way."""

    def parse_tuple(self, simplified: bool = False, with_condexpr: bool = True,
                    extra_end_rules: tuple[str, ...] | None = None, explicit_parentheses: bool = False,
                    with_namespace: bool = False) -> nodes.Tuple | nodes.Expr:
        token = self.stream.current
        if token.type == "name" and not simplified and token.value not in _NOT_PLAIN and \
                self.stream.look().type in ("variable_end", "block_end") and \
                not self.is_tuple_end(extra_end_rules):
            next(self.stream)
            return nodes.Name(token.value, "load", lineno=token.lineno)
        return super().parse_tuple(simplified, with_condexpr, extra_end_rules, explicit_parentheses, with_namespace)


def parse(text: str) -> nodes.Template | Exception:
    """Jinja's tree of `text` (`Environment.parse`, without binding every node to the environment, which nothing
    here reads), or the exception it raised. The tokens are parsed by `jinja_parser` where it can, by Jinja's
    parser where it cannot (an error, a construct left to it)."""
    made = token_tuples(text)
    if made is not None:
        try:
            return nodes.Template(parse_tokens(made), lineno=1)
        except Exception:  # noqa: BLE001 - `Unsupported`, or anything else: Jinja's parser decides
            pass
    try:
        return nodes.Template(_Parser(_ENV, text).subparse(), lineno=1)
    except Exception as exc:
        return exc


# --------------------------------------------------------------------------------------------------
# Jinja's lexer, faster: the tokens `Lexer.tokenize` makes for the default syntax, from the same patterns tried
# in the same order, with the work `Lexer.wrap` does on each token done as it is made. Whatever Jinja's lexer
# would refuse, or treats specially (a `raw` block, `\r` line breaks), is left to it: `tokens` says None.

_RULES = _ENV.lexer.rules
_ROOT_RE = _RULES["root"][0][0]
_BEGIN_RE = re.compile(_ROOT_RE.pattern.removeprefix("(.*?)"), _ROOT_RE.flags)
_OPENER_RE = re.compile(r"\{[{%#]")
"""Jinja's root rule is its text before an opener, `(.*?)`, then the opener (`_BEGIN_RE`): the lazy group tries
the openers at every character of the text. The first `{{`, `{%` or `{#` is where it stops, and the opener is
what `_BEGIN_RE` matches there (`{%` always matches, `raw` first where it does): a third of the time."""
_COMMENT_RE = _RULES["comment_begin"][0][0]
_ENDS = {_lexer.TOKEN_BLOCK_BEGIN: (_RULES["block_begin"][0][0], _lexer.TOKEN_BLOCK_END),
         _lexer.TOKEN_VARIABLE_BEGIN: (_RULES["variable_begin"][0][0], _lexer.TOKEN_VARIABLE_END)}
_CLOSING = {"{": "}", "(": ")", "[": "]"}
_ALONE = {begin: re.compile(rf"(\s*)([a-zA-Z_][a-zA-Z0-9_]*)(\s*)({end_re.pattern})")
          for begin, (end_re, _) in _ENDS.items()}
"""The commonest region, one ASCII name alone before the end tag (`{{ name }}`, `{% endif %}`), in one match: the
tokens Jinja's rules make of it, the same name and end tag."""
_Token = _lexer.Token


def tokens(source: str) -> list[_lexer.Token] | None:
    """The tokens of `source` as Jinja's lexer makes them for the default environment, or None where it would
    raise (its error is its own to word) or the text holds what this does not handle."""
    made = token_tuples(source)
    return None if made is None else [_Token(*token) for token in made]


def token_tuples(source: str) -> list[tuple[int, str, Any]] | None:
    """`tokens` as plain tuples (line, type, value), which `jinja_parser` reads: a tenth of the cost of each."""
    if "\r" in source:
        return None
    if source.endswith("\n"):  # as `tokeniter`: one trailing line break is not part of the template
        source = source[:-1]
    out: list[tuple[int, str, Any]] = []
    append = out.append
    pos, end, lineno = 0, len(source), 1
    while pos < end:
        opener = _OPENER_RE.search(source, pos)
        if opener is None:  # the rest is text
            append((lineno, _lexer.TOKEN_DATA, source[pos:]))
            break
        m = _BEGIN_RE.match(source, opener.start())
        if m is None:  # pragma: no cover - an opener matches where it starts
            return None
        begin = m.lastgroup  # the named group of the opener that matched; its sign is the group after it
        if begin == _lexer.TOKEN_RAW_BEGIN or begin is None or m.lastindex is None:
            return None
        data = text = source[pos:m.start()]
        if m.group(m.lastindex + 1) == "-":
            text = text.rstrip()
        if text:
            append((lineno, _lexer.TOKEN_DATA, text))
        lineno += data.count("\n")
        pos = m.end()
        if begin == _lexer.TOKEN_COMMENT_BEGIN:
            comment = _COMMENT_RE.match(source, pos)
            if comment is None:
                return None
            lineno += comment.group().count("\n")
            pos = comment.end()
            continue
        append((lineno, begin, m.group(begin)))
        found = _code(source, pos, lineno, begin, append)
        if found is None:
            return None
        pos, lineno = found
    return out


def _ascii_kinds() -> dict[str, str]:
    """What an ASCII character can start in a code region, in the order Jinja's lexer tries its rules: only that
    rule is tried for it (the rules before it cannot match there). Other characters try every rule in order."""
    kinds: dict[str, str] = {}
    for char in map(chr, range(128)):
        if char in " \t\n\x0b\x0c":
            kinds[char] = "space"
        elif char.isdigit():
            kinds[char] = "number"
        elif char.isalpha() or char == "_":
            kinds[char] = "name"
        elif char in "'\"":
            kinds[char] = "string"
        elif char in "-+%}":
            kinds[char] = "end"  # an end tag, else an operator
        elif char in "/*=!<>":
            kinds[char] = "operator"
        elif char in "~[](){.:|,;":
            kinds[char] = "single"  # an operator no longer operator starts with
    return kinds


_KINDS = _ascii_kinds()
_SINGLE = {char: _lexer.operators[char] for char, kind in _KINDS.items() if kind == "single"}
_NAME = _lexer.name_re.match
_SPACE = _lexer.whitespace_re.match


def _code(source: str, pos: int, lineno: int, begin: str, append: Any) -> tuple[int, int] | None:
    """The tokens of one `{{ }}` or `{% %}` region from `pos` to its end tag (or the end of the text); the offset
    and line after it, or None where Jinja's lexer would raise."""
    end_re, end_type = _ENDS[begin]
    alone = _ALONE[begin].match(source, pos)
    if alone is not None:
        before, name, after, closer = alone.groups()
        lineno += before.count("\n")
        append((lineno, "name", name))
        lineno += after.count("\n")
        append((lineno, end_type, closer))
        return alone.end(), lineno + closer.count("\n")
    plain = _plain_code(source, pos, lineno, begin)
    if plain is not None:
        for token in plain[0]:
            append(token)
        return plain[1], plain[2]
    balancing: list[str] = []
    end = len(source)
    kinds = _KINDS
    while pos < end:
        char = source[pos]
        kind = kinds.get(char, "")
        if kind == "name":
            m = _NAME(source, pos)
            if m is None:  # pragma: no cover - the pattern matches every character of this kind
                return None
            append((lineno, "name", m.group()))
            pos = m.end()
            continue
        if kind == "space":
            if char == " " and (pos + 1 == end or not source[pos + 1].isspace()):  # `\s+` matches one space
                pos += 1
                continue
            space = _SPACE(source, pos)
            if space is None:  # pragma: no cover - the pattern matches every character of this kind
                return None
            lineno += space.group().count("\n")
            pos = space.end()
            continue
        if kind == "single":
            if char in _CLOSING:
                balancing.append(_CLOSING[char])
            elif char in ")]" and (not balancing or balancing.pop() != char):
                return None  # Jinja's lexer: "unexpected ')'"
            append((lineno, _SINGLE[char], char))
            pos += 1
            continue
        if kind == "end" and not balancing and (m := end_re.match(source, pos)) is not None:
            value = m.group()
            append((lineno, end_type, value))
            return m.end(), lineno + value.count("\n")
        if kind in ("end", "operator"):
            m = _lexer.operator_re.match(source, pos)
            if m is None or not _operator(m.group(), balancing, lineno, append):
                return None
            pos = m.end()
            continue
        if kind:  # a number, or a string
            found = _value(source, pos, lineno, append, kind == "number")
        else:  # any other character: every rule, in Jinja's order
            found = _other(source, pos, lineno, balancing, append, end_re, end_type)
        if found is None:
            return None
        if found[0] < 0:  # the end tag
            return -found[0], found[1]
        pos, lineno = found
    return pos, lineno


# A region on one line of names, strings without escapes, plain integers and operators before its end tag (most
# regions that are not one name alone), tokenized by one `findall` up to the first closer. Whatever else it holds
# (another space, a float, a name going on in other scripts, a closer inside a string or a bracket) is matched by
# the last group, and the region goes the general way: what is taken here is what Jinja's rules make of it.
_PLAIN_TOKEN_RE = re.compile(r"""[ \t]*+(?:
      ([a-zA-Z_][a-zA-Z0-9_]*+)(?![^\x00-\x7f])  # a name, whole
    | '([^'\\\n]*)' | "([^"\\\n]*)"  # a string: Jinja's decoding gives it back as written
    | (//|\*\*|==|!=|>=|<=|[-+*/%~\[\](){}.:|,;=<>])  # an operator, the longer first as in Jinja's pattern
    | ([1-9][0-9]*+|0)(?![\w.])  # an integer that is no float and no other integer's start
    | (.))""", re.VERBOSE | re.DOTALL)
_CLOSERS = {_lexer.TOKEN_BLOCK_BEGIN: ("%}", "-+"), _lexer.TOKEN_VARIABLE_BEGIN: ("}}", "-")}
"""The closer each region's end tag holds, and the signs it may start with."""
_OPERATORS = _lexer.operators


def _plain_code(source: str, pos: int, lineno: int, begin: str) -> tuple[list[tuple[int, str, Any]], int, int] | None:
    """A region's tokens up to its first closer, the offset and line after it, or None: the general way decides.
    The first closer is the end tag when the tokens before it are Jinja's and leave no bracket open (Jinja takes
    no end tag inside brackets); a closer inside a string leaves the string unclosed, which is not taken here."""
    closer, signs = _CLOSERS[begin]
    close = source.find(closer, pos)
    if close == -1:
        return None
    if close > pos and source[close - 1] in signs:  # Jinja tries the end tag, sign included, before operators
        close -= 1
    if source.find("\n", pos, close) != -1:
        return None
    made: list[tuple[int, str, Any]] = []
    balancing: list[str] = []
    for name, single, double, op, integer, other in _PLAIN_TOKEN_RE.findall(source, pos, close):
        if name:
            made.append((lineno, "name", name))
        elif op:
            if op in _CLOSING:
                balancing.append(_CLOSING[op])
            elif op in ")]}" and (not balancing or balancing.pop() != op):
                return None
            made.append((lineno, _OPERATORS[op], op))
        elif other:
            return None
        elif integer:
            made.append((lineno, "integer", int(integer)))
        else:
            made.append((lineno, "string", single or double))
    if balancing:
        return None
    end_re, end_type = _ENDS[begin]
    m = end_re.match(source, close)
    if m is None:  # pragma: no cover - a closer, with or without its sign, is an end tag
        return None
    value = m.group()
    made.append((lineno, end_type, value))
    return made, m.end(), lineno + value.count("\n")


def _operator(op: str, balancing: list[str], lineno: int, append: Any) -> bool:
    """An operator token, brackets balanced as Jinja's lexer balances them; False where it would raise."""
    if op in _CLOSING:
        balancing.append(_CLOSING[op])
    elif op in ")]}" and (not balancing or balancing.pop() != op):
        return False  # Jinja's lexer: "unexpected '}'"
    append((lineno, _lexer.operators[op], op))
    return True


def _value(source: str, pos: int, lineno: int, append: Any, number: bool) -> tuple[int, int] | None:
    """A number (float, integer or name, in Jinja's order) or a string at `pos`."""
    if number:
        m = _lexer.float_re.match(source, pos) or _lexer.integer_re.match(source, pos)
        if m is None:
            m = _lexer.name_re.match(source, pos)
            if m is None or not m.group().isidentifier():
                return None
            append((lineno, _lexer.TOKEN_NAME, m.group()))
            return m.end(), lineno
        try:  # a number Python does not read (other scripts' digits): Jinja's lexer raises when it gets there
            value: Any = literal_eval(m.group().replace("_", "")) if m.re is _lexer.float_re \
                else int(m.group().replace("_", ""), 0)
        except Exception:  # noqa: BLE001
            return None
        append((lineno, _lexer.TOKEN_FLOAT if m.re is _lexer.float_re else _lexer.TOKEN_INTEGER, value))
        return m.end(), lineno
    m = _lexer.string_re.match(source, pos)
    if m is None:
        return None
    written = m.group()
    if "\\" not in written:  # Jinja's decoding of escapes gives the text back as it is
        value = written[1:-1]
    else:
        try:
            value = written[1:-1].encode("ascii", "backslashreplace").decode("unicode-escape")
        except Exception:  # noqa: BLE001 - Jinja's lexer says what is wrong with it
            return None
    append((lineno, _lexer.TOKEN_STRING, value))
    return m.end(), lineno + written.count("\n")


def _other(source: str, pos: int, lineno: int, balancing: list[str], append: Any, end_re: Any,
           end_type: str) -> tuple[int, int] | None:
    """Every rule of Jinja's lexer in its order, at a character `_KINDS` does not classify; the end tag is told
    by a negative offset."""
    ch = source[pos]
    if not balancing and (m := end_re.match(source, pos)) is not None:
        append((lineno, end_type, m.group()))
        return -m.end(), lineno + m.group().count("\n")
    if (m := _lexer.whitespace_re.match(source, pos)) is not None:
        return m.end(), lineno + m.group().count("\n")
    if ch.isdecimal() or (m := _lexer.name_re.match(source, pos)) is None:
        found = _value(source, pos, lineno, append, ch.isdecimal()) if ch.isdecimal() or ch in "'\"" else None
        if found is not None:
            return found
        if (m := _lexer.operator_re.match(source, pos)) is None or not _operator(m.group(), balancing, lineno, append):
            return None
        return m.end(), lineno
    if not m.group().isidentifier():
        return None
    append((lineno, _lexer.TOKEN_NAME, m.group()))
    return m.end(), lineno
