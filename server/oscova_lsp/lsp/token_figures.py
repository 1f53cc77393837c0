"""What an agent's prompt costs, for the editor: the token figures of the hover on a definition's `id` and on its
`context_providers` entries, and of the code lens on `id` ("≈ 1,240 tokens · 1,020 cacheable").

The figures are the preview's `tokens` (`RunService.preview`: the provider pipeline without a model, counted in
the model's own tokenizer). One preview per agent is kept while the workspace stays as it was: no change to any
analysis (`AnalysisHost.changes`), no file saved, no run ended, and for at most `MAX_AGE` seconds (what the server
is not told of: memory files written outside the editor, the clock). Inside a preview the counts are cached per
text (`oscova_runtime.tokens`), so a recount after an edit encodes only what changed. Where the preview cannot be
made (an unsaved or broken file, an unknown agent) the figures say why instead: never a stale number.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lsprotocol import types as lsp
from oscova_runtime.tokens import ESTIMATED_NOTE, figure
from pygls.exceptions import JsonRpcException

if TYPE_CHECKING:
    from ..runhost.client import RunHost

logger = logging.getLogger(__name__)

MAX_AGE = 30.0
"""Seconds a preview's figures are reused for, at most."""
FIGURES_WAIT = 5.0
"""Seconds a hover or lens waits for its figures (a custom provider may never answer); the preview goes on."""
CANNOT_COUNT = "Tokens: cannot count"
PREVIEW_COMMAND = "oscova.previewPrompt"


@dataclass(frozen=True, slots=True)
class Figures:
    """The preview's `tokens` of one agent, or `reason`: why there are none, in words."""

    tokens: dict[str, Any] | None
    reason: str | None = None


@dataclass(slots=True)
class _Entry:
    changes: int
    made: float
    task: asyncio.Task[Figures]


class TokenFigures:
    """The figures of the agents the editor asks about, one preview per agent and workspace state.

    `root_for(uri, what)`: the workspace root of a document (`Runs.root_for`); `service(root)`: its run host;
    `changes()`: the analysis host's change count (every edit taken counts)."""

    def __init__(self, root_for: Callable[[str, str], str], service: Callable[[str], Awaitable[RunHost]],
                 changes: Callable[[], int]) -> None:
        self._root_for = root_for
        self._service = service
        self._changes = changes
        self._entries: dict[tuple[str, str], _Entry] = {}

    def forget(self) -> bool:
        """Drops every kept figure (a file was saved, a run ended); True when there were some."""
        had = bool(self._entries)
        self._entries.clear()
        return had

    async def of(self, document_uri: str, agent_id: str) -> Figures:
        """The figures of `agent_id` in the workspace of `document_uri`; never raises."""
        try:
            root = self._root_for(document_uri, "tokens")
        except JsonRpcException as error:
            return Figures(None, str(error))
        changes = self._changes()
        key = (root, agent_id)
        entry = self._entries.get(key)
        now = time.monotonic()
        if entry is None or entry.changes != changes or now - entry.made > MAX_AGE or entry.task.cancelled():
            entry = self._entries[key] = _Entry(changes, now, asyncio.ensure_future(self._preview(root, agent_id)))
        try:  # a cancelled or timed-out wait leaves the preview running for the next one
            return await asyncio.wait_for(asyncio.shield(entry.task), FIGURES_WAIT)
        except TimeoutError:
            return Figures(None, f"still counting after {FIGURES_WAIT:g} s (a provider or a template is slow); "
                                 "ask again later")

    async def _preview(self, root: str, agent_id: str) -> Figures:
        from ..runhost.client import RunHostError

        try:
            host = await self._service(root)
            preview = await host.preview(agent_id)
        except (RunHostError, JsonRpcException) as error:
            return Figures(None, str(error))
        except Exception as error:  # noqa: BLE001 - a hover never fails; the log has the rest
            logger.exception("counting the tokens of %s failed", agent_id)
            return Figures(None, f"counting failed: {error}")
        if preview.tokens is None:
            return Figures(None, "the preview has no token figures")
        return Figures(preview.tokens.wire())

    # -- what the editor shows ---------------------------------------------------------------------------

    async def hover_text(self, document_uri: str, agent_id: str, provider: str | None) -> str:
        """The hover's token section: the prompt's figures, or `provider`'s contribution and share."""
        found = await self.of(document_uri, agent_id)
        if found.tokens is None:
            return f"**{CANNOT_COUNT}**: {found.reason}"
        return provider_text(found.tokens, provider) if provider is not None else prompt_text(found.tokens)

    async def resolve_lens(self, lens: lsp.CodeLens) -> lsp.CodeLens:
        """The token lens with its title: the figures (a click opens the preview), or that they cannot be counted."""
        data = lens.data if isinstance(lens.data, dict) else {}
        agent_id, document_uri = data.get("agentId"), data.get("uri")
        if not isinstance(agent_id, str) or not isinstance(document_uri, str):
            return lens
        found = await self.of(document_uri, agent_id)
        if found.tokens is None:
            title, tooltip = CANNOT_COUNT, found.reason
        else:
            title, tooltip = lens_title(found.tokens), counted_with(found.tokens)
        lens.command = lsp.Command(title=title, command=PREVIEW_COMMAND, tooltip=tooltip,
                                   arguments=[{"agentId": agent_id, "uri": document_uri}])
        return lens


