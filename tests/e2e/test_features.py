"""Code lens, inlay hints, hover and navigation over the real protocol: each feature
with the capability sets of VS Code, Neovim 0.11 and a minimal client, positions checked in
the encoding each negotiates (the document has non-ASCII text before the positions)."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.lsp_session import TIMEOUT, apply_text_edits, fix_function, offset, position

pytestmark = pytest.mark.asyncio(loop_scope="session")

# `é𝄞` before ops on their line: columns differ in UTF-8, UTF-16 and UTF-32.
DOC = """\
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%arg0: memref<?xf32>) kernel {
      gpu.return
    }
  }
  func.func @scale(%n: index) {
    %c1 = arith.constant 1 : index
    %0:2 = "test.two"() {note = "é𝄞"} : () -> (index, index) %buf = gpu.alloc (%n) : memref<?xf32>
    gpu.launch_func @kernels::@kernel blocks in (%c1, %c1, %c1) threads in (%0#1, %c1, %c1) args(%buf : memref<?xf32>)
    %v = memref.load %buf[%c1] : memref<?xf32>
    cf.br ^bb1(%c1 : index)
  ^bb1(%x: index):
    return
  }
  func.func @blocked(%n: index) {
    %b = gpu.alloc (%n) : memref<?xf32>
    gpu.wait
    return
  }
}
"""


def doc_id(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def pos(server, uri: str, needle: str, occurrence: int = 0, delta: int = 1) -> types.Position:
    text = server.texts[uri]
    at = -1
    for _ in range(occurrence + 1):
        at = text.index(needle, at + 1)
    return position(text, at + delta, server.encoding)


def located(server, uri: str, rng: types.Range) -> tuple[int, str]:
    """(1-based line, text) of a range of the client's copy."""
    text = server.texts[uri]
    start = offset(text, rng.start, server.encoding)
    end = offset(text, rng.end, server.encoding)
    return text.count("\n", 0, start) + 1, text[start:end]


async def opened(server, uri: str, text: str = DOC) -> None:
    await server.open_and_wait(uri, text)


# -- code lens ------------------------------------------------------------------------------

async def lenses(server, uri: str) -> list[types.CodeLens]:
    return list(await asyncio.wait_for(
        server.client.text_document_code_lens_async(types.CodeLensParams(doc_id(uri))),
        TIMEOUT) or [])


async def run_lens(server, lens: types.CodeLens):
    """workspace/executeCommand of the lens's command, as the editor runs it."""
    return await asyncio.wait_for(server.client.workspace_execute_command_async(
        types.ExecuteCommandParams(lens.command.command, lens.command.arguments)), TIMEOUT)


async def test_code_lens_titles_for_rewritable_and_blocked_functions(server, uri):
    await opened(server, uri)
    found = await lenses(server, uri)
    assert [(lens.range.start.line, lens.command.title, lens.command.command) for lens in found] == [
        (6, "2 GPU ops run synchronously · Make asynchronous", "gpu-async.makeAsynchronous"),
        (15, "async rewrite blocked: unexpected pre-existing gpu.wait (line 18)",
         "gpu-async.showBlocker"),
        (15, "Thread the token through it as LLVM 22 does", "gpu-async.makeAsynchronous")]
    assert located(server, uri, found[0].range) == (7, "@scale")


async def test_code_lens_llvm22_command_threads_through_the_blocker(server, uri):
    """The blocked function's second lens applies LLVM 22's rewrite of it."""
    await opened(server, uri)
    [_, _, lens] = await lenses(server, uri)
    assert lens.command.arguments[-1] == "llvm22"
    before = len(server.client.applied_edits)
    result = await run_lens(server, lens)
    if server.client_name == "minimal":
        assert result == {"applied": False}
        return
    assert result == {"applied": True}
    [params] = server.client.applied_edits[before:]
    edit = params.edit
    edits = edit.document_changes[0].edits if edit.document_changes else edit.changes[uri]
    name = lens.command.arguments[1]
    assert apply_text_edits(server.texts[uri], edits, server.encoding) == fix_function(
        DOC, name, "llvm22")


