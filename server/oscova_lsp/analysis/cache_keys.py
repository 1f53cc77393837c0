"""What the cache's entries are keyed by, so that an entry is reused only where computing it again would give
the same: the engine key (this code, Python, the parsers), a file's text digest, and a whole check's `world`
digest.

Apart from the files that store them (`cache_files`) because this is the one place that decides when an entry
is stale: whatever would change the facts or the findings must change a key here. It imports no parser: the
warm start computes the keys before any of them loads.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
from collections.abc import Iterable

from oscova_runtime.paths import FileRefused, scan_folder

FACTS_FORMAT = 3
"""Raised whenever the shape of the cached facts changes."""
RESULTS_FORMAT = 4
"""Raised whenever the shape of the stored results changes."""
THIRD_PARTIES = ("jinja2", "yaml", "pydantic", "pydantic_core")
"""The libraries the facts and the checks come from, in the engine key by the identity of their `__init__.py`
(any reinstall changes it) rather than their version: reading the version would import them."""


def engine_key() -> str:
    """Everything the per-file facts and the checks depend on besides the files: this package's version, Python's,
    the formats, the installed parsers and pydantic (`THIRD_PARTIES`), and a fingerprint of the modules that
    compute the facts and run the checks (so an edited source tree with an unchanged version number does not
    reuse what the old code made). Imports none of them: the warm start checks the key before any parser loads."""
    from .. import __version__

    stamps = []
    for source in engine_sources():
        try:
            info = os.stat(source)
        except OSError:
            continue
        stamps.append(f"{source}:{info.st_size}:{info.st_mtime_ns}")
    for name in THIRD_PARTIES:
        spec = importlib.util.find_spec(name)
        origin = spec.origin if spec is not None else None
        stamp = None
        with contextlib.suppress(OSError, TypeError):
            info = os.stat(origin or "")
            stamp = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino)
        stamps.append(f"{name}:{origin}:{stamp}")
    fingerprint = hashlib.blake2b("\n".join(stamps).encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return f"{FACTS_FORMAT}.{RESULTS_FORMAT}/{__version__}/py{sys.version_info[0]}.{sys.version_info[1]}/{fingerprint}"


def engine_sources() -> list[str]:
    """The modules whose code the facts and the checks come from: the analysis package with its rule families,
    and the runtime's (the definition model, the catalogue the checks plan with)."""
    import oscova_runtime

    here = os.path.dirname(__file__)
    places = [here, os.path.join(here, "rules"), os.path.dirname(oscova_runtime.__file__ or "")]
    sources = []
    for place in places:
        try:
            sources += sorted(os.path.join(place, e.name) for e in scan_folder(place) if e.name.endswith(".py"))
        except FileRefused:
            continue
    return sources


def text_digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def world_digest(root: str, settings: str, states: Iterable[tuple[str, str]]) -> str:
    """The digest of everything a whole check reads besides the disk probes: the root, the files found (in
    order) with each one's state (its text digest, or "-" and the reason it was not read), and `settings`
    (the lint options)."""
    hasher = hashlib.blake2b(digest_size=16)
    hasher.update(f"{os.path.abspath(root)}\0{settings}\n".encode("utf-8", "surrogatepass"))
    for path, state in states:
        hasher.update(f"{path}\0{state}\n".encode("utf-8", "surrogatepass"))
    return hasher.hexdigest()
