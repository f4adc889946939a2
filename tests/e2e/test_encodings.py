"""Positions in the negotiated encoding (UTF-8 for Neovim, UTF-16 for VS Code, UTF-32 for
eglot), for every range the server sends and reads, and CRLF documents."""

from __future__ import annotations

import pytest
import pytest_asyncio

from gpu_async_lsp.async_region import analyze
from tests.e2e.clients import MAIN_CLIENTS
from tests.e2e.conftest import fixture_text
from tests.e2e.lsp_session import check_fix, diag_summary, position

pytestmark = pytest.mark.asyncio(loop_scope="session")

WAIT = "'gpu.wait' op unexpected pre-existing gpu.wait"
FIX_ALL = "Make all GPU ops in this file asynchronous"

# Non-ASCII text stands before the ops on their lines (an attribute of an op sharing the
# line, a quoted symbol name) and after them (comments), so columns differ per encoding.
DOC = """\
// Non-ASCII text before the ops on their lines: columns differ in UTF-8, UTF-16 and UTF-32.
func.func @"größe🚀"(%n: index) {
  %c = arith.constant {doc = "Größe 🚀"} 1 : index %a = gpu.alloc (%n) : memref<?xf32>  // ü 🚀
  gpu.dealloc %a : memref<?xf32>  // Speicher freigeben 🚀
  return
}
func.func @blocked(%n: index) {
  %w = arith.constant {doc = "ü🚀"} 2 : index gpu.wait  // wait 🚀
  %k = arith.constant {doc = "ß🚀"} 3 : index %b = gpu.alloc (%n) : memref<?xf32>  // größe
  return
}
"""

ENCODED_CLIENTS = {"utf-8": "neovim", "utf-16": "vscode", "utf-32": "eglot"}
# Worked out by hand: "ü" and "ß" are 2 UTF-8 bytes, "ö" 2, "🚀" 4 bytes / 2 UTF-16 units.
EXPECTED = {
    #         hint @"größe🚀"    gpu.wait       related gpu.alloc
    "utf-8": ((1, 10, 1, 24), (7, 49, 7, 57), (8, 54, 8, 63)),
    "utf-16": ((1, 10, 1, 20), (7, 46, 7, 54), (8, 51, 8, 60)),
    "utf-32": ((1, 10, 1, 19), (7, 45, 7, 53), (8, 50, 8, 59)),
}


@pytest.fixture(params=list(ENCODED_CLIENTS), ids=list(ENCODED_CLIENTS))
def encoding(request) -> str:
    return request.param


@pytest_asyncio.fixture(loop_scope="session")
async def encoded(encoding, shared_servers):
    session = await shared_servers(ENCODED_CLIENTS[encoding])
    assert session.encoding == encoding
    return session


async def test_encoding_non_ascii_diagnostic_ranges_exact(encoded, encoding, uri):
    diagnostics = await encoded.open_and_wait(uri, DOC)
    hint, wait, alloc = EXPECTED[encoding]
    assert sorted(diag_summary(d) for d in diagnostics) == [
        ("pre-existing-wait", 1, WAIT, wait),
        ("sync-gpu-ops", 4, '2 GPU ops in @"größe🚀" run synchronously', hint),
    ]
    if encoding != "utf-32":  # eglot declines related information
        [blocker] = [d for d in diagnostics if d.code == "pre-existing-wait"]
        [related] = blocker.related_information
        r = related.location.range
        assert (r.start.line, r.start.character, r.end.line, r.end.character) == alloc


async def test_encoding_non_ascii_fix_all_edit_equals_check_fix(encoded, uri):
    await encoded.open_and_wait(uri, DOC)
    actions = await encoded.code_actions(uri)
    [fix_all] = [a for a in actions if a.title == FIX_ALL]
    assert encoded.applied(fix_all, uri) == check_fix(DOC)


async def test_encoding_code_action_range_read_in_negotiated_encoding(encoded, uri):
    """A range covering only the `gpu.alloc` after the non-ASCII attribute selects @größe🚀."""
    await encoded.open_and_wait(uri, DOC)
    actions = await encoded.code_actions(uri, encoded.range_of(uri, "gpu.alloc"), [])
    assert sorted(a.title for a in actions) == [
        'Make GPU ops in @"größe🚀" asynchronous', FIX_ALL]


