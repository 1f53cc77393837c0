"""Shared fixtures for every test folder, and how the suite is spread over pytest-xdist's workers."""

import atexit
import compileall
import functools
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp.client
from lsprotocol import converters
from pygls.protocol import default_converter

from tests.support import cli_zygote

pytest_plugins = ["tests.support.fixtures"]

ROOT = Path(__file__).resolve().parents[1]

# pytest keeps the test modules it rewrote (for its assertion messages) as bytecode only where writing bytecode
# is allowed; under PYTHONDONTWRITEBYTECODE (set on our machines) each xdist worker rewrote and compiled every
# test module again, 7 s of CPU a worker. The sources' own bytecode is written below (`pytest_configure`).
sys.dont_write_bytecode = False

MEMORY_TMP = "/dev/shm"
MEMORY_TMP_FREE = 4 << 30
"""The free space the memory-backed folder must have to be used (a container's /dev/shm is often 64 MB)."""


def _temporary_files_in_memory() -> None:
    """The tests' temporary files (pytest's `tmp_path`, `tempfile`'s, and those of the servers and commands they
    start, which inherit TMPDIR) go to a folder of this user's on the memory-backed /dev/shm when TMPDIR names
    none and it has room. The tests create and remove a few hundred thousand files: on ext4 finding a free inode
    among so many just freed took ~30 s of the suite's CPU. The xdist workers inherit the controller's choice."""
    if "TMPDIR" in os.environ or not os.path.isdir(MEMORY_TMP):
        return
    folder = os.path.join(MEMORY_TMP, f"oscova-tests-{os.getuid()}")
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return
    try:
        found = os.lstat(folder)
        free = os.statvfs(folder)
    except OSError:
        return
    # Another user's folder, a link, or one others may write in is not used (/dev/shm is everyone's).
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o077:
        return
    if free.f_bavail * free.f_frsize < MEMORY_TMP_FREE:
        return
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = None  # looked up again, from TMPDIR


_temporary_files_in_memory()

# The facts cache of every test (and of every server or `check` they start) goes to a throwaway folder: the
# suite never reads or writes the user's own cache. Each xdist worker imports this file: a folder each.
os.environ["OSCOVA_LSP_CACHE_DIR"] = tempfile.mkdtemp(prefix="oscova-test-cache-")
atexit.register(shutil.rmtree, os.environ["OSCOVA_LSP_CACHE_DIR"], True)

# Every pytest-lsp client of a test process shares one converter, as an editor keeps one for its life. cattrs
# generates and compiles the code that turns each LSP type into JSON and back the first time a converter meets
# it; a converter a client (and another for each `client_capabilities`) did that again for every session:
# 0.2-0.35 s of CPU a session, for a few hundred sessions a run.
pytest_lsp.client.default_converter = functools.cache(default_converter)
pytest_lsp.client.get_converter = functools.cache(lambda: converters.get_converter())

SLOWEST_FIRST = [
    "tests/analysis/test_precommit.py",
    "tests/runs/test_tracing.py",
    "tests/server/test_early_phase.py",
    "tests/server/test_startup_race.py",
    "tests/server/test_launch.py",
    "tests/server/test_responsiveness_graph.py",
    "tests/analysis/test_safety_properties.py",
    "tests/analysis/test_cache.py",
    "tests/server/test_start_paths.py",
    "tests/analysis/test_cache_disk_questions.py",
    "tests/server/test_responsiveness.py",
    "tests/runs/test_telemetry_boundary.py",
    "tests/server/test_boundary_config.py",
]
"""The files that take longest (their tests' time added up, measured on 2 cores with 3 workers), longest first:
each worker takes the next file as it nears the end of one, so these start first and no worker is left running
one of them alone at the end."""


REAL_MODEL = ROOT / "tests" / "realmodel"


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """tests/realmodel/ needs a real `llama-server` (`.ci/llama-server.sh` builds it and prints the variables): it is
    left out of the run, neither passed nor skipped, until OSCOVA_LLAMA_SERVER names the binary."""
    if collection_path == REAL_MODEL and not os.environ.get("OSCOVA_LLAMA_SERVER"):
        return True
    return None


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """`-n auto`: a worker more than there are cores. Some tests wait most of their time (a collector starting,
    servers started one after another, a package installing); with one worker a core, each such wait left a
    core idle (on 2 cores about a tenth of the suite's core time)."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own: the count it names
    return len(os.sched_getaffinity(0)) + 1


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return  # an xdist worker: the controller did it once
    # An editable install leaves the sources uncompiled, and with PYTHONDONTWRITEBYTECODE (set on our machines)
    # every server and command a test starts (several hundred) compiled them again (`check` of an empty folder:
    # 0.63 s of CPU uncompiled, 0.49 s compiled, at load 7). A regular `pip install .` compiles them once, as this does.
    for package in ("server", "runtime", "tests/support"):
        compileall.compile_dir(ROOT / package, quiet=1)
    # The processes the tests start through `cli_zygote.module_command`/`script_command` fork from one warm start
    # rather than import everything again. It starts here, once for every worker (each had its own: 4 s of CPU
    # a worker), and imports while the workers start and collect.
    if not config.option.collectonly:
        cli_zygote.start()


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        cli_zygote.stop()


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slowest files are scheduled first (`--dist loadfile` keeps each file's tests on one worker, so the
    tests that share a module-scoped server or workspace share it there)."""
    order = {name: rank for rank, name in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: order.get(item.nodeid.split("::")[0], len(order)))
