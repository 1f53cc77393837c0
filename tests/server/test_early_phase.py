"""The phase before pygls: the first diagnostics go out before pygls and lsprotocol are imported, equal to
what the pygls server answers once it has settled; every request is the pygls server's (one handler per
request), and every message read meanwhile is handed to the pygls server, in order.

A raw JSON-RPC client over stdio. `OSCOVA_LSP_TEST_IMPORT_GATE` holds the import of the pygls server back
until the test opens the gate, so "before pygls" is certain however loaded the machine is; the server runs
under `-X importtime`, and its stderr shows that lsprotocol was not imported when the early answers came.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from oscova_lsp.analysis.rules.registry import RULES
from oscova_lsp.analysis.warm_start import RACY_NS

from tests.support.cli_zygote import module_command
from tests.support.lsp_frames import frame, read_frame

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
VSCODE = json.loads((Path(__file__).parent / "vscode-1.139-initialize.json").read_text())
TEMPLATE = "templates/agent.j2"
HOVER_AT = {"line": 0, "character": 42}  # `ticket_count`, a variable the template uses
WAIT = 120


class RawServer:
    """The server over stdio, its messages read by a thread; the server's own requests are answered."""

    def __init__(self, root: Path, gate: Path, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.gate = gate
        self.proc = subprocess.Popen(
            [sys.executable, "-X", "importtime", "-m", "oscova_lsp"], cwd=str(root),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env={**os.environ, "OSCOVA_LSP_TEST_IMPORT_GATE": str(gate), **(env or {})})
        self.inbox: queue.Queue[Any] = queue.Queue()
        self.stderr: list[str] = []
        self.next_id = 100
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        while (message := read_frame(self.proc.stdout)) is not None:
            if "method" in message and "id" in message:  # configuration, registration, progress
                result = [None] if message["method"] == "workspace/configuration" else None
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
                continue
            self.inbox.put(message)
        self.inbox.put(None)

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace"))

    def send(self, *payloads: dict[str, Any]) -> None:
        self.proc.stdin.write(b"".join(frame(p) for p in payloads))
        self.proc.stdin.flush()

    def notify(self, method: str, params: Any) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "method": method, "params": params}

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        self.next_id += 1
        return {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}

    def until(self, *ids: int) -> list[dict[str, Any]]:
        """Every message up to the answers to all of `ids`, in the order they came."""
        seen: list[dict[str, Any]] = []
        missing = set(ids)
        while missing:
            message = self.inbox.get(timeout=WAIT)
            assert message is not None, f"the server closed its output; stderr: {''.join(self.stderr)[-2000:]}"
            seen.append(message)
            missing.discard(message.get("id"))
        return seen

    def imported(self, module: str) -> bool:
        return any(line.rsplit("|", 1)[-1].strip() == module for line in self.stderr if "import time:" in line)

    def open_gate(self) -> None:
        self.gate.write_text("open")

    def uri(self, rel: str) -> str:
        return (self.root / rel).as_uri()

    def did_open(self, rel: str, text: str | None = None) -> dict[str, Any]:
        text = (self.root / rel).read_text() if text is None else text
        language = "jinja" if rel.endswith(".j2") else "yaml"
        return self.notify("textDocument/didOpen", {"textDocument": {
            "uri": self.uri(rel), "languageId": language, "version": 1, "text": text}})

    def at(self, method: str, rel: str, position: dict[str, int] | None = None, **extra: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"textDocument": {"uri": self.uri(rel)}, **extra}
        if position is not None:
            params["position"] = position
        return self.request(method, params)

    def stop(self) -> int:
        try:
            self.send(self.request("shutdown"), self.notify("exit", None))
            return self.proc.wait(WAIT)
        finally:
            self.proc.kill()
            self.proc.wait()


