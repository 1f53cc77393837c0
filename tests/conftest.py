"""Shared fixtures for every test folder."""

import atexit
import os
import shutil
import tempfile

pytest_plugins = ["tests.support.fixtures"]

# The facts cache of every test (and of every server or `check` they start) goes to a throwaway folder: the
# suite never reads or writes the user's own cache.
os.environ["OSCOVA_LSP_CACHE_DIR"] = tempfile.mkdtemp(prefix="oscova-test-cache-")
atexit.register(shutil.rmtree, os.environ["OSCOVA_LSP_CACHE_DIR"], True)
