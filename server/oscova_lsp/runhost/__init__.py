"""The run host: where the language server's runs, previews, agent tests and evaluations execute.

Work whose cost the workspace decides (its tools and providers, its tokenizers, a model's stream, grading) runs
in a child process per workspace root (`oscova-lsp run-host ROOT`), spoken to over JSON-RPC on stdio, with a
memory limit; the language server relays events, approvals and cancellation and never imports workspace code.
`client.RunHost` is the server's side, `child` the child's, `endpoint` the JSON-RPC both speak.
"""