def initialize(server: RawServer, pull: bool) -> None:
    capabilities = json.loads(json.dumps(VSCODE["capabilities"]))
    if not pull:
        del capabilities["textDocument"]["diagnostic"]
    root = server.root.as_uri()
    request = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": dict(
        VSCODE, capabilities=capabilities, rootUri=root, rootPath=str(server.root), processId=os.getpid(),
        workspaceFolders=[{"uri": root, "name": "ws"}])}
    server.send(request)
    assert server.until(1)[-1]["result"]["serverInfo"]["name"] == "oscova-lsp"


def published(messages: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """The last diagnostics published for each URI among `messages`."""
    return {m["params"]["uri"]: m["params"]["diagnostics"] for m in messages
            if m.get("method") == "textDocument/publishDiagnostics"}


def tracked(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.name.endswith((".agent.yaml", ".eval.yaml", ".j2")) or p.name == "oscova.toml")


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    target = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "broken", target)
    monkeypatch.setenv("OSCOVA_LSP_CACHE_DIR", str(tmp_path / "cache"))  # a cold start: nothing stored
    return target


@pytest.fixture
def server(root: Path, tmp_path: Path) -> Any:
    started = RawServer(root, tmp_path / "gate")
    yield started
    started.proc.kill()
    started.proc.wait()


def settled_pulls(server: RawServer, rels: list[str]) -> dict[str, dict[str, Any]]:
    """The pygls server's diagnostics of each file (pulled: computed on its own host)."""
    requests = [server.at("textDocument/diagnostic", rel) for rel in rels]
    server.send(*requests)
    server.open_gate()
    answers = {m.get("id"): m for m in server.until(*(r["id"] for r in requests))}
    return {rel: answers[r["id"]]["result"] for rel, r in zip(rels, requests, strict=True)}


def answered(messages: list[dict[str, Any]], request: dict[str, Any]) -> bool:
    return any(m.get("id") == request["id"] and "method" not in m for m in messages)


def test_early_diagnostics_equal_the_settled_servers_and_requests_wait_for_the_pygls_server(server: RawServer):
    initialize(server, pull=False)
    hover = server.at("textDocument/hover", TEMPLATE, HOVER_AT)
    server.send(server.notify("initialized", {}), server.did_open(TEMPLATE), hover)
    early: list[dict[str, Any]] = []
    while server.uri(TEMPLATE) not in published(early):
        message = server.inbox.get(timeout=WAIT)
        assert message is not None
        early.append(message)
    time.sleep(0.5)  # the phase has read the hover by now: it leaves it unanswered, to the pygls server
    while not server.inbox.empty():
        early.append(server.inbox.get())
    assert not server.imported("lsprotocol.types"), "published after lsprotocol was imported"
    assert not answered(early, hover), "a request was answered before the pygls server"
    shown = published(early)
    assert shown[server.uri(TEMPLATE)], "the open template's findings were not published early"

    rels = tracked(server.root)
    pulls = [server.at("textDocument/diagnostic", rel) for rel in rels]
    server.send(*pulls)
    server.open_gate()
    answers = {m.get("id"): m for m in server.until(hover["id"], *(r["id"] for r in pulls))}
    settled = {rel: answers[r["id"]]["result"] for rel, r in zip(rels, pulls, strict=True)}
    with_findings = {server.uri(rel): pulled["items"] for rel, pulled in settled.items() if pulled["items"]}
    assert len(with_findings) >= 10
    assert {uri: shown[uri] for uri in with_findings if uri in shown} == with_findings  # the same diagnostics
    assert set(with_findings) <= set(shown)  # every file with findings shown early
    assert not any(shown[uri] for uri in set(shown) - set(with_findings))
    assert "ticket_count" in answers[hover["id"]]["result"]["contents"]["value"]
    assert server.imported("lsprotocol.types")  # the pygls server's answer
    assert server.stop() == 0


