"""Importing the package, the definition model and the catalogue never imports `openai` (docs/performance.md)."""

import subprocess
import sys


def test_importing_package_definition_and_catalogue_does_not_import_openai() -> None:
    code = (
        "import sys, oscova_runtime, oscova_runtime.definition, oscova_runtime.catalogue\n"
        "from oscova_runtime import AIContextProvider\n"
        "assert AIContextProvider.__name__ == 'AIContextProvider'\n"
        "print('openai' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_the_chat_client_imports_openai_only_on_first_use() -> None:
    code = (
        "import sys\n"
        "from oscova_runtime.chat_client import OpenAIChatClient\n"
        "from oscova_runtime.host import ConfiguredHost\n"
        "before = 'openai' in sys.modules\n"
        "OpenAIChatClient('m', base_url='http://127.0.0.1:9/v1')._ensure_client()\n"
        "print(before, 'openai' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False True"
