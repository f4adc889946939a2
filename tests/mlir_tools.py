"""Test helpers around LLVM 22's reference tools (Debian package mlir-22-tools).

Tests that need them skip on a developer machine without them, and fail in CI (env CI set),
where .ci/run installs them.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

MLIR_OPT = shutil.which("mlir-opt-22")
PASS_PIPELINE = "--pass-pipeline=builtin.module(func.func(gpu-async-region))"


def require_mlir_opt() -> str:
    if MLIR_OPT is None:
        if os.environ.get("CI"):
            pytest.fail("mlir-opt-22 is missing in CI: .ci/run must install mlir-22-tools")
        pytest.skip("mlir-opt-22 not installed (apt-get install mlir-22-tools)")
    return MLIR_OPT


def mlir_opt(text: str, *flags: str, check: bool = False) -> subprocess.CompletedProcess:
    """Run mlir-opt-22 on `text` (stdin) with `flags`."""
    exe = require_mlir_opt()
    proc = subprocess.run([exe, *flags, "-"], input=text, capture_output=True, text=True,
                          timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"mlir-opt-22 {' '.join(flags)} failed:\n{proc.stderr}")
    return proc
