"""EnvironmentContextProvider: runtime facts and the current workspace grants."""

from __future__ import annotations

import os
import platform
import tempfile
from collections.abc import Callable, Sequence
from typing import Any

from ..context import AIContext, AIContextProvider, InvokingContext, block
from ..recording import recorded_facts
from ..templates import TemplateRenderer

DEFAULT_ENVIRONMENT_TEMPLATE = """## Environment
- Operating system: {{ os }} ({{ architecture }})
- Shell: {{ shell }}
- Path separator: {{ path_separator }}
- Home directory: {{ home_directory }}
- Temporary directory: {{ temp_directory }}

Workspace directories (the folders the file tools may use):
{{ workspace_directories }}"""

NONE_CONFIGURED = "- none configured"


def static_facts() -> dict[str, str]:
    """The machine's facts the default template shows (a recording keeps them for its replay)."""
    return {
        "working_directory": "",  # the default host does not derive it
        "os": platform.system() or os.name,
        "architecture": platform.machine(),
        "shell": os.environ.get("SHELL") or os.environ.get("COMSPEC") or "",
        "path_separator": os.sep,
        "home_directory": os.path.expanduser("~"),
        "temp_directory": tempfile.gettempdir(),
    }


class EnvironmentContextProvider(AIContextProvider):
    """Renders its template with runtime facts; the workspace resolver is called once per render."""

    def __init__(
        self, renderer: TemplateRenderer, workspace_directories: Sequence[str] | Callable[[], Sequence[str]] = (),
        *, template: str | None = None, template_path: str | None = None,
    ) -> None:
        self.renderer = renderer
        self._resolver = workspace_directories if callable(workspace_directories) else (
            lambda dirs=tuple(workspace_directories): dirs)
        self.template = template
        self.template_path = template_path
        self._facts = static_facts()

    @classmethod
    def from_workspace_resolver(
        cls, renderer: TemplateRenderer, resolver: Callable[[], Sequence[str]], **kwargs: Any
    ) -> EnvironmentContextProvider:
        return cls(renderer, resolver, **kwargs)

    def variables(self) -> dict[str, str]:
        directories = list(self._resolver())
        listed = "\n".join(f"- {d}" for d in directories) if directories else NONE_CONFIGURED
        return {**self._facts, **(recorded_facts() or {}), "workspace_directories": listed}

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        variables = self.variables()
        if self.template_path:
            text = await self.renderer.render_file_async(self.template_path, variables)
        else:
            text = await self.renderer.render_string_async(self.template or DEFAULT_ENVIRONMENT_TEMPLATE, variables,
                                                           name="the environment template")
        return AIContext(instructions=block(text)) if text.strip() else AIContext()
