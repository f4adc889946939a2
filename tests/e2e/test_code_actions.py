"""Code actions: per function, as the quick fix of its hint, and for the whole file; their
edits give exactly what `check --fix` gives, and what `mlir-opt-22`'s pass gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from tests.e2e.clients import has_disabled_support, has_document_changes
from tests.e2e.conftest import fixture_text
from tests.e2e.lsp_session import check_fix, diag_summary, fix_function, prefetch_check_fix
from tests.mlir_tools import PASS_PIPELINE, mlir_opt, require_mlir_opt

pytestmark = pytest.mark.asyncio(loop_scope="session")

EXAMPLES = Path(__file__).resolve().parent.parent.parent / "examples"
FIX_ALL = "Make all GPU ops in this file asynchronous"
FIX_ALL_KIND = "source.fixAll.gpuAsync"
WAIT = "'gpu.wait' op unexpected pre-existing gpu.wait"


def title(fn: str) -> str:
    return f"Make GPU ops in {fn} asynchronous"


def llvm22_title(fn: str) -> str:
    return f"{title(fn)}, threading through the existing gpu.wait (as LLVM 22 does)"


def ignore_title(code: str) -> str:
    return f"Ignore {code} here (// gpu-async-lsp: ignore[{code}])"


def rewrites(actions: list[types.CodeAction]) -> list[types.CodeAction]:
    """The actions that rewrite (not those adding a suppression comment)."""
    return [a for a in actions if not a.title.startswith("Ignore ")]


DOC = """\
func.func @f(%n: index, %x: f32) {
  %a = gpu.alloc (%n) : memref<?xf32>
  gpu.memset %a, %x : memref<?xf32>, f32
  gpu.dealloc %a : memref<?xf32>
  return
}
func.func @blocked(%n: index) {
  %b = gpu.alloc (%n) : memref<?xf32>
  gpu.wait
  return
}
func.func @g(%n: index, %c: i1) {
  %d = gpu.alloc (%n) : memref<?xf32>
  scf.if %c {
    gpu.dealloc %d : memref<?xf32>
  }
  return
}
func.func @nothing(%n: index) {
  %e = arith.addi %n, %n : index
  return
}
"""


def summary(actions: list[types.CodeAction]) -> list[tuple]:
    return sorted((a.title, a.kind, a.disabled.reason if a.disabled else None)
                  for a in actions)


def hint_of(diagnostics, fn: str) -> types.Diagnostic:
    [hint] = [d for d in diagnostics if d.code == "sync-gpu-ops" and f" {fn} " in d.message]
    return hint


def one(actions, title_: str, kind: str) -> types.CodeAction:
    found = [a for a in actions if a.title == title_ and a.kind == kind]
    assert len(found) == 1, (title_, kind, summary(actions))
    return found[0]


async def test_code_actions_whole_document_lists_rewrite_quickfix_and_fix_all(server, uri):
    """One action per function and intent: the quick fix of its hint (not also a refactor
    with the same edit); the wait blocker's quick fix is LLVM 22's rewrite, and, last, one
    that hides it with a comment."""
    diagnostics = await server.open_and_wait(uri, DOC)
    actions = await server.code_actions(uri)
    expected = [
        (FIX_ALL, FIX_ALL_KIND, None),
        (title("@f"), "quickfix", None),
        (title("@g"), "quickfix", None),
        (llvm22_title("@blocked"), "quickfix", None),
        (ignore_title("pre-existing-wait"), "quickfix", None),
    ]
    assert summary(actions) == sorted(expected)
    assert actions[-1].title == ignore_title("pre-existing-wait")
    for fn in ("@f", "@g"):
        quickfix = one(actions, title(fn), "quickfix")
        assert quickfix.is_preferred is True
        assert [diag_summary(d) for d in quickfix.diagnostics or []] == [
            diag_summary(hint_of(diagnostics, fn))]


async def test_code_actions_edit_is_versioned_document_changes_only_when_supported(server, uri):
    """VS Code advertises workspaceEdit.documentChanges: a TextDocumentEdit naming the URI and
    version; Neovim 0.11 and the minimal client do not: plain `changes` keyed by URI."""
    await server.open_and_wait(uri, DOC, version=4)
    for action in await server.code_actions(uri):
        if action.disabled:
            continue
        edit = action.edit
        assert edit is not None, action.title
        if has_document_changes(server.client_name):
            assert edit.changes is None
            [doc_edit] = edit.document_changes
            assert isinstance(doc_edit, types.TextDocumentEdit)
            assert (doc_edit.text_document.uri, doc_edit.text_document.version) == (uri, 4)
            assert doc_edit.edits
        else:
            assert edit.document_changes is None
            assert list(edit.changes) == [uri] and edit.changes[uri]


async def test_code_actions_fix_all_edit_equals_check_fix(server, uri):
    await server.open_and_wait(uri, DOC)
    actions = await server.code_actions(uri)
    fixed = server.applied(one(actions, FIX_ALL, FIX_ALL_KIND), uri)
    assert fixed == check_fix(DOC)


@pytest.mark.parametrize("fn", ["@f", "@g"])
@pytest.mark.parametrize("kind", ["refactor.rewrite", "quickfix"])
async def test_code_actions_function_edit_rewrites_only_that_function(server, uri, fn, kind):
    """The refactor is offered where its hint is not in the context (or refactors only are
    asked for)."""
    await server.open_and_wait(uri, DOC)
    actions = await server.code_actions(uri, diagnostics=None if kind == "quickfix" else [])
    fixed = server.applied(one(actions, title(fn), kind), uri)
    assert fixed == fix_function(DOC, fn)
    assert fixed != DOC


async def test_code_actions_wait_blocker_quick_fix_is_llvm22_rewrite_of_its_function(server,
                                                                                  uri):
    """On a pre-existing-wait finding: LLVM 22's rewrite of @blocked, nothing else changed
    (the same text as `check --fix --semantics llvm22` gives that function)."""
    diagnostics = await server.open_and_wait(uri, DOC)
    [wait] = [d for d in diagnostics if d.code == "pre-existing-wait"]
    actions = await server.code_actions(uri, server.range_of(uri, "gpu.wait"), [wait])
    per_function = [a for a in rewrites(actions) if a.kind != FIX_ALL_KIND]
    assert summary(per_function) == [(llvm22_title("@blocked"), "quickfix", None)]
    [fix] = per_function
    assert [diag_summary(d) for d in fix.diagnostics] == [diag_summary(wait)]
    assert server.applied(fix, uri) == fix_function(DOC, "@blocked", "llvm22")
    assert "gpu.wait [%t1]" in server.applied(fix, uri)
    assert summary([a for a in actions if a.kind == FIX_ALL_KIND]) == [
        (FIX_ALL, FIX_ALL_KIND, None)]


async def test_code_actions_blocked_function_disabled_only_with_disabled_support(server, uri):
    """A function that no rewrite gets past (a GPU op in generic form): its action is listed,
    disabled with the first blocker's message, when the client supports disabled actions, and
    absent otherwise."""
    await server.open_and_wait(uri, GENERIC_DOC)
    actions = await server.code_actions(uri, diagnostics=[])
    if has_disabled_support(server.client_name):
        assert summary(actions) == [(title("@generic"), "refactor.rewrite", GENERIC)]
    else:
        assert actions == [], summary(actions)


async def test_code_actions_launch_blocker_quick_fix_threads_gpu_launch(server, uri):
    """On a launch-not-outlined finding: the rewrite with the gpu.launch threaded like any
    async op (`check --fix --thread-launch`), its body untouched."""
    diagnostics = await server.open_and_wait(uri, LAUNCH_DOC)
    [launch] = [d for d in diagnostics if d.code == "launch-not-outlined"]
    actions = await server.code_actions(uri, diagnostics=[launch])
    [fix] = [a for a in rewrites(actions) if a.kind == "quickfix"]
    assert fix.title == f"{title('@launch')}, gpu.launch included"
    fixed = server.applied(fix, uri)
    assert fixed == check_fix(LAUNCH_DOC, thread_launch=True)
    assert "%t2 = gpu.launch async [%t1] blocks" in fixed


GENERIC = "'gpu.memcpy' op in generic form cannot be rewritten in place; write it in its custom form"
GENERIC_DOC = """\
func.func @generic(%n: index, %host: memref<?xf32>) {
  %dev = gpu.alloc (%n) : memref<?xf32>
  "gpu.memcpy"(%dev, %host) : (memref<?xf32>, memref<?xf32>) -> ()
  return
}
"""


LAUNCH = "'gpu.launch' op replace with gpu.launch_func first"
LAUNCH_DOC = """\
func.func @launch(%n: index) {
  %a = gpu.alloc (%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n)
             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {
    gpu.terminator
  }
  return
}
"""


async def test_code_actions_disabled_reason_is_first_blocker(server, uri):
    text = """\
