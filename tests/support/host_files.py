"""Pieces of `oscova.toml` that many tests write: the `[models.default]` table in one place."""

from __future__ import annotations

UNREACHABLE = "http://127.0.0.1:9/v1"
"""A base URL nothing listens on (port 9, discard): a run against it fails to connect at once."""


def models_default(model: str = "m", *, base_url: str | None = None, api_key_env: str | None = None,
                   timeout: float | None = None) -> str:
    """The `[models.default]` table (the model of every agent without `model:`), one key a line, in the order
    the docs write them; a workspace needs it, or the checker notes that runs cannot start (OSC042)."""
    lines = ["[models.default]", f'model = "{model}"']
    if base_url is not None:
        lines.append(f'base_url = "{base_url}"')
    if api_key_env is not None:
        lines.append(f'api_key_env = "{api_key_env}"')
    if timeout is not None:
        lines.append(f"timeout = {timeout:g}")
    return "\n".join(lines) + "\n"


MODELS = models_default()
"""`[models.default]` with `model = "m"` only: enough for the checker, which never calls a model."""
