"""AgentToolProvider (direct tool exposure) and ToolSearchProvider (`search_tools` plus pinned tools)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from ..context import AIContext, AIContextProvider, InvokingContext, block
from ..governance import ALLOW_ALL, ToolPolicy
from ..tools import (
    AIFunction,
    ApprovalHandler,
    current_approval_handler,
    function_from_callable,
    wrap_with_approval,
)

ToolCatalogueResolver = Callable[[], Mapping[str, AIFunction]]


def _expose(
    function: AIFunction, approval: ApprovalHandler | None, suppress_unavailable_approval: bool
) -> AIFunction | None:
    if not function.approval_required:
        return function
    if approval is None:
        return None if suppress_unavailable_approval else function
    return wrap_with_approval(function, approval)


class AgentToolProvider(AIContextProvider):
    """Resolves the allowed tool names on each invocation against the current catalogue.

    Missing names, names in `denied` and tools the `policy` refuses (its denied list, disallowed egress)
    are omitted; approval-required tools are wrapped with the run's approval channel, and suppressed
    when the run has none (unless `suppress_unavailable_approval` is False).
    """

    def __init__(
        self, allowed_names: Callable[[], Sequence[str]], catalogue: ToolCatalogueResolver, *,
        denied: Callable[[], Sequence[str]] = lambda: (),
        policy: ToolPolicy = ALLOW_ALL,
        approval: Callable[[], ApprovalHandler | None] = current_approval_handler,
        suppress_unavailable_approval: bool = True,
    ) -> None:
        self.allowed_names = allowed_names
        self.catalogue = catalogue
        self.denied = denied
        self.policy = policy
        self.approval = approval
        self.suppress_unavailable_approval = suppress_unavailable_approval

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        tools = self.catalogue()
        denied = set(self.denied())
        approval = self.approval()
        exposed: list[AIFunction] = []
        for name in self.allowed_names():
            function = tools.get(name)
            if function is None or name in denied or not self.policy.allows(function):
                continue
            visible = _expose(function, approval, self.suppress_unavailable_approval)
            if visible is not None:
                exposed.append(visible)
        return AIContext(tools=exposed) if exposed else AIContext()


SEARCH_INSTRUCTIONS = (
    "More tools are available than are shown. Call `search_tools` with a few keywords to find and unlock "
    "the tools you need; unlocked tools are offered from then on."
)
SEARCH_RESULT_LIMIT = 5


class ToolSearchProvider(AIContextProvider):
    """Contributes its instructions, `search_tools`, the pinned tools and the tools unlocked so far.

    The allowed and pinned name lists are constructor snapshots; resolution uses the current catalogue.
    Unlocked tools belong to this (cached) provider instance. Tools the `policy` refuses are neither
    found nor offered (the port applies the tool-list provider's governance here too).
    """

    def __init__(
        self, allowed_names: Sequence[str], pinned_names: Sequence[str], catalogue: ToolCatalogueResolver, *,
        policy: ToolPolicy = ALLOW_ALL,
        approval: Callable[[], ApprovalHandler | None] = current_approval_handler,
        suppress_unavailable_approval: bool = True,
    ) -> None:
        self.allowed_names = tuple(allowed_names)
        self.pinned_names = tuple(pinned_names)
        self.catalogue = catalogue
        self.policy = policy
        self.approval = approval
        self.suppress_unavailable_approval = suppress_unavailable_approval
        self.unlocked: list[str] = []
        self.search_tool = function_from_callable(self.search_tools, name="search_tools")

    async def search_tools(self, query: str) -> str:
        """Searches the available tools by keywords and unlocks the best matches for later turns."""
        words = [w for w in re.split(r"\W+", query.lower()) if w]
        tools = self.catalogue()
        scored = []
        for name in self.allowed_names:
            function = tools.get(name)
            if function is None or not self.policy.allows(function):
                continue
            haystack = f"{name} {function.description}".lower()
            score = sum(haystack.count(w) for w in words)
            if score:
                scored.append((score, name, function))
        scored.sort(key=lambda item: (-item[0], item[1]))
        found = scored[:SEARCH_RESULT_LIMIT]
        for _, name, _function in found:
            if name not in self.unlocked:
                self.unlocked.append(name)
        if not found:
            return "No matching tools."
        return "Unlocked:\n" + "\n".join(f"- {name}: {function.description}" for _, name, function in found)

    async def provide_ai_context(self, context: InvokingContext) -> AIContext:
        tools = self.catalogue()
        approval = self.approval()
        exposed: list[AIFunction] = [self.search_tool]
        for name in [*self.pinned_names, *(n for n in self.unlocked if n not in self.pinned_names)]:
            function = tools.get(name)
            if function is None or not self.policy.allows(function):
                continue
            visible = _expose(function, approval, self.suppress_unavailable_approval)
            if visible is not None:
                exposed.append(visible)
        return AIContext(instructions=block(SEARCH_INSTRUCTIONS), tools=exposed)
