"""Fixtures for the end-to-end tests: the real server subprocess over stdio (pytest-lsp).

- `server`: a server shared by the tests of the session, once per main client (VS Code,
  Neovim 0.11, minimal); tests that only open their own documents use it, each under its own
  URI, so the suite starts a handful of processes instead of one per test.
- `start_server`: a fresh server for tests that change settings, send bad input or end the
  process; ended (or killed) at teardown.

Every test module runs in the session's event loop: `pytestmark = pytest.mark.asyncio(
loop_scope="session")`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import pytest_asyncio

from tests.e2e.clients import MAIN_CLIENTS
from tests.e2e.lsp_session import Session

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def shared_servers():
    servers: dict[str, Session] = {}

    async def get(client_name: str) -> Session:
        session = servers.get(client_name)
        if session is None or not session.alive:
            # A crash in an earlier test must not fail every later one: start afresh.
            if session is not None:
                await session.close_all()
            session = servers[client_name] = await Session.start(client_name)
        return session

    yield get
    for session in servers.values():
        await session.close_all()


@pytest_asyncio.fixture(loop_scope="session", params=MAIN_CLIENTS)
async def server(request, shared_servers) -> Session:
    return await shared_servers(request.param)


@pytest_asyncio.fixture(loop_scope="session")
async def start_server():
    sessions: list[Session] = []

    async def start(client_name: str = "vscode", **kwargs) -> Session:
        session = await Session.start(client_name, **kwargs)
        sessions.append(session)
        return session

    yield start
    for session in sessions:
        await session.close_all()


@pytest.fixture
def uri(request) -> str:
    """A URI of its own for each test (and client)."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    return f"file:///e2e/{request.node.module.__name__.rsplit('.', 1)[-1]}/{name}.mlir"


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_bytes().decode("utf-8")


def fixture_names() -> list[str]:
    return sorted(p.name for p in FIXTURES.glob("*.mlir") if not p.name.endswith(".expected.mlir"))
