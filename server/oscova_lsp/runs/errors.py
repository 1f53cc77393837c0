"""Why a run failed, in words a user can act on: never a traceback, never a key (callers redact)."""

from __future__ import annotations

import types

from oscova_runtime.chat_client import ChatClientError
from oscova_runtime.context import AIContextProvider, InvalidOperationError
from oscova_runtime.function_invocation import tool_failure
from oscova_runtime.host import ConfiguredHost, HostConfigurationError
from oscova_runtime.prompt_budget import PromptTooLongError
from oscova_runtime.providers.custom import ProviderLoadError
from oscova_runtime.templates import TemplateError
from oscova_runtime.tools import ToolLoadError

from .events import describe_exception


class RunError(Exception):
    """A run cannot start (unknown agent, a definition with errors); the message is for the user."""


def untrusted_refusal(what: str) -> str:
    """Why `what` (a command that runs agents) is refused in an untrusted workspace: one sentence for them all."""
    return (f"The workspace is not trusted: {what} runs agents (and the workspace's tool and provider code) only "
            "in a trusted workspace")


_WORDED = (RunError, HostConfigurationError, ChatClientError, ProviderLoadError, ToolLoadError, TemplateError,
           PromptTooLongError)


def failing_provider(error: BaseException) -> str | None:
    """The innermost context provider on the error's traceback: the one whose code raised."""
    found: str | None = None
    tb: types.TracebackType | None = error.__traceback__
    while tb is not None:
        owner = tb.tb_frame.f_locals.get("self")
        if isinstance(owner, AIContextProvider):
            found = type(owner).__name__
        tb = tb.tb_next
    return found


def describe_failure(error: BaseException, agent_id: str) -> str:
    """One or two sentences saying what went wrong and, where it can, what to change."""
    failure = tool_failure(error)
    if failure is not None:  # the tool's own exception, let through past the consecutive-error limit
        how = (f"failed in {failure.failing_rounds} tool rounds in a row (the limit is {failure.limit})"
               if failure.limit else "failed, and the tool loop allows no failing round")
        return f"The tool `{failure.tool}` {how}, so the run stopped: {describe_exception(error)}"
    if isinstance(error, _WORDED):
        return str(error)
    provider = failing_provider(error)
    if provider is not None:
        return f"The context provider {provider} failed: {describe_exception(error)}"
    if isinstance(error, InvalidOperationError):
        return f"The agent {agent_id!r} could not be built: {error}"
    return f"The run of {agent_id!r} failed: {describe_exception(error)}"


def denial_reason(name: str, host: ConfiguredHost) -> str | None:
    """Which setting of the host configuration takes the tool `name` away from every agent, in words a user
    can act on, or None when none does."""
    if host.tool_policy.refusal(name, None) is None:
        return None
    if name in host.config.host.deny_tools:
        return "`[host] deny_tools` in oscova.toml lists it"
    return "it sends data off this machine, and oscova.toml sets `[host] allow_egress = false`"


def unanswered_calls_message(names: list[str], tool_rounds: int, host: ConfiguredHost | None = None) -> str:
    """Why a run ended on tool calls nothing answered (the model asked for a tool it was not given)."""
    listed = ", ".join(f"`{n}`" for n in dict.fromkeys(names))
    noun = "the tool" if len(set(names)) == 1 else "the tools"
    denied = {n: why for n in dict.fromkeys(names) if host is not None and (why := denial_reason(n, host))}
    if tool_rounds == 0 and len(denied) == len(set(names)):
        reasons = "; ".join(f"`{n}`: {why}" for n, why in denied.items())
        return (f"The model asked for {noun} {listed}, which the host's policy takes away from every agent "
                f"({reasons}), so nothing ran and the run ended without an answer")
    if tool_rounds == 0:
        return (f"The model asked for {noun} {listed}, which it was not offered in this run (an agent is offered the "
                "tools in its `tools` and `agent_tools`; tools that need approval only at a terminal), so nothing "
                "ran and the run ended without an answer")
    return (f"The model still asked for {noun} {listed} after {tool_rounds} tool rounds, the limit of one "
            "request, so the run ended without an answer")