async def test_code_lens_command_applies_the_functions_rewrite_through_apply_edit(server, uri):
    await opened(server, uri)
    [lens, _, _] = await lenses(server, uri)
    before = len(server.client.applied_edits)
    result = await run_lens(server, lens)
    if server.client_name == "minimal":  # no workspace.applyEdit: told to use the action
        assert result == {"applied": False}
        assert len(server.client.applied_edits) == before
        return
    assert result == {"applied": True}
    [params] = server.client.applied_edits[before:]
    edit = params.edit
    if edit.document_changes:
        [change] = edit.document_changes
        assert change.text_document.version == server.versions[uri]
        edits = change.edits
    else:
        edits = edit.changes[uri]
    assert apply_text_edits(server.texts[uri], edits, server.encoding) == fix_function(
        DOC, "@scale")


async def test_code_lens_blocked_command_shows_the_blocker(server, uri):
    await opened(server, uri)
    [_, lens, _] = await lenses(server, uri)
    before = len(server.client.shown_documents)
    result = await run_lens(server, lens)
    rng = types.Range(types.Position(**result["range"]["start"]),
                      types.Position(**result["range"]["end"]))
    assert located(server, uri, rng) == (18, "gpu.wait")
    shown = server.client.shown_documents[before:]
    if server.client_name == "minimal":
        assert shown == []
    else:
        [params] = shown
        assert params.uri == uri and params.selection == rng


async def test_code_lens_follow_edits_blocked_after_a_wait_is_typed(server, uri):
    await opened(server, uri)
    at = server.texts[uri].index("    %v = memref.load")
    version = server.replace(uri, at, at, "    gpu.wait\n")
    await server.wait_diagnostics(uri, version)
    titles = [lens.command.title for lens in await lenses(server, uri)]
    assert titles[0] == "async rewrite blocked: unexpected pre-existing gpu.wait (line 11)"


async def test_code_lens_command_with_bad_arguments_is_an_error_not_a_crash(server, uri):
    await opened(server, uri)
    for arguments in ([], [uri], [uri, "@nope", 0], [uri, 3, "x"], ["file:///not/open.mlir",
                                                                       "@scale", 0]):
        with pytest.raises(JsonRpcException):  # an error response, not a timeout
            await asyncio.wait_for(server.client.workspace_execute_command_async(
                types.ExecuteCommandParams("gpu-async.makeAsynchronous", arguments)), TIMEOUT)
    assert server.alive
    assert await lenses(server, uri)


# -- inlay hints ----------------------------------------------------------------------------

async def hints(server, uri: str, first_line: int = 0, last_line: int = 10_000):
    rng = types.Range(types.Position(first_line, 0), types.Position(last_line, 0))
    found = await asyncio.wait_for(server.client.text_document_inlay_hint_async(
        types.InlayHintParams(doc_id(uri), rng)), TIMEOUT)
    return list(found or [])


async def test_inlay_hints_preview_the_rewrite_at_the_right_columns(server, uri):
    await opened(server, uri)
    found = await hints(server, uri)
    text = DOC
    alloc = text.index("%buf = gpu.alloc")
    alloc_end = text.index("\n", alloc)
    launch_end = text.index("\n", text.index("gpu.launch_func"))
    load = text.index("%v = memref.load")
    enc = server.encoding
    assert [(h.position, h.label, h.padding_left, h.padding_right) for h in found] == [
        (position(text, alloc, enc), "+ %t0 = gpu.wait async;", False, True),
        (position(text, alloc_end, enc), "async [%t0] → %t1", True, False),
        (position(text, launch_end, enc), "async [%t1] → %t2", True, False),
        (position(text, load, enc), "+ gpu.wait [%t2];", False, True),
    ]
    assert "has side effects" in found[-1].tooltip


