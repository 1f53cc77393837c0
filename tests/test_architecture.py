"""The architecture's import invariants (docs/architecture.md), enforced.

Two kinds of check: imports in a fresh interpreter (what `sys.modules` holds after importing a layer: the
truth at run time, including what a dependency drags in), and a static reading of every `import` statement
with `ast` (lazy imports inside functions included, so a layer cannot hide a forbidden import in a function
that the subprocess check never calls).
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGES = {"oscova_lsp": REPO / "server" / "oscova_lsp", "oscova_runtime": REPO / "runtime" / "oscova_runtime"}
PROTOCOL = ("pygls", "lsprotocol")

# Which project packages each layer may import (besides itself and the standard library / third parties).
# `oscova_lsp.lsp` and `oscova_lsp.cli` sit on top and may import any layer below them.
LAYERS: dict[str, tuple[str, ...]] = {
    "oscova_runtime": (),
    "oscova_lsp.wire": (),
    "oscova_lsp.analysis": ("oscova_runtime",),
    "oscova_lsp.ide": ("oscova_lsp.analysis", "oscova_runtime"),
    "oscova_lsp.reporting": ("oscova_lsp.analysis", "oscova_runtime"),
    "oscova_lsp.runs": ("oscova_lsp.wire", "oscova_lsp.analysis", "oscova_lsp.reporting", "oscova_runtime"),
    "oscova_lsp.review": ("oscova_lsp.runs", "oscova_lsp.wire", "oscova_lsp.analysis", "oscova_lsp.reporting",
                          "oscova_runtime"),
    "oscova_lsp.debug": ("oscova_lsp.runs", "oscova_lsp.wire", "oscova_lsp.analysis", "oscova_lsp.reporting",
                         "oscova_runtime"),
    "oscova_lsp.runhost": ("oscova_lsp.runs", "oscova_lsp.wire", "oscova_lsp.analysis", "oscova_lsp.reporting",
                           "oscova_runtime"),
}


INSIDE_HELPERS = {
    "runtime/oscova_runtime/paths/_boundary.py",  # is_inside itself
}

ALLOWED_CYCLES: set[frozenset[str]] = set()


def _modules() -> dict[str, Path]:
    """Every module of the two packages by dotted name (a package by its `__init__.py`)."""
    found: dict[str, Path] = {}
    for top, base in PACKAGES.items():
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([top, *parts])] = path
    return found


MODULES = _modules()


@functools.cache
def _tree(path: Path) -> ast.Module:
    """The module at `path`, parsed once for all the static checks below (they only read the trees)."""
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


@functools.cache
def _nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of `_tree(path)`, in `ast.walk` order."""
    return tuple(ast.walk(_tree(path)))


