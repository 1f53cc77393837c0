"""AgentPersonalContextProvider and the shared personal-context repository (`<slug>/context.md`)."""

from __future__ import annotations

import asyncio
import inspect
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import yaml

from ..context import AIContext, AIContextProvider, InvokingContext, block
from ..front_matter import split_front_matter
from ..host_config import DEFAULT_PERSONAL_CONTEXT_MAX_BYTES
from ..paths import read_text, remove_file, write_text
from ..templates import TemplateRenderer

ModelFactory = Callable[[InvokingContext], Mapping[str, Any] | Awaitable[Mapping[str, Any]]]


class AgentPersonalContextProvider(AIContextProvider):
    """Renders the agent's instruction template with the mapping its model factory returns.

    A blank template returns an empty context without calling the factory.
    """

    def __init__(self, instruction_template: str | None, model_factory: ModelFactory,
                 renderer: TemplateRenderer | None = None) -> None:
        self.instruction_template = instruction_template
        self.model_factory = model_factory
        self.renderer = renderer or TemplateRenderer(os.getcwd())

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        if not self.instruction_template or not self.instruction_template.strip():
            return AIContext()
        model = self.model_factory(context)
        if inspect.isawaitable(model):
            model = await model
        text = await self.renderer.render_string_async(self.instruction_template, model or {})
        return AIContext(instructions=block(text)) if text.strip() else AIContext()


def slugify(agent_id: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", agent_id.lower()).strip("-")
    return slug or "agent"


class PersonalContextTooLargeError(ValueError):
    pass


@runtime_checkable
class ISharedAgentPersonalContextRepository(Protocol):
    """Where a shared agent's personal context is kept (seed: "The ISharedAgentPersonalContextRepository
    contract keeps this persistence independent from host storage policy"). The configured host reads
    `user_context` through it; pass another to `ConfiguredHost(personal_repository=...)`."""

    async def get(self, agent_id: str) -> str | None: ...

    async def save(self, agent_id: str, content: str) -> None: ...

    async def delete(self, agent_id: str) -> None: ...


class SharedAgentPersonalContextRepository(ISharedAgentPersonalContextRepository):
    """File-backed personal context of shared agents: `<user root>/<slug>/context.md` with `agent_id`
    front matter. The host supplies the exact per-user root and the maximum UTF-8 size; authorization,
    root topology and cleanup stay with the host."""

    def __init__(self, user_root: str, max_bytes: int = DEFAULT_PERSONAL_CONTEXT_MAX_BYTES, *,
                 boundary: str | None = None) -> None:
        self.user_root = user_root
        self.max_bytes = max_bytes
        self.boundary = boundary if boundary is not None else user_root
        """Reads and writes stay inside it after symlinks (the configured host passes the workspace root)."""

    def path_for(self, agent_id: str) -> str:
        return os.path.join(self.user_root, slugify(agent_id), "context.md")

    def _read(self, agent_id: str) -> str | None:
        path = self.path_for(agent_id)
        if not os.path.lexists(path):
            return None
        text = read_text(path, root=self.boundary)  # a FIFO, a device or a link leading out: FileRefused
        meta, text = split_front_matter(text)
        if meta.get("agent_id") not in (None, agent_id):
            return None  # another agent's file under a colliding slug
        data = text.encode("utf-8")[: self.max_bytes]
        return data.decode("utf-8", errors="ignore").strip()

    def _write(self, agent_id: str, content: str) -> None:
        if len(content.encode("utf-8")) > self.max_bytes:
            raise PersonalContextTooLargeError(
                f"The personal context is over {self.max_bytes} bytes; shorten it")
        front = yaml.safe_dump({"agent_id": agent_id}, sort_keys=False)
        write_text(self.path_for(agent_id), f"---\n{front}---\n{content}\n", root=self.boundary)

    async def get(self, agent_id: str) -> str | None:
        """The context, None when there is none; FileRefused when the file is not read (the reason says why)."""
        return await asyncio.to_thread(self._read, agent_id)

    async def save(self, agent_id: str, content: str) -> None:
        await asyncio.to_thread(self._write, agent_id, content)

    async def delete(self, agent_id: str) -> None:
        # never removes a file through a folder link leading out (FileRefused)
        await asyncio.to_thread(remove_file, self.path_for(agent_id), root=self.boundary)
