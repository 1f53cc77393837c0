"""Template rendering in Jinja2's sandbox: workspace files are data, not trusted code.

`include`, `import` and `extends` paths resolve against the workspace root. Compiled templates are
cached by source, so a run renders without re-parsing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from jinja2 import FileSystemLoader, Template
from jinja2.sandbox import SandboxedEnvironment


class TemplateError(Exception):
    """A template could not be read or rendered; the message names the template."""


class TemplateRenderer:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)
        self.environment = SandboxedEnvironment(
            loader=FileSystemLoader(self.root), autoescape=False, keep_trailing_newline=False,
            auto_reload=True,
        )
        self._compiled: dict[str, Template] = {}

    def compile(self, source: str) -> Template:
        template = self._compiled.get(source)
        if template is None:
            try:
                template = self.environment.from_string(source)
            except Exception as error:  # noqa: BLE001 - reported in words
                raise TemplateError(f"The template does not parse: {error}") from None
            if len(self._compiled) > 512:
                self._compiled.clear()
            self._compiled[source] = template
        return template

    def render_string(self, source: str, variables: Mapping[str, Any], *, name: str = "instructions") -> str:
        try:
            return self.compile(source).render(dict(variables))
        except TemplateError:
            raise
        except Exception as error:  # noqa: BLE001
            raise TemplateError(f"Rendering {name} failed: {error}") from None

    def render_file(self, path: str, variables: Mapping[str, Any]) -> str:
        """Renders a template file given relative to the workspace root (or absolute inside it)."""
        relative = os.path.relpath(os.path.join(self.root, path), self.root).replace(os.sep, "/")
        if relative.startswith("../"):
            raise TemplateError(f"The template {path} is outside the workspace root")
        try:
            template = self.environment.get_template(relative)
        except Exception as error:  # noqa: BLE001
            raise TemplateError(f"The template {path} could not be loaded: {error}") from None
        try:
            return template.render(dict(variables))
        except Exception as error:  # noqa: BLE001
            raise TemplateError(f"Rendering {path} failed: {error}") from None

    def read_source(self, path: str) -> str:
        full = os.path.join(self.root, path)
        try:
            with open(full, encoding="utf-8") as handle:
                return handle.read()
        except OSError as error:
            raise TemplateError(f"The template {path} could not be read: {error.strerror}") from None
