"""OSC108 on a generated workspace (the benchmarks' shape): silent where no request reaches the endpoint's minimum
cacheable prefix, and where it fires, `preview` prints the same warning with the same figure, through the real
command line."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from .test_cli import oscova

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from workspace_gen import generate  # noqa: E402

RUNBOOK = ("Follow the escalation runbook: check the status page, read the last deploy log, compare error rates "
           "before and after, and write down each step you took with its result. ") * 40
FIGURE = re.compile(r"at least the ([\d,]+) tokens of this template's fixed text")


def cache_warnings(root: Path) -> list[dict]:
    done = oscova("check", ".", "--format", "json", "--no-cache", cwd=root)
    assert done.returncode in (0, 1), done.stderr
    return [d for d in json.loads(done.stdout) if d["code"] == "OSC108"]


def test_osc108_is_silent_below_the_minimum_and_preview_prints_its_figure_where_it_fires(tmp_path: Path) -> None:
    root = generate(tmp_path / "ws", 40)
    assert cache_warnings(root) == []  # every request is a few hundred tokens: OpenAI caches from 1,024

    template = root / "templates/agent_4.j2"  # `{{ user_name }}` on its second line, then fixed text
    template.write_text(template.read_text() + RUNBOOK + "\n")
    [warning] = cache_warnings(root)
    assert warning["path"].endswith("templates/agent_4.j2") and warning["range"]["start"]["line"] == 1
    checked = FIGURE.search(warning["message"])
    assert checked is not None and int(checked[1].replace(",", "")) > 1_024

    shown = oscova("preview", "agent-4", cwd=root)
    assert shown.returncode == 0, shown.stderr
    tokens = shown.stdout[shown.stdout.index("── Tokens"):].splitlines()
    assert f"! OSC108 templates/agent_4.j2:2: {warning['message']}" in tokens

    as_json = json.loads(oscova("preview", "agent-4", "--json", cwd=root).stdout)
    assert as_json["tokens"]["caching"] == [
        {"code": "OSC108", "path": "templates/agent_4.j2", "line": 2, "message": warning["message"]}]

    other = json.loads(oscova("preview", "agent-2", "--json", cwd=root).stdout)
    assert other["tokens"]["caching"] == []  # its template stays short: nothing to say
