"""Suppression comments in the server: hidden findings are not published, and the quick fix
that adds `// gpu-async-lsp: ignore[code]` makes its diagnostic go once applied (CRLF and
non-ASCII lines included, in each negotiated encoding)."""

from __future__ import annotations

import pytest
import pytest_asyncio
from lsprotocol import types

from tests.e2e.lsp_session import diag_summary

pytestmark = pytest.mark.asyncio(loop_scope="session")

WAIT = "pre-existing-wait"
IGNORE_WAIT = "Ignore pre-existing-wait here (// gpu-async-lsp: ignore[pre-existing-wait])"
LLVM22_FIX = ("Make GPU ops in @f asynchronous, threading through the existing gpu.wait "
              "(as LLVM 22 does)")

DOC = """\
func.func @f(%n: index) {
  %a = gpu.alloc (%n) : memref<?xf32>
  gpu.wait
  return
}
// gpu-async-lsp: ignore[sync-gpu-ops]
func.func @quiet(%n: index) {
  %b = gpu.alloc (%n) : memref<?xf32>
  return
}
func.func @kept(%n: index) {
  %c = gpu.alloc (%n) : memref<?xf32>
  gpu.wait  // gpu-async-lsp: ignore[pre-existing-wait] the host reads %c next
  return
}
func.func @typo(%n: index) {
  %d = gpu.alloc (%n) : memref<?xf32>
  gpu.wait // gpu-async-lsp: ignore[pre-existing-wiat]
  return
}
"""


def codes(diagnostics) -> list[tuple[str, int]]:
    return sorted((d.code, d.range.start.line) for d in diagnostics)


async def apply_as_change(server, uri: str, action: types.CodeAction) -> list:
    """Send the action's edit as the editor does (didChange) and return the diagnostics of the
    new version."""
    edits = server.edits_of(action, uri)
    server.change(uri, [(e.range, e.new_text) for e in sorted(
        edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True)])
    return (await server.wait_diagnostics(uri)).diagnostics


async def test_suppression_hidden_findings_are_not_published(server, uri):
    diagnostics = await server.open_and_wait(uri, DOC)
    assert codes(diagnostics) == [("invalid-suppression", 17), (WAIT, 2), (WAIT, 17)]
    [typo] = [d for d in diagnostics if d.code == "invalid-suppression"]
    assert typo.severity == types.DiagnosticSeverity.Warning
    assert typo.message.startswith("unknown finding code 'pre-existing-wiat'")


async def test_suppression_quick_fix_added_comment_hides_the_diagnostic(server, uri):
    """Offered after the rewrite's own quick fix (which stays first); applied, the wait's
    error goes; the comment removed again, it comes back."""
    diagnostics = await server.open_and_wait(uri, DOC)
    [wait] = [d for d in diagnostics if d.code == WAIT and d.range.start.line == 2]
    actions = await server.code_actions(uri, wait.range, [wait])
    titles = [a.title for a in actions if a.kind == "quickfix"]
    assert titles == [LLVM22_FIX, IGNORE_WAIT]
    ignore = actions[[a.title for a in actions].index(IGNORE_WAIT)]
    assert not ignore.is_preferred
    assert [diag_summary(d) for d in ignore.diagnostics] == [diag_summary(wait)]
    fixed = DOC.replace("  gpu.wait\n",
                        "  gpu.wait // gpu-async-lsp: ignore[pre-existing-wait]\n", 1)
    assert server.applied(ignore, uri) == fixed
    after = await apply_as_change(server, uri, ignore)
    assert server.texts[uri] == fixed
    assert codes(after) == [("invalid-suppression", 17), (WAIT, 17)]
    start = fixed.index(" // gpu-async-lsp: ignore[pre-existing-wait]\n")
    server.replace(uri, start, start + len(" // gpu-async-lsp: ignore[pre-existing-wait]"), "")
    assert codes((await server.wait_diagnostics(uri)).diagnostics) == codes(diagnostics)


async def test_suppression_quick_fix_adds_the_code_to_an_existing_list(server, uri):
    diagnostics = await server.open_and_wait(uri, DOC)
    [wait] = [d for d in diagnostics if d.code == WAIT and d.range.start.line == 17]
    [ignore] = [a for a in await server.code_actions(uri, wait.range, [wait])
                if a.title == IGNORE_WAIT]
    after = await apply_as_change(server, uri, ignore)
    assert "gpu.wait // gpu-async-lsp: ignore[pre-existing-wiat, pre-existing-wait]\n" in (
        server.texts[uri])
    assert codes(after) == [("invalid-suppression", 17), (WAIT, 2)]


async def test_suppression_no_quick_fix_for_hints_syntax_or_stale_diagnostics(server, uri):
    text = DOC.replace("// gpu-async-lsp: ignore[sync-gpu-ops]\n", "") + "func.func @broken( {\n"
    diagnostics = await server.open_and_wait(uri, text)
    assert {"sync-gpu-ops", "syntax", WAIT} <= {d.code for d in diagnostics}
    others = [d for d in diagnostics if d.code in ("sync-gpu-ops", "syntax")]
    actions = await server.code_actions(uri, diagnostics=others)
    assert not [a for a in actions if a.title.startswith("Ignore ")]
    [wait] = [d for d in diagnostics if d.code == WAIT and d.range.start.line == 2]
    moved = types.Diagnostic(range=types.Range(types.Position(3, 2), types.Position(3, 10)),
                             message=wait.message, severity=wait.severity, code=WAIT,
                             source=wait.source)  # no such finding there
    actions = await server.code_actions(uri, diagnostics=[moved])
    assert not [a for a in actions if a.title.startswith("Ignore ")]


# -- CRLF and non-ASCII lines, in each encoding ------------------------------------------------

CRLF_DOC = """\
func.func @"größe🚀"(%n: index) {
  %a = gpu.alloc (%n) : memref<?xf32>
  %w = arith.constant {doc = "ü🚀"} 2 : index gpu.wait
  gpu.wait  // warten 🚀
  return
}
""".replace("\n", "\r\n")
IGNORE_COMMENT = "// gpu-async-lsp: ignore[pre-existing-wait]"
CRLF_FIXED = CRLF_DOC.replace(
    "2 : index gpu.wait\r\n", f"2 : index gpu.wait {IGNORE_COMMENT}\r\n").replace(
    "  gpu.wait  // warten", f"  {IGNORE_COMMENT}\r\n  gpu.wait  // warten")

ENCODED_CLIENTS = {"utf-8": "neovim", "utf-16": "vscode", "utf-32": "eglot"}


@pytest_asyncio.fixture(loop_scope="session", params=list(ENCODED_CLIENTS))
async def encoded(request, shared_servers):
    session = await shared_servers(ENCODED_CLIENTS[request.param])
    assert session.encoding == request.param
    return session


async def test_suppression_quick_fix_on_crlf_non_ascii_lines(encoded, uri):
    """The comment goes at the end of the op's line before its CR (after non-ASCII text), or,
    the line ending with another comment, alone on a new CRLF line above."""
    diagnostics = await encoded.open_and_wait(uri, CRLF_DOC)
    assert codes(diagnostics) == [(WAIT, 2), (WAIT, 3)]
    for line in (2, 3):
        [wait] = [d for d in diagnostics if d.code == WAIT and d.range.start.line == line]
        [ignore] = [a for a in await encoded.code_actions(uri, wait.range, [wait])
                    if a.title == IGNORE_WAIT]
        diagnostics = await apply_as_change(encoded, uri, ignore)
    assert encoded.texts[uri] == CRLF_FIXED
    assert list(diagnostics) == []
