"""The pre-commit hooks the repository provides run our real command on .mlir files."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SYNC = "func.func @f(%m: memref<4xf32>) {\n  gpu.dealloc %m : memref<4xf32>\n  return\n}\n"


def _hooks() -> dict[str, dict]:
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    return {h["id"]: h for h in hooks}


def test_precommit_hooks_are_python_hooks_for_mlir_files():
    hooks = _hooks()
    assert set(hooks) == {"gpu-async-lsp-check", "gpu-async-lsp-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["files"] == r"\.mlir$"
        assert hook["entry"].split()[0] == "gpu-async-lsp"


def test_precommit_fix_hook_entry_rewrites_and_check_hook_then_passes(tmp_path):
    f = tmp_path / "a.mlir"
    f.write_text(SYNC)
    hooks = _hooks()

    def run(hook_id: str) -> int:
        argv = shlex.split(hooks[hook_id]["entry"])[1:]  # pre-commit appends the file names
        return subprocess.run([sys.executable, "-m", "gpu_async_lsp", *argv, str(f)],
                              capture_output=True, timeout=60).returncode

    assert run("gpu-async-lsp-fix") == 0
    assert "gpu.dealloc async" in f.read_text()
    assert run("gpu-async-lsp-check") == 0
