"""A Debug Adapter Protocol client for tests: `oscova-lsp debug` as a subprocess, framed messages over stdio.

    client = DapClient(cwd=root, env=env)
    client.start_session(function_breakpoints=["model"], launch={"agent": "helper", "input": "hi"})
    stopped = client.wait_event("stopped")
    client.request("continue", {"threadId": 1})
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from tests.support.cli_zygote import module_command


class DapClient:
    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(module_command("debug"), cwd=cwd, env=env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages: list[dict[str, Any]] = []
        self.raw_problems: list[str] = []
        self._changed = threading.Condition()
        self._seq = 0
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self._stderr: list[bytes] = []
        self._err_reader = threading.Thread(target=lambda: self._stderr.extend(self.process.stderr or ()), daemon=True)
        self._err_reader.start()

    # -- the wire -------------------------------------------------------------------------------------

    def _read(self) -> None:
        out = self.process.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return self._notify()
                if line in (b"\r\n", b"\n"):
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
                else:
                    self.raw_problems.append(line.decode("utf-8", "replace"))
            if length is None:
                self.raw_problems.append("a message without Content-Length")
                continue
            message = json.loads(out.read(length).decode("utf-8"))
            with self._changed:
                self.messages.append(message)
                self._changed.notify_all()

    def _notify(self) -> None:
        with self._changed:
            self._changed.notify_all()

    def send_raw(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message).encode("utf-8")
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def _wait(self, predicate: Any, timeout: float, what: str) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for message in self.messages:
                    if predicate(message):
                        return message
                left = deadline - time.monotonic()
                if left <= 0 or self.process.poll() is not None and not self._reader.is_alive():
                    raise AssertionError(f"no {what} within {timeout} s; got {[_brief(m) for m in self.messages]}; "
                                         f"stderr: {self.stderr()}")
                self._changed.wait(min(left, 0.2))

    # -- requests and events --------------------------------------------------------------------------

    def request_async(self, command: str, arguments: dict[str, Any] | None = None) -> int:
        self._seq += 1
        message: dict[str, Any] = {"seq": self._seq, "type": "request", "command": command}
        if arguments is not None:
            message["arguments"] = arguments
        self.send(message)
        return self._seq

    def response(self, seq: int, timeout: float = 20) -> dict[str, Any]:
        return self._wait(lambda m: m.get("type") == "response" and m.get("request_seq") == seq, timeout,
                          f"response to request {seq}")

    def request(self, command: str, arguments: dict[str, Any] | None = None, *, timeout: float = 20,
                ok: bool = True) -> dict[str, Any]:
        response = self.response(self.request_async(command, arguments), timeout)
        if ok:
            assert response["success"], response
        return response

    def events(self, name: str) -> list[dict[str, Any]]:
        with self._changed:
            return [m for m in self.messages if m.get("type") == "event" and m.get("event") == name]

    def wait_event(self, name: str, count: int = 1, timeout: float = 30) -> dict[str, Any]:
        """The `count`-th event called `name`."""
        return self._wait(lambda m: len(self.events(name)) >= count, timeout,
                          f"{count} {name} event(s)") and self.events(name)[count - 1]

    def output(self, category: str | None = None) -> str:
        return "".join(e["body"]["output"] for e in self.events("output")
                       if category is None or e["body"].get("category") == category)

    def stderr(self) -> str:
        return b"".join(self._stderr).decode("utf-8", "replace")

    # -- a session ------------------------------------------------------------------------------------

    def start_session(self, launch: dict[str, Any], *, function_breakpoints: list[str] = (),  # type: ignore[assignment]
                      exception_filters: list[str] = (),  # type: ignore[assignment]
                      source_breakpoints: dict[str, list[int]] | None = None) -> dict[str, Any]:
        """initialize, the breakpoints, launch and configurationDone, as an editor does; the launch response."""
        initialized = self.request("initialize", {"adapterID": "oscova", "linesStartAt1": True,
                                                  "columnsStartAt1": True})
        assert initialized["body"]["supportsConfigurationDoneRequest"]
        self.wait_event("initialized")
        self.request("setFunctionBreakpoints", {"breakpoints": [{"name": n} for n in function_breakpoints]})
        self.request("setExceptionBreakpoints", {"filters": list(exception_filters)})
        for path, lines in (source_breakpoints or {}).items():
            self.request("setBreakpoints", {"source": {"path": path}, "breakpoints": [{"line": n} for n in lines]})
        launched = self.request("launch", {"type": "oscova", "request": "launch", **launch}, ok=False)
        self.request("configurationDone")
        return launched

    def stopped(self, count: int) -> dict[str, Any]:
        """The `count`-th stop: its event body, the stack and every scope's variables as JSON values."""
        event = self.wait_event("stopped", count)
        frames = self.request("stackTrace", {"threadId": 1})["body"]["stackFrames"]
        scopes = self.request("scopes", {"frameId": frames[0]["id"]})["body"]["scopes"]
        values = {s["name"]: self.value(s["variablesReference"], "object") for s in scopes}
        refs = {s["name"]: s["variablesReference"] for s in scopes}
        return {"event": event["body"], "frames": [f["name"] for f in frames], "scopes": values, "refs": refs,
                "stack": frames}

    def variables(self, reference: int) -> list[dict[str, Any]]:
        return self.request("variables", {"variablesReference": reference})["body"]["variables"]

    def value(self, reference: int, kind: str) -> Any:
        """The JSON value the variables under `reference` show."""
        items = [(v["name"], self.value(v["variablesReference"], v["type"]) if v["variablesReference"]
                  else _scalar(v)) for v in self.variables(reference)]
        return [value for _, value in items] if kind == "array" else dict(items)

    def close(self) -> int:
        if self.process.poll() is None:
            try:
                self.request("disconnect", {"terminateDebuggee": True}, timeout=20)
            except (AssertionError, OSError):
                pass
            try:
                assert self.process.stdin is not None
                self.process.stdin.close()
            except OSError:
                pass
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def _scalar(variable: dict[str, Any]) -> Any:
    if variable["type"] == "object":
        return {}
    if variable["type"] == "array":
        return []
    return json.loads(variable["value"])


def _brief(message: dict[str, Any]) -> str:
    return f"{message.get('type')}:{message.get('event') or message.get('command')}"
