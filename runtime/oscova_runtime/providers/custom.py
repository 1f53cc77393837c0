"""Custom providers from `[providers.NAME]`: imported only for a run, constructed without arguments."""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from ..context import AIContext, AIContextProvider, InvokedContext, InvokingContext, block
from ..host_config import CustomProviderSettings
from ..messages import full_type_name
from ..templates import TemplateRenderer


class ProviderLoadError(Exception):
    pass


def load_custom_provider(name: str, settings: CustomProviderSettings) -> AIContextProvider:
    module_name, _, class_name = settings.class_.partition(":")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except Exception as error:  # noqa: BLE001 - reported in words
        raise ProviderLoadError(
            f"The provider `{name}` could not be loaded from `{settings.class_}`: {error}") from None
    if not (isinstance(cls, type) and issubclass(cls, AIContextProvider)):
        raise ProviderLoadError(
            f"The provider `{name}` ({settings.class_}) must subclass oscova_runtime.AIContextProvider")
    try:
        return cls()
    except Exception as error:  # noqa: BLE001
        raise ProviderLoadError(f"The provider `{name}` could not be constructed without arguments: {error}") from None


class DeclaredTemplateProvider(AIContextProvider):
    """A custom provider with a declared template: the host renders the template with
    `await provider.template_variables(context)` and contributes the result as instructions.
    Post-run hooks go to the custom provider."""

    def __init__(self, inner: AIContextProvider, template_path: str, renderer: TemplateRenderer,
                 state_keys: Sequence[str]) -> None:
        self.inner = inner
        self.template_path = template_path
        self.renderer = renderer
        self.state_keys = tuple(state_keys)

    @property
    def source_id(self) -> str:
        return full_type_name(self.inner)

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        variables = await self.inner.template_variables(context)
        text = await self.renderer.render_file_async(self.template_path, dict(variables or {}))
        return AIContext(instructions=block(text)) if text.strip() else AIContext()

    async def invoked(self, context: InvokedContext) -> None:
        await self.inner.invoked(context)
