"""Diagnostics worded as in findings.py, published on open, with the document's version, and
cleared on close."""

from __future__ import annotations

import pytest

from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.async_region.suppression import suppress
from tests.e2e.conftest import fixture_names, fixture_text
from tests.e2e.lsp_session import SOURCE, diag_summary, position, rng

pytestmark = pytest.mark.asyncio(loop_scope="session")

WAIT = "'gpu.wait' op unexpected pre-existing gpu.wait"

WAIT_DOC = """\
func.func @sync_wait(%n: index) {
  %a = gpu.alloc (%n) : memref<?xf32>
  gpu.wait
  return
}
"""

SYNC_DOC = """\
func.func @f(%n: index, %x: f32) {
  %a = gpu.alloc (%n) : memref<?xf32>
  gpu.memset %a, %x : memref<?xf32>, f32
  gpu.dealloc %a : memref<?xf32>
  return
}
func.func @g(%n: index) {
  %b = gpu.alloc (%n) : memref<?xf32>
  return
}
"""


async def test_diagnostics_pre_existing_wait_error_at_op_name_with_related(server, uri):
    diagnostics = await server.open_and_wait(uri, WAIT_DOC)
    assert [diag_summary(d) for d in diagnostics] == [
        ("pre-existing-wait", 1, WAIT, (2, 2, 2, 10))]
    d = diagnostics[0]
    assert d.source == SOURCE
    related = d.related_information or []
    assert [(r.location.uri, r.location.range, r.message) for r in related] == [
        (uri, rng(1, 7, 1, 16), "'gpu.alloc' would be made asynchronous")]


async def test_diagnostics_sync_gpu_ops_hint_on_function_name(server, uri):
    diagnostics = await server.open_and_wait(uri, SYNC_DOC)
    assert sorted(diag_summary(d) for d in diagnostics) == [
        ("sync-gpu-ops", 4, "1 GPU op in @g runs synchronously", (6, 10, 6, 12)),
        ("sync-gpu-ops", 4, "3 GPU ops in @f run synchronously", (0, 10, 0, 12)),
    ]
    assert {d.source for d in diagnostics} == {SOURCE}
    assert all(not d.related_information for d in diagnostics)


@pytest.mark.parametrize("doc_uri, language_id", [
    ("file:///e2e/language/host.mlir", "plaintext"),
    ("file:///e2e/language/host.txt", "mlir"),
    ("untitled:Untitled-1", "mlir"),
], ids=["mlir_uri_other_language", "mlir_language_other_uri", "untitled_mlir"])
async def test_diagnostics_mlir_language_or_uri_diagnosed(server, doc_uri, language_id):
    """Language id `mlir` or a `*.mlir` URI is enough."""
    uri = doc_uri.replace("e2e/", f"e2e/{server.client_name}/").replace(
        "Untitled-1", f"Untitled-{server.client_name}")
    server.open(uri, WAIT_DOC, language_id=language_id)
    diagnostics = (await server.wait_diagnostics(uri, 1)).diagnostics
    assert [d.code for d in diagnostics] == ["pre-existing-wait"]


async def test_diagnostics_version_is_the_opened_version(server, uri):
    server.open(uri, SYNC_DOC, version=7)
    published = await server.wait_diagnostics(uri, 7)
    assert published.version == 7
    assert server.published_for(uri)[0].version == 7, "a publication before the open version"


async def test_diagnostics_syntax_error_reported_as_syntax(server, uri):
    text = "func.func @broken(%n: index) {\n  %a = gpu.alloc (%n : memref<?xf32>\n  return\n}\n"
    diagnostics = await server.open_and_wait(uri, text)
    codes = [d.code for d in diagnostics]
    assert "syntax" in codes, codes
    syntax = [d for d in diagnostics if d.code == "syntax"]
    assert all(d.severity == 1 and d.source == SOURCE and d.message for d in syntax)