def token_lens(rng: lsp.Range, agent_id: str, document_uri: str) -> lsp.CodeLens:
    """The token lens as `textDocument/codeLens` lists it: its title is counted when the editor shows it
    (`codeLens/resolve`)."""
    return lsp.CodeLens(range=rng, data={"agentId": agent_id, "uri": document_uri})


def counted_with(tokens: dict[str, Any]) -> str:
    """`counted with o200k_base`, or why the figures are estimates."""
    if tokens.get("exact"):
        return f"counted with {tokens.get('tokenizer')}"
    return str(tokens.get("note") or ESTIMATED_NOTE)


def lens_title(tokens: dict[str, Any]) -> str:
    """`1,240 tokens · 1,020 cacheable`, `≈ ` before it for an estimate."""
    cacheable = int((tokens.get("cacheable") or {}).get("tokens", 0))
    return f"{figure(int(tokens['total']), bool(tokens.get('exact')))} tokens · {cacheable:,} cacheable"


def prompt_text(tokens: dict[str, Any]) -> str:
    """The prompt's total, its three parts and the cacheable prefix, with what counted them."""
    exact = bool(tokens.get("exact"))
    lines = [f"**Tokens** {figure(int(tokens['total']), exact)} ({counted_with(tokens)}): instructions "
             f"{figure(tokens['instructions'], exact)} · messages {figure(tokens['messages'], exact)} · tools "
             f"{figure(tokens['tools'], exact)}"]
    cacheable = tokens.get("cacheable")
    if isinstance(cacheable, dict):
        lines.append(f"{figure(int(cacheable['tokens']), exact)} cacheable: the prefix ends where {cacheable['endsAt']}")
    lines.extend(f"! {warning}" for warning in tokens.get("warnings") or ())
    lines.extend(f"! {a['code']} `{a['path']}:{a['line']}`: {a['message']}" for a in tokens.get("caching") or ())
    return "\n\n".join(lines)


def provider_text(tokens: dict[str, Any], provider: str) -> str:
    """One provider's contribution (instructions, messages, tools) and its share of the prompt."""
    exact = bool(tokens.get("exact"))
    entries = [p for p in tokens.get("byProvider") or () if p.get("type") == provider]
    if not entries:
        return f"**Tokens** `{provider}`: not among the providers this agent runs"
    parts = {part: sum(int(p[part]) for p in entries) for part in ("instructions", "messages", "tools")}
    spent, total = sum(parts.values()), int(tokens["total"])
    share = f"{100 * spent / total:.0f} %" if total else "0 %"
    return (f"**Tokens** `{provider}`: {figure(spent, exact)} of {figure(total, exact)} ({share}; "
            f"{counted_with(tokens)}): instructions {figure(parts['instructions'], exact)} · messages "
            f"{figure(parts['messages'], exact)} · tools {figure(parts['tools'], exact)}")
