"""What every `oscova.*` command shares: its argument object read into its model (`wire/commands.py`), and the
error a well-formed command that could not be carried out answers with."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

if TYPE_CHECKING:
    from ..wire.model import Arguments

    Args = TypeVar("Args", bound=Arguments)


class JsonRpcRequestFailed(JsonRpcException):
    """LSP `RequestFailed`: the request was well formed but could not be carried out (words for the user)."""

    CODE = -32803


def command_argument(params: lsp.ExecuteCommandParams) -> dict[str, Any]:
    """The single argument object of a command (`arguments: [{...}]`); none at all reads as `{}`."""
    arguments = params.arguments
    if not arguments:
        return {}
    if len(arguments) != 1 or not isinstance(arguments[0], dict):
        raise JsonRpcInvalidParams(f"{params.command} takes one argument object, e.g. "
                                   f"{{\"arguments\": [{{\"agentId\": \"...\"}}]}}")
    return arguments[0]


def read_arguments(model: type[Args], params: lsp.ExecuteCommandParams) -> Args:
    """A command's argument object read into its model (`wire/commands.py`); InvalidParams, in a sentence, when it
    does not fit."""
    from pydantic import ValidationError

    try:
        return model.model_validate(command_argument(params))
    except ValidationError as error:
        raise JsonRpcInvalidParams(model.refusal(params.command, error)) from None


def scope_of(params: lsp.ExecuteCommandParams) -> str | None:
    """The `uri` of a command that takes nothing else (`ScopeArguments`)."""
    from ..wire.commands import ScopeArguments

    return read_arguments(ScopeArguments, params).uri
