"""The language server: the only package that knows pygls and lsprotocol.

`launch` starts it (stdio with a fast `initialize`, or TCP) and imports pygls only then; `server` holds the
pygls server and its handlers; `session` the analyses, the open documents and what a change re-checks;
`convert` turns the plain results of `oscova_lsp.ide` into LSP types; `runs` the `oscova.*` commands, code
lenses, run streaming (`oscova/runEvent`, work-done progress), cancellation and approval over `oscova_lsp.runs`.
"""
