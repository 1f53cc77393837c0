"""The one process gateway: every process the product starts is started here (`tests/test_architecture.py`
fails on any `subprocess`, `os.exec*`, `os.spawn*`, `os.system`, `os.fork`, `pty`, `multiprocessing` or
`asyncio` subprocess use in another module of `server/` or `runtime/`).

The rules, everywhere: a fixed environment (`environment`: the user's values of an allow-list of variables,
never the whole environment the product was started with, and nothing a workspace names); a time limit; output
read up to a bound (past it the child is stopped and `Finished.truncated` says so); the child in a session of
its own, so a timeout, a cancellation or `stop` ends its own children too.

- `run` / `run_async`: a command run to completion, its output captured.
- `spawn` / `spawn_async`: a long-lived child with pipes on its stdin and stdout (a JSON-RPC-over-stdio
  server), its address space limited (`memory_limit`, `RLIMIT_AS` set in the child before it runs the
  program); `stop` ends it and its children.
- `worker_pool`: worker processes that run the engine's own functions (template parsing) on this process's
  `sys.path` without the current directory.
- `git_repository` and `git`: git with a repository's own settings inert: no hook (`core.hooksPath` is
  `/dev/null`), no file-system monitor, no filter, textconv or external diff program (and only commands
  that read objects and the index, which run none: `READ_ONLY_GIT`), no system or global configuration but
  our own, no transport, no lazy fetch, no optional lock; the repository found by its `.git` folder, and a
  `.git` *file* (`gitdir: …`) followed only inside the repository's folder or to the linked worktree that
  names it back.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from . import paths

if TYPE_CHECKING:
    import asyncio

DEFAULT_TIMEOUT = 300.0
"""Seconds a command run to completion may take unless its caller says otherwise."""
MAX_OUTPUT_BYTES = 256 * 1024 * 1024
"""The most of a command's standard output (and, apart, of its standard error) that is kept."""
CHUNK = 1 << 16

ALLOWED_VARIABLES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP", "TERM",
    "NO_COLOR", "SYSTEMROOT", "COMSPEC", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "SSL_CERT_FILE", "SSL_CERT_DIR",
})
"""The variables a child gets from the user's environment (with `LC_*` and the product's own `OSCOVA_LSP_*`):
what finds programs, the locale, temporary folders, the cache and the certificates; never keys, `PYTHONPATH`,
`GIT_*`, `LD_PRELOAD` or anything else the environment holds."""
ALLOWED_PREFIXES = ("LC_", "OSCOVA_LSP_")


class ProcessFailed(Exception):
    """A process that could not be started or did not finish in time; the message is a sentence."""


class ProcessTimedOut(ProcessFailed):
    """A process stopped at its time limit."""


class ProcessRefused(ProcessFailed):
    """A process the gateway does not start (git sent outside its repository, a command that writes)."""


@dataclass(frozen=True, slots=True)
class Finished:
    returncode: int
    stdout: bytes
    stderr: bytes
    truncated: bool = False
    """The output went past its bound: the rest was not kept and the process was stopped."""


def environment(extra: Mapping[str, str] | None = None, *, names: Sequence[str] = ()) -> dict[str, str]:
    """The environment of a child: the user's values of `ALLOWED_VARIABLES`, `LC_*`, `OSCOVA_LSP_*` and of
    `names` (variables a caller needs by name), then `extra` (values the caller sets)."""
    wanted = ALLOWED_VARIABLES | set(names)
    found = {k: v for k, v in os.environ.items() if k in wanted or k.startswith(ALLOWED_PREFIXES)}
    return {**found, **(extra or {})}


def _program(argv: Sequence[str]) -> str:
    return os.path.basename(argv[0]) if argv else "(nothing)"


def _not_started(argv: Sequence[str], error: OSError) -> ProcessFailed:
    if isinstance(error, FileNotFoundError):
        return ProcessFailed(f"{_program(argv)} is not installed (or not on PATH)")
    return ProcessFailed(f"{_program(argv)} could not be started: {paths.describe_os_error(error)}")


def _timed_out(argv: Sequence[str], timeout: float) -> ProcessTimedOut:
    return ProcessTimedOut(f"{_program(argv)} did not finish within {timeout:g} s and was stopped")


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _drain(stream: BinaryIO, kept: bytearray, limit: int, over: Callable[[], None]) -> None:
    """Reads `stream` to its end, keeping at most `limit` bytes; `over` is called once past it."""
    while True:
        data = stream.read1(CHUNK) if hasattr(stream, "read1") else stream.read(CHUNK)
        if not data:
            return
        room = limit - len(kept)
        if len(data) > room:
            kept += data[:max(room, 0)]
            over()
            return
        kept += data


