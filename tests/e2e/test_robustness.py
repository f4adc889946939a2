"""Bad input never crashes the server: each case gets a sane answer (an empty result, an error
response, a syntax diagnostic) and the server still answers the next request correctly.

The servers are the session's shared ones (a server that a bad input crashed is replaced before
the next test), so a bad input also meets a server that has already served other tests.
"""

from __future__ import annotations

import json

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.lsp_session import Session, check_fix, diag_summary, line_starts, rng

pytestmark = pytest.mark.asyncio(loop_scope="session")

FIX_ALL = "Make all GPU ops in this file asynchronous"

DOC = """\
func.func @f(%n: index, %x: f32) {
  %a = gpu.alloc (%n) : memref<?xf32>
  gpu.memset %a, %x : memref<?xf32>, f32
  return
}
"""
HUGE_FUNCTIONS = 4000  # 5 lines each: 20,000 lines, about 0.6 MB
NESTING = 10_000


async def still_serving(session: Session) -> None:
    """The server answers a request on a fresh document as it should."""
    uri = f"file:///e2e/robustness/probe{len(session.texts)}.mlir"
    diagnostics = await session.open_and_wait(uri, DOC)
    assert [d.message for d in diagnostics] == ["2 GPU ops in @f run synchronously"]
    actions = await session.code_actions(uri)
    [fix_all] = [a for a in actions if a.title == FIX_ALL]
    assert session.applied(fix_all, uri) == check_fix(DOC)
    assert session.alive


@pytest.fixture(params=["vscode", "neovim"])
def client_name(request) -> str:
    return request.param


def empty(result) -> bool:
    return result is None or list(result) == []


async def test_robustness_code_action_unknown_uri_empty(shared_servers, client_name):
    session = await shared_servers(client_name)
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri="file:///e2e/never-opened.mlir"),
        range=rng(0, 0, 3, 0), context=types.CodeActionContext(diagnostics=[]))
    assert empty(await session.client.text_document_code_action_async(params))
    await still_serving(session)


async def test_robustness_code_action_closed_document_empty(shared_servers, uri):
    session = await shared_servers("vscode")
    await session.open_and_wait(uri, DOC)
    session.close(uri)
    await session.wait_cleared(uri)
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=rng(0, 0, 3, 0), context=types.CodeActionContext(diagnostics=[]))
    assert empty(await session.client.text_document_code_action_async(params))
    await still_serving(session)


@pytest.mark.parametrize("bad_range", [
    rng(10_000, 0, 10_000, 5),
    rng(0, 10_000, 1, 10_000),
    rng(3, 0, 1, 0),
    rng(0, 0, 2**31 - 1, 2**31 - 1),
], ids=["lines_past_end", "columns_past_end", "start_after_end", "max_uinteger"])
async def test_robustness_code_action_out_of_range_positions_answered(shared_servers, client_name,
                                                                      uri, bad_range):
    session = await shared_servers(client_name)
    await session.open_and_wait(uri, DOC)
    actions = await session.code_actions(uri, bad_range)
    assert all(isinstance(a, types.CodeAction) for a in actions)
    for a in actions:  # whatever is offered still applies cleanly
        if a.edit is not None:
            session.applied(a, uri)
    await still_serving(session)


@pytest.mark.parametrize("params", [
    {"range": {"start": {"line": -1, "character": -5}, "end": {"line": 0, "character": -1}},
     "context": {"diagnostics": []}},
    {"textDocument": 5},
    {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 1, "character": 0}}},
], ids=["negative_position", "uri_not_a_string", "no_context"])
async def test_robustness_malformed_request_params_answered_with_error(shared_servers, uri, params):
    """A request whose params do not fit the method (positions are uintegers, every field
    required) is answered with an error response (JSON-RPC: -32602 Invalid params), not
    dropped, and the server keeps serving."""
    session = await shared_servers("vscode")
    await session.open_and_wait(uri, DOC)
    params = {"textDocument": {"uri": uri}, **params}
    with pytest.raises(JsonRpcException):
        await session.raw_request("textDocument/codeAction", json.dumps(params), timeout=2)
    await still_serving(session)


