"""The benchmarks say which Python ran our side (benchmarks/interpreter.py): the same code is
~15% faster on one CPython 3.11 build than on another, so a ratio is read with it."""

from __future__ import annotations

import platform
import sys

from benchmarks.interpreter import describe, of_command


def test_describes_the_running_interpreter():
    line = describe(sys.executable)
    assert line.startswith(f"{platform.python_implementation()} {platform.python_version()} at ")
    assert sys.executable in line
    assert "libpython" in line


def test_an_interpreter_that_cannot_run_is_said_so():
    assert describe("/nonexistent/python3").startswith("/nonexistent/python3: not run")


def test_only_python_commands_are_described():
    assert of_command(["mlir-lsp-server-22"]) is None
    assert of_command([]) is None
    assert of_command([sys.executable, "-m", "gpu_async_lsp", "serve"]) == describe(sys.executable)