def _imports(name: str, path: Path) -> Iterator[tuple[str, int]]:
    """(imported module, line) for every import statement of the file, at any depth, relative ones resolved.
    `from package import name` yields the package and, when `name` is a submodule, the submodule."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _nodes(path):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            yield target, node.lineno
            for alias in node.names:
                if f"{target}.{alias.name}" in MODULES:
                    yield f"{target}.{alias.name}", node.lineno


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _loaded_after_importing(modules: list[str], *, then: str = "") -> list[str]:
    """The top-level packages in `sys.modules` of a fresh interpreter after importing `modules` (and running
    `then`)."""
    code = "\n".join([
        "import importlib, json, sys",
        f"for name in {modules!r}:",
        "    importlib.import_module(name)",
        then,
        "print(json.dumps(sorted({name.partition('.')[0] for name in sys.modules})))",
    ])
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert result.returncode == 0, result.stderr
    loaded: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return loaded


def _of(package: str) -> list[str]:
    return [name for name in MODULES if _within(name, package)]


# ------------------------------------------------------------------------------------- in a subprocess


def test_the_analysis_and_ide_layers_load_no_protocol_library() -> None:
    modules = _of("oscova_lsp.analysis") + _of("oscova_lsp.ide")
    assert len(modules) > 10
    loaded = _loaded_after_importing(modules)
    assert [name for name in PROTOCOL if name in loaded] == []


def test_the_runtime_loads_neither_the_language_server_nor_openai() -> None:
    loaded = _loaded_after_importing(_of("oscova_runtime"))
    assert "oscova_lsp" not in loaded
    assert "openai" not in loaded  # the model client imports it on first use (tests/runtime/test_imports.py)


def test_the_command_line_and_the_server_start_load_no_openai() -> None:
    # `check` runs the whole engine over the example workspace; `create_server` registers every feature.
    loaded = _loaded_after_importing(
        ["oscova_lsp.cli", "oscova_lsp.lsp.launch", "oscova_lsp.lsp.handlers"],
        then="import contextlib, io\n"
             "from oscova_lsp.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    assert main(['check', 'examples']) == 0\n"
             "from oscova_lsp.lsp.handlers import create_server\n"
             "create_server()",
    )
    assert "pygls" in loaded  # the server was really built
    assert "openai" not in loaded


def test_check_loads_no_protocol_library() -> None:
    loaded = _loaded_after_importing(
        ["oscova_lsp.cli"],
        then="import contextlib, io\n"
             "from oscova_lsp.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n"
             "    assert main(['check', 'examples']) == 0",
    )
    assert [name for name in (*PROTOCOL, "openai") if name in loaded] == []


# ------------------------------------------------------------------------------------------- statically


def test_only_the_lsp_package_imports_pygls_or_lsprotocol() -> None:
    offenders = [
        f"{MODULES[name].relative_to(REPO)}:{line} imports {target}"
        for name in MODULES if not _within(name, "oscova_lsp.lsp")
        for target, line in _imports(name, MODULES[name])
        if any(_within(target, library) for library in PROTOCOL)
    ]
    assert offenders == []


def test_each_layer_imports_only_the_layers_below_it() -> None:
    offenders = []
    for name, path in MODULES.items():
        layer = next((layer for layer in LAYERS if _within(name, layer)), None)
        if layer is None:
            continue
        for target, line in _imports(name, path):
            project = any(_within(target, top) for top in PACKAGES) and target not in ("oscova_lsp",)
            if project and not any(_within(target, allowed) for allowed in (layer, *LAYERS[layer])):
                offenders.append(f"{path.relative_to(REPO)}:{line} ({layer}) imports {target}")
    assert offenders == []


def test_production_code_uses_no_assert() -> None:
    # `python -O` strips them: a check that matters is an `if` with an answer, a type is narrowed by a branch
    # or `typing.cast`, and an invariant between two facts is a test.
    offenders = [
        f"{relative}:{node.lineno}"
        for path in MODULES.values()
        for node in _nodes(path)
        if isinstance(node, ast.Assert)
        if (relative := path.relative_to(REPO).as_posix())
    ]
    assert offenders == []


FRAMER = "runtime/oscova_runtime/framing.py"
"""The one module that writes or reads the base protocol's `Content-Length` header (LSP, DAP, the run host)."""


def _frames_messages(node: ast.AST) -> bool:
    """A string or bytes literal of a `Content-Length` header (not a docstring's mention of one)."""
    if not isinstance(node, ast.Constant) or not isinstance(node.value, (str, bytes)):
        return False
    value = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
    return value.lower().lstrip().startswith("content-length") or value.lower().startswith("content-length[")


def _framers() -> list[str]:
    return sorted({path.relative_to(REPO).as_posix() for path in MODULES.values()
                   for node in _nodes(path) if _frames_messages(node)})


def test_one_framer_for_every_stream() -> None:
    assert _framers() == [FRAMER]