def test_edits_and_requests_during_the_hand_over_are_applied_and_answered_in_order(server: RawServer):
    initialize(server, pull=False)
    first = server.at("textDocument/hover", TEMPLATE, HOVER_AT)
    uri = server.uri(TEMPLATE)
    edit = server.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"text": "{{ renamed_value }} {% if %}\n"}]})
    after_edit = server.at("textDocument/hover", TEMPLATE, {"line": 0, "character": 5})
    symbols = server.at("textDocument/documentSymbol", "agents/calls.agent.yaml")
    pulled = server.at("textDocument/diagnostic", TEMPLATE)
    server.send(server.notify("initialized", {}), server.did_open(TEMPLATE), first, edit, after_edit,
                server.did_open("agents/calls.agent.yaml"), symbols, pulled)
    server.open_gate()
    later = server.until(first["id"], after_edit["id"], symbols["id"], pulled["id"])
    answers = [m.get("id") for m in later if "id" in m]
    assert answers == [first["id"], after_edit["id"], symbols["id"], pulled["id"]]  # in the order they were sent
    by_id = {m.get("id"): m for m in later}
    assert "result" in by_id[first["id"]]  # answered (of the text it finds once the root is read)
    assert "renamed_value" in by_id[after_edit["id"]]["result"]["contents"]["value"]  # the edit applied first
    assert by_id[symbols["id"]]["result"]  # the second document opened
    codes = {d["code"] for d in by_id[pulled["id"]]["result"]["items"]}
    assert "OSC100" in codes  # the edited text's syntax error
    versions = [m["params"].get("version") for m in later
                if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri]
    while 2 not in versions:  # the edit's own publication, after its debounce
        message = server.inbox.get(timeout=WAIT)
        assert message is not None
        if message.get("method") == "textDocument/publishDiagnostics" and message["params"]["uri"] == uri:
            versions.append(message["params"].get("version"))
    assert server.stop() == 0


def test_shutdown_and_exit_during_the_early_phase(server: RawServer):
    initialize(server, pull=False)
    shutdown = server.request("shutdown")
    server.send(server.notify("initialized", {}), server.did_open(TEMPLATE), shutdown, server.notify("exit", None))
    server.open_gate()
    assert server.until(shutdown["id"])[-1]["result"] is None
    assert server.proc.wait(WAIT) == 0


def test_exit_without_shutdown_during_the_early_phase_exits_with_1(server: RawServer):
    initialize(server, pull=False)
    server.send(server.notify("initialized", {}), server.notify("exit", None))
    server.open_gate()
    assert server.proc.wait(WAIT) == 1


def test_bad_params_during_the_early_phase_get_the_pygls_servers_errors_and_lose_nothing(server: RawServer):
    initialize(server, pull=False)
    bad_hover = server.at("textDocument/hover", TEMPLATE, {"line": "zero"})
    bad_open = server.notify("textDocument/didOpen", {"textDocument": {"uri": server.uri("x.j2"), "text": 5}})
    good_hover = server.at("textDocument/hover", TEMPLATE, HOVER_AT)
    server.send(server.notify("initialized", {}), server.did_open(TEMPLATE), bad_hover, bad_open, good_hover)
    server.open_gate()
    answers = {m.get("id"): m for m in server.until(bad_hover["id"], good_hover["id"])}
    assert answers[bad_hover["id"]]["error"]["code"] == -32602  # InvalidParams, from pygls
    assert "ticket_count" in answers[good_hover["id"]]["result"]["contents"]["value"]
    assert server.stop() == 0


def test_a_client_that_pulls_gets_nothing_pushed_and_its_pulls_answered_by_the_pygls_server(server: RawServer):
    initialize(server, pull=True)
    pulled = server.at("textDocument/diagnostic", TEMPLATE)
    server.send(server.notify("initialized", {}), server.did_open(TEMPLATE), pulled)
    time.sleep(1)
    early = []
    while not server.inbox.empty():
        early.append(server.inbox.get())
    assert not answered(early, pulled) and not published(early)
    server.open_gate()
    report = server.until(pulled["id"])[-1]["result"]
    assert report["kind"] == "full" and report["items"]
    again = server.at("textDocument/diagnostic", TEMPLATE, previousResultId=report["resultId"])
    server.send(again)
    later = server.until(again["id"])
    assert later[-1]["result"] == {"kind": "unchanged", "resultId": report["resultId"]}
    assert not published(early + later)  # a pull client gets nothing pushed
    assert server.stop() == 0


