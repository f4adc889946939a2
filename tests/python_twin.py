"""A module of the package loaded from its source as Python, beside the build the package runs:
the scans written for C are held to their expressions in both (tests/unit/test_linescan.py,
tests/unit/test_gpuscan.py)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def as_python(relative: str):
    """The module at `relative` (e.g. "gpu_async_lsp/syntax/linescan.py") run as Python."""
    name = relative.replace("/", "_").removesuffix(".py") + "_as_python"
    spec = importlib.util.spec_from_file_location(name, ROOT / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert not getattr(module, "COMPILED", False)
    return module
