"""What one side of a review sends each agent's model, rendered offline with fixed inputs.

The provider pipeline without a model (`runs.preview.assemble_preview`), on one configured host per side,
with the same inputs on both sides: the stated moment `REVIEW_MOMENT` (the run's frozen clock,
`oscova_runtime.recording.clock_at`), stated machine facts `REVIEW_FACTS` for the environment provider
(`facts_at`, as a replay shows the recorded machine's), and the agent's `example_input` or `NEUTRAL_INPUT`.
Every model is a stand-in that is never called, so nothing connects anywhere and `openai` is never imported.
Without trust the workspace's own tools and providers are not imported (an untrusted host, as the untrusted
preview): a custom provider contributes nothing and is named in `not_loaded`.

A rendered request is text in four parts, as `runs/diff.py` writes a model request: `instructions`,
`messages`, `tools` (name, description, parameters) and `options` (the model and the chat options). The
copy's folder is written `<repository>` in it, so both sides' paths read the same.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from oscova_runtime.catalogue import plan_providers
from oscova_runtime.definition import AgentDefinition
from oscova_runtime.host import ConfiguredHost, HostConfigurationError
from oscova_runtime.host_config import HostConfig
from oscova_runtime.recording import clock_at, facts_at
from oscova_runtime.session import AgentSession
from oscova_runtime.tools import ApprovalRequest, approval_channel

from ..analysis.engine import Analysis
from ..analysis.files import DefinitionFile
from ..runs.agents_cache import forget_modules_inside, make_importable
from ..runs.diff import request_lines
from ..runs.errors import describe_failure
from ..runs.events import Redactor
from ..runs.preview import assemble_preview, not_loaded

REVIEW_MOMENT = _dt.datetime(2025, 1, 1, 12, 0, tzinfo=_dt.UTC)
"""The date and time every template sees in a review (`current_date`, `current_time`), on both sides."""
REVIEW_FACTS = {"working_directory": "", "os": "Linux", "architecture": "x86_64", "shell": "/bin/sh",
                "path_separator": "/", "home_directory": "/home/user", "temp_directory": "/tmp"}
"""The machine the environment provider describes in a review, on both sides."""
NEUTRAL_INPUT = "Hello."
"""The input of an agent without `example_input`."""
REPOSITORY = "<repository>"
"""How a side's copy of the repository's top folder is written in rendered text."""
PARTS = ("instructions", "messages", "tools", "options")
_PART_OF = {"tool-call": "messages", "tool-result": "messages"}


@dataclass
class Rendered:
    """One agent's request on one side: its text by part, or why it could not be assembled."""

    parts: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None
    not_loaded: list[dict[str, Any]] = field(default_factory=list)
    tokens: dict[str, Any] | None = None
    """The preview's `tokens` (total, parts, `exact`, `tokenizer`, `cacheable`) in the model's own tokenizer."""

    def lines(self, part: str) -> list[str]:
        if self.error is not None:
            return [f"(the request cannot be assembled: {self.error})"] if part == "instructions" else []
        return self.parts.get(part, [])


def agents_of(analysis: Analysis) -> dict[str, DefinitionFile]:
    """Each agent id's definition (the first by path when two share one, as runs pick it)."""
    found: dict[str, DefinitionFile] = {}
    for parsed in sorted(analysis.workspace.definitions(), key=lambda f: f.path):
        agent_id = parsed.definition.id if parsed.definition is not None else parsed.raw_id
        if agent_id and agent_id not in found:
            found[agent_id] = parsed
    return found


class _NoModel:
    """Every model of a review: assembling a request needs none, and none is ever called."""

    async def get_response(self, messages: Any, options: Any) -> Any:
        raise HostConfigurationError("a review renders requests and never calls a model")

    async def get_streaming_response(self, messages: Any, options: Any) -> Any:  # pragma: no cover
        raise HostConfigurationError("a review renders requests and never calls a model")
        yield


async def _never_approved(request: ApprovalRequest) -> bool:
    return False


