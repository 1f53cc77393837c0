"""The built-in context providers (`oscova-lsp providers` lists them)."""

from .agent_tools import AgentAsToolProvider
from .custom import DeclaredTemplateProvider, load_custom_provider
from .environment import EnvironmentContextProvider
from .library import LibraryContextProvider
from .memory import MemoryContextProvider, MemoryStore, estimate_tokens, memory_tools
from .personal import (
    AgentPersonalContextProvider,
    ISharedAgentPersonalContextRepository,
    SharedAgentPersonalContextRepository,
)
from .private_notes import PrivateNotesContextProvider
from .skills import SkillsContextProvider
from .todo import TodoListContextProvider
from .tools import AgentToolProvider, ToolSearchProvider
from .vision import VisionToolProvider

__all__ = [
    "AgentAsToolProvider", "AgentPersonalContextProvider", "AgentToolProvider", "DeclaredTemplateProvider",
    "EnvironmentContextProvider", "ISharedAgentPersonalContextRepository", "LibraryContextProvider", "MemoryContextProvider", "MemoryStore",
    "PrivateNotesContextProvider", "SharedAgentPersonalContextRepository", "SkillsContextProvider",
    "TodoListContextProvider", "ToolSearchProvider", "VisionToolProvider", "estimate_tokens",
    "load_custom_provider", "memory_tools",
]