async def test_inlay_hints_only_for_the_requested_range(server, uri):
    await opened(server, uri)
    assert [h.label for h in await hints(server, uri, 9, 10)] == ["async [%t1] → %t2"]
    assert await hints(server, uri, 15, 20) == []


async def test_inlay_hints_in_threaded_code_name_what_each_op_waits_on(server, uri):
    text = ("func.func @f(%n: index) {\n  %t0 = gpu.wait async\n"
            "  %a, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>\n  gpu.wait [%t1]\n"
            "  return\n}\n")
    await opened(server, uri, text)
    assert [h.label for h in await hints(server, uri)] == [
        "waits on %t0 (gpu.wait)", "waits on %t1 (gpu.alloc)"]


# -- hover ------------------------------------------------------------------------------------

async def hover(server, uri: str, needle: str, occurrence: int = 0):
    return await asyncio.wait_for(server.client.text_document_hover_async(
        types.HoverParams(doc_id(uri), pos(server, uri, needle, occurrence))), TIMEOUT)


async def test_hover_on_a_gpu_op_explains_its_rewrite_in_markdown(server, uri):
    await opened(server, uri)
    found = await hover(server, uri, "gpu.alloc")
    assert found.contents.kind == types.MarkupKind.Markdown
    value = found.contents.value
    assert "%buf, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>" in value
    assert "- produces `%t1`" in value
    assert "`%t1` is awaited by `gpu.launch_func` (line 10)" in value
    assert located(server, uri, found.range) == (9, "gpu.alloc")


async def test_hover_on_a_blocked_function_names_the_blocker(server, uri):
    await opened(server, uri)
    found = await hover(server, uri, "gpu.alloc", 1)
    assert "blocked by unexpected pre-existing gpu.wait (line 18)" in found.contents.value


async def test_hover_where_the_rewrite_has_nothing_to_say_is_empty(server, uri):
    await opened(server, uri)
    assert await hover(server, uri, "arith.constant") is None
    assert await hover(server, uri, "%n: index") is None


# -- navigation ------------------------------------------------------------------------------

async def definition(server, uri: str, needle: str, occurrence: int = 0, delta: int = 1):
    found = await asyncio.wait_for(server.client.text_document_definition_async(
        types.DefinitionParams(doc_id(uri), pos(server, uri, needle, occurrence, delta))),
        TIMEOUT)
    if found is None:
        return None
    [location] = found if isinstance(found, (list, tuple)) else [found]
    assert location.uri == uri
    return located(server, uri, location.range)


@pytest.mark.parametrize("needle, delta, expected", [
    ("@kernels::@kernel", 2, (2, "@kernels")),
    ("@kernels::@kernel", len("@kernels::@") + 1, (3, "@kernel")),
    ("%0#1", 1, (9, "%0:2")),
    ("%buf[%c1]", 1, (9, "%buf")),
    ("%c1 : index)", 1, (8, "%c1")),
    ("^bb1(%c1", 1, (13, "^bb1")),
    ("%n) : memref", 1, (7, "%n")),
])
async def test_definition_of_values_labels_and_nested_symbols(server, uri, needle, delta,
                                                              expected):
    await opened(server, uri)
    assert await definition(server, uri, needle, 0, delta) == expected


async def test_definition_on_nothing_is_null(server, uri):
    await opened(server, uri)
    assert await definition(server, uri, "arith.constant") is None


async def references(server, uri: str, needle: str, declaration: bool = True, delta: int = 1):
    found = await asyncio.wait_for(server.client.text_document_references_async(
        types.ReferenceParams(types.ReferenceContext(declaration), doc_id(uri),
                              pos(server, uri, needle, 0, delta))), TIMEOUT)
    return [located(server, uri, loc.range) for loc in found or []]


async def test_references_of_values_result_groups_and_symbols(server, uri):
    await opened(server, uri)
    assert await references(server, uri, "%0#1") == [(9, "%0:2"), (10, "%0#1")]
    assert await references(server, uri, "%buf = ") == [
        (9, "%buf"), (10, "%buf"), (11, "%buf")]
    assert await references(server, uri, "%buf = ", declaration=False) == [
        (10, "%buf"), (11, "%buf")]
    assert await references(server, uri, "@kernel(") == [(3, "@kernel"), (10, "@kernel")]