def aged(root: Path) -> None:
    """Waits until every file and folder of `root` is older than the racy window of a check starting now
    (`warm_start.RACY_NS`): their identities are then believed, and a warm start reads none of them."""
    newest = max(os.lstat(p).st_ctime_ns for p in [root, *root.rglob("*")])
    while time.time_ns() - newest <= RACY_NS * 2:
        time.sleep(0.05)


def stored_check(root: Path) -> dict[str, list[Any]]:
    """`oscova-lsp check`'s findings (the run stores its results), by URI."""
    check = subprocess.run(module_command("check", "--format", "json", str(root)),
                           capture_output=True, text=True, timeout=300, cwd=str(root))
    stored: dict[str, list[Any]] = {}
    for finding in json.loads(check.stdout):
        stored.setdefault((root / finding["path"]).resolve().as_uri(), []).append(finding)
    return stored


def test_a_warm_start_publishes_the_stored_results_before_pygls(root: Path, tmp_path: Path):
    aged(root)  # the identities are believed: the stored results are told to hold without reading a file
    check = subprocess.run(module_command("check", "--format", "json", str(root)),
                           capture_output=True, text=True, timeout=300, cwd=str(root))
    stored: dict[str, list[Any]] = {}
    for finding in json.loads(check.stdout):
        stored.setdefault((root / finding["path"]).resolve().as_uri(), []).append(finding)
    assert len(stored) >= 10
    # The workspace's reading held back too: what comes is the stored results, not a fresh check.
    server = RawServer(root, tmp_path / "gate", env={"OSCOVA_LSP_TEST_SCAN_GATE": str(tmp_path / "scan")})
    try:
        initialize(server, pull=False)
        server.send(server.notify("initialized", {}), server.did_open("agents/hidden.agent.yaml"))
        stored.setdefault(server.uri("agents/hidden.agent.yaml"), [])  # an open document: its version's, too
        early: dict[str, list[Any]] = {}
        while set(early) != set(stored):
            message = server.inbox.get(timeout=WAIT)
            assert message is not None
            if message.get("method") == "textDocument/publishDiagnostics":
                early[message["params"]["uri"]] = message["params"]["diagnostics"]
        assert not server.imported("lsprotocol.types")
        # `check` leaves the editor-only rules out of what it prints; the server publishes them
        shown = {uri: [d for d in items if RULES[d["code"]].in_check] for uri, items in early.items()}
        assert {uri: len(items) for uri, items in shown.items()} == {uri: len(f) for uri, f in stored.items()}
        (tmp_path / "scan").write_text("open")
        settled = settled_pulls(server, tracked(root))
        assert {server.uri(rel): r["items"] for rel, r in settled.items() if r["items"]} == \
            {uri: items for uri, items in early.items() if items}
        assert server.stop() == 0
    finally:
        server.proc.kill()
        server.proc.wait()


def early_publications(server: RawServer, expected: list[str], quiet: float = 1.0) -> dict[str, list[Any]]:
    """What the phase before pygls publishes (reading held back, so only stored results can come): everything up
    to the publications of `expected` (however long a loaded machine takes), then until `quiet` seconds pass
    without another. The stored results go out in one write, so what comes with `expected` is all of them."""
    initialize(server, pull=False)
    server.send(server.notify("initialized", {}))
    early: dict[str, list[Any]] = {}
    while True:
        try:
            message = server.inbox.get(timeout=quiet if set(expected) <= set(early) else WAIT)
        except queue.Empty:
            assert set(expected) <= set(early), f"not published within {WAIT} s: {sorted(set(expected) - set(early))}"
            return early
        assert message is not None
        if message.get("method") == "textDocument/publishDiagnostics":
            early[message["params"]["uri"]] = message["params"]["diagnostics"]


