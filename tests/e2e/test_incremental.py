"""Incremental edits: diagnostics follow each change, carry its version, and a result for an
older version is never published after a newer one (issue 3, item 2)."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.lsp_session import check_fix, diag_summary, rng

pytestmark = pytest.mark.asyncio(loop_scope="session")

WAIT = "'gpu.wait' op unexpected pre-existing gpu.wait"
FIX_ALL = "Make all GPU ops in this file asynchronous"

DOC = """\
func.func @f(%n: index, %x: f32) {
  %a = gpu.alloc (%n) : memref<?xf32>
  gpu.memset %a, %x : memref<?xf32>, f32
  gpu.dealloc %a : memref<?xf32>
  return
}
"""
HINT_V1 = ("sync-gpu-ops", 4, "3 GPU ops in @f run synchronously", (0, 10, 0, 12))
MEMSET = "  gpu.memset %a, %x : memref<?xf32>, f32\n"


async def test_incremental_insert_wait_then_delete_diagnostics_follow(server, uri):
    assert [diag_summary(d) for d in await server.open_and_wait(uri, DOC)] == [HINT_V1]

    at = DOC.index("  gpu.dealloc")
    v2 = server.replace(uri, at, at, "  gpu.wait\n")
    assert v2 == 2
    diagnostics = (await server.wait_diagnostics(uri, 2)).diagnostics
    assert [diag_summary(d) for d in diagnostics] == [
        ("pre-existing-wait", 1, WAIT, (3, 2, 3, 10))]
    related = sorted((r.location.range.start.line, r.location.range.start.character,
                      r.location.range.end.line, r.location.range.end.character, r.message)
                     for r in diagnostics[0].related_information or [])
    assert related == [
        (1, 7, 1, 16, "'gpu.alloc' would be made asynchronous"),
        (2, 2, 2, 12, "'gpu.memset' would be made asynchronous"),
        (4, 2, 4, 13, "'gpu.dealloc' would be made asynchronous"),
    ]

    v3 = server.change(uri, [(rng(3, 0, 4, 0), "")])
    assert server.texts[uri] == DOC
    published = await server.wait_diagnostics(uri, v3)
    assert [diag_summary(d) for d in published.diagnostics] == [HINT_V1]
    assert [p.version for p in server.published_for(uri)][-1] == 3


async def test_incremental_several_changes_in_one_notification_applied_in_order(server, uri):
    await server.open_and_wait(uri, DOC)
    text = server.texts[uri]
    first = server.range_of(uri, "@f")
    # The second range is relative to the text after the first change (LSP 3.17).
    server.change(uri, [
        (first, "@renamed"),
        (rng(4, 0, 4, 0), MEMSET),
        (rng(0, 0, 0, 0), "// a comment line\n"),
    ])
    assert server.texts[uri] != text
    published = await server.wait_diagnostics(uri)
    assert [diag_summary(d) for d in published.diagnostics] == [
        ("sync-gpu-ops", 4, "4 GPU ops in @renamed run synchronously", (1, 10, 1, 18))]
    actions = await server.code_actions(uri)
    [fix_all] = [a for a in actions if a.title == FIX_ALL]
    assert server.applied(fix_all, uri) == check_fix(server.texts[uri])


async def test_incremental_whole_document_change_replaces_text(server, uri):
    await server.open_and_wait(uri, DOC)
    new = DOC.replace("  gpu.memset", "  gpu.wait\n  gpu.memset")
    version = server.change(uri, [(None, new)])
    diagnostics = (await server.wait_diagnostics(uri, version)).diagnostics
    assert [d.code for d in diagnostics] == ["pre-existing-wait"]
    assert diagnostics[0].range == rng(2, 2, 2, 10)


async def test_incremental_burst_of_20_changes_newest_version_published_last(server, uri):
    """20 changes sent without waiting: the last publication is for the last version, no
    publication is for an older version than one before it, and each publication describes
    the text of the version it names (4 + k ops after k inserted memsets)."""
    await server.open_and_wait(uri, DOC)
    at = DOC.index("  return")
    for _ in range(20):
        server.replace(uri, at, at, MEMSET)
    assert server.versions[uri] == 21
    await server.wait_diagnostics(uri, 21)
    # Let anything still in flight arrive: a request round trip, then a short pause.
    await server.code_actions(uri)
    await asyncio.sleep(0.3)
    published = server.published_for(uri)
    versions = [p.version for p in published]
    assert versions[-1] == 21, versions
    assert versions == sorted(versions), f"an older version published after a newer: {versions}"
    for p in published:
        n = 3 + (p.version - 1)
        assert [diag_summary(d) for d in p.diagnostics] == [
            ("sync-gpu-ops", 4, f"{n} GPU ops in @f run synchronously", (0, 10, 0, 12))], (
            f"version {p.version}")
    assert len(published) <= 21


async def test_incremental_code_action_after_edits_uses_current_text_and_version(server, uri):
    await server.open_and_wait(uri, DOC)
    at = DOC.index("  return")
    server.replace(uri, at, at, MEMSET)
    server.replace(uri, at, at, "  %k = arith.constant 1 : index\n")
    await server.wait_diagnostics(uri, 3)
    actions = await server.code_actions(uri)
    [fix_all] = [a for a in actions if a.title == FIX_ALL]
    # edits_of checks the TextDocumentEdit names version 3 for documentChanges clients.
    assert server.applied(fix_all, uri) == check_fix(server.texts[uri])


async def test_incremental_code_action_right_after_change_sees_the_change(server, uri):
    """A code action request sent right behind a didChange answers for the changed text."""
    await server.open_and_wait(uri, DOC)
    at = DOC.index("  return")
    server.replace(uri, at, at, MEMSET)
    actions = await server.code_actions(uri, diagnostics=[])
    [fix_all] = [a for a in actions if a.title == FIX_ALL]
    assert server.applied(fix_all, uri) == check_fix(server.texts[uri])