async def test_document_symbols_outline_modules_and_functions(server, uri):
    await opened(server, uri)
    found = await asyncio.wait_for(server.client.text_document_document_symbol_async(
        types.DocumentSymbolParams(doc_id(uri))), TIMEOUT)
    if server.client_name == "minimal":  # no hierarchy support: the flat form
        assert [(s.name, s.kind, s.container_name) for s in found] == [
            ("module", types.SymbolKind.Module, None),
            ("@kernels", types.SymbolKind.Module, "module"),
            ("@kernel", types.SymbolKind.Function, "@kernels"),
            ("@scale", types.SymbolKind.Function, "module"),
            ("@blocked", types.SymbolKind.Function, "module")]
        return

    def tree(symbols):
        return [(s.name, s.detail, tree(s.children or [])) for s in symbols]

    assert tree(found) == [("module", "builtin.module", [
        ("@kernels", "gpu.module", [("@kernel", "gpu.func", [])]),
        ("@scale", "func.func", []), ("@blocked", "func.func", [])])]
    assert located(server, uri, found[0].children[1].selection_range) == (7, "@scale")


async def test_document_symbols_keep_healthy_functions_when_one_is_broken(server, uri):
    broken = DOC.replace("%b = gpu.alloc (%n) : memref<?xf32>", "%b = gpu.alloc (%n : memref<")
    await opened(server, uri, broken)
    assert any(d.code == "syntax" for d in server.latest_diagnostics(uri))
    found = await asyncio.wait_for(server.client.text_document_document_symbol_async(
        types.DocumentSymbolParams(doc_id(uri))), TIMEOUT)
    names = [s.name for s in found] if server.client_name == "minimal" else [
        c.name for c in found[0].children]
    assert [n for n in names if n != "module"] == [
        "@kernels", *(["@kernel"] if server.client_name == "minimal" else []),
        "@scale", "@blocked"]
    # Navigation in the healthy function still works.
    assert await definition(server, uri, "@kernels::@kernel", 0, len("@kernels::@") + 1) == (
        3, "@kernel")


async def test_folding_ranges_for_regions_and_split_chunks(server, uri):
    text = DOC + "// -----\nfunc.func @other() {\n  return\n}\n"
    await opened(server, uri, text)
    found = await asyncio.wait_for(server.client.text_document_folding_range_async(
        types.FoldingRangeParams(doc_id(uri))), TIMEOUT)
    assert sorted((f.start_line, f.end_line) for f in found) == [
        (0, 19), (0, 20), (1, 4), (2, 3), (6, 13), (15, 18), (21, 24), (22, 23)]


async def test_features_on_a_document_that_is_not_open_answer_empty(server):
    uri = "file:///e2e/never-opened.mlir"
    assert await lenses(server, uri) == []
    assert await hints(server, uri) == []
    assert await asyncio.wait_for(server.client.text_document_hover_async(
        types.HoverParams(doc_id(uri), types.Position(0, 0))), TIMEOUT) is None
    assert server.alive


async def test_inlay_hints_and_definition_in_utf32_for_eglot(shared_servers, uri):
    server = await shared_servers("eglot")
    assert server.encoding == "utf-32"
    await opened(server, uri)
    alloc_end = DOC.index("\n", DOC.index("%buf = gpu.alloc"))
    found = await hints(server, uri, 8, 9)
    assert [(h.position, h.label) for h in found] == [
        (position(DOC, DOC.index("%buf = gpu.alloc"), "utf-32"), "+ %t0 = gpu.wait async;"),
        (position(DOC, alloc_end, "utf-32"), "async [%t0] → %t1")]
    assert await definition(server, uri, "%buf[%c1]") == (9, "%buf")


