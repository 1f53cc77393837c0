"""Tools: `AIFunction`, JSON schemas from signatures, approval wrapping and the built-in tools."""

from __future__ import annotations

import asyncio
import contextvars
import copy
import datetime as _dt
import importlib
import inspect
import types
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .grants import current_root, current_workspaces, resolve_inside, shown_path
from .paths import read_head, scan_folder, write_text

ToolCallable = Callable[..., Any]


@dataclass(slots=True)
class AIFunction:
    """A tool the model may call. `func` is sync or async and takes the model's arguments as keywords."""

    name: str
    description: str
    parameters: dict[str, Any]
    func: ToolCallable
    approval_required: bool = False
    path_parameters: tuple[str, ...] = ()
    """Arguments that name files or folders; workspace validation checks them against the grants."""
    egress: bool = False
    """The tool sends data off this machine (the network); a host policy may disallow such tools."""
    agent_id: str | None = None
    """The agent this tool runs, when it is an agent called as a tool (`ChatClientAgent.as_ai_function`)."""

    async def invoke(self, arguments: Mapping[str, Any]) -> Any:
        result = self.func(**dict(arguments))
        if inspect.isawaitable(result):
            result = await result
        return result

    def schema(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.parameters}}


class ToolArgumentError(TypeError):
    """A tool was called with an argument it does not take, or without one it needs. The message says which, in
    words for the user (`the agent `echo` takes `query`, not `input``); the model is told only what any failed
    call tells it (`Error: Function failed.`)."""


# --------------------------------------------------------------------------------------------------
# Approval


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    tool_name: str
    arguments: Mapping[str, Any]


ApprovalHandler = Callable[[ApprovalRequest], Awaitable[bool]]

_approval_handler: contextvars.ContextVar[ApprovalHandler | None] = contextvars.ContextVar(
    "oscova_approval_handler", default=None
)


def current_approval_handler() -> ApprovalHandler | None:
    """The approval channel of the run in progress, or None where there is none."""
    return _approval_handler.get()


class approval_channel:  # noqa: N801 - used as a context manager
    """`with approval_channel(handler): await agent.run(...)` gives the run an approval channel."""

    def __init__(self, handler: ApprovalHandler | None) -> None:
        self._handler = handler
        self._token: contextvars.Token[ApprovalHandler | None] | None = None

    def __enter__(self) -> approval_channel:
        self._token = _approval_handler.set(self._handler)
        return self

    def __exit__(self, *exc: object) -> None:
        token, self._token = self._token, None
        if token is not None:  # None only when exited without being entered
            _approval_handler.reset(token)


APPROVAL_DENIED = "The user denied this call."


def wrap_with_approval(function: AIFunction, handler: ApprovalHandler) -> AIFunction:
    """An approval-required tool that asks `handler` before each call; a denial is the tool's result."""

    async def gated(**arguments: Any) -> Any:
        if not await handler(ApprovalRequest(function.name, arguments)):
            return APPROVAL_DENIED
        return await function.invoke(arguments)

    return AIFunction(function.name, function.description, function.parameters, gated, True,
                      function.path_parameters, function.egress, function.agent_id)


# --------------------------------------------------------------------------------------------------
# Schemas from signatures

_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _type_schema(annotation: Any) -> dict[str, Any]:
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    if isinstance(annotation, str):  # an unresolvable string annotation: best effort on simple names
        simple = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
        return {"type": simple[annotation]} if annotation in simple else {}
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        inner = _type_schema(args[0])
        for meta in args[1:]:
            if isinstance(meta, str):
                inner["description"] = meta
        return inner
    if origin in (typing.Union, types.UnionType):
        non_null = [a for a in args if a is not type(None)]
        if len(non_null) == 1:
            return _type_schema(non_null[0])
        return {"anyOf": [_type_schema(a) for a in non_null]}
    if origin is typing.Literal:
        return {"enum": list(args)}
    if origin in (list, tuple, set, frozenset, Sequence, Iterable) or annotation in (list, tuple, set):
        return {"type": "array", "items": _type_schema(args[0]) if args else {}}
    if origin in (dict, Mapping) or annotation is dict:
        return {"type": "object"}
    return {}


_schema_cache: dict[Any, dict[str, Any]] = {}


def schema_from_signature(func: ToolCallable) -> dict[str, Any]:
    """The JSON schema of a callable's keyword arguments, from its annotations and defaults.

    Cached by code object, so tools created per invocation (closures) cost one computation.
    """
    code = getattr(getattr(func, "__func__", func), "__code__", None)
    defaults = getattr(getattr(func, "__func__", func), "__defaults__", None)
    key = (code, defaults) if code is not None else None
    if key is not None:
        cached = _schema_cache.get(key)
        if cached is not None:
            return copy.deepcopy(cached)
    schema = _schema_from_signature(func)
    if key is not None:
        _schema_cache[key] = copy.deepcopy(schema)
    return schema


