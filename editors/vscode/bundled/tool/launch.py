"""Runs the language server bundled in the extension (bundled/libs: gpu_async_lsp, pygls,
lsprotocol, lark and their dependencies, all pure Python; in a platform-specific .vsix also
the analysis's modules compiled for some CPython versions of that platform), with the
interpreter the extension chose. Started with `python -I`: only the bundled libraries and the
standard library count."""

import os
import sys

if sys.version_info < (3, 11):
    sys.exit(f"gpu-async-lsp needs Python >= 3.11; this is {sys.version.split()[0]} "
             f"({sys.executable})")

LIBS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "libs")
if not os.path.isdir(os.path.join(LIBS, "gpu_async_lsp")):
    sys.exit(f"gpu-async-lsp: the extension's bundled server is missing ({LIBS})")
sys.path.insert(0, LIBS)

from gpu_async_lsp import _compiled  # noqa: E402
from gpu_async_lsp.cli import entry  # noqa: E402

if len(sys.argv) == 1 or sys.argv[1] == "serve" or sys.argv[1].startswith("--"):
    # The extension's output channel shows the server's stderr: which build runs.
    print(f"gpu-async-lsp: {_compiled.describe()}", file=sys.stderr, flush=True)
entry()