class SideRenderer:
    """Renders agents of one side's workspace root: one configured host, its built dependencies reused."""

    def __init__(self, analysis: Analysis, folder: str, *, trusted: bool) -> None:
        self.analysis = analysis
        self.folders = sorted({folder, os.path.realpath(folder)}, key=len, reverse=True)
        self.trusted = trusted
        self.config: HostConfig = analysis.workspace.host
        self.agents = agents_of(analysis)
        self.definitions = {i: f.definition for i, f in self.agents.items() if f.definition is not None}
        models = set(self.config.models) | {d.model for d in self.definitions.values()}
        self.host = ConfiguredHost(analysis.root, self.config, list(self.definitions.values()),
                                   definition_paths={i: self.agents[i].path for i in self.definitions},
                                   chat_clients={name: _NoModel() for name in models}, trusted=trusted)
        self.redact = Redactor.for_config(self.config)

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """The fixed inputs, and with trust the root importable (and forgotten afterwards: the other side's
        modules have the same names)."""
        root = self.host.root
        if self.trusted:
            make_importable(root, self.config)
        try:
            with clock_at(REVIEW_MOMENT), facts_at(dict(REVIEW_FACTS)), approval_channel(_never_approved):
                yield
        finally:
            if self.trusted:
                forget_modules_inside(root)
                while root in sys.path:
                    sys.path.remove(root)

    async def render(self, agent_id: str, input_text: str) -> Rendered:
        """The agent's request (call inside `active`); a definition that does not validate, or a build or render
        that fails, is the sentence saying why."""
        definition = self.definitions.get(agent_id)
        if definition is None:
            return Rendered(error="its definition does not validate (the diagnostics say why)")
        plan = plan_providers(definition, self.config, requested=True).providers
        missing = [] if self.trusted else not_loaded(definition, self.config, plan)
        try:
            self.host.ensure_tools()
            request = self.host.build_request(definition, bypass_requested_agent_cache=True)
            request.available_agent_definitions = self._reachable(definition)
            agent = await self.host.orchestrator.get_or_create_agent(request)
            tokenizer = self.host.tokenizer_for(definition)
            preview = self.redact(await assemble_preview(agent, plan, input_text, AgentSession(), tokenizer,
                                                         shown=self._shown))
        except Exception as error:  # noqa: BLE001 - in words, on this side only
            return Rendered(error=self._shown(self.redact.text(describe_failure(error, agent_id))), not_loaded=missing)
        return Rendered(self._parts(preview, definition), not_loaded=missing, tokens=preview.get("tokens"))

    def _reachable(self, definition: AgentDefinition) -> list[AgentDefinition]:
        """The definition and the agents it calls: all its request shows of them is each one as a tool (name,
        description, parameters), so their own dependencies are not built (a build looks up only these)."""
        children = (self.definitions.get(child_id) for child_id in definition.agent_tools)
        return [definition, *(child for child in children if child is not None)]

    def _parts(self, preview: dict[str, Any], definition: AgentDefinition) -> dict[str, list[str]]:
        model = self.config.models.get(definition.model)
        request: dict[str, Any] = {
            "messages": [{"role": "system", "content": preview.get("instructions") or ""},
                         *(_wire_message(m) for m in preview.get("messages", []))],
            "tools": [{"type": "function", "function": {k: t.get(k) for k in ("name", "description", "parameters")}}
                      for t in preview.get("tools", [])],
            "model": model.model if model is not None else definition.model, **definition.chat_options}
        parts: dict[str, list[str]] = {part: [] for part in PARTS}
        for part, line in request_lines(request):
            if not line.startswith("## "):
                parts[_PART_OF.get(part, part)].append(self._shown(line))
        return parts

    def _shown(self, text: str) -> str:
        for folder in self.folders:
            text = text.replace(folder, REPOSITORY)
        return text


def _wire_message(message: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.get("role", "user"), "content": message.get("text", "")}
    calls = message.get("toolCalls")
    if calls:
        out["tool_calls"] = [{"id": c.get("callId"), "function": {"name": c.get("name"), "arguments": c.get("arguments")}}
                             for c in calls]
    return out