def _schema_from_signature(func: ToolCallable) -> dict[str, Any]:
    signature = inspect.signature(func)
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to the raw ones
        hints = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, parameter in signature.parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD) or name in ("self", "cls"):
            continue
        schema = _type_schema(hints.get(name, parameter.annotation))
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
        elif parameter.default is not None:
            schema["default"] = parameter.default
        properties[name] = schema
    return {"type": "object", "properties": properties, "required": required}


def function_from_callable(
    func: ToolCallable, *, name: str | None = None, description: str | None = None,
    approval_required: bool = False, path_parameters: Sequence[str] = (), egress: bool = False,
) -> AIFunction:
    """An AIFunction whose schema comes from the signature and whose description comes from the docstring."""
    doc = inspect.getdoc(func) or "" if description is None else ""
    return AIFunction(
        name or func.__name__, description or doc.strip() or (name or func.__name__),
        schema_from_signature(func), func, approval_required, tuple(path_parameters), egress,
    )


class ToolLoadError(Exception):
    """A `[tools.*]` callable could not be imported."""


def load_custom_tool(
    name: str, spec: str, *, approval_required: bool, description: str | None = None, egress: bool = False,
) -> AIFunction:
    """Imports `module:function` for a `[tools.NAME]` entry (only a run does this, never the analyzer)."""
    module_name, _, attribute = spec.partition(":")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except Exception as error:  # noqa: BLE001 - reported in words
        raise ToolLoadError(f"The tool `{name}` could not be loaded from `{spec}`: {error}") from None
    if not callable(target):
        raise ToolLoadError(f"The tool `{name}` names `{spec}`, which is not callable")
    return function_from_callable(target, name=name, description=description, approval_required=approval_required,
                                  egress=egress)


# --------------------------------------------------------------------------------------------------
# Built-in tools

MAX_READ_BYTES = 256 * 1024


@dataclass(slots=True)
class BuiltinToolContext:
    timezone: str | None = None
    workspace_resolver: Callable[[], Sequence[str]] | None = None
    """Defaults to the directories of the tool call in progress (set by workspace validation)."""
    root: str | None = None
    """The workspace root, named in the file tools' descriptions; relative paths resolve against the root of
    the call in progress (workspace validation sets it from the build request)."""


def relative_paths_sentence(root: str | None) -> str:
    """What the file tools tell the model a relative path means (one meaning for every tool)."""
    where = f" ({root})" if root else ""
    return f"A relative path is relative to the workspace root{where}."


def user_now(timezone: str | None) -> _dt.datetime:
    """The current time in the user's time zone (`[user] timezone`), aware; local time when it is unset or
    unknown. The personal provider's `current_date`/`current_time` and the `current_datetime` tool use it."""
    zone: _dt.tzinfo | None = None
    if timezone:
        try:
            from zoneinfo import ZoneInfo

            zone = ZoneInfo(timezone)
        except Exception:  # noqa: BLE001 - unknown zone: local time
            zone = None
    return _dt.datetime.now(zone).astimezone(zone)


def builtin_tools(ctx: BuiltinToolContext) -> dict[str, AIFunction]:
    """The selectable built-in tools. Paths are checked again by workspace validation before each call."""
    def workspaces() -> Sequence[str]:
        return (ctx.workspace_resolver or current_workspaces)()

    def current_datetime() -> str:
        """The current date and time in the user's time zone, ISO 8601."""
        return user_now(ctx.timezone).isoformat(timespec="seconds")

    async def read_file(path: str) -> str:
        """Reads a UTF-8 text file inside the agent's workspaces."""
        target = resolve_inside(path, workspaces(), base=current_root())

        def _read() -> str:
            data, more = read_head(target, limit=MAX_READ_BYTES)  # a FIFO or device is refused, not waited on
            return data.decode("utf-8", errors="replace") + ("\n[truncated]" if more else "")

        return await asyncio.to_thread(_read)

    async def list_directory(path: str) -> str:
        """Lists a directory inside the agent's workspaces; folders end with a slash."""
        target = resolve_inside(path, workspaces(), base=current_root())

        def _list() -> str:
            entries = scan_folder(target)  # `target` is a real path inside a grant
            return "\n".join(e.name + ("/" if e.is_dir() else "") for e in entries) or "(empty)"

        return await asyncio.to_thread(_list)

    async def write_file(path: str, content: str) -> str:
        """Writes a UTF-8 text file inside the agent's workspaces, replacing it."""
        allowed, base = workspaces(), current_root()
        target = resolve_inside(path, allowed, base=base, must_exist=False)

        def _write() -> str:
            write_text(target, content)  # `target` is a real path inside a grant; a FIFO there is refused
            return f"Wrote {len(content)} characters to {shown_path(target, allowed, base)}."  # where it went

        return await asyncio.to_thread(_write)

    def file_tool(func: ToolCallable, **options: Any) -> AIFunction:
        description = f"{inspect.getdoc(func)} {relative_paths_sentence(ctx.root)}"
        return function_from_callable(func, description=description, path_parameters=("path",), **options)

    return {
        "current_datetime": function_from_callable(current_datetime),
        "read_file": file_tool(read_file),
        "list_directory": file_tool(list_directory),
        "write_file": file_tool(write_file, approval_required=True),
    }
