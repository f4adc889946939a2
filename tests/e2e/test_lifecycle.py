"""Start-up, capabilities and shutdown of the real server process."""

from __future__ import annotations

import asyncio
import sys

import pytest
from lsprotocol import types

from tests.e2e.clients import ENCODING, MAIN_CLIENTS

pytestmark = pytest.mark.asyncio(loop_scope="session")

SYNC_DOC = """\
func.func @f(%n: index) {
  %a = gpu.alloc (%n) : memref<?xf32>
  return
}
"""


async def test_initialize_capabilities_match_contract(server):
    caps = server.result.capabilities
    sync = caps.text_document_sync
    assert isinstance(sync, types.TextDocumentSyncOptions), sync
    assert sync.open_close is True
    assert sync.change == types.TextDocumentSyncKind.Incremental
    assert sync.save, "didSave not advertised"
    provider = caps.code_action_provider
    assert isinstance(provider, types.CodeActionOptions), provider
    assert sorted(provider.code_action_kinds) == sorted(
        ["quickfix", "refactor.rewrite", "source.fixAll.gpuAsync"])


@pytest.mark.parametrize("client_name", [*MAIN_CLIENTS, "eglot"])
async def test_initialize_position_encoding_first_supported_of_client(shared_servers,
                                                                      client_name):
    session = await shared_servers(client_name)
    assert session.result.capabilities.position_encoding == ENCODING[client_name]


@pytest.mark.parametrize("args", [["serve", "--stdio"], ["--stdio"], []],
                         ids=["serve_stdio", "stdio_alone", "no_arguments"])
async def test_serve_stdio_flag_accepted_serves_lsp(start_server, uri, args):
    """VS Code's language client appends `--stdio` to the server command; with
    no arguments at all the command serves too."""
    session = await start_server(
        "vscode", command=[sys.executable, "-m", "gpu_async_lsp", *args])
    diagnostics = await session.open_and_wait(uri, SYNC_DOC)
    assert [d.code for d in diagnostics] == ["sync-gpu-ops"]


async def test_shutdown_then_exit_ends_process_promptly(start_server, uri):
    session = await start_server("vscode")
    await session.open_and_wait(uri, SYNC_DOC)
    took = await session.shutdown(timeout=5.0)
    assert took < 3.0, f"the process took {took:.2f} s to end after exit"
    assert session.process.returncode == 0


async def test_shutdown_answers_null_before_exit(start_server):
    session = await start_server("neovim")
    result = await session.client.shutdown_async(None)
    assert result is None
    assert session.alive, "the process ended on shutdown, before exit"
    session.client.exit(None)
    await asyncio.wait_for(session.process.wait(), 5.0)



async def test_lifecycle_document_of_another_language_gets_no_diagnostics(shared_servers):
    """Only `mlir` documents (or *.mlir URIs) are analysed: a client that sends every buffer
    gets nothing for the others, and no code actions."""
    session = await shared_servers("neovim")
    uri = "file:///e2e/lifecycle/notes.txt"
    session.client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="plaintext", version=1,
                               text="gpu.wait\n}}} not mlir")))
    mlir_uri = "file:///e2e/lifecycle/after.mlir"
    await session.open_and_wait(mlir_uri, "func.func @f() {\n  return\n}\n")
    assert uri not in session.client.diagnostics
    assert await session.code_actions(uri, types.Range(types.Position(0, 0),
                                                       types.Position(1, 0))) in ([], None)


async def test_lifecycle_percent_encoded_uri_gets_diagnostics(shared_servers):
    """VS Code percent-encodes URIs (spaces, non-ASCII): such a document is analysed too."""
    session = await shared_servers("vscode")
    uri = "file:///e2e/lifecycle/with%20space/caf%C3%A9.mlir"
    text = "func.func @f() {\n  gpu.wait\n  %m = gpu.alloc () : memref<4xf32>\n  return\n}\n"
    diagnostics = await session.open_and_wait(uri, text)
    assert [d.code for d in diagnostics] == ["pre-existing-wait"]
