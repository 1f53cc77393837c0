"""YAML front matter (`---` … `---`) of the Markdown files providers read: skills and personal context."""

from __future__ import annotations

from typing import Any

import yaml


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """(metadata, body); a file without front matter, or with unreadable front matter, has empty metadata."""
    if text.startswith("---\n"):
        head, sep, body = text[4:].partition("\n---\n")
        if sep:
            try:
                meta = yaml.safe_load(head) or {}
            except yaml.YAMLError:
                meta = {}
            return (meta if isinstance(meta, dict) else {}), body
    return {}, text
