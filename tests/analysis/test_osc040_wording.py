"""OSC040 is worded once: a missing template reads the same from a definition, a template and the host
configuration; only what the path is relative to differs."""

from __future__ import annotations

from pathlib import Path

from .support import BASE_HOST, make_workspace


def test_a_missing_template_is_worded_the_same_wherever_it_is_named(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, {
        "oscova.toml": BASE_HOST + '\n[environment]\ntemplate = "templates/env.j2"\n',
        "agents/a.agent.yaml": "id: a\ninstructions_file: ../templates/a.j2\n",
        "agents/b.agent.yaml": "id: b\ninstructions_file: ../templates/b.j2\n",
        "templates/b.j2": '{% include "partials/persona.j2" %}\n',
        "templates/outside.j2": '{% include "../../elsewhere.j2" %}\n',
    })
    messages = sorted(d.message for d in ws.diagnostics(code="OSC040"))
    assert messages == [
        "template `../../elsewhere.j2` is outside the workspace root; only files inside it are read",
        "template `../templates/a.j2` does not exist (relative to the definition file agents/a.agent.yaml)",
        "template `partials/persona.j2` does not exist (relative to the workspace root)",
        "template `templates/env.j2` does not exist (relative to the workspace root)",
    ]
