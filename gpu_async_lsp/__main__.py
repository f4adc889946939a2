"""`python -m gpu_async_lsp` is the `gpu-async-lsp` command."""

import sys

from gpu_async_lsp.cli import main

sys.exit(main())
