"""The governed function-invocation client: the tool loop with the seed's limits, and the repeated-call guard.

The loop is Microsoft.Extensions.AI's `FunctionInvokingChatClient` with the seed's settings (40 iterations,
3 consecutive errors, no detailed errors), calls run one after another:
- at most `maximum_iterations_per_request` tool rounds; the request after the last one offers no function
  tools (and no tool choice), so the model answers in text; calls it makes anyway are returned unrun;
- a round in which a call raised is a failing round; while fewer than the limit failed in a row, the failure
  is reported to the model (`Error: Function failed.`, the exception kept on the `FunctionResultContent`);
  once the limit is reached, the next failing call's own exception propagates to the caller and the rest of
  its round does not run (a limit of 0: the first failure propagates). A round without failures resets;
- a call to a function not offered gets `Error: Requested function "NAME" not found.`: not an error, and the
  model is asked again (also when no tools were offered at all);
- a function that returns nothing is reported as `Success: Function completed.`;
- a call that asks to terminate (`context.terminate`, or `current_invocation_context().terminate` from the
  function) ends the loop after itself: the rest of its round does not run and gets no result.

The guards, in the order a call meets them (the seed's step 7: one governed function-invocation client,
then workspace validation, the builder customizations, the repeated-call guard):
1. governance (`ToolPolicy`, in the loop): a refused call is not run; its result says why (with a
   `ToolDeniedError` for the application, not counted as an error) and it ends the loop as a terminating
   call does.
2. workspace validation (function middleware): a path outside the grants raises `ToolCallRefusedError`, a
   failed call like any other, whose model-visible text is the runtime's own refusal.
3. the repeated-call guard (innermost middleware): counts identical calls that returned; the third is not
   run and terminates. A call that raised is not counted (it has no result to reuse; the error limit
   governs it).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .chat import ChatClient, DelegatingChatClient, FunctionMiddleware
from .governance import ALLOW_ALL, ToolDeniedError, ToolPolicy
from .grants import PATH_ARGUMENT_NAMES, WorkspaceViolation, resolve_inside, workspaces_in_effect
from .messages import (
    ChatMessage,
    ChatOptions,
    ChatResponse,
    ChatResponseUpdate,
    FunctionCallContent,
    FunctionResultContent,
    UpdateAccumulator,
    UsageDetails,
)
from .notices import AGENT, warn
from .stepping import current_stepper
from .telemetry import observed_tool
from .tools import AIFunction

MAXIMUM_ITERATIONS_PER_REQUEST = 40
MAXIMUM_CONSECUTIVE_ERRORS_PER_REQUEST = 3
FUNCTION_FAILED = "Error: Function failed."
FUNCTION_COMPLETED = "Success: Function completed."
FUNCTION_NOT_FOUND = 'Error: Requested function "{name}" not found.'


@dataclass(frozen=True, slots=True)
class FunctionInvocationSettings:
    """The runtime's single function-invocation configuration (seed defaults)."""

    maximum_iterations_per_request: int = MAXIMUM_ITERATIONS_PER_REQUEST
    maximum_consecutive_errors_per_request: int = MAXIMUM_CONSECUTIVE_ERRORS_PER_REQUEST
    include_detailed_errors: bool = False


@dataclass(slots=True)
class FunctionInvocationContext:
    function: AIFunction
    arguments: dict[str, Any]
    call: FunctionCallContent
    iteration: int
    request_state: dict[str, Any]
    """State shared by every call of one request (one `get_response`), e.g. for the repeated-call guard."""
    terminate: bool = False
    """Set (by middleware or the function) to end the tool loop after this call."""


_current_context: ContextVar[FunctionInvocationContext | None] = ContextVar("oscova_function_invocation",
                                                                            default=None)


def current_invocation_context() -> FunctionInvocationContext | None:
    """The call being invoked, for the function itself (the framework's `FunctionInvokingChatClient.CurrentContext`):
    a function sets `terminate` on it to end the tool loop after this call."""
    return _current_context.get()


class ToolCallRefusedError(PermissionError):
    """Raised by function middleware that refuses a call (workspace validation). It is a failed call, but
    its message is written by the runtime, not the tool, so the model is shown it."""


@dataclass(frozen=True, slots=True)
class ToolFailure:
    """Why a tool's own exception reached the caller: its round was one failing round past the limit."""

    tool: str
    call_id: str
    failing_rounds: int
    limit: int


def tool_failure(error: BaseException) -> ToolFailure | None:
    """The `ToolFailure` of an exception the tool loop let through to its caller, or None."""
    found = getattr(error, "oscova_tool_failure", None)
    return found if isinstance(found, ToolFailure) else None


def serialize_result(result: Any) -> str:
    """A function's result as the model sees it: text as it is, nothing as `Success: Function completed.`,
    anything else as JSON."""
    if result is None:
        return FUNCTION_COMPLETED
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(result)


