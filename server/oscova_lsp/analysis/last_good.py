"""What a file with a syntax error shows the rest of the workspace: its last version without one fills in
what the broken text cannot say.

Without it, every keystroke that leaves a definition or the host configuration broken for a moment would
change the diagnostics of every file that depends on it; with it, only the broken file says it is broken.
A template's last good version serves another end: it tells which lines are being edited, so the block left
open is the one typed there.
"""

from __future__ import annotations

from .files import DefinitionFile, HostFile, ParsedFile, TemplateFile, parse_template
from .jinja_source import analyze_template


def stand_in(new: ParsedFile, good: ParsedFile | None) -> ParsedFile:
    """A file mid-edit keeps what it can read; its last good facts supply what it cannot, so files that
    depend on it do not change because of a syntax error (its own diagnostics say it is broken)."""
    if isinstance(new, TemplateFile) and isinstance(good, TemplateFile):
        return _with_edited_lines(good, new)
    if good is None or not isinstance(new, DefinitionFile | HostFile) or new.doc is None or new.doc.ok:
        return new
    if isinstance(new, HostFile) and isinstance(good, HostFile):
        # All or nothing: a table half read (a broken header) would change what other files see.
        new.config, new.present, new.borrows_all = good.config, good.present, True
        return new
    if not isinstance(new, DefinitionFile) or not isinstance(good, DefinitionFile):
        return new
    if new.definition is None or not new.raw_id:  # nothing usable can be read
        new.raw_id, new.definition, new.inline = good.raw_id, good.definition, good.inline
        new.borrows_all = True
        return new
    read = new.doc.value if isinstance(new.doc.value, dict) else {}
    had = good.doc.value if good.doc is not None and isinstance(good.doc.value, dict) else {}
    borrowed = {key for key in _CROSS_FILE_KEYS if read.get(key) is None and had.get(key) is not None}
    if "instructions" in borrowed:
        new.inline = good.inline
    if good.definition is not None and borrowed - {"instructions"}:
        new.definition = new.definition.model_copy(
            update={key: getattr(good.definition, key) for key in borrowed - {"instructions"}})
    new.borrowed_keys = frozenset(borrowed)
    return new


def _with_edited_lines(good: TemplateFile, new: TemplateFile) -> TemplateFile:
    """A broken template analysed again knowing which lines changed since it last parsed: a block opener typed
    there is the one left open (the text alone cannot tell which of two nested `{% if %}` lacks its end)."""
    if new.facts is None or not new.facts.syntax_errors:
        return new
    before, after = good.lines, new.lines
    head = 0
    while head < min(before.line_count, after.line_count) and before.line_text(head) == after.line_text(head):
        head += 1
    tail = 0
    while tail < min(before.line_count, after.line_count) - head and \
            before.line_text(before.line_count - 1 - tail) == after.line_text(after.line_count - 1 - tail):
        tail += 1
    edited = range(head, max(after.line_count - tail, head + 1))
    return parse_template(new.path, new.text, analyze_template(new.text, edited))


_CROSS_FILE_KEYS = ("agent_tools", "exposed_as_tool", "shared", "instructions_file", "instructions")
"""The keys of a definition that other files' diagnostics read (besides its id)."""