func.func @two_blockers(%n: index, %dep: !gpu.async.token) {
  %a = gpu.alloc (%n) : memref<?xf32>
  %b, %t = gpu.alloc async [%dep] (%n) : memref<?xf32>
  gpu.wait
  return
}
"""
    diagnostics = await server.open_and_wait(uri, text)
    assert sorted(d.code for d in diagnostics) == ["already-async", "pre-existing-wait"]
    actions = await server.code_actions(uri, diagnostics=diagnostics)
    # Both findings are fixed by the one LLVM 22 rewrite of the function.
    [fix] = rewrites(actions)
    assert (fix.title, fix.kind) == (llvm22_title("@two_blockers"), "quickfix")
    assert sorted(d.code for d in fix.diagnostics) == ["already-async", "pre-existing-wait"]
    assert server.applied(fix, uri) == check_fix(text, "llvm22")
    assert sorted(a.title for a in actions if a not in rewrites(actions)) == [
        ignore_title("already-async"), ignore_title("pre-existing-wait")]
    text = GENERIC_DOC.replace("  return", "  gpu.wait\n  return")
    diagnostics = await server.open_and_wait(uri + ".generic", text)
    actions = await server.code_actions(uri + ".generic", diagnostics=diagnostics)
    if has_disabled_support(server.client_name):
        assert summary(rewrites(actions)) == [(title("@generic"), "refactor.rewrite", GENERIC)]
    else:
        assert rewrites(actions) == []


async def test_code_actions_range_in_one_function_without_its_hint_no_quickfix(server, uri):
    await server.open_and_wait(uri, DOC)
    rng = server.range_of(uri, "gpu.dealloc", after="func.func @g")
    actions = await server.code_actions(uri, rng, diagnostics=[])
    assert summary(actions) == sorted([(FIX_ALL, FIX_ALL_KIND, None),
                                       (title("@g"), "refactor.rewrite", None)])


async def test_code_actions_range_spanning_two_functions_offers_both(server, uri):
    await server.open_and_wait(uri, DOC)
    start = server.range_of(uri, "gpu.dealloc").start
    end = server.range_of(uri, "gpu.alloc", after="func.func @g").end
    actions = await server.code_actions(uri, types.Range(start, end), diagnostics=[])
    expected = [(FIX_ALL, FIX_ALL_KIND, None), (title("@f"), "refactor.rewrite", None),
                (title("@g"), "refactor.rewrite", None),
                (llvm22_title("@blocked"), "refactor.rewrite", None)]
    assert summary(actions) == sorted(expected)


@pytest.mark.parametrize("only, kinds", [
    (["source"], {FIX_ALL_KIND}),
    ([FIX_ALL_KIND], {FIX_ALL_KIND}),
    (["quickfix"], {"quickfix"}),
    (["refactor"], {"refactor.rewrite"}),
], ids=["source", "fix_all", "quickfix", "refactor"])
async def test_code_actions_context_only_filters_kinds(server, uri, only, kinds):
    await server.open_and_wait(uri, DOC)
    actions = await server.code_actions(uri, only=only)
    assert actions, f"nothing for only={only}"
    assert {a.kind for a in actions} == kinds, summary(actions)


async def test_code_actions_nothing_to_rewrite_offers_nothing(server, uri):
    text = "func.func @nothing(%n: index) {\n  %e = arith.addi %n, %n : index\n  return\n}\n"
    await server.open_and_wait(uri, text)
    assert await server.code_actions(uri) == []


async def test_code_actions_only_blocked_functions_no_fix_all(server, uri):
    text = DOC[DOC.index("func.func @blocked"):DOC.index("func.func @g")]
    await server.open_and_wait(uri, text)
    actions = await server.code_actions(uri)
    # The file-wide fix keeps its meaning (the chosen semantics); the blocker's own quick fix
    # is LLVM 22's rewrite.
    assert FIX_ALL not in {a.title for a in actions}
    assert summary(rewrites(actions)) == [(llvm22_title("@blocked"), "quickfix", None)]


async def test_code_actions_every_golden_fixture_fix_all_equals_check_fix(server):
    """Each fixture with an `.expected.mlir` (a rewrite and no syntax error): the whole-file
    action gives `check --fix`'s text."""
    fixtures = Path(__file__).resolve().parent.parent / "fixtures"
    names = sorted(p.name.replace(".expected", "") for p in fixtures.glob("*.expected.mlir"))
    assert len(names) > 10
    prefetch_check_fix(fixture_text(name) for name in names)
    wrong = []
    for name in names:
        text = fixture_text(name)
        uri = f"file:///e2e/fix_all/{server.client_name}/{name}"
        await server.open_and_wait(uri, text)
        actions = await server.code_actions(uri)
        fix_all = [a for a in actions if a.kind == FIX_ALL_KIND]
        if len(fix_all) != 1:
            wrong.append((name, summary(actions)))
        elif server.applied(fix_all[0], uri) != check_fix(text):
            wrong.append((name, "fixed text differs from check --fix"))
        server.close(uri)
    assert not wrong, "\n".join(map(str, wrong))


