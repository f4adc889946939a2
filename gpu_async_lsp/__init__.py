"""gpu-async-lsp: MLIR's gpu-async-region rewrite as a language server and a CI checker."""

from gpu_async_lsp import _compiled

__version__ = "0.1.0"

_compiled.install()  # the Cython builds of the analysis's modules, where they are current
