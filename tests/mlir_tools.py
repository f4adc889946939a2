"""Test helpers around LLVM 22's reference tools (Debian package mlir-22-tools).

Tests that need them skip on a developer machine without them, and fail in CI (env CI set),
where .ci/run installs them.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

PASS_PIPELINE = "--pass-pipeline=builtin.module(func.func(gpu-async-region))"


def require(found: bool, what: str, package: str = "mlir-22-tools") -> None:
    """A skip when `what` is missing on a developer's machine, a failure in CI."""
    if found:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{what} is missing in CI: .ci/run must install {package}")
    pytest.skip(f"{what} not installed (apt-get install {package})")


def require_tool(name: str) -> str:
    """The path of LLVM 22 tool `name` (mlir-opt-22, mlir-lsp-server-22, ...)."""
    path = shutil.which(name)
    require(path is not None, name)
    return path


def require_mlir_opt() -> str:
    return require_tool("mlir-opt-22")


def mlir_opt(text: str, *flags: str, check: bool = False) -> subprocess.CompletedProcess:
    """Run mlir-opt-22 on `text` (stdin) with `flags`."""
    exe = require_mlir_opt()
    proc = subprocess.run([exe, *flags, "-"], input=text, capture_output=True, text=True,
                          timeout=120)
    if check and proc.returncode != 0:
        raise AssertionError(f"mlir-opt-22 {' '.join(flags)} failed:\n{proc.stderr}")
    return proc
