"""The OSC rules, one module per family: each rule's code, severity, documentation, messages, fix titles and
check side by side (ruff's rule units). `registry.py` gathers them into the one table.

This package's `__init__` imports nothing: the parsers import the words of the rules they report
(`syntax.py`, `schema.py`) without loading every check.
"""
