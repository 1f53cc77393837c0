"""Editor features as plain data on top of the analysis engine.

Nothing here imports pygls or lsprotocol: each feature takes a `Workspace` (or `Analysis`), a path and a
position and returns plain values (`model.py`) that the protocol layer (`oscova_lsp.lsp`) converts.
"""
