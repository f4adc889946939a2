"""Incremental edits: diagnostics follow each change, carry its version, and a result for an
older version is never published after a newer one."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.lsp_session import check_fix, diag_summary, line_starts, prefetch_check_fix, rng

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


# -- incremental analysis equals a fresh analysis -----------------------------------------------

def _summaries(diagnostics) -> list[tuple]:
    return sorted(diag_summary(d) for d in diagnostics)


async def _fresh(session, text: str, tag: str) -> list[tuple]:
    """The diagnostics of `text` opened as a new document in the same server."""
    fresh_uri = f"file:///e2e/fresh/{tag}-{len(session.texts)}.mlir"
    diagnostics = await session.open_and_wait(fresh_uri, text)
    session.close(fresh_uri)
    return _summaries(diagnostics)


BRACES_IN_COMMENT = """\
func.func @f(%n: index) {
  // a comment {{with braces}}
  %a = gpu.alloc (%n) : memref<?xf32>
  return
}
func.func @g(%n: index) {
  %b = gpu.alloc (%n) : memref<?xf32>
  return
}
"""


async def test_incremental_newline_in_comment_frees_braces_same_as_fresh_open(server, uri):
    """Enter inside a comment moves its `}}` into code: @f now ends at the first brace, the
    second is unexpected, and so is @f's old closing brace on line 5. The diagnostics after
    the edit are those of the new text opened afresh."""
    await server.open_and_wait(uri, BRACES_IN_COMMENT)
    at = BRACES_IN_COMMENT.index("braces}}") + len("braces")
    server.replace(uri, at, at, "\n")
    after_edit = _summaries((await server.wait_diagnostics(uri)).diagnostics)
    fresh = await _fresh(server, server.texts[uri], "braces")
    assert ("syntax", 1, "unexpected '}'", (5, 0, 5, 1)) in fresh
    assert after_edit == fresh


SNIPPETS = ["  gpu.wait\n", "}", "{", "\n// -----\n", "  %z = gpu.alloc (%n) : memref<?xf32>\n",
            "x", "@", "\n", "🚀 ", "\r\n", '"', "  scf.if %c {\n",
            "func.func @new(%n: index) {\n  %q = gpu.alloc (%n) : memref<?xf32>\n  return\n}\n"]


@pytest.mark.parametrize("seed", range(4))
async def test_incremental_random_edits_same_as_fresh_open(shared_servers, seed):
    """40 seeded random edits (insertions of MLIR fragments, braces, split markers, CRLF and
    non-ASCII text; deletions) on golden fixtures: after each, the published diagnostics are
    those of the same text opened afresh. Whatever the server reuses between versions must not
    show."""
    import random

    from tests.e2e.conftest import fixture_text

    session = await shared_servers("neovim")  # UTF-8 columns: the most conversions
    rnd = random.Random(seed)
    base = "\n// -----\n".join(fixture_text(name) for name in (
        "scf_regions.mlir", "nested_modules.mlir", "multi_block.mlir", "pre_existing_wait.mlir"))
    uri = f"file:///e2e/random-edits/{seed}.mlir"
    await session.open_and_wait(uri, base)
    for step in range(40):
        text = session.texts[uri]
        start = rnd.randrange(len(text) + 1)
        if rnd.random() < 0.55:
            session.replace(uri, start, start, rnd.choice(SNIPPETS))
        else:
            session.replace(uri, start, min(len(text), start + rnd.randrange(1, 40)), "")
        after_edit = _summaries((await session.wait_diagnostics(uri)).diagnostics)
        fresh = await _fresh(session, session.texts[uri], f"{seed}-{step}")
        assert after_edit == fresh, (
            f"seed {seed}, edit {step} (version {session.versions[uri]}): only after edits "
            f"{[d for d in after_edit if d not in fresh]}, only fresh "
            f"{[d for d in fresh if d not in after_edit]}")


LINE_SNIPPETS = ["  gpu.wait\n", "\n", "  %z = gpu.alloc (%n) : memref<?xf32>\n",
                 "  gpu.memset %buf, %x : memref<?xf32>, f32\n", "  // 🚀 größe\r\n",
                 "  %k = arith.constant 1 : index\n", "  func.call @ext() : () -> ()\n"]


def _line_edits(text: str, seed: int, count: int) -> list[tuple[int, int, str]]:
    """`count` seeded whole-line edits (start, end, new text), each on the text the ones
    before it left: insertions of LINE_SNIPPETS, deletions of lines without braces."""
    import random

    rnd = random.Random(seed)
    edits = []
    for _ in range(count):
        starts = line_starts(text)[:-1]
        if rnd.random() < 0.7:
            at = rnd.choice(starts)
            edit = (at, at, rnd.choice(LINE_SNIPPETS))
        else:  # a line that holds no brace: an op, a comment, a blank line
            at = rnd.choice([i for i in starts
                             if not set(text[i:text.index("\n", i)]) & set("{}")])
            edit = (at, text.index("\n", at) + 1, "")
        edits.append(edit)
        text = text[:edit[0]] + edit[2] + text[edit[1]:]
    return edits


@pytest.mark.parametrize("client_name", ["vscode", "neovim"])
async def test_incremental_random_line_edits_fix_all_equals_check_fix(shared_servers,
                                                                      client_name):
    """12 seeded whole-line insertions and deletions in host code: after each, the whole-file
    action (versioned for VS Code) gives `check --fix` of the current text, and none is
    offered when `check --fix` changes nothing."""
    from gpu_async_lsp.async_region import analyze
    from tests.e2e.conftest import fixture_text

    session = await shared_servers(client_name)
    base = "\n// -----\n".join(fixture_text(name) for name in (
        "side_effects.mlir", "multi_block.mlir", "non_ascii.mlir", "layout.mlir"))
    edits = _line_edits(base, seed=7, count=12)
    texts = [base]
    for start, end, new_text in edits:
        texts.append(texts[-1][:start] + new_text + texts[-1][end:])
    assert not any(analyze(t).has_syntax_errors for t in texts)
    prefetch_check_fix(texts)
    uri = f"file:///e2e/random-line-edits/{client_name}.mlir"
    await session.open_and_wait(uri, base)
    for step, (start, end, new_text) in enumerate(edits):
        session.replace(uri, start, end, new_text)
        assert session.texts[uri] == texts[step + 1]
        await session.wait_diagnostics(uri)
        expected = check_fix(session.texts[uri])
        fix_all = [a for a in await session.code_actions(uri)
                   if a.kind == "source.fixAll.gpuAsync"]
        if expected == session.texts[uri]:
            assert fix_all == [], f"edit {step}: a whole-file action that changes nothing"
            continue
        assert len(fix_all) == 1, f"edit {step}: {[a.title for a in fix_all]}"
        assert session.applied(fix_all[0], uri) == expected, f"edit {step}"
