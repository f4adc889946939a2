"""The linter: `ruff check` (configured in pyproject.toml) finds nothing in the package, the
tests, the tools and the benchmarks, so that `.ci/run` lints through pytest."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINTED = ("gpu_async_lsp", "tests", "tools", "benchmarks")


def test_lint_ruff_finds_nothing():
    if importlib.util.find_spec("ruff") is None:
        if os.environ.get("CI"):
            pytest.fail("ruff is missing in CI: install the package's `test` extra")
        pytest.skip("ruff is not installed")
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache",
                           "--output-format", "concise", *LINTED],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_lint_ruff_config_selects_pyflakes():
    import tomllib

    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert "F" in lint["select"] and not any(code.startswith("F") for code in lint["ignore"])
