"""Tool governance (seed *Agent Runtime*: "the governed function-invocation loop"; seed *Context Providers*:
the tool-list provider "omits missing, denied, and disallowed egress tools").

One policy answers both questions, read when asked so a changed host configuration applies at call time:
- the tool-list provider leaves out what the policy refuses (the model never sees it);
- the function-invocation loop asks again before each call (the model may call a tool it was not
  offered, from history or by guessing): a refused call is not run, its result says why, and the tool
  loop ends after that round ("A tool loop stops early: check ... governance denial").
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass

from .tools import AIFunction

TOOL_DENIED = "Denied: the host's policy does not allow the tool {name}."
EGRESS_DENIED = "Denied: the tool {name} sends data off this machine, which the host's policy does not allow."


class ToolDeniedError(PermissionError):
    """Why a call was refused; kept on the `FunctionResultContent` for the application."""


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """The host's tool policy: denied tool names, and whether egress tools may run.

    All are callables, read on every check, so a policy outlives changes to what it reads. `catalogue`
    tells the egress rule about a tool the model calls without having been offered it.
    """

    denied: Callable[[], Collection[str]] = lambda: ()
    allow_egress: Callable[[], bool] = lambda: True
    catalogue: Callable[[], Mapping[str, AIFunction]] = lambda: {}

    def refusal(self, name: str, function: AIFunction | None) -> str | None:
        """The model-visible reason `name` may not run, or None when it may."""
        if name in self.denied():
            return TOOL_DENIED.format(name=name)
        if function is None:
            function = self.catalogue().get(name)
        if function is not None and function.egress and not self.allow_egress():
            return EGRESS_DENIED.format(name=name)
        return None

    def allows(self, function: AIFunction) -> bool:
        return self.refusal(function.name, function) is None


ALLOW_ALL = ToolPolicy()
