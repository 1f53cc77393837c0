"""`oscova-lsp debug`: a Debug Adapter Protocol server over stdio that runs one agent and stops at its steps.

`server.py` reads and writes DAP messages through the one framer (`oscova_runtime.framing`), `variables.py`
shows a stop's data as DAP variables and applies edits, `stepper.py` is the run's stepper (`oscova_runtime.stepping`: breakpoints,
stepping, stops), `adapter.py` answers the client's requests and starts the run through the run service.
"""
