"""The pygls the server is written against: every private name `lsp/protocol.py` relies on exists in the
installed pygls with the shape relied on, that module uses no other, and no other module uses any.

Pinned to the release the names were checked with (`protocol.PYGLS_CHECKED`): another pygls fails here until
someone checks the overrides against it (its `protocol/json_rpc.py` and `protocol/language_server.py`) and
moves the pin."""

from __future__ import annotations

import ast
import importlib.metadata
import inspect
from pathlib import Path

from oscova_lsp.lsp import protocol
from oscova_lsp.lsp.protocol import (
    PYGLS_CHECKED,
    PYGLS_OVERRIDES,
    PYGLS_PRIVATE_ATTRIBUTES,
    PYGLS_PRIVATE_METHODS,
    OscovaProtocol,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

LSP_PACKAGE = Path(protocol.__file__).parent


def _parameters(function: object) -> tuple[str, ...]:
    return tuple(name for name in inspect.signature(function).parameters if name != "self")  # type: ignore[arg-type]


def test_the_installed_pygls_is_the_release_the_overrides_were_checked_with() -> None:
    assert importlib.metadata.version("pygls") == PYGLS_CHECKED


def test_every_private_method_relied_on_exists_with_its_parameters() -> None:
    for name, parameters in PYGLS_PRIVATE_METHODS.items():
        method = getattr(LanguageServerProtocol, name, None)
        assert callable(method), f"pygls's protocol has no {name}"
        assert _parameters(method) == parameters, name


def test_every_private_attribute_relied_on_exists_with_its_type() -> None:
    server = LanguageServer("contract", "0", protocol_cls=LanguageServerProtocol)
    for name, kind in PYGLS_PRIVATE_ATTRIBUTES.items():
        assert hasattr(server.protocol, name), f"pygls's protocol has no attribute {name}"
        assert isinstance(getattr(server.protocol, name), kind), name
    assert server.protocol._server is server


def test_every_replaced_method_is_pygls_own_under_the_same_name_and_shape() -> None:
    for name, parameters in PYGLS_OVERRIDES.items():
        base = getattr(LanguageServerProtocol, name, None)
        ours = vars(OscovaProtocol).get(name)
        assert base is not None and ours is not None, name
        assert _parameters(base) == _parameters(ours) == parameters, name
        # a built-in handler is replaced by name: both must answer the same LSP method
        assert getattr(base, "method_name", None) == getattr(ours, "method_name", None), name


def _self_attributes(tree: ast.AST) -> set[str]:
    """The private names read or written on `self` or `super()` in a module."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            value = node.value
            if isinstance(value, ast.Name) and value.id == "self" or \
                    isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
                out.add(node.attr)
    return out


def _pygls_private_names() -> set[str]:
    server = LanguageServer("contract", "0", protocol_cls=LanguageServerProtocol)
    names = set(dir(LanguageServerProtocol)) | set(vars(server.protocol)) | set(dir(LanguageServer)) | set(vars(server))
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_the_protocol_module_relies_on_no_private_name_it_does_not_list() -> None:
    used = _self_attributes(ast.parse(Path(protocol.__file__).read_text(encoding="utf-8"))) & _pygls_private_names()
    assert used == set(PYGLS_PRIVATE_METHODS) | set(PYGLS_PRIVATE_ATTRIBUTES)
    overridden = {name for name in vars(OscovaProtocol) if hasattr(LanguageServerProtocol, name)
                  and callable(vars(OscovaProtocol)[name])}
    assert overridden == {n for n in PYGLS_PRIVATE_METHODS if n in vars(OscovaProtocol)} | set(PYGLS_OVERRIDES)


def _pygls_subclasses(tree: ast.AST) -> list[ast.ClassDef]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            and any(ast.unparse(base).split(".")[-1] in ("LanguageServer", "LanguageServerProtocol", "JsonRPCProtocol")
                    for base in node.bases)]


def _own_names(node: ast.ClassDef) -> set[str]:
    """What a class defines or sets on `self` itself."""
    defined = {item.name for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)}
    return defined | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                      and isinstance(n.value, ast.Name) and n.value.id == "self"}


def test_no_other_module_subclasses_pygls_to_touch_its_private_names() -> None:
    # (Another object's private state, pygls's included, is out of reach everywhere: tests/test_architecture.py.)
    private = _pygls_private_names()
    offenders = sorted(f"{path.name}: {node.name}.{name}" for path in LSP_PACKAGE.glob("*.py") if path.name != "protocol.py"
                       for node in _pygls_subclasses(ast.parse(path.read_text(encoding="utf-8")))
                       for name in (_self_attributes(node) & private) - _own_names(node))
    assert offenders == []
    assert [n.name for n in _pygls_subclasses(ast.parse((LSP_PACKAGE / "server.py").read_text()))] == ["OscovaServer"]
