"""oscova_lsp: the language server and the command line for Oscova agent definitions."""

# `python -m oscova_lsp` runs this module while the current directory is still first on `sys.path`
# (`__main__` drops it): it must import nothing.

__version__ = "0.1.0"
