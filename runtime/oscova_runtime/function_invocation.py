"""The governed function-invocation client: the tool loop with the seed's limits, and the repeated-call guard.

The guards, in the order a call meets them (the seed's step 7: one governed function-invocation client,
then workspace validation, the builder customizations, the repeated-call guard):
1. governance (`ToolPolicy`, in the loop): a refused call is not run; its result says why and the loop
   ends after the round. It is not an error.
2. workspace validation (function middleware): a path outside the grants raises `ToolCallRefusedError`,
   a failed call like any other: the model sees the refusal, and it counts towards the consecutive-error
   limit, so identical refused calls end the run with `ConsecutiveToolErrorsError` after three reports.
3. the repeated-call guard (innermost middleware): counts identical calls that returned; a call that
   raised is not counted (it has no result to reuse; the error limit governs it). So a tool failing the
   same way every time reaches the consecutive-error limit and the failure reaches the caller.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .chat import ChatClient, DelegatingChatClient, FunctionMiddleware
from .governance import ALLOW_ALL, ToolDeniedError, ToolPolicy
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
from .telemetry import observed_tool
from .tools import AIFunction
from .workspace import PATH_ARGUMENT_NAMES, WorkspaceViolation, resolve_inside, workspaces_in_effect

MAXIMUM_ITERATIONS_PER_REQUEST = 40
MAXIMUM_CONSECUTIVE_ERRORS_PER_REQUEST = 3
FUNCTION_FAILED = "Error: Function failed."
NOT_RUN = "Not run: the tool loop ended before this call."


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
    """Set by middleware to end the tool loop after this round."""


class ConsecutiveToolErrorsError(RuntimeError):
    """More consecutive failing tool rounds than the limit allows; the last tool exception is the cause."""


class ToolCallRefusedError(PermissionError):
    """Raised by function middleware that refuses a call (workspace validation). It is a failed call, but
    its message is written by the runtime, not the tool, so the model is shown it."""


def serialize_result(result: Any) -> str:
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, default=str, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(result)


@dataclass(slots=True)
class _RoundResult:
    message: ChatMessage
    terminate: bool = False
    errors: list[BaseException] = field(default_factory=list)


class FunctionInvokingChatClient(DelegatingChatClient):
    """Calls the model, runs the tools it asks for, sends the results back, until it answers.

    - at most `maximum_iterations_per_request` tool rounds; the response after the last round is returned
      as is, with any further calls left unprocessed;
    - a round in which a tool failed counts as an error; more than
      `maximum_consecutive_errors_per_request` failing rounds in a row raise (the last tool exception is
      the cause) — so with 3, three failing rounds are reported to the model and a fourth raises;
    - without detailed errors the model sees only `Error: Function failed.`; the exception stays on the
      `FunctionResultContent` for the application.
    - `policy` is asked before each call: a refused call is not run, its result says why (with a
      `ToolDeniedError` for the application) and the loop ends after that round.
    Calls left in a round after the loop was told to end get a "not run" result, so every call the
    model made has its result in the history.
    Cancellation propagates: a cancelled tool or model call ends the loop.
    """

    def __init__(
        self, inner: ChatClient, settings: FunctionInvocationSettings | None = None,
        middleware: Sequence[FunctionMiddleware] = (), policy: ToolPolicy = ALLOW_ALL,
    ) -> None:
        super().__init__(inner)
        self.settings = settings or FunctionInvocationSettings()
        self.middleware = list(middleware)
        self.policy = policy

    async def get_response(self, messages: Sequence[ChatMessage], options: ChatOptions) -> ChatResponse:
        conversation = list(messages)
        added: list[ChatMessage] = []
        usage = UsageDetails()
        state: dict[str, Any] = {}
        errors_in_a_row = 0
        response = ChatResponse()
        iteration = 0
        while True:
            response = await self.inner.get_response(conversation, options)
            usage.add(response.usage)
            added.extend(response.messages)
            calls = [c for m in response.messages for c in m.function_calls]
            if not calls or not options.tools or iteration >= self.settings.maximum_iterations_per_request:
                break
            conversation.extend(response.messages)
            outcome = await self._invoke_round(calls, options, state, iteration)
            errors_in_a_row = self._count_errors(outcome, errors_in_a_row)
            conversation.append(outcome.message)
            added.append(outcome.message)
            iteration += 1
            if outcome.terminate:
                break
        return ChatResponse(added, usage, response.finish_reason, response.model)

    async def get_streaming_response(  # type: ignore[override]
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncGenerator[ChatResponseUpdate, None]:
        conversation = list(messages)
        state: dict[str, Any] = {}
        errors_in_a_row = 0
        iteration = 0
        while True:
            updates = UpdateAccumulator()
            async with contextlib.aclosing(self.inner.get_streaming_response(conversation, options)) as stream:
                async for update in stream:
                    updates.add(update)
                    yield update
            response_messages = updates.messages()
            calls = [c for m in response_messages for c in m.function_calls]
            if not calls or not options.tools or iteration >= self.settings.maximum_iterations_per_request:
                return
            conversation.extend(response_messages)
            outcome = await self._invoke_round(calls, options, state, iteration)
            errors_in_a_row = self._count_errors(outcome, errors_in_a_row)
            conversation.append(outcome.message)
            yield ChatResponseUpdate(role="tool", contents=list(outcome.message.contents))
            iteration += 1
            if outcome.terminate:
                return

    def _count_errors(self, outcome: _RoundResult, errors_in_a_row: int) -> int:
        if not outcome.errors:
            return 0
        errors_in_a_row += 1
        if errors_in_a_row > self.settings.maximum_consecutive_errors_per_request:
            raise ConsecutiveToolErrorsError(
                f"The tools failed {errors_in_a_row} times in a row; the run stopped"
            ) from outcome.errors[-1]
        return errors_in_a_row

    async def _invoke_round(
        self, calls: list[FunctionCallContent], options: ChatOptions, state: dict[str, Any], iteration: int
    ) -> _RoundResult:
        tools = {t.name: t for t in options.tools or () if isinstance(t, AIFunction)}
        outcome = _RoundResult(ChatMessage("tool", []))
        results = outcome.message.contents
        for call in calls:
            if outcome.terminate:
                results.append(FunctionResultContent(call.call_id, NOT_RUN))
                continue
            function = tools.get(call.name)
            refusal = self.policy.refusal(call.name, function)
            if refusal is not None:
                results.append(FunctionResultContent(call.call_id, refusal, ToolDeniedError(refusal)))
                outcome.terminate = True
                continue
            if function is None:
                error = LookupError(f"Requested function {call.name!r} not found")
                outcome.errors.append(error)
                results.append(FunctionResultContent(
                    call.call_id, f'Error: Requested function "{call.name}" not found.', error))
                continue
            context = FunctionInvocationContext(function, dict(call.arguments), call, iteration, state)
            try:
                result = await self._run_middleware(context)
            except Exception as error:  # noqa: BLE001 - reported to the model without detail
                outcome.errors.append(error)
                text = FUNCTION_FAILED
                if isinstance(error, ToolCallRefusedError):
                    text = str(error)
                elif self.settings.include_detailed_errors:
                    text = f"{FUNCTION_FAILED} Exception: {error}"
                results.append(FunctionResultContent(call.call_id, text, error))
            else:
                results.append(FunctionResultContent(call.call_id, serialize_result(result)))
            outcome.terminate = outcome.terminate or context.terminate
        return outcome

    async def _run_middleware(self, context: FunctionInvocationContext) -> Any:
        chain = self.middleware

        async def call(index: int, ctx: FunctionInvocationContext) -> Any:
            if index == len(chain):
                return await ctx.function.invoke(ctx.arguments)
            return await chain[index](ctx, lambda c: call(index + 1, c))

        return await observed_tool(context.call, context.function.description, lambda: call(0, context))


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
    request, the next one is not run; its result says why and the tool loop ends after that round.

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
            return REPEATED_CALL_STOPPED.format(count=count)
        result = await call_next(context)
        returned[key] = count
        return result