@pytest.mark.parametrize("bad_range", [
    rng(500, 0, 600, 0),
    rng(3, 0, 1, 0),
    rng(1, 5_000, 1, 9_000),
], ids=["past_end", "start_after_end", "columns_past_line_end"])
async def test_robustness_malformed_change_range_then_recovers(shared_servers, client_name, uri,
                                                               bad_range):
    session = await shared_servers(client_name)
    await session.open_and_wait(uri, DOC)
    session.client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [types.TextDocumentContentChangePartial(range=bad_range, text="  gpu.wait\n")]))
    await session.round_trip()
    assert session.alive
    # A whole-document change afterwards is taken as is.
    session.versions[uri] = 2
    version = session.change(uri, [(None, DOC.replace("  return", "  gpu.wait\n  return"))])
    diagnostics = (await session.wait_diagnostics(uri, version)).diagnostics
    assert [(d.code, d.range) for d in diagnostics] == [("pre-existing-wait", rng(3, 2, 3, 10))]
    await still_serving(session)


async def test_robustness_change_column_inside_a_character_then_recovers(shared_servers,
                                                                        client_name, uri):
    """Columns 4..6 of "// 🚀🚀" split an emoji in UTF-16 and in UTF-8: the server answers
    sanely, and a whole-document change afterwards is taken as is."""
    session = await shared_servers(client_name)
    text = "// 🚀🚀\n" + DOC
    await session.open_and_wait(uri, text)
    session.client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        [types.TextDocumentContentChangePartial(range=rng(0, 4, 0, 6), text="x")]))
    await session.round_trip()
    session.versions[uri] = 2
    version = session.change(uri, [(None, text.replace("  return", "  gpu.wait\n  return"))])
    diagnostics = (await session.wait_diagnostics(uri, version)).diagnostics
    assert [(d.code, d.range) for d in diagnostics] == [("pre-existing-wait", rng(4, 2, 4, 10))]
    await still_serving(session)


CRLF_DOC = DOC.replace("\n", "\r\n")


@pytest.mark.parametrize("bad_range, new_text", [
    (rng(0, 35, 1, 0), ""),
    (rng(0, 35, 0, 35), "  "),
], ids=["delete_from_inside_crlf", "insert_inside_crlf"])
async def test_robustness_change_column_inside_crlf_clamped_to_line_end(shared_servers, uri,
                                                                        bad_range, new_text):
    """Line 0 has 34 characters before its CRLF: column 35 points between CR and LF. LSP 3.17
    (Position): a column past the line's length means the line's end, so the change applies
    before the CR, as it does for any larger column (the server's text.py says the same)."""
    session = await shared_servers("vscode")
    await session.open_and_wait(uri, CRLF_DOC)
    assert CRLF_DOC.index("\r") == 34
    session.change(uri, [(bad_range, new_text)])  # the client's copy clamps
    assert "\r\n" in session.texts[uri] and "\r\r" not in session.texts[uri]
    after_edit = sorted(diag_summary(d) for d in (await session.wait_diagnostics(uri)).diagnostics)
    fresh_uri = uri.replace(".mlir", "-fresh.mlir")
    fresh = sorted(diag_summary(d) for d in await session.open_and_wait(fresh_uri,
                                                                        session.texts[uri]))
    assert after_edit == fresh
    actions = await session.code_actions(uri)
    [fix_all] = [a for a in actions if a.title == FIX_ALL]
    assert session.applied(fix_all, uri) == check_fix(session.texts[uri])


async def test_robustness_change_and_close_of_unknown_uri_ignored(shared_servers):
    session = await shared_servers("vscode")
    ghost = "file:///e2e/robustness/ghost.mlir"
    session.client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=ghost, version=5),
        [types.TextDocumentContentChangePartial(range=rng(0, 0, 0, 0), text="x")]))
    session.close(ghost)
    session.client.text_document_did_save(types.DidSaveTextDocumentParams(
        types.TextDocumentIdentifier(uri=ghost)))
    await still_serving(session)


async def test_robustness_binary_garbage_document_syntax_diagnostic(shared_servers, client_name,
                                                                    uri):
    """Control characters, NULs, every Latin-1 byte, a lone surrogate, emoji: a syntax error."""
    garbage = ("".join(map(chr, range(256))) * 4 + "\ud800\udfff\U0001F680\ufffe\uffff"
               + "func.func @f() {\x00\x1b[31m}" + "\u2028\u2029\x85\x0b\x0c" * 8)
    session = await shared_servers(client_name)
    session.raw_notify("textDocument/didOpen", json.dumps({"textDocument": {
        "uri": uri, "languageId": "mlir", "version": 1, "text": garbage}}))
    session.texts[uri], session.versions[uri] = garbage, 1
    diagnostics = (await session.wait_diagnostics(uri, 1)).diagnostics
    assert "syntax" in {d.code for d in diagnostics}
    last_line = len(line_starts(garbage)) - 1
    for d in diagnostics:
        assert d.range.start.line <= d.range.end.line <= last_line, d.range
    await still_serving(session)


