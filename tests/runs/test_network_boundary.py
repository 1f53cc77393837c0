"""The network gateway (`oscova_runtime.network`), through the real `oscova-lsp run`: a model endpoint and a
workspace's collector are the only places contacted. One that answers with a redirect to another place (a
tripwire that records every connection) sends nothing there: the run fails with a sentence, the spans are not
exported, and the tripwire sees no connection."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.fake_openai import FakeOpenAI, Reply

from .conftest import host_toml, make_workspace
from .test_cli import oscova
from .test_evals_hostile import Tripwire
from .test_telemetry_boundary import env


class Redirector:
    """An HTTP server answering every request with `307 Temporary Redirect` to `target`."""

    def __init__(self, target: str) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def _redirect(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self.send_response(307)
                self.send_header("Location", target + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST = _redirect

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def tripwire() -> Iterator[Tripwire]:
    wire = Tripwire()
    yield wire
    wire.close()


@pytest.fixture
def redirector(tripwire: Tripwire) -> Iterator[Redirector]:
    server = Redirector(tripwire.url)
    yield server
    server.close()


def test_a_model_endpoint_that_redirects_sends_nothing_elsewhere(tmp_path: Path, tripwire: Tripwire,
                                                                  redirector: Redirector):
    root = make_workspace(tmp_path / "ws", redirector.url + "/v1")
    result = oscova("run", "helper", "--input", "When is the launch?", cwd=root, env=env())
    assert tripwire.connections == 0
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "307" in result.stdout + result.stderr


def test_a_workspace_collector_that_redirects_gets_the_spans_nowhere_else(tmp_path: Path, fake_openai: FakeOpenAI,
                                                                         tripwire: Tripwire, redirector: Redirector):
    extra = f'\n[telemetry]\notlp_endpoint = "{redirector.url}"\n'
    root = make_workspace(tmp_path / "ws", fake_openai.base_url, host=host_toml(fake_openai.base_url, extra=extra))
    fake_openai.enqueue(Reply(text="The launch is on Tuesday."))
    result = oscova("run", "helper", "--input", "When is the launch?", cwd=root, env=env())
    assert result.returncode == 0, result.stderr
    assert tripwire.connections == 0
    assert "Exporting" in result.stderr and "307" in result.stderr  # the export failed, in words
