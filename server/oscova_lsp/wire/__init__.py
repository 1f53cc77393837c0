"""What crosses a process or editor boundary, as typed models (pydantic): run events and results (`events.py`), the
`oscova.*` commands' arguments and answers (`commands.py`), the JSON reports (`reports.py`), and the JSON Schema of
them all (`schema.py`, `oscova-lsp schema --wire`), from which the VS Code extension's types are generated.

snake_case in Python, camelCase on the wire (`model.py`). Imports pydantic and nothing of the project.
"""
