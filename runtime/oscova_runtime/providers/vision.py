"""VisionToolProvider: one `analyze_image` tool, its wrapper created for each invocation."""

from __future__ import annotations

import asyncio
import mimetypes
import os
from collections.abc import Callable, Sequence

from ..chat import ChatClient
from ..context import AIContext, AIContextProvider, InvokingContext
from ..messages import ChatMessage, ChatOptions, DataContent, TextContent
from ..paths import open_regular
from ..tools import AIFunction, function_from_callable
from ..workspace import resolve_inside

MAX_IMAGE_BYTES = 10 * 1024 * 1024


class AnalyzeImageTool:
    """Sends an image inside the workspaces to the vision-capable chat client with a question."""

    def __init__(self, chat_client: ChatClient, workspaces: Callable[[], Sequence[str]]) -> None:
        self.chat_client = chat_client
        self.workspaces = workspaces

    async def analyze_image(self, path: str, question: str = "Describe this image.") -> str:
        """Describes an image file inside the agent's workspaces, answering the question about it."""
        target = resolve_inside(path, self.workspaces())
        media_type = mimetypes.guess_type(target)[0] or "application/octet-stream"
        if not media_type.startswith("image/"):
            return f"{path} is not an image."

        def _read() -> bytes:
            with os.fdopen(open_regular(target), "rb") as handle:  # a FIFO or device is refused, not waited on
                return handle.read(MAX_IMAGE_BYTES + 1)

        data = await asyncio.to_thread(_read)
        if len(data) > MAX_IMAGE_BYTES:
            return f"{path} is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB."
        message = ChatMessage("user", [TextContent(question), DataContent(data, media_type)])
        response = await self.chat_client.get_response([message], ChatOptions())
        return response.text

    def as_function(self) -> AIFunction:
        return function_from_callable(self.analyze_image, name="analyze_image", path_parameters=("path",))


class VisionToolProvider(AIContextProvider):
    def __init__(self, chat_client: ChatClient, workspaces: Callable[[], Sequence[str]]) -> None:
        self.chat_client = chat_client
        self.workspaces = workspaces

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        return AIContext(tools=[AnalyzeImageTool(self.chat_client, self.workspaces).as_function()])
