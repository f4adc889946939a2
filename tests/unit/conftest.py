"""Fixtures shared by the unit tests."""

from __future__ import annotations

import pytest

from gpu_async_lsp import parallel


@pytest.fixture
def second_process_always(monkeypatch):
    """A big buffer is shared with a forked process whatever else the machine runs (else a
    busy CPU would send a test of the shared path down the one-process path:
    parallel.cpu_to_spare). Used by a module as `pytest.mark.usefixtures`."""
    monkeypatch.setenv(parallel.SECOND_PROCESS_ENV, "always")
