"""`python -m gpu_async_lsp` is the `gpu-async-lsp` command."""

from gpu_async_lsp.cli import entry

entry()