def run(argv: Sequence[str], *, cwd: str, timeout: float = DEFAULT_TIMEOUT, input: bytes | None = None,
        env: Mapping[str, str] | None = None, output_limit: int = MAX_OUTPUT_BYTES) -> Finished:
    """Runs `argv` in `cwd` to completion with the fixed environment (plus `env`), `input` on its stdin;
    ProcessFailed when it cannot start or takes longer than `timeout` seconds (it is stopped, with its
    children). Output past `output_limit` bytes stops it too (`Finished.truncated`)."""
    try:
        process = subprocess.Popen(list(argv), cwd=cwd, env=environment(env), start_new_session=True,
                                   stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as error:
        raise _not_started(argv, error) from None
    out, err = bytearray(), bytearray()
    truncated = threading.Event()

    def over() -> None:
        truncated.set()
        _kill_group(process.pid)

    readers = [threading.Thread(target=_drain, args=(stream, kept, output_limit, over), daemon=True)
               for stream, kept in ((process.stdout, out), (process.stderr, err))]
    for reader in readers:
        reader.start()
    if input is not None and process.stdin is not None:
        threading.Thread(target=_feed, args=(process.stdin, input), daemon=True).start()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)
        process.wait()
        raise _timed_out(argv, timeout) from None
    except BaseException:  # interrupted: the child goes with us
        _kill_group(process.pid)
        process.wait()
        raise
    finally:
        for reader in readers:
            reader.join(5)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()
    return Finished(process.returncode, bytes(out), bytes(err), truncated.is_set())


def _feed(stream: BinaryIO, data: bytes) -> None:
    with contextlib.suppress(OSError):
        stream.write(data)
    with contextlib.suppress(OSError):
        stream.close()


async def run_async(argv: Sequence[str], *, cwd: str, timeout: float = DEFAULT_TIMEOUT,
                    env: Mapping[str, str] | None = None, output_limit: int = MAX_OUTPUT_BYTES) -> Finished:
    """`run` for an event loop (stdin empty): a cancellation stops the child and its children."""
    import asyncio

    try:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=environment(env), start_new_session=True, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    except OSError as error:
        raise _not_started(argv, error) from None
    truncated = False

    async def drain(stream: asyncio.StreamReader | None) -> bytes:
        nonlocal truncated
        kept = bytearray()
        while stream is not None and (data := await stream.read(CHUNK)):
            if len(kept) + len(data) > output_limit:
                kept += data[:output_limit - len(kept)]
                truncated = True
                _kill_group(process.pid)
                break
            kept += data
        return bytes(kept)

    try:
        out, err = await asyncio.wait_for(asyncio.gather(drain(process.stdout), drain(process.stderr)), timeout)
        await process.wait()
    except BaseException as stopped:
        _kill_group(process.pid)
        await process.wait()
        if isinstance(stopped, TimeoutError):
            raise _timed_out(argv, timeout) from None
        raise
    return Finished(process.returncode or 0, out, err, truncated)


# ------------------------------------------------------------------------------------ long-lived children


def _limit(pid: int, memory_limit: int | None) -> None:
    """The child's address space limited to `memory_limit` bytes, set from here (`prlimit`) as soon as it runs:
    a `preexec_fn` would run Python in the forked child of a process with threads, where a lock another thread
    held at the fork is never released (the child hangs before `exec`, and the parent with it)."""
    if memory_limit is None:
        return
    import resource

    with contextlib.suppress(ProcessLookupError):  # a child already gone needs no limit
        resource.prlimit(pid, resource.RLIMIT_AS, (memory_limit, memory_limit))