async def test_robustness_invalid_utf8_in_message_body_survives(shared_servers, uri):
    session = await shared_servers("vscode")
    body = (b'{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": '
            b'{"uri": "' + uri.encode() + b'", "languageId": "mlir", "version": 1, '
            b'"text": "\xff\xfe\xc3(\xed\xa0\x80 gpu.wait"}}}')
    session.send_raw(body)
    session.send_raw(b"this is not JSON at all \x00\x01\x02")
    await still_serving(session)


async def test_robustness_unknown_method_gets_method_not_found(shared_servers):
    session = await shared_servers("vscode")
    with pytest.raises(JsonRpcException):
        await session.raw_request("gpuAsync/noSuchMethod", "{}", timeout=3)
    await still_serving(session)


async def test_robustness_huge_document_diagnostics_and_actions(shared_servers, uri):
    session = await shared_servers("vscode")
    text = "".join(
        f"func.func @f{i}(%n: index) {{\n"
        f"  %a = gpu.alloc (%n) : memref<?xf32>  // function {i}\n"
        f"  gpu.dealloc %a : memref<?xf32>\n  return\n}}\n"
        for i in range(HUGE_FUNCTIONS))
    diagnostics = await session.open_and_wait(uri, text)
    assert len(diagnostics) == HUGE_FUNCTIONS
    assert {d.code for d in diagnostics} == {"sync-gpu-ops"}
    line = 5 * (HUGE_FUNCTIONS - 1) + 1
    actions = await session.code_actions(uri, rng(line, 0, line, 5), diagnostics=[])
    assert sorted(a.title for a in actions) == sorted([
        FIX_ALL, f"Make GPU ops in @f{HUGE_FUNCTIONS - 1} asynchronous"])
    # One keystroke in a huge document is still answered.
    session.replace(uri, 3, 3, "c")  # "func.funcc": a syntax error in the first function
    diagnostics = (await session.wait_diagnostics(uri)).diagnostics
    assert "syntax" in {d.code for d in diagnostics}
    await still_serving(session)


async def test_robustness_single_huge_line_answered(shared_servers, uri):
    session = await shared_servers("neovim")
    text = "func.func @f() {\n  " + "%x = arith.constant 1 : index " * 20_000 + "\n  return\n}\n"
    await session.open_and_wait(uri, text)
    await session.code_actions(uri)
    await still_serving(session)


@pytest.mark.parametrize("shape", ["generic_regions", "scf_execute_region", "unclosed"])
async def test_robustness_10000_nested_regions_answered(shared_servers, uri, shape):
    if shape == "generic_regions":
        text = ("func.func @deep(%n: index) {\n" + '"test.op"() ({\n' * NESTING
                + "  %a = gpu.alloc (%n) : memref<?xf32>\n" + "}) : () -> ()\n" * NESTING
                + "  return\n}\n")
    elif shape == "scf_execute_region":
        text = ("func.func @deep(%n: index) {\n" + "scf.execute_region {\n" * NESTING
                + "  %a = gpu.alloc (%n) : memref<?xf32>\n" + "scf.yield\n}\n" * NESTING
                + "  return\n}\n")
    else:
        text = "func.func @deep(%n: index) {\n" + '"test.op"() ({\n' * NESTING
    session = await shared_servers("vscode")
    diagnostics = await session.open_and_wait(uri, text)
    if shape == "unclosed":
        assert "syntax" in {d.code for d in diagnostics}
    actions = await session.code_actions(uri)
    for a in actions:
        if a.kind == "source.fixAll.gpuAsync":
            assert session.applied(a, uri) == check_fix(text)
    await still_serving(session)


async def test_robustness_reopen_same_uri_replaces_document(shared_servers, uri):
    session = await shared_servers("neovim")
    await session.open_and_wait(uri, DOC)
    text = DOC.replace("  return", "  gpu.wait\n  return")
    diagnostics = await session.open_and_wait(uri, text, version=2)
    assert [d.code for d in diagnostics] == ["pre-existing-wait"]
    await still_serving(session)
