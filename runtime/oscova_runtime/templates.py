"""Template rendering in Jinja2's sandbox: workspace files are data, not trusted code.

`include`, `import` and `extends` paths resolve against the workspace root, and every template file is read
through the workspace boundary (`paths`): a path or symlink leaving the root, a FIFO or device, or a file
past the size limit is refused with the reason, never read. Compiled templates are cached by source, so a
run renders without re-parsing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from jinja2 import BaseLoader, Environment, Template, TemplateNotFound
from jinja2.sandbox import SandboxedEnvironment

from .paths import OUTSIDE_ROOT, FileRefused, read_text, resolve_in_root


class TemplateError(Exception):
    """A template could not be read or rendered; the message names the template."""


def read_template(root: str, path: str, base: str | None = None) -> str:
    """The text of the template `path` (relative to `base`, default the root), or TemplateError saying why not."""
    full = resolve_in_root(root, base or root, path)
    if full is None:
        raise TemplateError(f"The template {path} is {OUTSIDE_ROOT}")
    try:
        return read_text(full, root=root)
    except FileRefused as refused:
        raise TemplateError(f"The template {path} could not be read: {refused}") from None


class WorkspaceLoader(BaseLoader):
    """Loads `include`/`import`/`extends` targets and template files from inside the workspace root only."""

    def __init__(self, root: str) -> None:
        self.root = root

    def get_source(self, environment: Environment, template: str) -> tuple[str, str, Any]:
        full = resolve_in_root(self.root, self.root, template)
        if full is not None and not os.path.lexists(full):
            raise TemplateNotFound(template)
        try:
            source = read_template(self.root, template)
        except TemplateError as error:
            raise TemplateNotFound(template, str(error)) from None
        assert full is not None
        mtime = _mtime(full)
        return source, full, lambda: mtime is not None and _mtime(full) == mtime


def _mtime(path: str) -> float | None:
    try:
        return os.path.getmtime(path)
    except OSError:
        return None


class TemplateRenderer:
    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.fspath(root)
        self.environment = SandboxedEnvironment(
            loader=WorkspaceLoader(self.root), autoescape=False, keep_trailing_newline=False,
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
        try:
            template = self.environment.get_template(path)
        except Exception as error:  # noqa: BLE001
            raise TemplateError(f"The template {path} could not be loaded: {error}") from None
        try:
            return template.render(dict(variables))
        except Exception as error:  # noqa: BLE001
            raise TemplateError(f"Rendering {path} failed: {error}") from None

    def read_source(self, path: str, *, base: str | None = None) -> str:
        """A template's text, `path` relative to `base` (default: the workspace root)."""
        return read_template(self.root, path, base)