def spawn(argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None = None, memory_limit: int | None = None,
          stderr: int | None = subprocess.PIPE) -> subprocess.Popen[bytes]:
    """A long-lived child with pipes on its stdin and stdout (and stderr, unless `stderr` says otherwise:
    `subprocess.DEVNULL`), the fixed environment (plus `env`), in a session of its own, its address space
    limited to `memory_limit` bytes. `stop` ends it."""
    try:
        process = subprocess.Popen(list(argv), cwd=cwd, env=environment(env), start_new_session=True,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
    except OSError as error:
        raise _not_started(argv, error) from None
    _limit(process.pid, memory_limit)
    return process


async def spawn_async(argv: Sequence[str], *, cwd: str, env: Mapping[str, str] | None = None,
                      memory_limit: int | None = None, stderr: int | None = subprocess.PIPE,
                      ) -> asyncio.subprocess.Process:
    """`spawn` for an event loop: its pipes are the loop's streams."""
    import asyncio

    try:
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=cwd, env=environment(env), start_new_session=True, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=stderr)
    except OSError as error:
        raise _not_started(argv, error) from None
    _limit(process.pid, memory_limit)
    return process


def stop(process: subprocess.Popen[bytes] | asyncio.subprocess.Process) -> None:
    """Ends a spawned child and every process of its session at once (SIGKILL); a child already gone is fine."""
    _kill_group(process.pid)


# ------------------------------------------------------------------------------------ worker processes


class WorkerPool(Executor):
    """A process pool whose workers start without the current directory (often the workspace) on `sys.path`:
    the interpreters multiprocessing starts with `python -c` (a fork server, spawned workers, the resource
    tracker) would put it first before their first import, and a workspace's `yaml.py` would be imported in
    place of PyYAML. Workers start as work is submitted, so each submission is made with `PYTHONSAFEPATH`."""

    def __init__(self, workers: int, context: Any) -> None:
        from concurrent.futures import ProcessPoolExecutor

        with _without_current_directory():
            self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        with _without_current_directory():
            return self._pool.submit(fn, *args, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        self._pool.shutdown(wait, cancel_futures=cancel_futures)


def worker_pool(workers: int, *, fork_server: bool = False) -> WorkerPool | None:
    """`workers` worker processes for the engine's own functions; forked from a fork server when
    `fork_server` (a process that runs threads must not fork itself), else the platform's default. None where
    processes cannot be made here (the caller does the work itself)."""
    import multiprocessing

    context: Any = None
    if fork_server:
        with contextlib.suppress(ValueError):  # a platform without it: the default
            context = multiprocessing.get_context("forkserver")
    try:
        return WorkerPool(workers, context)
    except (OSError, RuntimeError, ValueError, NotImplementedError):
        return None


def forked(work: Callable[[], object]) -> Callable[[], None]:
    """Runs `work` in a child forked from this process, which sees this process's objects as they are
    (copy-on-write: nothing is sent), for work whose only result is a file it writes (a cache); returns the
    function that waits for the child to end. The child leaves with `os._exit`: no exit handler of this process
    runs twice, and what `work` raises ends it quietly (a file it did not write is only a cache not updated). Where
    a fork is not safe, `work` runs here at once: off Linux (macOS's system libraries are not fork-safe), or with
    another thread running (a fork keeps only the calling thread, and a lock another held stays held)."""
    import sys

    if sys.platform != "linux" or threading.active_count() > 1:
        work()
        return lambda: None
    for stream in (sys.stdout, sys.stderr):  # a child that wrote to them would write a copy of what is buffered
        with contextlib.suppress(Exception):
            stream.flush()
    try:
        pid = os.fork()
    except OSError:
        work()
        return lambda: None
    if pid == 0:  # pragma: no cover - the child; its effect (the file) is what the tests see
        code = 1
        try:
            work()
            code = 0
        finally:
            os._exit(code)

    def wait() -> None:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)

    return wait


_environment_lock = threading.Lock()


@contextlib.contextmanager
def _without_current_directory() -> Iterator[None]:
    with _environment_lock:
        previous = os.environ.get("PYTHONSAFEPATH")
        os.environ["PYTHONSAFEPATH"] = "1"
        try:
            yield
        finally:
            if previous is None:
                os.environ.pop("PYTHONSAFEPATH", None)
            else:
                os.environ["PYTHONSAFEPATH"] = previous


# ------------------------------------------------------------------------------------------------- git

GIT_TIMEOUT = 300.0
"""Seconds any one git command may take (a listing of a very large repository included)."""
READ_ONLY_GIT = frozenset({"rev-parse", "ls-tree", "cat-file", "merge-base", "symbolic-ref", "ls-files"})
"""The git commands the gateway runs: they read objects, refs and the index, write nothing (the index least of
all: a write would fire the repository's `post-index-change` hook) and run no filter, textconv or diff
program."""
GIT_SETTINGS = ("-c", f"core.hooksPath={os.devnull}", "-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false",
                "-c", "diff.external=", "-c", "core.pager=cat", "-c", f"core.attributesFile={os.devnull}",
                "-c", "protocol.allow=never", "-c", "core.quotePath=false", "--literal-pathspecs",
                "--no-replace-objects")
