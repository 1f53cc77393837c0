"""The real-model tests' servers and workspace: llama.cpp's `llama-server` serving SmolLM2-135M-Instruct twice,
with Qwen2.5's chat template (tool calls) and with DeepSeek-R1's and `--reasoning-format deepseek` (reasoning),
both started once for the session; and a workspace whose `[models.*]` name the same template and the model file,
so counts can be compared with the server's.

These tests run only when `OSCOVA_LLAMA_SERVER` names the binary (`.ci/llama-server.sh` prints it, and the
other two variables); otherwise tests/conftest.py leaves the folder out of the run. With
`OSCOVA_RECORD_FIXTURES=1` they also record the server's streams into tests/fixtures/llama-server/.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import llama_server
from tests.support.llama_server import LlamaServer
from tests.support.real_model import AGENTS, DEEPSEEK_R1, MODEL_FILE, QWEN


def _configured() -> None:
    missing = [name for name in ("OSCOVA_LLAMA_SERVER", "OSCOVA_LLAMA_TEMPLATES", "OSCOVA_LLAMA_MODEL")
               if not os.environ.get(name)]
    if missing:
        pytest.fail(f"{', '.join(missing)} not set: `.ci/llama-server.sh` builds llama-server, installs the model and "
                    "prints the three variables", pytrace=False)


@pytest.fixture(scope="session")
def qwen_server() -> Iterator[LlamaServer]:
    _configured()
    server = llama_server.start("--jinja", "--chat-template-file", str(llama_server.templates() / QWEN))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def reasoning_server() -> Iterator[LlamaServer]:
    _configured()
    server = llama_server.start("--jinja", "--chat-template-file", str(llama_server.templates() / DEEPSEEK_R1),
                                "--reasoning-format", "deepseek")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def model_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The GGUF file, copied once: a workspace reads its tokenizer only from inside itself."""
    folder = tmp_path_factory.mktemp("model")
    return Path(shutil.copy(os.environ["OSCOVA_LLAMA_MODEL"], folder / MODEL_FILE))


@pytest.fixture
def workspace(tmp_path: Path, qwen_server: LlamaServer, reasoning_server: LlamaServer, model_copy: Path) -> Path:
    root = tmp_path / "ws"
    (root / "agents").mkdir(parents=True)
    (root / "data").mkdir()
    (root / "templates").mkdir()
    (root / "model").mkdir()
    (root / "data" / "notes.txt").write_text("The launch is on Tuesday.\n")
    for name in (QWEN, DEEPSEEK_R1):
        shutil.copy(llama_server.templates() / name, root / "templates" / name)
    os.link(model_copy, root / "model" / MODEL_FILE)
    (root / "oscova.toml").write_text(textwrap.dedent(f"""\
        [host]
        user_id = "ci"

        [models.local]
        model = "smollm2"
        base_url = "{qwen_server.base_url}/v1"
        timeout = 600
        tokenizer = "model/{MODEL_FILE}"
        chat_template = "templates/{QWEN}"

        [models.thinking]
        model = "smollm2"
        base_url = "{reasoning_server.base_url}/v1"
        timeout = 600
        tokenizer = "model/{MODEL_FILE}"
        chat_template = "templates/{DEEPSEEK_R1}"
        """))
    for name, text in AGENTS.items():
        (root / "agents" / f"{name}.agent.yaml").write_text(textwrap.dedent(text))
    return root


def recording() -> bool:
    return os.environ.get("OSCOVA_RECORD_FIXTURES") == "1"
