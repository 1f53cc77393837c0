"""The provider pipeline without a model: what each provider contributed and what the model would be sent
(`preview_agent`, which `RunService.preview` answers with)."""

from __future__ import annotations

import asyncio
import inspect
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from oscova_runtime.agent import ChatClientAgent
from oscova_runtime.catalogue import (
    PROVIDER_CHANGES,
    VARIABLE_CHANGES,
    PlannedProvider,
    memory_off_as_tools,
    plan_providers,
)
from oscova_runtime.context import AIContext, AIContextProvider, InvokingContext
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.host import NOT_TRUSTED, HostConfigurationError, InactiveProvider
from oscova_runtime.host_config import HostConfig
from oscova_runtime.messages import ChatMessage, ChatOptions
from oscova_runtime.notices import listening
from oscova_runtime.prompt_budget import PromptLimit, over_limit
from oscova_runtime.prompt_cache import Changing, stable_prefix
from oscova_runtime.providers import AgentPersonalContextProvider
from oscova_runtime.session import AgentSession
from oscova_runtime.tokens import (
    ESTIMATED_NOTE,
    RequestTokens,
    Tokenizer,
    count_request,
    message_tokens,
    tool_tokens,
)
from oscova_runtime.tools import AIFunction, ApprovalRequest, approval_channel

from ..analysis.engine import Analysis
from ..analysis.files import DefinitionFile
from ..analysis.rules.templates import CACHE_PREFIX, CURRENT_TIME
from ..wire.commands import PreviewResult
from .agents_cache import AgentsCache
from .errors import RunError, describe_failure
from .events import Redactor, conversation_message, map_strings
from .workspace_view import WorkspaceView

CACHING_CODES = frozenset({CURRENT_TIME.code, CACHE_PREFIX.code})


@dataclass(slots=True)
class _Step:
    provider: AIContextProvider
    before: AIContext | None = None
    after: AIContext | None = None
    notices: list[str] = field(default_factory=list)
    """What the provider left out and why (`oscova_runtime.notices`)."""
    values: Mapping[str, Any] = field(default_factory=dict)
    """The personal provider's variables as it rendered them (what in its text changes, and how often)."""


@dataclass(slots=True)
class _Recorder:
    """Stands in for one provider during assembly: records the context before and after it."""

    step: _Step

    @property
    def state_keys(self) -> tuple[str, ...]:
        return self.step.provider.state_keys

    async def invoking(self, context: InvokingContext) -> AIContext:
        self.step.before = context.ai_context
        with listening(lambda heard: self.step.notices.append(heard.message)):
            self.step.after = await self.step.provider.invoking(context)
        provider = self.step.provider
        if isinstance(provider, AgentPersonalContextProvider) and provider.instruction_template:
            values = provider.model_factory(context)  # the run clock is frozen: the values it rendered with
            self.step.values = await values if inspect.isawaitable(values) else values
        return self.step.after


def tool_to_dict(tool: Any) -> dict[str, Any]:
    if isinstance(tool, AIFunction):
        return {"name": tool.name, "description": tool.description, "parameters": tool.parameters,
                "approvalRequired": tool.approval_required}
    return {"name": getattr(tool, "name", type(tool).__name__), "description": getattr(tool, "description", "")}


