"""The language server: the only package that knows pygls and lsprotocol.

`launch` starts it (stdio with a fast `initialize`, or TCP) and imports pygls only then; `server` holds the
pygls server (the wire, readiness, the initial scan) over the `AnalysisHost` of `oscova_lsp.analysis.host`;
`protocol` every override of pygls; `handlers` registers every handler in one place; `documents` keeps the
open documents' texts; `publisher` debounces edits and publishes diagnostics;
`convert` turns the plain results of `oscova_lsp.ide` into LSP types; `runs` the `oscova.*` commands, code
lenses, run streaming (`oscova/runEvent`, work-done progress), cancellation and approval over `oscova_lsp.runs`.
"""
