"""oscova_runtime: the definition model, the provider catalogue and the embedded agent runtime.

Importing the package, the definition model or the catalogue never imports `openai`; the model client
is loaded on first use. Every export is lazy, the definition model's too: importing a submodule (the file
gateway `paths`, which the language server's first milliseconds use) builds no pydantic model.
"""

from importlib import import_module
from typing import Any

_LAZY = {
    "AgentDefinition": "definition", "ProviderEntry": "definition", "definition_json_schema": "definition",
    "HostConfig": "host_config",
    "AIContext": "context", "AIContextProvider": "context", "InvokingContext": "context",
    "InvokedContext": "context", "InvalidOperationError": "context",
    "ChatMessage": "messages", "ChatOptions": "messages", "MessageSource": "messages",
    "MessageSourceType": "messages",
    "AgentSession": "session", "InMemoryChatHistoryProvider": "session",
    "ChatClientAgent": "agent", "ChatClientAgentOptions": "agent", "AgentResponse": "agent",
    "AgentOrchestrator": "orchestrator", "AgentBuildRequest": "orchestrator", "BuildContext": "orchestrator",
    "IAgentOrchestrator": "orchestrator", "IAgentRunScopeFactory": "orchestrator",
    "build_minimal_agent": "orchestrator",
    "AgentTaskRun": "observer", "AgentTaskRunObserver": "observer", "AgentRunObserverAccessor": "observer",
    "AIFunction": "tools", "approval_channel": "tools",
    "ConfiguredHost": "host", "OpenAIChatClient": "chat_client", "ChatClientError": "chat_client",
    "ToolPolicy": "governance", "ToolDeniedError": "governance",
    # the seed's public providers ("Oscova's public providers include ..."), and the repository contract
    "EnvironmentContextProvider": "providers", "AgentPersonalContextProvider": "providers",
    "AgentToolProvider": "providers", "ToolSearchProvider": "providers", "AgentAsToolProvider": "providers",
    "VisionToolProvider": "providers", "MemoryContextProvider": "providers",
    "ISharedAgentPersonalContextRepository": "providers", "SharedAgentPersonalContextRepository": "providers",
}

__all__ = ["AgentDefinition", "HostConfig", "ProviderEntry", "definition_json_schema", *_LAZY]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'oscova_runtime' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
