"""Template rendering in Jinja2's sandbox: workspace files are data, not trusted code.

`include`, `import` and `extends` paths resolve against the workspace root, and every template file is read
through the workspace boundary (`paths`): a path or symlink leaving the root, a FIFO or device, or a file
past the size limit is refused with the reason, never read. Compiled templates are cached by source, so a
run renders without re-parsing.

Rendering is bounded: every loop step and call spends from a budget (`RENDER_STEPS`, `RENDER_SECONDS`),
and a template that exhausts it stops with "The template … took too long to render". The `*_async`
methods render in a worker thread, so a heavy template never holds up the event loop.
"""

from __future__ import annotations

import asyncio
import operator
import os
import re
import string as _string
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, cast

from jinja2 import BaseLoader, Environment, Template, TemplateNotFound, meta, nodes
from jinja2.sandbox import SandboxedEnvironment
from jinja2.visitor import NodeTransformer

from .paths import OUTSIDE_ROOT, FileRefused, read_text, resolve_in_root

RENDER_STEPS = 1_000_000
"""Loop iterations and calls one rendering may take: far above any prompt, far below a minute."""
RENDER_SECONDS = 10.0
"""Wall-clock limit of one rendering, checked every `_CLOCK_EVERY` steps."""
MAX_REPEAT = 10_000_000
"""Longest string or list `*` may build, and the largest result `**` may compute (in digits)."""
_CLOCK_EVERY = 1024
_BUDGET_FILTER = "_oscova_budget"
_JOINED_FILTER = "_oscova_joined"


class TemplateError(Exception):
    """A template could not be read or rendered; the message names the template."""


class RenderBudgetExceeded(TemplateError):
    """A rendering ran out of steps or time (or tried to build something huge)."""


class _Budget(threading.local):
    steps = 0
    deadline = 0.0
    active = False


_budget = _Budget()


def _spend() -> None:
    if not _budget.active:
        return
    _budget.steps += 1
    if _budget.steps > RENDER_STEPS:
        raise RenderBudgetExceeded(f"more than {RENDER_STEPS:,} loop steps and calls: a loop too large, or "
                                   "recursion without end")
    if _budget.steps % _CLOCK_EVERY == 0 and time.monotonic() > _budget.deadline:
        raise RenderBudgetExceeded(f"more than {RENDER_SECONDS:g} s")


def _counted(iterable: Iterable[Any]) -> Iterator[Any]:
    for item in iterable:
        _spend()
        yield item


class _CountLoops(NodeTransformer):
    """Wraps the iterable of every `{% for %}` in the budget filter, so each iteration is counted, and every
    `~` in the size check, so a string doubled in a loop stops at `MAX_REPEAT` instead of growing to gigabytes."""

    def visit_For(self, node: nodes.For) -> nodes.Node:  # noqa: N802 - the visitor's naming
        self.generic_visit(node)
        node.iter = nodes.Filter(node.iter, _BUDGET_FILTER, [], [], None, None, lineno=node.lineno)
        return node

    def visit_Concat(self, node: nodes.Concat) -> nodes.Node:  # noqa: N802 - the visitor's naming
        self.generic_visit(node)
        return nodes.Filter(node, _JOINED_FILTER, [], [], None, None, lineno=node.lineno)


def _joined(value: Any) -> Any:
    """A `~` result, refused once it is longer than `MAX_REPEAT` (each step's operands are then bounded, so
    nothing much larger is ever built)."""
    _refuse_size(len(value) if isinstance(value, str) else 0, "`~`")
    return value


def _refuse_size(size: int, how: str) -> None:
    if size > MAX_REPEAT:
        raise RenderBudgetExceeded(f"it builds a value of more than {MAX_REPEAT:,} characters with {how}")


_FORMAT_NUMBER = re.compile(r"\d+")
_PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