async def test_code_actions_matmul_fix_all_equals_check_fix_and_mlir_opt(server, uri):
    """The edit applied in the editor is `check --fix`'s text and, both reprinted by mlir-opt-22,
    what `mlir-opt-22`'s gpu-async-region pass makes of the original."""
    text = (EXAMPLES / "matmul.mlir").read_text(encoding="utf-8")
    await server.open_and_wait(uri, text)
    actions = await server.code_actions(uri)
    fixed = server.applied(one(actions, FIX_ALL, FIX_ALL_KIND), uri)
    assert fixed == check_fix(text)
    require_mlir_opt()
    reference = mlir_opt(text, PASS_PIPELINE, check=True).stdout
    ours = mlir_opt(fixed, check=True).stdout
    assert ours == mlir_opt(reference, check=True).stdout
    assert "gpu.wait async" in ours


SEPARATE_STREAMS = """\
module attributes {gpu.container_module} {
gpu.module @k { gpu.func @f() kernel { gpu.return } }
func.func @apart(%m: memref<4xf32>, %v: f32) {
  %c1 = arith.constant 1 : index
  %a = gpu.wait async
  %x = gpu.launch_func async [%a] @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
  gpu.memset %m, %v : memref<4xf32>, f32
  %b = gpu.wait async
  %y = gpu.launch_func async [%b] @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
  gpu.wait [%x, %y]
  return
}
}
"""


async def test_code_actions_say_llvm22_serializes_separate_streams_and_offer_sync_only(server, uri):
    """Two streams the function starts apart: LLVM 22's rewrite would make the second wait for
    the first. Its quick fix says so, and the sync-only rewrite is offered too: each gives
    `check --fix` of the same semantics."""
    diagnostics = await server.open_and_wait(uri, SEPARATE_STREAMS)
    actions = await server.code_actions(uri, diagnostics=diagnostics)
    titles = [a.title for a in rewrites(actions)]
    assert titles == [
        f"{title('@apart')}, threading through the existing gpu.wait (as LLVM 22 does: "
        "serializes the streams it starts apart)",
        f"{title('@apart')}, threading only its synchronous ops (keeps its streams apart)"]
    serial, apart = rewrites(actions)
    assert server.applied(serial, uri) == check_fix(SEPARATE_STREAMS, "llvm22")
    assert server.applied(apart, uri) == check_fix(SEPARATE_STREAMS, "sync-only")
    assert "  %b = gpu.wait async\n" in server.applied(apart, uri)