def same_size_edit(path: Path) -> None:
    """The definition's duplicate id made unique, its size and modification time kept as they were (an edit
    a size-and-mtime check cannot see)."""
    before = os.stat(path)
    text = path.read_text()
    path.write_text(text.replace("id: duplicate", "id: unique_12", 1))
    assert os.stat(path).st_size == before.st_size
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


@pytest.mark.parametrize("change", ["same-size edit", "file added"])
def test_a_warm_start_after_a_change_that_keeps_sizes_and_times_publishes_nothing_stale(
        root: Path, tmp_path: Path, change: str):
    aged(root)
    stored = stored_check(root)
    broken = root / "agents/duplicate-a.agent.yaml"
    assert stored[broken.resolve().as_uri()]  # the duplicate id, found and stored
    if change == "same-size edit":
        same_size_edit(broken)
    else:  # a new agent takes the same id: the folder's listing changed, no stored file did
        (root / "agents/duplicate-c.agent.yaml").write_text(broken.read_text())
    aged(root)  # the change is not racy either: only the identities tell it
    server = RawServer(root, tmp_path / "gate", env={"OSCOVA_LSP_TEST_SCAN_GATE": str(tmp_path / "scan")})
    try:
        lint_only = [uri for uri in stored if "/lint-only/" in uri]
        early = early_publications(server, expected=lint_only)
        assert not server.imported("lsprotocol.types")
        assert lint_only and all(early.get(uri) for uri in lint_only)  # its nested workspace did not change
        # The changed workspace's stored results no longer hold: none of its files shows what they say.
        assert all("/lint-only/" in uri for uri in early), sorted(early)
        (tmp_path / "scan").write_text("open")
        settled = settled_pulls(server, tracked(root))
        duplicates = {d["code"] for d in settled["agents/duplicate-a.agent.yaml"]["items"]}
        assert ("OSC005" in duplicates) == (change == "file added")  # what the settled server says of the change
        assert server.stop() == 0
    finally:
        server.proc.kill()
        server.proc.wait()


def manifest_of(root: Path) -> dict[str, Any]:
    from oscova_lsp.analysis.cache_files import cache_folder

    data = (Path(cache_folder(str(root))) / "results.json").read_bytes()
    return json.loads(data.partition(b"\n")[2])["manifest"]


def test_files_changed_within_the_racy_window_of_a_check_are_read_at_every_start(root: Path):
    from oscova_lsp.analysis.engine import Analysis

    aged(root)
    racy = root / "agents/duplicate-a.agent.yaml"
    racy.write_text(racy.read_text())  # written as the check starts: its times are those of the check's start
    Analysis(str(root)).check_all(jobs=1)  # in this process, at once: a subprocess would start too late
    files = {key: recorded for key, _state, *recorded in manifest_of(root)["files"]}
    # An edit within the same timestamp tick as the check's reading keeps size and times: that identity is
    # not believed, so a later start reads the file instead of trusting what the check read.
    assert files["agents/duplicate-a.agent.yaml"] == []
    assert all(recorded for key, recorded in files.items() if key != "agents/duplicate-a.agent.yaml")


