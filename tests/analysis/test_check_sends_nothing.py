"""`oscova-lsp check` sends nothing anywhere and runs no workspace code (SECURITY.md): whatever `oscova.toml`
names (a model endpoint, a collector, tools, providers), a check imports none of the workspace's modules and
opens no network connection. The checking process has a guard (a `sitecustomize` that fails every connection
attempt and says so), and the workspace's modules write a marker when imported."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

GUARD = '''\
import socket, sys


def _refuse(*args, **kwargs):
    sys.stderr.write("GUARD: a network connection was attempted\\n")
    raise OSError("guarded")


socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
'''
HOST = '''\
[models.default]
model = "m"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "HOME"

[telemetry]
otlp_endpoint = "http://127.0.0.1:9"

[tools.stamp]
callable = "evil:stamp"

[providers.stamper]
class = "evil:Stamper"
'''


def test_check_imports_no_workspace_code_and_connects_nowhere(tmp_path: Path) -> None:
    root, guard = tmp_path / "ws", tmp_path / "guard"
    root.mkdir()
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(GUARD)
    (root / "oscova.toml").write_text(HOST)
    (root / "a.agent.yaml").write_text("id: a\ninstructions: Hi {{ nobody }}.\ntools: [stamp]\n"
                                       "context_providers: [stamper]\n")
    marker = tmp_path / "imported"
    for module in ("evil", "yaml", "jinja2", "pydantic"):  # its own, and ones shadowing the checker's imports
        (root / f"{module}.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).write_text({module!r})\n")
    exe = shutil.which("oscova-lsp", path=str(Path(sys.executable).parent))
    assert exe
    env = {**os.environ, "PYTHONPATH": str(guard), "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    result = subprocess.run([exe, "check", "--no-cache", "."], cwd=root, env=env, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 1 and "OSC101" in result.stdout, result.stdout + result.stderr
    assert "GUARD" not in result.stderr
    assert not marker.exists(), f"imported: {marker.read_text() if marker.exists() else ''}"