def wire_request(messages: list[ChatMessage], options: ChatOptions) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The messages and tools as the chat client sends them (and the endpoint counts them)."""
    from oscova_runtime.completions import to_openai_messages

    return (to_openai_messages(messages, options.instructions),
            [t.schema() for t in options.tools or () if isinstance(t, AIFunction)])


def _provider_tokens(contribution: dict[str, Any], messages: list[ChatMessage], tools: list[Any],
                     tokenizer: Tokenizer) -> dict[str, int]:
    """What one provider's contribution costs: its instruction text, its messages with their overhead, its tools
    by the tool rule."""
    from oscova_runtime.completions import to_openai_messages

    return {"instructions": tokenizer.count(contribution["instructions"] or ""),
            "messages": sum(message_tokens(m, tokenizer) for m in to_openai_messages(messages, None)),
            "tools": sum(tool_tokens(t.schema(), tokenizer) for t in tools if isinstance(t, AIFunction))}


def changing_parts(instructions: str, steps: list[_Step], providers: list[dict[str, Any]],
                   custom: frozenset[str]) -> list[Changing]:
    """What in the instructions changes, provider by provider: the personal provider's changing values, and the
    whole contribution of a provider whose output changes per user or run (a custom one's included)."""
    found: list[Changing] = []
    at = 0
    for step, entry in zip(steps, providers, strict=False):
        text = entry.get("instructions") or ""
        start = instructions.find(text, at) if text else -1
        if start == -1:
            continue
        at = start
        how = PROVIDER_CHANGES.get(entry["type"]) or ("per run" if entry["type"] in custom else None)
        if how is not None:
            found.append(Changing(text, f"`{entry['type']}`", f"changes {how}", start))
        for name, every in VARIABLE_CHANGES.items():
            value = step.values.get(name)
            if isinstance(value, str) and value.strip():
                found.append(Changing(value, f"`{name}` ({entry['type']})", f"changes {every}", start))
    return found


def tokens_to_dict(counted: RequestTokens, by_provider: list[dict[str, Any]]) -> dict[str, Any]:
    """The preview's `tokens`: `{total, instructions, messages, tools, byProvider, exact, tokenizer}`."""
    return {"total": counted.total, "instructions": counted.instructions, "messages": counted.messages,
            "tools": counted.tools, "byProvider": by_provider, "exact": counted.exact, "tokenizer": counted.tokenizer}


def _contribution(step: _Step, tokenizer: Tokenizer | None = None) -> dict[str, Any]:
    before, after = step.before, step.after
    if before is None or after is None:  # the provider was not reached (a continuation): nothing
        return {"instructions": None, "messages": [], "tools": [],
                **({"tokens": {"instructions": 0, "messages": 0, "tools": 0}} if tokenizer is not None else {})}
    instructions = None
    if after.instructions != before.instructions and after.instructions is not None:
        previous = before.instructions or ""
        instructions = after.instructions[len(previous):] if after.instructions.startswith(previous) else after.instructions
        instructions = instructions[1:] if before.instructions is not None and instructions.startswith("\n") else instructions
    messages: list[ChatMessage] = list(after.messages or ())[len(before.messages or ()):]
    tools = list(after.tools or ())[len(before.tools or ()):]
    found: dict[str, Any] = {"instructions": instructions, "messages": [conversation_message(m).wire() for m in messages],
                             "tools": [tool_to_dict(t)["name"] for t in tools]}
    if tokenizer is not None:
        found["tokens"] = _provider_tokens(found, messages, tools, tokenizer)
    return found


async def assemble_preview(
    agent: ChatClientAgent, plan: tuple[PlannedProvider, ...], input_text: str | None, session: AgentSession,
    tokenizer: Tokenizer | None = None, limits: Sequence[PromptLimit] = (),
    shown: Callable[[str], str] | None = None,
) -> dict[str, Any]:
    """Runs the agent's providers (through `assemble`) on a fresh, owned agent and reports each step.

    `plan` is the provider plan the host built the agent from, in the same order as its providers. With a
    `tokenizer`, `tokens` says what the request costs, and each tool and provider what it adds; `shown` maps
    each text before the request's total and cacheable prefix are counted (a review writes the repository's
    folder `<repository>`, so its figures do not depend on where a side was copied).
    """
    steps = [_Step(p) for p in agent.context_providers]
    original = agent.context_providers
    agent.context_providers = tuple(_Recorder(s) for s in steps)  # type: ignore[misc]
    try:
        messages, options = await agent.assemble(input_text, session=session, options=ChatOptions())
    finally:
        agent.context_providers = original
    providers = []
    for index, step in enumerate(steps):
        planned = plan[index] if index < len(plan) else None
        entry: dict[str, Any] = {
            "type": planned.type if planned else type(step.provider).__name__,
            "class": planned.class_name if planned else type(step.provider).__name__,
            "stateKeys": list(step.provider.state_keys),
            "position": planned.position if planned else None,
            "origin": planned.origin if planned else "default",
        }
        # The host leaves a provider inactive for the plan's reason, or for its own (an untrusted workspace).
        reason = step.provider.reason if isinstance(step.provider, InactiveProvider) else None
        if reason is None and planned is not None:
            reason = planned.inactive_reason
        entry["active"] = reason is None
        if reason is not None:
            entry["inactiveReason"] = reason
        entry.update(_contribution(step, tokenizer))
        if step.notices:
            entry["notices"] = list(step.notices)
        providers.append(entry)
    result: dict[str, Any] = {
        "instructions": options.instructions or "",
        "messages": [conversation_message(m).wire() for m in messages],
        "tools": [tool_to_dict(t) for t in options.tools or ()],
        "providers": providers,
    }
    if tokenizer is not None:
        wire_messages, wire_tools = wire_request(messages, options)
        instructions, counted_providers = result["instructions"], providers
        if shown is not None:
            wire_messages, wire_tools = map_strings(wire_messages, shown), map_strings(wire_tools, shown)
            instructions = shown(instructions)
            counted_providers = [{**p, "instructions": shown(p["instructions"]) if p.get("instructions") else None}
                                 for p in providers]
        counted = count_request(wire_messages, wire_tools, tokenizer)
        for tool, cost in zip((t for t in result["tools"] if "parameters" in t), counted.per_tool, strict=False):
            tool["tokens"] = cost
        result["tokens"] = tokens_to_dict(counted, [{"type": p["type"], **p["tokens"]} for p in providers])
        prefix = stable_prefix(wire_messages, wire_tools, tokenizer,
                               changing_parts(instructions, steps, counted_providers,
                                              frozenset(p.type for p in plan if p.custom is not None)))
        result["tokens"]["cacheable"] = {"tokens": prefix.tokens, "endsAt": prefix.ends}
        notes = [tokenizer.note or (ESTIMATED_NOTE if not counted.exact else None), counted.note]
        if any(notes):
            result["tokens"]["note"] = "; ".join(note for note in notes if note)
        refusal = over_limit(counted, limits)
        if refusal is not None:
            result["tokens"]["warnings"] = [f"{refusal}: a run would refuse to send it"]
    return result


def caching_advice(analysis: Analysis, agent_file: DefinitionFile, renderers: set[str]) -> list[dict[str, Any]]:
    """What the checker says, word for word, of where this agent's requests stop sharing a cacheable prefix across
    days, users and runs (OSC102, OSC108) in the templates it renders: its own instructions and what they include,
    and the host's templates of the providers in `renderers`. `[{code, path, line, message}]`, paths relative to
    the root: `preview` prints the same figures as `check`, from the same count."""
    ws = analysis.workspace
    starts = ws.template_refs(agent_file)
    for template in ws.host_template_paths():
        if any(use.renderer in renderers for use in ws.template_uses(template)):
            starts.add(template)
    found: list[dict[str, Any]] = []
    for path in sorted({agent_file.path} | ws.template_closure(starts)):
        found.extend({"code": d.code, "path": os.path.relpath(path, analysis.root), "line": d.range.start.line + 1,
                      "message": d.message} for d in analysis.diagnostics(path) if d.code in CACHING_CODES)
    return found


def not_loaded(definition: AgentDefinition, config: HostConfig, plan: tuple[PlannedProvider, ...],
               ) -> list[dict[str, Any]]:
    """The agent's custom tools and providers an untrusted host leaves out (their code is not imported):
    `[{kind, name, source, reason}]`."""
    found: list[dict[str, Any]] = []
    for name in dict.fromkeys([*definition.tools, *definition.pinned_tools]):
        tool = config.tools.get(name)
        if tool is not None:
            found.append({"kind": "tool", "name": name, "source": tool.callable, "reason": NOT_TRUSTED})
    for planned in plan:
        if planned.custom is not None:
            found.append({"kind": "provider", "name": planned.type, "source": planned.custom.class_,
                          "reason": NOT_TRUSTED})
    return found


def tool_agent_notes(definition: AgentDefinition, definitions: Iterable[AgentDefinition]) -> list[str]:
    """A sentence for each agent `definition` calls as a tool that asks for what only the requested agent gets
    (its memory), so the caller's preview says what the run leaves off."""
    return [f"`{agent}` is called as a tool here: its memory is off (memory works for the agent a run asks for)"
            for agent in memory_off_as_tools(definition, definitions)]


async def preview_agent(agents: AgentsCache, view: WorkspaceView, agent_id: str, input: str | None = None,
                        session: AgentSession | None = None) -> dict[str, Any]:
    """A `PreviewResult`'s JSON: the provider pipeline of `agent_id` as `view` has it (going on from `session`),
    without a model, and what its request costs in the model's tokens.

    Approval-required tools are listed as a run with an approval channel would offer them. Raises `RunError` with
    words for the user when the agent cannot be assembled.
    """
    host = agents.host_for(view)
    redact = Redactor.for_config(host.config)
    try:
        definition = view.definition(agent_id)
        request = host.build_request(definition, bypass_requested_agent_cache=True)

        placeholders: list[str] = []

        def chat_client(d: AgentDefinition, ctx: Any) -> Any:
            try:
                return host.chat_client_for(d)
            except HostConfigurationError as error:  # no model needed to assemble
                if not ctx.requested:
                    placeholders.append(d.id)
                return _UnconfiguredChatClient(str(error))

        request.chat_client_factory = chat_client
        host.ensure_tools()
        try:
            agent = await host.orchestrator.get_or_create_agent(request)
        finally:  # a dependency built without its model must not stay cached for runs
            for stand_in in placeholders:
                agents.evict(stand_in)
        plan = plan_providers(definition, host.config, requested=True).providers

        async def never_asked(request: ApprovalRequest) -> bool:
            return False

        tokenizer = await asyncio.to_thread(host.tokenizer_for, definition)  # an encoding loads in ~0.5 s once
        with approval_channel(never_asked):
            result = await assemble_preview(agent, plan, input, session or AgentSession(), tokenizer,
                                            host.prompt_limits(definition))
        if "tokens" in result and agent_id in view.agents:
            active = {p["type"] for p in result["providers"] if p["active"]}
            result["tokens"]["caching"] = caching_advice(view.analysis, view.agents[agent_id], active)
        result["trusted"] = agents.trusted
        result["notLoaded"] = [] if agents.trusted else not_loaded(definition, host.config, plan)
        result["notes"] = tool_agent_notes(definition, host.definitions)
    except RunError:
        raise
    except Exception as error:  # noqa: BLE001 - in words
        raise RunError(redact.text(describe_failure(error, agent_id))) from None
    answer: dict[str, Any] = redact(PreviewResult.model_validate({"agentId": agent_id, **result}).wire())
    return answer


class _UnconfiguredChatClient:
    """Stands in for a model that is not configured, so a preview can assemble without one."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def get_response(self, messages: Any, options: Any) -> Any:
        raise HostConfigurationError(self.reason)

    async def get_streaming_response(self, messages: Any, options: Any) -> Any:  # pragma: no cover
        raise HostConfigurationError(self.reason)
        yield
