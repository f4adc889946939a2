"""Bundle the language server into the extension, as ruff-vscode and Microsoft's
vscode-python-tools-extension-template do: `pip install --target bundled/libs` of this
repository's package and its dependencies (pygls, lsprotocol, lark, pathspec and theirs: all
pure Python, so one .vsix serves every platform), plus the LICENSE. Run by `npm run bundle` (part of
`vscode:prepublish`, so `npm run package` does it) with the Python that runs this script:

    python3 bundle.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LIBS = HERE / "bundled" / "libs"


def main() -> int:
    if sys.version_info < (3, 11):
        print(f"bundle.py needs Python >= 3.11 (this is {sys.version.split()[0]})", file=sys.stderr)
        return 2
    if LIBS.exists():
        shutil.rmtree(LIBS)
    LIBS.mkdir(parents=True)
    # Not editable, no bytecode (the user's interpreter writes its own), only wheels' files;
    # the server's modules as Python (not compiled for this machine's Python and platform: the
    # .vsix runs with any Python >= 3.11, anywhere).
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--no-compile", "--no-warn-script-location", "--target", str(LIBS), str(ROOT)],
                   check=True, env={**os.environ, "GPU_ASYNC_LSP_PURE_PYTHON": "1"})
    # Console scripts point at the interpreter that built the bundle: not the user's.
    shutil.rmtree(LIBS / "bin", ignore_errors=True)
    for cache in list(LIBS.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)
    if not (LIBS / "gpu_async_lsp" / "cli.py").exists():
        print(f"the bundle lacks gpu_async_lsp ({LIBS})", file=sys.stderr)
        return 1
    shutil.copyfile(ROOT / "LICENSE", HERE / "LICENSE")
    names = sorted(p.name for p in LIBS.iterdir() if not p.name.endswith(".dist-info"))
    print(f"bundled into {LIBS.relative_to(HERE)}: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