def _refuse_format_widths(template: str, args: Iterable[Any], how: str) -> None:
    """A `str.format` / `%` template whose widths or precisions (written, or given by `{w}` / `*` from the
    arguments) would build more than `MAX_REPEAT` characters is refused before it is formatted."""
    if how == "`format`":
        specs = [spec or "" for _, field, spec, _ in _string.Formatter().parse(template) if field is not None]
        nested = any("{" in spec for spec in specs)
        widths = [int(n) for spec in specs for n in _FORMAT_NUMBER.findall(spec)]
    else:
        found = _PERCENT_SPEC.findall(template)
        nested = any("*" in pair for pair in found)
        widths = [int(n) for pair in found for n in pair if n.isdigit()]
    if nested:  # the width is an argument: any integer argument may be it
        widths += [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
    _refuse_size(max(widths, default=0), how)


class BoundedEnvironment(SandboxedEnvironment):
    """The sandbox, with every loop step and call counted and `*` / `**` kept from building giant values."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.filters[_BUDGET_FILTER] = _counted
        self.filters[_JOINED_FILTER] = _joined
        for name in _PADDING_FILTERS:  # filters are called directly, not through `call`
            self.filters[name] = _bounded_filter(name, self.filters[name])
        self.filters["format"] = _bounded_format(self.filters["format"])

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        return cast(nodes.Template, _CountLoops().visit(tree))  # the transformer rewrites nodes inside the tree

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - jinja's
        _spend()
        _refuse_padding(getattr(__obj, "__self__", None), getattr(__obj, "__name__", ""), args)
        return super().call(__context, __obj, *args, **kwargs)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """Jinja's sandboxed `str.format` / `format_map`, refusing widths that would build a giant value."""
        sandboxed = super().wrap_str_format(value)
        if sandboxed is None:
            return None
        template = value.__self__

        def bounded(*args: Any, **kwargs: Any) -> str:
            mapped = args[0].values() if len(args) == 1 and isinstance(args[0], Mapping) else ()
            _refuse_format_widths(template, (*args, *kwargs.values(), *mapped), "`format`")
            return sandboxed(*args, **kwargs)

        return bounded

    def call_binop(self, context: Any, operator_name: str, left: Any, right: Any) -> Any:
        _spend()
        if operator_name == "*":
            for sized, count in ((left, right), (right, left)):
                if (isinstance(sized, str | list | tuple) and isinstance(count, int)
                        and len(sized) * count > MAX_REPEAT):
                    raise RenderBudgetExceeded(f"it builds a value of more than {MAX_REPEAT:,} items with `*`")
            return operator.mul(left, right)
        if operator_name == "+":
            if isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
                _refuse_size(len(left) + len(right), "`+`")
            return operator.add(left, right)
        if operator_name == "%":
            if isinstance(left, str):
                _refuse_format_widths(left, right if isinstance(right, tuple) else (right,), "`%`")
            return operator.mod(left, right)
        if (isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0
                and right * max(1, abs(left).bit_length()) > MAX_REPEAT * 3):
            raise RenderBudgetExceeded("it computes a number too large to print with `**`")
        return super().call_binop(context, operator_name, left, right)


_PADDING_METHODS = frozenset({"center", "ljust", "rjust", "zfill"})
_PADDING_FILTERS = ("center", "indent")


def _refuse_padding(target: Any, method: str, args: tuple[Any, ...]) -> None:
    """A str method that pads to a width (`'x'.center(5000000000)`) is refused before it builds the value."""
    if not isinstance(target, str) or not args or not isinstance(args[0], int):
        return
    if method in _PADDING_METHODS:
        size = args[0]
    elif method == "expandtabs":
        size = len(target) * args[0]
    else:
        return
    _refuse_size(size, f"`{method}`")


def _bounded_filter(name: str, wrapped: Any) -> Any:
    """The filter `name` (`center`, `indent`), refusing a width that would build a giant value."""

    def bounded(value: Any, width: Any = None, *args: Any, **kwargs: Any) -> Any:
        if isinstance(width, int) and not isinstance(width, bool):
            lines = str(value).count("\n") + 1 if name == "indent" else 1
            _refuse_size(width * lines, f"`|{name}`")
        return wrapped(value, *(() if width is None else (width,)), *args, **kwargs)

    return bounded


def _bounded_format(wrapped: Any) -> Any:
    """The `|format` filter (`%` formatting), refusing widths that would build a giant value."""

    def bounded(value: Any, *args: Any, **kwargs: Any) -> Any:
        _refuse_format_widths(str(value), (*args, *kwargs.values()), "`|format`")
        return wrapped(value, *args, **kwargs)

    return bounded


def _subject(name: str) -> str:
    """`the memory system prompt` -> `The memory system prompt`; a path -> `The template <path>`."""
    if name.startswith("the "):
        return "T" + name[1:]
    return f"The {name}" if name == "instructions" else f"The template {name}"


def _bounded(render: Any, name: str) -> str:
    """Runs `render()` on a fresh budget; a spent budget becomes the sentence callers show."""
    _budget.steps, _budget.deadline, _budget.active = 0, time.monotonic() + RENDER_SECONDS, True
    try:
        return str(render())
    except RenderBudgetExceeded as spent:
        raise RenderBudgetExceeded(f"{_subject(name)} took too long to render ({spent})") from None
    except MemoryError:  # a value the checks above do not foresee: refused with words, never an empty reason
        raise RenderBudgetExceeded(f"{_subject(name)} could not be rendered: it builds a value too large to hold "
                                   "in memory") from None
    finally:
        _budget.active = False


def _failure(name: str, error: Exception) -> TemplateError:
    """`Rendering NAME failed: why`, where why is never empty (the exception's kind when it has no words)."""
    return TemplateError(f"Rendering {name} failed: {str(error).strip() or type(error).__name__}")
def read_template(root: str, path: str, base: str | None = None) -> str:
    """The text of the template `path` (relative to `base`, default the root), or TemplateError saying why not."""
    full = resolve_in_root(root, base or root, path)
    if full is None:
        raise TemplateError(f"The template {path} is {OUTSIDE_ROOT}")
    try:
        return read_text(full, root=root)
    except FileRefused as refused:
        raise TemplateError(f"The template {path} could not be read: {refused}") from None


class WorkspaceLoader(BaseLoader):
    """Loads `include`/`import`/`extends` targets and template files from inside the workspace root only."""

    def __init__(self, root: str) -> None:
        self.root = root

    def get_source(self, environment: Environment, template: str) -> tuple[str, str, Any]:
        full = resolve_in_root(self.root, self.root, template)
        if full is not None and not os.path.lexists(full):
            raise TemplateNotFound(template)
        try:
            source = read_template(self.root, template)
        except TemplateError as error:
            raise TemplateNotFound(template, str(error)) from None
        if full is None:  # read_template refuses a path leaving the root first; this narrows the type
            raise TemplateNotFound(template)
        mtime = _mtime(full)
        return source, full, lambda: mtime is not None and _mtime(full) == mtime


def _mtime(path: str) -> float | None:
    try:
        return os.path.getmtime(path)
    except OSError:
        return None


class TemplateRenderer:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)
        self.environment = BoundedEnvironment(
            loader=WorkspaceLoader(self.root), autoescape=False, keep_trailing_newline=False,
            auto_reload=True,
        )
        self._compiled: dict[str, Template] = {}
        self._free: dict[str, frozenset[str]] = {}

    def compile(self, source: str) -> Template:
        template = self._compiled.get(source)
        if template is None:
            try:
                template = self.environment.from_string(source)
            except Exception as error:  # noqa: BLE001 - reported in words
                raise TemplateError(f"The template does not parse: {error}") from None
            if len(self._compiled) > 512:
                self._compiled.clear()
            self._compiled[source] = template
        return template

    def free_variables(self, source: str) -> frozenset[str]:
        """The names the template uses without binding them itself (the checker's free uses); includes and
        imports are not followed. TemplateError when it does not parse."""
        names = self._free.get(source)
        if names is None:
            try:
                names = frozenset(meta.find_undeclared_variables(self.environment.parse(source)))
            except Exception as error:  # noqa: BLE001 - reported in words
                raise TemplateError(f"The template does not parse: {error}") from None
            if len(self._free) > 512:
                self._free.clear()
            self._free[source] = names
        return names

    def render_string(self, source: str, variables: Mapping[str, Any], *, name: str = "instructions") -> str:
        try:
            template = self.compile(source)
            return _bounded(lambda: template.render(dict(variables)), name)
        except TemplateError:
            raise
        except Exception as error:  # noqa: BLE001
            raise _failure(name, error) from None

    def render_file(self, path: str, variables: Mapping[str, Any]) -> str:
        """Renders a template file given relative to the workspace root (or absolute inside it)."""
        try:
            template = self.environment.get_template(path)
        except Exception as error:  # noqa: BLE001
            raise TemplateError(f"The template {path} could not be loaded: {error}") from None
        try:
            return _bounded(lambda: template.render(dict(variables)), path)
        except TemplateError:
            raise
        except Exception as error:  # noqa: BLE001
            raise _failure(path, error) from None

    async def render_string_async(self, source: str, variables: Mapping[str, Any], *,
                                  name: str = "instructions") -> str:
        """`render_string` in a worker thread: the event loop keeps serving while a template renders."""
        return await asyncio.to_thread(self.render_string, source, variables, name=name)

    async def render_file_async(self, path: str, variables: Mapping[str, Any]) -> str:
        """`render_file` in a worker thread."""
        return await asyncio.to_thread(self.render_file, path, variables)

    def read_source(self, path: str, *, base: str | None = None) -> str:
        """A template's text, `path` relative to `base` (default: the workspace root)."""
        return read_template(self.root, path, base)