async def test_features_positions_past_the_end_are_clamped_not_errors(server, uri):
    await opened(server, uri)
    far = types.Position(10_000, 10_000)
    past_line = types.Position(3, 10_000)
    for p in (far, past_line):
        assert await asyncio.wait_for(server.client.text_document_hover_async(
            types.HoverParams(doc_id(uri), p)), TIMEOUT) is None
        assert not await asyncio.wait_for(server.client.text_document_definition_async(
            types.DefinitionParams(doc_id(uri), p)), TIMEOUT)
        assert not await asyncio.wait_for(server.client.text_document_references_async(
            types.ReferenceParams(types.ReferenceContext(True), doc_id(uri), p)), TIMEOUT)
    # A range given end first, and one past the end, still gets the hints inside it.
    backwards = types.Range(types.Position(10, 0), types.Position(8, 0))
    found = await asyncio.wait_for(server.client.text_document_inlay_hint_async(
        types.InlayHintParams(doc_id(uri), backwards)), TIMEOUT)
    assert [h.label for h in found] == ["+ %t0 = gpu.wait async;", "async [%t0] → %t1",
                                        "async [%t1] → %t2"]
    assert len(await hints(server, uri, 0, 100_000)) == 4
    assert server.alive


async def test_features_on_garbage_answer_and_keep_serving(server, uri):
    """Any text: every feature answers (empty is fine), the server stays up, and a healthy
    function after the garbage keeps its lens and outline entry."""
    garbage = ("\x00}{%%^^@@::@\r\r\"unterminated \u2028 é𝄞 }}}} func.func @ {\r\n"
               "%a:: = = gpu.alloc async [ (\n// -----\n\r")
    text = garbage + "\nfunc.func @f(%n: index) {\n  %a = gpu.alloc (%n) : memref<?xf32>\n" \
                     "  return\n}\n"
    await opened(server, uri, text)
    client, doc = server.client, doc_id(uri)
    assert any(d.code == "syntax" for d in server.latest_diagnostics(uri))
    titles = [lens.command.title for lens in await lenses(server, uri)]
    assert titles == ["1 GPU op runs synchronously · Make asynchronous"]
    symbols = await asyncio.wait_for(client.text_document_document_symbol_async(
        types.DocumentSymbolParams(doc)), TIMEOUT)
    assert "@f" in [s.name for s in symbols]
    await asyncio.wait_for(client.text_document_folding_range_async(
        types.FoldingRangeParams(doc)), TIMEOUT)
    assert [h.label for h in await hints(server, uri)] == [
        "+ %t0 = gpu.wait async;", "async [%t0] → %t1", "+ gpu.wait [%t1];"]
    for at in range(0, len(garbage), 3):
        p = position(text, at, server.encoding)
        await asyncio.wait_for(client.text_document_hover_async(
            types.HoverParams(doc, p)), TIMEOUT)
        await asyncio.wait_for(client.text_document_definition_async(
            types.DefinitionParams(doc, p)), TIMEOUT)
        await asyncio.wait_for(client.text_document_references_async(
            types.ReferenceParams(types.ReferenceContext(True), doc, p)), TIMEOUT)
    assert server.alive


@pytest.mark.parametrize("answer", ["refused", "null", "error"])
async def test_code_lens_command_when_the_editor_does_not_apply_the_edit(start_server, answer):
    """An editor that refuses the edit, answers `null` (not a valid result) or fails: the
    command answers `applied: false` instead of waiting forever, and the server serves on."""
    server = await start_server("vscode")
    uri = "file:///e2e/test_features/apply_edit_" + answer + ".mlir"
    await opened(server, uri)
    server.client.apply_edit_answer = answer
    [lens, _, _] = await lenses(server, uri)
    assert await run_lens(server, lens) == {"applied": False}
    assert len(server.client.applied_edits) == 1
    if answer != "refused":
        assert any("did not apply the rewrite of @scale" in m.message for m in server.warnings)
    server.client.apply_edit_answer = "applied"
    assert await run_lens(server, lens) == {"applied": True}
