"""Diagnostics as LSP JSON, without lsprotocol: the one conversion of a diagnostic, for every publication (the
phase before pygls and the pygls server write the same bytes) and every pull (`convert.diagnostic` reads
these dicts into lsprotocol's types). Also the URIs, the `resultId`s, and the publications of stored rows.
"""

from __future__ import annotations

import functools
import hashlib
import os
from typing import Any
from urllib.parse import quote

from pygls.uris import RE_DRIVE_LETTER_PATH, from_fs_path, to_fs_path  # alone: a few ms, no lsprotocol

from ..analysis import diagnostics as plain
from ..analysis.stored_results import row_parts
from ..analysis.text import Position, Range


@functools.lru_cache(maxsize=1 << 16)
def uri(path: str) -> str:
    """The `file:` URI of `path`, as pygls writes it (remembered: a start publishes thousands, related locations
    repeat them). A POSIX absolute path that is no UNC share or drive path (pygls lower-cases a drive letter:
    its own pattern tells) is `file://` and the quoted path, as pygls's `from_fs_path` writes it in six times the
    time (tests/server/test_uris.py holds them equal)."""
    if os.sep == "/" and path[:1] == "/" and path[1:2] != "/" and not RE_DRIVE_LETTER_PATH.match(path):
        return "file://" + quote(path)
    return from_fs_path(path) or path


def path_of(document_uri: Any) -> str | None:
    """The file system path of a `file:` URI; None for other schemes (untitled, git, ...) and non-strings."""
    if not isinstance(document_uri, str) or not document_uri.startswith("file:"):
        return None
    return to_fs_path(document_uri)


def position(pos: Position) -> dict[str, int]:
    return {"line": pos.line, "character": pos.character}


def range_(rng: Range) -> dict[str, Any]:
    return {"start": position(rng.start), "end": position(rng.end)}


def diagnostic(diag: plain.Diagnostic, related_support: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"range": range_(diag.range), "message": diag.message, "severity": int(diag.severity)}
    if diag.code is not None:
        out["code"] = diag.code
    out["source"] = "oscova"
    if related_support and diag.related:
        out["relatedInformation"] = [{"location": {"uri": uri(r.path), "range": range_(r.range)},
                                      "message": r.message} for r in diag.related]
    if diag.fixes:
        out["data"] = {"fixes": [f.title for f in diag.fixes]}
    return out


def publication(path: str, found: list[plain.Diagnostic], version: int | None,
                related_support: bool = True) -> dict[str, Any]:
    """A file's `textDocument/publishDiagnostics` notification."""
    params: dict[str, Any] = {"uri": uri(path), "diagnostics": [diagnostic(d, related_support) for d in found]}
    if version is not None:
        params["version"] = version
    return {"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params}


def result_id(path: str, items: list[plain.Diagnostic]) -> str:
    """The `resultId` of a file's diagnostics (pull diagnostics; what a publication showed): equal for equal
    diagnostics, in the pygls server and before it, and for the same diagnostics in stored form (`rows`)."""
    return _result_id(path, ((d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character,
                              d.code, d.message, int(d.severity)) for d in items))


def _result_id(path: str, items: Any) -> str:
    digest = hashlib.blake2b(digest_size=8)
    digest.update(path.encode("utf-8", "surrogatepass"))
    for item in items:
        a, b, c, d, code, message, severity = item
        digest.update(f"{a} {b} {c} {d} {severity}\0{code}\0{message}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def publication_of_rows(path: str, rows: Any, version: int | None, related_support: bool = True) \
        -> tuple[dict[str, Any], str]:
    """A file's `publishDiagnostics` notification straight from its stored rows (`stored_results.StoredResults.rows`),
    as `diagnostic` writes the values they decode to, and its `result_id`: the warm start publishes thousands
    without building a value of each. ValueError (or TypeError): a row of the wrong shape."""
    if type(path) is not str or type(rows) is not list:
        raise ValueError("rows")
    items: list[dict[str, Any]] = []
    keys = []
    for row in rows:
        (a, b, c, d), code, message, severity, related, titles = row_parts(row)
        out: dict[str, Any] = {"range": {"start": {"line": a, "character": b}, "end": {"line": c, "character": d}},
                               "message": message, "severity": severity, "code": code, "source": "oscova"}
        if related_support and related:
            out["relatedInformation"] = [
                {"location": {"uri": uri(p), "range": {"start": {"line": r[0], "character": r[1]},
                                                       "end": {"line": r[2], "character": r[3]}}}, "message": m}
                for p, r, m in related]
        if titles:
            out["data"] = {"fixes": titles}
        items.append(out)
        keys.append((a, b, c, d, code, message, severity))
    params: dict[str, Any] = {"uri": uri(path), "diagnostics": items}
    if version is not None:
        params["version"] = version
    return {"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params}, _result_id(path, keys)