async def test_encoding_incremental_edits_after_non_ascii_read_in_encoding(encoded, encoding,
                                                                           uri):
    """Edits whose columns lie after non-ASCII text: an emoji inserted before the gpu.wait
    moves its diagnostic by the emoji's width in the encoding; deleting the gpu.wait makes
    @blocked rewritable, and the fix-all edit still equals check --fix on the new text."""
    await encoded.open_and_wait(uri, DOC)
    text = encoded.texts[uri]
    at = text.index('ü🚀"') + 1
    encoded.replace(uri, at, at, "🚀")
    diagnostics = (await encoded.wait_diagnostics(uri)).diagnostics
    [wait] = [d for d in diagnostics if d.code == "pre-existing-wait"]
    width = {"utf-8": 4, "utf-16": 2, "utf-32": 1}[encoding]
    start = EXPECTED[encoding][1]
    assert diag_summary(wait)[3] == (7, start[1] + width, 7, start[3] + width)

    text = encoded.texts[uri]
    at = text.index("gpu.wait")
    encoded.replace(uri, at, at + len("gpu.wait"), "")
    diagnostics = (await encoded.wait_diagnostics(uri)).diagnostics
    assert sorted(d.message for d in diagnostics) == sorted([
        '2 GPU ops in @"größe🚀" run synchronously', "1 GPU op in @blocked runs synchronously"])
    actions = await encoded.code_actions(uri)
    [fix_all] = [a for a in actions if a.title == FIX_ALL]
    assert encoded.applied(fix_all, uri) == check_fix(encoded.texts[uri])


async def test_encoding_non_ascii_fixture_ranges_match_check(encoded, encoding, uri):
    text = fixture_text("non_ascii.mlir")
    diagnostics = await encoded.open_and_wait(uri, text)
    expected = sorted(
        (f.code, int(f.severity), f.message,
         tuple(_pos(text, f.start, encoding) + _pos(text, f.end, encoding)))
        for f in analyze(text).findings)
    assert sorted(diag_summary(d) for d in diagnostics) == expected
    actions = await encoded.code_actions(uri)
    [fix_all] = [a for a in actions if a.title == FIX_ALL]
    assert encoded.applied(fix_all, uri) == check_fix(text)


async def test_encoding_big_first_open_crlf_non_ascii_ranges_match_check(encoded, encoding,
                                                                         uri):
    """A first open of units of 400k characters or more, shared with a forked process and
    published before its results are joined: CRLF, non-ASCII before and after the ops; every
    range in the negotiated encoding is check's, published once."""
    import bisect

    from tests.e2e.lsp_session import line_starts, units

    text = "".join(DOC.replace('@"größe🚀"', f'@"größe🚀{i}"').replace("@blocked", f"@blocked{i}")
                   for i in range(1300)).replace("\n", "\r\n")
    assert len(text) > 600_000  # units of 529k characters: shared (400k or more)
    diagnostics = await encoded.open_and_wait(uri, text)
    starts = line_starts(text)

    def place(offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(starts, offset) - 1
        return line, units(text[starts[line]:offset], encoding)

    expected = sorted((f.code, int(f.severity), f.message, (*place(f.start), *place(f.end)))
                      for f in analyze(text).findings)
    assert len(expected) > 1000
    assert sorted(diag_summary(d) for d in diagnostics) == expected
    await encoded.code_actions(uri)  # answered once the other process's results are joined
    assert len(encoded.published_for(uri)) == 1


def _pos(text: str, offset: int, encoding: str) -> tuple[int, int]:
    p = position(text, offset, encoding)
    return (p.line, p.character)


# -- CRLF --------------------------------------------------------------------------------------

@pytest.mark.parametrize("client_name", MAIN_CLIENTS)
async def test_encoding_crlf_document_ranges_fix_and_edits(shared_servers, client_name, uri):
    session = await shared_servers(client_name)
    text = fixture_text("crlf.mlir")
    assert "\r\n" in text
    diagnostics = await session.open_and_wait(uri, text)
    assert sorted(diag_summary(d) for d in diagnostics) == sorted([
        ("sync-gpu-ops", 4, "3 GPU ops in @crlf run synchronously", (7, 12, 7, 17)),
        ("sync-gpu-ops", 4, "1 GPU op in @crlf_blocks runs synchronously", (23, 10, 23, 22)),
    ])
    actions = await session.code_actions(uri)
    [fix_all] = [a for a in actions if a.title == FIX_ALL]
    fixed = session.applied(fix_all, uri)
    assert fixed == check_fix(text)
    assert "\n" not in fixed.replace("\r\n", ""), "a bare LF in the fixed CRLF text"

    # Insert a CRLF line with a gpu.wait before `gpu.dealloc` (line 15).
    at = text.index("    gpu.dealloc")
    session.replace(uri, at, at, "    gpu.wait\r\n")
    diagnostics = (await session.wait_diagnostics(uri)).diagnostics
    assert sorted(diag_summary(d) for d in diagnostics) == [
        ("pre-existing-wait", 1, WAIT, (15, 4, 15, 12)),
        ("sync-gpu-ops", 4, "1 GPU op in @crlf_blocks runs synchronously", (24, 10, 24, 22)),
    ]
    actions = await session.code_actions(uri)
    [fix_all] = [a for a in actions if a.title == FIX_ALL]
    assert session.applied(fix_all, uri) == check_fix(session.texts[uri])