GIT_ENVIRONMENT = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_ATTR_NOSYSTEM": "1",
                   "GIT_TERMINAL_PROMPT": "0", "GIT_ALLOW_PROTOCOL": "none", "GIT_OPTIONAL_LOCKS": "0",
                   "GIT_NO_LAZY_FETCH": "1", "GIT_NO_REPLACE_OBJECTS": "1", "GIT_PAGER": "cat", "LC_ALL": "C"}
"""No system configuration, and for the global one an empty file of our own (`/dev/null`): the user's
`~/.gitconfig` names programs too (an external diff, a credential helper)."""


@dataclass(frozen=True, slots=True)
class GitRepository:
    top: str
    """The work tree's top folder (real path)."""
    git_dir: str
    """Its git folder: `top/.git`, or where a `.git` file inside it, or of a linked worktree, says."""


def git_repository(folder: str) -> GitRepository | None:
    """The repository whose work tree holds `folder`: the nearest folder at or above it with a `.git` entry
    (up to the user's `GIT_CEILING_DIRECTORIES`), or None. ProcessRefused for a `.git` that leads out of its
    folder: a file (`gitdir: …`) or a link naming another place, unless that place is a linked worktree of a
    repository (`git worktree add`) whose own `gitdir` file names this `.git` back."""
    ceilings = {os.path.realpath(p) for p in os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep) if p}
    current = os.path.realpath(folder)
    while True:
        entry = os.path.join(current, ".git")
        if os.path.lexists(entry):
            return GitRepository(current, _git_dir(current, entry))
        parent = os.path.dirname(current)
        if parent == current or parent in ceilings:
            return None
        current = parent


def _git_dir(top: str, entry: str) -> str:
    if os.path.isdir(entry) and not os.path.islink(entry):
        return entry
    if os.path.islink(entry):
        target = os.path.realpath(entry)
    else:
        try:
            head = paths.read_head(entry, root=top, limit=4096)[0].decode("utf-8", "surrogateescape")
        except paths.FileRefused as refused:
            raise ProcessRefused(f"{entry} cannot be read: {refused}") from None
        first = head.splitlines()[0] if head.strip() else ""
        if not first.startswith("gitdir:"):
            raise ProcessRefused(f"{entry} is neither a git folder nor a `gitdir:` file")
        target = os.path.realpath(os.path.join(top, first.removeprefix("gitdir:").strip()))
    if paths.is_inside(target, top) or _names_back(target, entry):
        return target
    raise ProcessRefused(f"{entry} is a file that sends git to {target}, outside {top}: a review reads only the "
                         "repository inside the folder")


def _names_back(git_dir: str, entry: str) -> bool:
    """Whether `git_dir` is a linked worktree's folder (it has a `commondir`) whose `gitdir` file names `entry`."""
    try:
        paths.read_head(os.path.join(git_dir, "commondir"), root=git_dir, limit=4096)
        back = paths.read_head(os.path.join(git_dir, "gitdir"), root=git_dir, limit=4096)[0].decode(
            "utf-8", "surrogateescape")
    except paths.FileRefused:
        return False
    return os.path.realpath(back.strip()) == os.path.realpath(entry)


def git(repository: GitRepository, args: Sequence[str], *, input: bytes | None = None,
        timeout: float = GIT_TIMEOUT, output_limit: int = MAX_OUTPUT_BYTES) -> Finished:
    """`git ARGS` on `repository` with its own settings inert (see the module's docstring); ProcessRefused for a
    command outside `READ_ONLY_GIT`, ProcessFailed when git is missing or too slow."""
    if not args or args[0] not in READ_ONLY_GIT:
        raise ProcessRefused(f"git {args[0] if args else ''} is not a command the gateway runs: only commands that "
                             f"read objects and the index ({', '.join(sorted(READ_ONLY_GIT))})")
    settings = {**GIT_ENVIRONMENT, "GIT_DIR": repository.git_dir, "GIT_WORK_TREE": repository.top,
                "GIT_CEILING_DIRECTORIES": os.path.dirname(repository.top)}
    return run(["git", *GIT_SETTINGS, *args], cwd=repository.top, input=input, env=settings, timeout=timeout,
               output_limit=output_limit)