@pytest.mark.parametrize("tail, line, message", [
    ("func.func @broken() {\r\n  {\r\n", 7, "expected an operation or an attribute name"),
    ("func.func @g() {  // größe\r\n  %0 = arith.constant 0 : index\r\n", 7,
     "expected '}' to close the region"),
    ("func.func @m(%a: memref<4xf32, #map>) {\r\n  return\r\n}\r\n", 6,
     "undefined symbol alias id 'map'"),
], ids=["unclosed-brace", "unclosed-region", "undefined-alias"])
async def test_diagnostics_text_llvm_rejects_has_syntax_error_where_it_stops(
        server, uri, tail, line, message):
    """A text that does not parse (CRLF, non-ASCII) is said to be so over the protocol, at the
    line where MLIR's parser stops; the healthy function before it keeps its hint."""
    text = SYNC_DOC.replace("\n", "\r\n").split("func.func @g")[0] + tail
    diagnostics = await server.open_and_wait(uri, text)
    syntax = [d for d in diagnostics if d.code == "syntax"]
    assert [(d.range.start.line, d.message[:len(message)]) for d in syntax] == [(line, message)]
    assert any(d.code == "sync-gpu-ops" and d.range.start.line == 0 for d in diagnostics)


async def test_diagnostics_close_publishes_empty_list(server, uri):
    diagnostics = await server.open_and_wait(uri, WAIT_DOC)
    assert diagnostics
    server.close(uri)
    await server.wait_cleared(uri)
    assert list(server.published_for(uri)[-1].diagnostics) == []


STRAY_TOKENS = """\
module {
  module @outer {
    func.func @in_outer(%n: index) {
      %a = gpu.alloc (%n) : memref<?xf32>
      return
    }
 oops} {
  }
}
"""


async def test_diagnostics_stray_tokens_after_function_same_as_check(server, uri):
    """Stray text closing a nested module early (what a half-finished edit leaves): the
    server reports what `check` reports on the same buffer, here the unknown op where
    mlir-opt-22 reports it (7:2)."""
    diagnostics = await server.open_and_wait(uri, STRAY_TOKENS)
    enc = server.encoding
    expected = sorted((f.code, int(f.severity), f.message,
                       _pos(STRAY_TOKENS, f.start, enc) + _pos(STRAY_TOKENS, f.end, enc))
                      for f in analyze(STRAY_TOKENS).findings)
    assert ("syntax", 1, "custom op 'oops' is unknown", (6, 1, 6, 5)) in expected
    assert sorted(diag_summary(d) for d in diagnostics) == expected


async def test_diagnostics_every_fixture_match_check_findings(server):
    """Every golden fixture: the published diagnostics are the findings `check` reports
    (default scope), at the same places, converted to the negotiated encoding."""
    mismatches = []
    for name in fixture_names():
        text = fixture_text(name)
        uri = f"file:///e2e/fixtures/{server.client_name}/{name}"
        diagnostics = await server.open_and_wait(uri, text)
        enc = server.encoding
        expected = sorted(
            (f.code, int(f.severity), f.message,
             _pos(text, f.start, enc) + _pos(text, f.end, enc),
             tuple(sorted((_pos(text, r.start, enc) + _pos(text, r.end, enc), r.message)
                          for r in f.related)))
            for f in suppress(text, analyze(text).findings))
        got = sorted(
            diag_summary(d) + (tuple(sorted(
                ((r.location.range.start.line, r.location.range.start.character,
                  r.location.range.end.line, r.location.range.end.character), r.message)
                for r in d.related_information or [])),)
            for d in diagnostics)
        if [e[:4] for e in expected] != [g[:4] for g in got]:
            mismatches.append((name, "findings", expected, got))
        elif expected != got:
            mismatches.append((name, "related information", expected, got))
        if any(d.source != SOURCE for d in diagnostics):
            mismatches.append((name, "source", [d.source for d in diagnostics]))
        server.close(uri)
    assert not mismatches, "\n\n".join(map(str, mismatches))


def _pos(text: str, offset: int, encoding: str) -> tuple[int, int]:
    p = position(text, offset, encoding)
    return (p.line, p.character)