def test_the_early_phase_answers_no_request() -> None:
    """Every request is answered by the one handler of its method (`handlers.py`): the phase before pygls
    only publishes, so it never writes a JSON-RPC result or error."""
    early = PACKAGES["oscova_lsp"] / "lsp" / "early.py"
    keys = {node.value for node in _nodes(early) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    assert not keys & {"result", "error"}


MAX_MODULE_LINES = 600
EXTENSION_SOURCES = REPO / "vscode-client" / "src"
GENERATED = {"vscode-client/src/wire.ts"}
"""Written by a generator (`npm run schema`), never by hand."""


def test_no_production_module_is_over_600_lines() -> None:
    sources = [*MODULES.values(), *EXTENSION_SOURCES.rglob("*.ts")]
    long = {relative: lines for path in sources
            if (relative := path.relative_to(REPO).as_posix()) not in GENERATED
            and (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert long == {}


def _hand_written_inside(node: ast.AST) -> bool:
    """`x.startswith(folder + os.sep)` or `relpath(...).startswith("..")`: an "is this inside that folder" test."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "startswith"):
        return False
    for arg in node.args:
        for part in ast.walk(arg):
            if isinstance(part, ast.Attribute) and part.attr == "sep" and isinstance(part.value, ast.Name) \
                    and part.value.id == "os":
                return True
            if isinstance(part, ast.Constant) and part.value == "..":
                return True
    return False


def test_one_is_inside_helper() -> None:
    # `oscova_runtime.paths.is_inside` is the only one (`real=False` for paths compared as written).
    offenders = [
        f"{relative}:{node.lineno}"
        for path in MODULES.values()
        if (relative := path.relative_to(REPO).as_posix()) not in INSIDE_HELPERS
        for node in _nodes(path)
        if _hand_written_inside(node)
    ]
    assert offenders == []


CHECK_MODULES = ("checks.py", "bindings.py", "lint.py", "graph.py", "diagnostics.py",
                 *(f"rules/{p.name}" for p in sorted((PACKAGES["oscova_lsp"] / "analysis" / "rules").glob("*.py"))))
"""The modules that run the checks: they ask the disk only through `Workspace.inside` and `Workspace.is_file`,
which record each question for the stored results (`analysis/stored_results.py`)."""
DISK_CALLS = {("os", "path"): {"isfile", "isdir", "exists", "lexists", "islink", "realpath", "getmtime",
                                "getsize"},
              ("os",): {"stat", "lstat", "listdir", "scandir", "walk", "open", "access"}}


def _disk_call(node: ast.AST) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in ("open", "is_inside", "read_text", "read_bytes")
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    owner, parts = node.func.value, []
    while isinstance(owner, ast.Attribute):
        parts.insert(0, owner.attr)
        owner = owner.value
    if isinstance(owner, ast.Name):
        parts.insert(0, owner.id)
    return node.func.attr in DISK_CALLS.get(tuple(parts), set())


def test_the_checks_ask_the_disk_only_through_the_recorded_questions() -> None:
    offenders = [
        f"{name}:{node.lineno}"
        for name in CHECK_MODULES
        for node in _nodes(PACKAGES["oscova_lsp"] / "analysis" / name)
        if _disk_call(node)
    ]
    assert offenders == []
    assert _disk_call(ast.parse("os.path.isfile(x)").body[0].value)  # type: ignore[attr-defined]
    assert _disk_call(ast.parse("is_inside(a, b)").body[0].value)  # type: ignore[attr-defined]


def _cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan), i.e. the import cycles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_project_has_no_import_cycles() -> None:
    # Every import counts, lazy ones inside functions and `TYPE_CHECKING` ones too: a cycle hidden in a
    # function still ties the two modules together (the runtime's function_invocation -> tools -> workspace
    # -> function_invocation was one).
    graph = {name: {t for t, _ in _imports(name, path) if t in MODULES and t != name} for name, path in MODULES.items()}
    cycles = [sorted(cycle) for cycle in _cycles(graph) if cycle not in ALLOWED_CYCLES]
    assert cycles == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycles(graph) == [frozenset({"a", "b", "c"})]


FILE_GATEWAY = "runtime/oscova_runtime/paths/"
"""The one package that opens, creates, renames, removes or lists files: everything else asks it."""
GATEWAY_ONLY = {
    "os": {"open", "fdopen", "replace", "rename", "renames", "link", "symlink", "mkfifo", "mknod", "truncate",
           "chmod", "lchmod", "chown", "lchown", "makedirs", "mkdir", "unlink", "remove", "rmdir", "removedirs",
           "listdir", "scandir", "walk", "fwalk", "posix_fallocate", "sendfile", "copy_file_range"},
    "io": {"open", "open_code", "FileIO"},
    "codecs": {"open"},
    "shutil": {"copy", "copy2", "copyfile", "copyfileobj", "copytree", "copymode", "copystat", "move", "rmtree",
               "chown", "make_archive", "unpack_archive"},
    "tempfile": {"mkstemp", "mkdtemp", "NamedTemporaryFile", "TemporaryFile", "SpooledTemporaryFile",
                 "TemporaryDirectory"},
}
"""Functions of these modules that touch files, by module: used (called, passed or imported by name) only in
`FILE_GATEWAY`."""
PATH_METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "iterdir", "glob", "rglob", "touch",
                "symlink_to", "hardlink_to", "mkdir", "unlink", "rmdir", "chmod", "lchmod"}
"""Methods of `pathlib.Path` that read, write, list or change files: called nowhere but in the gateway (a
`Path` elsewhere only names a file, as in `Path(p).as_uri()`)."""


def _methods_named_open(tree: ast.AST) -> set[int]:
    """The `open` names in a class body that defines a method `open` (`change = open`): the method, not the
    built-in."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and any(isinstance(s, ast.FunctionDef) and s.name == "open" for s in node.body):
            found |= {id(n) for s in node.body if isinstance(s, ast.Assign) for n in ast.walk(s.value)}
    return found


def _gateway_bypasses(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for each way a module touches files without the gateway."""
    methods = _methods_named_open(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == "open" and isinstance(node.ctx, ast.Load) and id(node) not in methods:
            yield node.lineno, "open"
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.attr in GATEWAY_ONLY.get(node.value.id, ()):
            yield node.lineno, f"{node.value.id}.{node.attr}"
        elif isinstance(node, ast.ImportFrom) and node.module in GATEWAY_ONLY:
            for alias in node.names:
                if alias.name in GATEWAY_ONLY[node.module]:
                    yield node.lineno, f"from {node.module} import {alias.name}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            method = node.func.attr
            receiver = node.func.value.id if isinstance(node.func.value, ast.Name) else None
            if method in PATH_METHODS and receiver not in ("paths", *GATEWAY_ONLY):  # `os.unlink` is counted above
                yield node.lineno, f".{method}()"
            elif method == "open" and isinstance(node.func.value, ast.Call):  # Path(x).open(), os.fdopen(...)...
                yield node.lineno, ".open() on a path"


def test_files_are_touched_only_through_the_one_gateway() -> None:
    offenders = [
        f"{relative}:{line} {what}"
        for path in MODULES.values()
        if not (relative := path.relative_to(REPO).as_posix()).startswith(FILE_GATEWAY)
        for line, what in _gateway_bypasses(_tree(path))
    ]
    assert offenders == []


def test_the_gateway_check_finds_each_way_around_it() -> None:
    samples = ["open(p)", "f = open", "os.open(p, 0)", "os.fdopen(fd)", "asyncio.to_thread(os.remove, p)",
               "os.listdir(d)", "os.walk(d)", "os.scandir(d)", "os.replace(a, b)", "os.makedirs(d)",
               "shutil.copyfile(a, b)", "tempfile.mkstemp()", "tempfile.TemporaryDirectory()",
               "from os import replace", "from shutil import copyfile", "io.open(p)", "codecs.open(p)",
               "Path(p).read_text()", "path.write_bytes(b'')", "folder.iterdir()", "Path(p).open()"]
    for sample in samples:
        assert list(_gateway_bypasses(ast.parse(sample))), sample
    for fine in ["host.open(path, text, 1)", "os.path.realpath(p)", "os.stat(p)", "tempfile.gettempdir()",
                 "navigation.rename(a, b)", "Path(p).as_uri()",
                 "class Host:\n    def open(self): pass\n    change = open", "paths.read_text(p)", "text.replace('a', 'b')"]:
        assert not list(_gateway_bypasses(ast.parse(fine))), fine


# ------------------------------------------------------------------------------------------- the document

ARCHITECTURE = REPO / "docs" / "architecture.md"
ARCHITECTURE_MAX_LINES = 300
_SEARCHED = ("server", "runtime", "vscode-client/src", "vscode-client/test", "vscode-client/e2e", "tests",
             "benchmarks", "docs", "examples", ".ci")
_TICKED = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"^[\w.-]+(?:/[\w.-]*)*$")
_CLASS = re.compile(r"^[A-Z][a-z]+(?:[A-Z][a-z0-9]*)+$")  # CamelCase: `RunService`, `AnalysisHost`
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")  # `READY_TIMEOUT`
_DOTTED = re.compile(r"^[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*\.[A-Za-z_]\w*$")  # `cli.main`, `paths.is_inside`


@functools.cache
def _repository_files() -> tuple[str, ...]:
    found: list[str] = []
    for top in _SEARCHED:
        base = REPO / top
        if base.is_dir():
            found.append(top)
            found += [p.relative_to(REPO).as_posix() for p in base.rglob("*")
                      if "node_modules" not in p.parts and "__pycache__" not in p.parts]
    return tuple(found + [p.name for p in REPO.iterdir()])


def _names_a_path(token: str) -> bool:
    if token.startswith(".oscova"):  # a workspace's own folder, not the repository's
        return False
    return _PATH.match(token) is not None and ("/" in token or token.endswith((".py", ".ts", ".md", ".mjs")))


def _path_exists(token: str) -> bool:
    """A path from the repository's root, or the end of one (`lsp/launch.py`, `runhost/`, `test/`)."""
    name = token.rstrip("/")
    return (REPO / name).exists() or any(f == name or f.endswith("/" + name) for f in _repository_files())


@functools.cache
def _source_text() -> str:
    parts = [p.read_text(encoding="utf-8") for top in ("server", "runtime") for p in (REPO / top).rglob("*.py")]
    parts += [p.read_text(encoding="utf-8") for p in (REPO / "vscode-client/src").rglob("*.ts")]
    return "\n".join(parts)


def _defined(name: str, text: str) -> bool:
    """`name` is a class, function, constant, interface or type defined in `text` (Python or TypeScript)."""
    return re.search(rf"^\s*(?:export\s+)?(?:async\s+)?(?:class|def|function|interface|type|const)\s+{name}\b"
                     rf"|^\s*{name}\s*(?::[^=\n]*)?=", text, re.M) is not None


def _dotted_exists(token: str) -> bool:
    """`module.name` (or `package.module.name`): a module whose path ends so defines the name."""
    *module, name = token.split(".")
    ending = "/".join(module)
    modules = [REPO / f for f in _repository_files() if f.endswith((f"/{ending}.py", f"/{ending}/__init__.py"))]
    # defined there, a method there, or a name a package's `__init__` imports to offer it
    pattern = rf"^\s+(?:async\s+)?def {name}\b|^\s+{name},$|^from \S+ import .*\b{name}\b"
    return any(_defined(name, m.read_text(encoding="utf-8")) or re.search(pattern, m.read_text(encoding="utf-8"), re.M)
               for m in modules)


def unfounded_names(text: str) -> list[str]:
    """The names the document uses that do not exist: paths, classes, constants and `module.name` references
    (other backticked text, such as keys and commands, is not checked)."""
    found: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        for token in _TICKED.findall(line):
            if _names_a_path(token):
                ok = _path_exists(token)
            elif _CLASS.match(token) or _CONSTANT.match(token):
                ok = _defined(token, _source_text()) or hasattr(os, token)
            elif _DOTTED.match(token) and not token.endswith((".yaml", ".toml", ".json", ".j2")):
                ok = _dotted_exists(token)
            else:
                continue
            if not ok:
                found.append(f"line {number}: `{token}`")
    return found


def test_the_architecture_document_is_short_and_every_name_in_it_exists() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= ARCHITECTURE_MAX_LINES
    assert unfounded_names(text) == []


def test_the_name_check_finds_what_does_not_exist() -> None:
    sample = ("`runs/service.py` `runhost/` `RunService` `READY_TIMEOUT` `cli.main` `oscova_runtime.paths.is_inside`\n"
              "`runs/nothing.py` `nowhere/` `NoSuchService` `NO_SUCH_LIMIT` `cli.nothing` `[host] exclude`\n")
    assert unfounded_names(sample) == ["line 2: `runs/nothing.py`", "line 2: `nowhere/`", "line 2: `NoSuchService`",
                                       "line 2: `NO_SUCH_LIMIT`", "line 2: `cli.nothing`"]


# ------------------------------------------------------------------------------------------- seams

def _own_private_names(tree: ast.AST) -> dict[int, set[str]]:
    """For each class (by `id` of its node): the private names it sets on `self` or `cls`, or defines."""
    out: dict[int, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            names = {item.name for item in node.body if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)}
            names |= {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store)
                      and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")}
            out[id(node)] = {n for n in names if n.startswith("_")}
    return out


def private_reaches(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, expression) for each use of another object's private attribute: `x._name` where `x` is not `self`,
    `cls` or `super()`, outside a class that has a `_name` of its own (a class may touch its own kind's)."""
    own = _own_private_names(tree)

    def visit(node: ast.AST, allowed: set[str]) -> Iterator[tuple[int, str]]:
        if isinstance(node, ast.ClassDef):
            allowed = allowed | own[id(node)]
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            receiver = node.value
            mine = isinstance(receiver, ast.Name) and receiver.id in ("self", "cls") or \
                isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Name) and receiver.func.id == "super"
            if not mine and node.attr not in allowed and not ast.unparse(receiver).startswith("os"):
                yield node.lineno, ast.unparse(node)
        for child in ast.iter_child_nodes(node):
            yield from visit(child, allowed)

    yield from visit(tree, set())


def test_no_module_reaches_into_another_objects_private_state() -> None:
    # An object's private state is its own: the run service calls `ConfiguredHost.forget_tools()`, a replay
    # `RunService.resume_session()`. pygls's private names are used in `lsp/protocol.py` only, each listed
    # and checked against the installed pygls (tests/server/test_pygls_contract.py).
    offenders = [
        f"{relative}:{line} {what}"
        for path in MODULES.values()
        if (relative := path.relative_to(REPO).as_posix())
        for line, what in private_reaches(_tree(path))
    ]
    assert offenders == []


def test_the_private_state_check_finds_a_reach() -> None:
    reaches = ["service._sessions[key] = session", "self._host._tools_synced = False",
               "def f(host):\n    return host._roots"]
    for sample in reaches:
        assert list(private_reaches(ast.parse(sample))), sample
    for fine in ["self._x = 1", "super()._send(x)", "cls._cache", "os._exit(0)", "sys.path",
                 "class A:\n    def fork(self):\n        copy = A()\n        copy._memo = {}\n        self._memo = {}"]:
        assert not list(private_reaches(ast.parse(fine))), fine


def test_only_the_chat_client_imports_openai() -> None:
    # The server warms the model client up off the event loop through `chat_client.load_library`.
    offenders = [
        f"{MODULES[name].relative_to(REPO)}:{line}"
        for name in MODULES if name != "oscova_runtime.chat_client"
        for target, line in _imports(name, MODULES[name]) if _within(target, "openai")
    ]
    assert offenders == []


# ------------------------------------------------------------------------------------------- the process gateway

PROCESS_GATEWAY = "runtime/oscova_runtime/processes.py"
"""The one module that starts a process: a fixed environment, a time limit, bounded output, git made inert."""
PROCESS_STARTS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "os": {"system", "popen", "fork", "forkpty", "execl", "execle", "execlp", "execlpe", "execv", "execve", "execvp",
           "execvpe", "spawnl", "spawnle", "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe",
           "posix_spawn", "posix_spawnp"},
    "pty": {"fork", "spawn"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "multiprocessing": {"Process", "Pool", "get_context", "set_start_method"},
    "concurrent.futures": {"ProcessPoolExecutor"},
}
"""Functions that start a process, by module: used (called, passed or imported by name) only in the gateway."""
PROCESS_METHODS = {"subprocess_exec", "subprocess_shell"}
"""Event-loop methods that start one (`loop.subprocess_exec`)."""
PROCESS_MODULES = {"subprocess", "multiprocessing", "pty"}
"""Modules that exist to start processes: imported nowhere else."""


def _process_starts(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for each way a module starts a process without the gateway."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PROCESS_MODULES:
                    yield node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module.split(".")[0] in PROCESS_MODULES:
                yield node.lineno, f"from {node.module} import"
            for alias in node.names:
                if alias.name in PROCESS_STARTS.get(node.module, ()):
                    yield node.lineno, f"from {node.module} import {alias.name}"
        elif isinstance(node, ast.Attribute):
            owner = ast.unparse(node.value)
            if node.attr in PROCESS_STARTS.get(owner, ()) or node.attr in PROCESS_STARTS["asyncio"] \
                    or node.attr in PROCESS_METHODS:
                yield node.lineno, f"{owner}.{node.attr}"


def test_processes_are_started_only_through_the_one_gateway() -> None:
    offenders = [
        f"{relative}:{line} {what}"
        for path in MODULES.values()
        if (relative := path.relative_to(REPO).as_posix()) != PROCESS_GATEWAY
        for line, what in _process_starts(_tree(path))
    ]
    assert offenders == []


def test_the_process_check_finds_each_way_around_it() -> None:
    samples = ["import subprocess", "subprocess.run(['git'])", "from subprocess import run", "os.system('x')",
               "os.execv(p, a)", "os.spawnl(0, p)", "os.posix_spawn(p, a, e)", "os.fork()", "os.popen('x')",
               "import multiprocessing", "multiprocessing.get_context('fork')", "from multiprocessing import Pool",
               "asyncio.create_subprocess_exec('git')", "await asyncio.create_subprocess_shell('x')",
               "loop.subprocess_exec(f, 'x')", "from concurrent.futures import ProcessPoolExecutor",
               "concurrent.futures.ProcessPoolExecutor()", "import pty", "f = os.execvp"]
    for sample in samples:
        assert list(_process_starts(ast.parse(sample))), sample
    for fine in ["processes.run(['git'], cwd=d)", "from concurrent.futures import ThreadPoolExecutor",
                 "os.getpid()", "os.kill(pid, 9)", "asyncio.to_thread(f)", "await processes.run_async(c, cwd=d)"]:
        assert not list(_process_starts(ast.parse(fine))), fine


# ------------------------------------------------------------------------------------------- the network gateway

NETWORK_GATEWAY = "runtime/oscova_runtime/network.py"
"""The one module that opens a connection: configured model endpoints and the telemetry collector only."""
NETWORK_LISTENERS = {
    "server/oscova_lsp/lsp/server.py": {"asyncio.start_server"},
}
"""Named exceptions: `serve --tcp` listens on a loopback address for the editor's one connection (`lsp/launch.py`
refuses any other address); it accepts, and connects nowhere."""
CONNECTS = {
    "socket": {"socket", "create_connection", "create_server", "fromfd", "SocketType"},
    "asyncio": {"open_connection", "open_unix_connection", "start_server", "start_unix_server"},
    "urllib.request": {"urlopen", "build_opener", "urlretrieve", "OpenerDirector", "install_opener"},
    "request": {"urlopen", "build_opener", "urlretrieve"},
    "http.client": {"HTTPConnection", "HTTPSConnection"},
    "httpx": {"Client", "AsyncClient", "get", "post", "put", "patch", "delete", "head", "options", "request",
              "stream", "HTTPTransport", "AsyncHTTPTransport"},
    "openai": {"OpenAI", "AsyncOpenAI", "AzureOpenAI", "AsyncAzureOpenAI", "DefaultHttpxClient",
               "DefaultAsyncHttpxClient"},
    "requests": {"get", "post", "put", "patch", "delete", "head", "request", "Session", "session"},
}
"""Functions and classes that open connections, by module: used (called, passed or imported by name) only in the
gateway."""
CONNECTING_METHODS = {"create_connection", "create_datagram_endpoint", "create_unix_connection", "sock_connect",
                      "create_server", "create_unix_server"}
"""Event-loop methods that connect (or listen): `loop.create_connection(...)`."""
CONNECTING_NAMES = {"OTLPSpanExporter", "urlopen"}
"""Names that connect however they are reached (the OTLP exporter, `urlopen` imported by name)."""
CONNECTING_MODULES = {"requests", "urllib3", "aiohttp", "http.client", "websockets"}
"""HTTP libraries imported nowhere else."""


def _connections(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, what) for each way a module opens a connection without the gateway."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in CONNECTING_MODULES or alias.name.split(".")[0] in CONNECTING_MODULES:
                    yield node.lineno, f"import {alias.name}"
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            if node.module in CONNECTING_MODULES or node.module.split(".")[0] in CONNECTING_MODULES:
                yield node.lineno, f"from {node.module} import"
            for alias in node.names:
                if alias.name in CONNECTS.get(node.module, ()) or alias.name in CONNECTING_NAMES:
                    yield node.lineno, f"from {node.module} import {alias.name}"
        elif isinstance(node, ast.Attribute):
            owner = ast.unparse(node.value)
            if node.attr in CONNECTS.get(owner, ()) or node.attr in CONNECTS.get(owner.rpartition(".")[2], ()) \
                    or node.attr in CONNECTING_METHODS or node.attr in CONNECTING_NAMES:
                yield node.lineno, f"{owner}.{node.attr}"
        elif isinstance(node, ast.Name) and node.id in CONNECTING_NAMES and isinstance(node.ctx, ast.Load):
            yield node.lineno, node.id


def test_connections_are_opened_only_through_the_one_gateway() -> None:
    offenders = [
        f"{relative}:{line} {what}"
        for path in MODULES.values()
        if (relative := path.relative_to(REPO).as_posix()) != NETWORK_GATEWAY
        for line, what in _connections(_tree(path))
        if what not in NETWORK_LISTENERS.get(relative, ())
    ]
    assert offenders == []


def test_the_network_check_finds_each_way_around_it() -> None:
    samples = ["socket.socket()", "socket.create_connection(('h', 1))", "await asyncio.open_connection(h, p)",
               "await loop.create_connection(f, h, p)", "urllib.request.urlopen(u)", "from urllib.request import urlopen",
               "http.client.HTTPSConnection(h)", "import http.client", "httpx.AsyncClient()", "httpx.get(u)",
               "openai.AsyncOpenAI(api_key=k)", "openai.DefaultAsyncHttpxClient()", "import requests",
               "OTLPSpanExporter(endpoint=u)", "from opentelemetry.exporter.otlp.proto.http.trace_exporter import "
               "OTLPSpanExporter", "await asyncio.start_server(f, h, p)"]
    for sample in samples:
        assert list(_connections(ast.parse(sample))), sample
    for fine in ["socket.getaddrinfo(h, None)", "network.model_client(a, b, base_url=u)", "import socket",
                 "from urllib.parse import quote", "httpx.HTTPError", "network.post_spans(u, b, timeout=1)"]:
        assert not list(_connections(ast.parse(fine))), fine
