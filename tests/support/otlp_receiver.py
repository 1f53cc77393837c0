"""A tiny OTLP/HTTP collector on 127.0.0.1: it records every request it gets (path, headers, body) and
decodes the spans, so a test can say exactly what reached a collector and with which credentials."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes

    def span_names(self) -> list[str]:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        request = ExportTraceServiceRequest()
        request.ParseFromString(self.body)
        return [span.name for resource in request.resource_spans for scope in resource.scope_spans
                for span in scope.spans]


class OtlpReceiver:
    """`with OtlpReceiver() as collector:` listens until the block ends; `collector.url` is its base URL."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                with receiver._lock:
                    receiver.requests.append(Received(self.path, {k.lower(): v for k, v in self.headers.items()},
                                                      body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="otlp-receiver", daemon=True)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def received(self) -> list[Received]:
        with self._lock:
            return list(self.requests)

    def span_names(self) -> list[str]:
        return [name for request in self.received() for name in request.span_names()]

    def wait_for_spans(self, count: int, timeout: float = 15) -> list[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            names = self.span_names()
            if len(names) >= count:
                return names
            time.sleep(0.05)
        raise AssertionError(f"the collector got {len(self.span_names())} of {count} spans in {timeout:g} s")

    def everything(self) -> str:
        """Every header and body it got, as one text to search for a credential."""
        return "\n".join(f"{r.path} {r.headers!r} {r.body.decode('latin-1')}" for r in self.received())