def test_the_warm_start_imports_no_parser_and_no_pydantic(root: Path):
    aged(root)
    stored_check(root)
    probe = subprocess.run([sys.executable, "-c", (
        "import json, sys\n"
        "from oscova_lsp.analysis.warm_start import check_by_stat\n"
        "from oscova_lsp.analysis.lint import lint_key\n"
        f"found = check_by_stat({str(root)!r}, lint_key(None))\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'jinja2', 'yaml', 'lsprotocol'))\n"
        "print(json.dumps([found.decided, found.stored is not None, heavy]))")],
        capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(probe.stdout) == [True, True, []]


def test_a_cold_start_checks_without_the_tokenizers_or_the_ide(tmp_path: Path):
    """What a cold start imports before its first publication is its first diagnostic's time: the tokenizers
    (and the runtime's messages with them) wait for OSC108's first count, which examples/ does not need, and
    the ide's values for the first request."""
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLES, ws, ignore=shutil.ignore_patterns("broken"))
    probe = subprocess.run([sys.executable, "-c", (
        "import json, sys\n"
        "import oscova_lsp.lsp.early\n"
        "from oscova_lsp.analysis.host import AnalysisHost\n"
        "from oscova_lsp.analysis.lint import LintOptions\n"
        f"host = AnalysisHost([{str(ws)!r}], LintOptions())\n"
        f"files = host.install({str(ws)!r}, host.load({str(ws)!r}))\n"
        "snapshot = host.snapshot()\n"
        "shown = {path: snapshot.diagnostics(path) for path in files}\n"
        "late = sorted(m for m in ('oscova_runtime.tokens', 'oscova_runtime.messages', 'oscova_lsp.ide.model')\n"
        "              if m in sys.modules)\n"
        "print(json.dumps([len(shown), late]))")],
        capture_output=True, text=True, timeout=120, check=True, env={**os.environ, "OSCOVA_LSP_CACHE_DIR": str(tmp_path / "c")})
    checked, late = json.loads(probe.stdout)
    assert checked >= 10 and late == []


def test_a_client_that_sends_initialized_with_initialize_and_waits_gets_the_diagnostics(server: RawServer):
    # `initialized` in the same write as `initialize` (a client that does not wait for the answer), then
    # nothing: the phase before pygls must not wait for another message before it publishes.
    root = server.root.as_uri()
    server.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": os.getpid(), "rootUri": root, "capabilities": {},
        "workspaceFolders": [{"uri": root, "name": "ws"}]}}, server.notify("initialized", {}))
    published_early: list[dict[str, Any]] = []
    while not published_early:
        message = server.inbox.get(timeout=30)
        assert message is not None
        if message.get("method") == "textDocument/publishDiagnostics":
            published_early.append(message)
    assert not server.imported("lsprotocol.types"), "published only once pygls was imported"
    server.open_gate()
    assert server.stop() == 0


def test_a_request_in_the_last_read_before_the_hand_over_goes_to_the_pygls_server(tmp_path: Path):
    """A hover that arrives in the phase's last read, just as pygls is ready, is handed over (not answered
    here, not lost), and the publications of the phase are all written before the hand-over."""
    import io

    from oscova_lsp.lsp.early import EarlyPhase
    from oscova_runtime.framing import Framer

    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES, root, ignore=shutil.ignore_patterns(".oscova", "__pycache__", "broken"))
    template = root / "templates" / "concierge.j2"
    pushed = json.loads(json.dumps(VSCODE["capabilities"]))
    del pushed["textDocument"]["diagnostic"]  # a client that takes pushed diagnostics
    initialize_message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "processId": None, "rootUri": root.as_uri(), "capabilities": pushed,
        "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}]}}
    read_end, write_end = os.pipe()
    opened = {"textDocument": {"uri": template.as_uri(), "languageId": "jinja", "version": 1,
                               "text": template.read_text()}}
    os.write(write_end, frame({"jsonrpc": "2.0", "method": "initialized", "params": {}})
             + frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": opened}))
    hover = {"jsonrpc": "2.0", "id": 7, "method": "textDocument/hover",
             "params": {"textDocument": {"uri": template.as_uri()}, "position": {"line": 0, "character": 0}}}

    class Loader:
        """pygls, ready once the phase has read the hover: the hover comes in the phase's last read."""

        polls = 0

        def is_alive(self) -> bool:
            self.polls += 1
            if self.polls == 1:
                os.write(write_end, frame(hover))
            return self.polls == 1

        def join(self) -> None:
            pass

    out = io.BytesIO()
    try:
        result = EarlyPhase(initialize_message, out).run(read_end, Framer(), Loader)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert [getattr(item, "value", {}).get("id") for item in result.items][-1] == 7  # handed over, last
    assert b'"id": 7' not in out.getvalue()  # not answered here
    assert template.as_uri().encode() in out.getvalue()  # the opened template's publication is out
