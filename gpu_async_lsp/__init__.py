"""gpu-async-lsp: MLIR's gpu-async-region rewrite as a language server and a CI checker."""

__version__ = "0.1.0"
