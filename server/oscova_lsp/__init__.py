"""oscova_lsp: the language server and the command line for Oscova agent definitions."""

__version__ = "0.1.0"
