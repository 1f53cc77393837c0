"""VisionToolProvider: one `analyze_image` tool, its wrapper created for each invocation."""

from __future__ import annotations

import asyncio
import inspect
import mimetypes
from collections.abc import Callable, Sequence

from ..chat import ChatClient
from ..context import AIContext, AIContextProvider, InvokingContext
from ..grants import current_root, resolve_inside
from ..messages import ChatMessage, ChatOptions, DataContent, TextContent
from ..paths import read_head
from ..tools import AIFunction, function_from_callable, relative_paths_sentence

MAX_IMAGE_BYTES = 10 * 1024 * 1024


class AnalyzeImageTool:
    """Sends an image inside the workspaces to the vision-capable chat client with a question."""

    def __init__(self, chat_client: ChatClient, workspaces: Callable[[], Sequence[str]]) -> None:
        self.chat_client = chat_client
        self.workspaces = workspaces

    async def analyze_image(self, path: str, question: str = "Describe this image.") -> str:
        """Describes an image file inside the agent's workspaces, answering the question about it."""
        target = resolve_inside(path, self.workspaces(), base=current_root())
        media_type = mimetypes.guess_type(target)[0] or "application/octet-stream"
        if not media_type.startswith("image/"):
            return f"{path} is not an image."

        # A regular file only (a FIFO or device is refused with FileRefused, as `read_file` does), read no further
        # than the limit.
        data, more = await asyncio.to_thread(read_head, target, limit=MAX_IMAGE_BYTES)
        if more:
            return f"{path} is larger than {MAX_IMAGE_BYTES // (1024 * 1024)} MB."
        message = ChatMessage("user", [TextContent(question), DataContent(data, media_type)])
        response = await self.chat_client.get_response([message], ChatOptions())
        return response.text

    def as_function(self) -> AIFunction:
        description = f"{inspect.getdoc(self.analyze_image)} {relative_paths_sentence(None)}"
        return function_from_callable(self.analyze_image, name="analyze_image", description=description,
                                      path_parameters=("path",))


class VisionToolProvider(AIContextProvider):
    def __init__(self, chat_client: ChatClient, workspaces: Callable[[], Sequence[str]]) -> None:
        self.chat_client = chat_client
        self.workspaces = workspaces

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        return AIContext(tools=[AnalyzeImageTool(self.chat_client, self.workspaces).as_function()])