@dataclass(slots=True)
class _Round:
    message: ChatMessage
    terminate: bool = False
    failed: bool = False


def _has_function_tools(options: ChatOptions) -> bool:
    return any(isinstance(t, AIFunction) for t in options.tools or ())


def _without_function_tools(options: ChatOptions) -> ChatOptions:
    """The last iteration's options: no function tools, and no tool choice when no tool remains."""
    if not options.tools or not _has_function_tools(options):
        return options
    last = options.clone()
    last.tools = [t for t in options.tools if not isinstance(t, AIFunction)] or None
    if last.tools is None:
        last.tool_choice = None
    return last


def _after_a_round(options: ChatOptions) -> ChatOptions:
    """A required tool choice holds for the first request only (it would loop for ever)."""
    if options.tool_choice != "required":
        return options
    later = options.clone()
    later.tool_choice = None
    return later


class FunctionInvokingChatClient(DelegatingChatClient):
    """Calls the model, runs the tools it asks for, sends the results back, until it answers (see the module).

    `policy` is asked before each call. Cancellation propagates: a cancelled tool or model call ends the loop.
    """

    def __init__(
        self, inner: ChatClient, settings: FunctionInvocationSettings | None = None,
        middleware: Sequence[FunctionMiddleware] = (), policy: ToolPolicy = ALLOW_ALL,
    ) -> None:
        super().__init__(inner)
        self.settings = settings or FunctionInvocationSettings()
        self.middleware = list(middleware)
        self.policy = policy

    def _request_options(self, options: ChatOptions, iteration: int) -> ChatOptions:
        return options if iteration < self.settings.maximum_iterations_per_request else _without_function_tools(options)

    def _loop_ends(self, calls: list[FunctionCallContent], options: ChatOptions, iteration: int) -> bool:
        """No calls, the last iteration, or a call naming a tool that cannot be invoked: the calls go back."""
        if not calls or iteration >= self.settings.maximum_iterations_per_request:
            return True
        tools = {getattr(t, "name", None): t for t in options.tools or ()}
        return any(c.name in tools and not isinstance(tools[c.name], AIFunction) for c in calls)

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        conversation = list(messages)
        added: list[ChatMessage] = []
        usage = UsageDetails()
        state: dict[str, Any] = {}
        failing = 0
        iteration = 0
        while True:
            response = await self.inner.get_response(conversation, self._request_options(options, iteration))
            usage.add(response.usage)
            added.extend(response.messages)
            calls = [c for m in response.messages for c in m.function_calls]
            if self._loop_ends(calls, options, iteration):
                break
            conversation.extend(response.messages)
            outcome = await self._invoke_round(calls, options, state, iteration, failing)
            failing = failing + 1 if outcome.failed else 0
            conversation.append(outcome.message)
            added.append(outcome.message)
            if outcome.terminate:
                break
            options = _after_a_round(options)
            iteration += 1
        return ChatResponse(added, usage, response.finish_reason, response.model)

    async def get_streaming_response(  # type: ignore[override]
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncGenerator[ChatResponseUpdate, None]:
        conversation = list(messages)
        state: dict[str, Any] = {}
        failing = 0
        iteration = 0
        while True:
            updates = UpdateAccumulator()
            request_options = self._request_options(options, iteration)
            async with contextlib.aclosing(self.inner.get_streaming_response(conversation, request_options)) as stream:
                async for update in stream:
                    updates.add(update)
                    yield update
            response_messages = updates.messages()
            calls = [c for m in response_messages for c in m.function_calls]
            if self._loop_ends(calls, options, iteration):
                return
            conversation.extend(response_messages)
            outcome = await self._invoke_round(calls, options, state, iteration, failing)
            failing = failing + 1 if outcome.failed else 0
            conversation.append(outcome.message)
            yield ChatResponseUpdate(role="tool", contents=list(outcome.message.contents))
            if outcome.terminate:
                return
            options = _after_a_round(options)
            iteration += 1

    async def _invoke_round(
        self, calls: list[FunctionCallContent], options: ChatOptions, state: dict[str, Any], iteration: int,
        failing: int,
    ) -> _Round:
        """Runs the round's calls in order until one terminates. Failures are reported while `failing` (the
        failing rounds before this one) is under the limit; past it, a failure propagates."""
        tools = {t.name: t for t in options.tools or () if isinstance(t, AIFunction)}
        outcome = _Round(ChatMessage("tool", []))
        results = outcome.message.contents
        report_failures = failing < self.settings.maximum_consecutive_errors_per_request
        for call in calls:
            function = tools.get(call.name)
            refusal = self.policy.refusal(call.name, function)
            if refusal is not None:  # not run; it ends the loop as a terminating call does
                stepper = current_stepper()
                if stepper is not None:
                    await stepper.refused(call, refusal)
                results.append(FunctionResultContent(call.call_id, refusal, ToolDeniedError(refusal)))
                outcome.terminate = True
                break
            if function is None:
                results.append(FunctionResultContent(call.call_id, FUNCTION_NOT_FOUND.format(name=call.name)))
                continue
            context = FunctionInvocationContext(function, dict(call.arguments), call, iteration, state)
            try:
                result = await self._run_middleware(context)
            except Exception as error:  # noqa: BLE001 - reported to the model without detail, or propagated
                if not report_failures:
                    self._mark_past_the_limit(error, call, failing)
                    raise
                outcome.failed = True
                results.append(FunctionResultContent(call.call_id, self._failure_text(error), error))
                continue
            results.append(FunctionResultContent(call.call_id, serialize_result(result)))
            if context.terminate:
                outcome.terminate = True
                break
        return outcome

    def _failure_text(self, error: Exception) -> str:
        if isinstance(error, ToolCallRefusedError):
            return str(error)
        if self.settings.include_detailed_errors:
            return f"{FUNCTION_FAILED} Exception: {error}"
        return FUNCTION_FAILED

    def _mark_past_the_limit(self, error: Exception, call: FunctionCallContent, failing: int) -> None:
        """Tells the caller why the tool's own exception reached it (the exception itself is not wrapped)."""
        limit = self.settings.maximum_consecutive_errors_per_request
        with contextlib.suppress(AttributeError, TypeError):  # an exception class without attributes
            error.oscova_tool_failure = ToolFailure(call.name, call.call_id, failing + 1, limit)  # type: ignore[attr-defined]

    async def _run_middleware(self, context: FunctionInvocationContext) -> Any:
        chain = self.middleware

        async def call(index: int, ctx: FunctionInvocationContext) -> Any:
            if index == len(chain):
                return await ctx.function.invoke(ctx.arguments)
            return await chain[index](ctx, lambda c: call(index + 1, c))

        def run() -> Awaitable[Any]:
            return observed_tool(context.call, context.function.description, lambda: call(0, context))

        token = _current_context.set(context)
        try:
            stepper = current_stepper()  # a debugged run stops before the call (and may edit its arguments)
            return await (stepper.tool(context, run) if stepper is not None else run())
        finally:
            _current_context.reset(token)


class WorkspaceValidation:
    """Function middleware: refuses a call whose path arguments leave the definition's workspaces.

    The resolver is called on each checked call, so changed grants apply without a rebuild. Relative paths
    resolve against `root` (the workspace root), here and in the tool itself.
    """

    def __init__(self, resolver: Callable[[], Sequence[str]], root: str | None = None) -> None:
        self._resolver = resolver
        self._root = root

    async def __call__(
        self, context: FunctionInvocationContext, call_next: Callable[[FunctionInvocationContext], Awaitable[Any]]
    ) -> Any:
        names = set(context.function.path_parameters) or PATH_ARGUMENT_NAMES
        checked = [v for k, v in context.arguments.items() if k in names and isinstance(v, str)]
        allowed = tuple(self._resolver())
        for value in checked:
            try:
                resolve_inside(value, allowed, base=self._root, must_exist=False)
            except WorkspaceViolation as violation:  # a failed call: it counts towards the error limit
                raise ToolCallRefusedError(str(violation)) from violation
        with workspaces_in_effect(allowed, self._root):
            return await call_next(context)


REPEATED_CALL_LIMIT = 3
REPEATED_CALL_STOPPED = (
    "Stopped: this tool was called {count} times with the same arguments in one request. "
    "Use the earlier result."
)


class RepeatedCallGuard:
    """Function middleware: after `limit - 1` identical calls (same tool, same arguments) returned in one
    request, the next one is not run; its result says why and it terminates the tool loop (the rest of its
    round does not run).

    A call that raised is not counted: there is no earlier result to use, and the consecutive-error
    limit already stops a tool that keeps failing.
    """

    def __init__(self, limit: int = REPEATED_CALL_LIMIT) -> None:
        self.limit = limit

    async def __call__(
        self, context: FunctionInvocationContext, call_next: Callable[[FunctionInvocationContext], Awaitable[Any]]
    ) -> Any:
        returned: dict[str, int] = context.request_state.setdefault("repeated_calls", {})
        key = context.function.name + "\0" + json.dumps(context.arguments, sort_keys=True, default=str)
        count = returned.get(key, 0) + 1
        if count >= self.limit:
            context.terminate = True
            warn("repeatedCall", f"The repeated-call guard stopped the tool loop of {AGENT}: the model called "
                                 f"`{context.call.name}` {count} times with the same arguments in one request, so the "
                                 "answer is the text the model wrote before that call")
            return REPEATED_CALL_STOPPED.format(count=count)
        result = await call_next(context)
        returned[key] = count
        return result
