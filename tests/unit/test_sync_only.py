"""`--semantics sync-only`: the original pass's threading of the synchronous ops only. A
pre-existing `gpu.wait` or async op stays as written, and the chain is synchronized before
it, as before a host op with side effects.

The ordering argument (docs/cli.md): the program as written finished each synchronous op
before it issued anything after it, and a synchronous op never waited for hand-written work
issued before it (it ran on a stream of its own). So the rewrite keeps every ordering when
(1) it adds no dependency to, and removes none from, an op the text made async or a
`gpu.wait` of the text, and (2) no token of its chain is pending (made, not yet waited) where
such an op is issued. Both are checked here on the fixed text of generated programs that
hold hand-written chains (the llvm22 profile), as properties of the text, not of the plan.
"""

from __future__ import annotations

import pytest

from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.async_region.rewriter import LLVM22, SYNC_ONLY
from gpu_async_lsp.edits import SortedEdits
from gpu_async_lsp.syntax import parse_document
from tests.differential.program_generator_llvm22 import generate_llvm22_program
from tests.relayout import laid_out

HAND_WRITTEN_CHAINS = """\
module attributes {gpu.container_module} {
gpu.module @k { gpu.func @f() kernel { gpu.return } }
func.func @f(%m : memref<4xf32>, %v : f32) {
  %c1 = arith.constant 1 : index
  %a = gpu.wait async
  %b = gpu.wait async
  %x = gpu.launch_func async [%a] @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
  %y = gpu.launch_func async [%b] @k::@f blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
  gpu.memset %m, %v : memref<4xf32>, f32
  gpu.wait [%x, %y]
  return
}
}
"""


def _untouched(doc, edits) -> list[str]:
    """The ops of the text that are async or a gpu.wait that an edit changes (an insertion
    before an op, at its first character, leaves it as it is)."""
    touched = []
    for op in doc.walk():
        g = op.gpu
        if g is None or not (op.name == "gpu.wait" or g.async_kw is not None):
            continue
        if any(e.start < op.end and e.end > op.start and not (e.start == e.end == op.start)
               or op.start < e.start < op.end for e in edits):
            touched.append(doc.text[op.start:op.end])
    return touched


def _pending_at_hand_written(written_doc, fixed: str) -> list[str]:
    """Tokens of the rewrite's chain (names the text as written does not have) still pending
    where an op of the text that is async, or a gpu.wait of the text, is issued."""
    written = [op for op in written_doc.walk() if op.name == "func.func"]
    doc = parse_document(fixed)
    problems = []
    for func, before in zip((op for op in doc.walk() if op.name == "func.func"), written):
        names = {r.name for op in _ops(before) for r in op.results}  # names are per function
        for region in func.regions:
            for block in region.blocks:
                problems += _block_pending(doc.text, block, names)
    return problems


def _ops(func):
    work = [op for r in func.regions for b in r.blocks for op in b.ops]
    while work:
        op = work.pop()
        yield op
        work.extend(inner for r in op.regions for b in r.blocks for inner in b.ops)


def _block_pending(text: str, block, names: set[str]) -> list[str]:
    """Walk one block: an op the rewrite made (its token is new, or a gpu.wait of new tokens
    only) moves the chain; an op of the text finds none of the chain pending."""
    pending: set[str] = set()
    problems = []
    for op in block.ops:
        g = op.gpu
        if g is None:
            continue
        deps = {text[d.start:d.end] for d in g.deps}
        token = op.results[-1].name if op.results and (g.async_kw is not None) else None
        synchronous_wait = op.name == "gpu.wait" and g.async_kw is None
        made = (token is not None and token not in names) or (
            synchronous_wait and deps and not deps & names)
        if not made and (op.name == "gpu.wait" or g.async_kw is not None):
            # Pending work the op itself depends on (a stream the lowering gives it) only
            # orders more: what would lose an ordering is chain work it does not wait for.
            if pending - deps:
                problems.append(f"{sorted(pending)} pending at {text[op.start:op.end]!r}")
            pending -= deps
        if made:
            pending -= deps
            if token is not None:
                pending.add(token)
    return problems


def test_sync_only_keeps_the_hand_written_chains_apart():
    fixed = analyze(HAND_WRITTEN_CHAINS, semantics=SYNC_ONLY).fixed_text()
    assert "%b = gpu.wait async\n" in fixed  # not made to wait for %a's chain
    assert "gpu.wait [%x, %y]\n" in fixed
    assert "%t1 = gpu.memset async [%t0] %m, %v" in fixed and "  gpu.wait [%t1]\n  gpu.wait [%x, %y]" in fixed
    llvm22 = analyze(HAND_WRITTEN_CHAINS, semantics=LLVM22)
    assert "%b = gpu.wait async [%a]" in llvm22.fixed_text()
    assert [fn.serializes for fn in llvm22.functions] == [True]
    assert [fn.serializes for fn in analyze(HAND_WRITTEN_CHAINS, semantics=SYNC_ONLY).functions] == [False]


@pytest.mark.parametrize("lowering", ["none", "llvm22"])
def test_sync_only_keeps_every_ordering_of_generated_programs(lowering):
    changed, checked = [], 0
    for seed in range(300):
        text = laid_out(generate_llvm22_program(seed), seed)
        a = analyze(text, semantics=SYNC_ONLY, lowering=lowering)
        assert not any(fn.blockers and fn.blockers[0].code in ("pre-existing-wait", "already-async")
                       for fn in a.functions)
        if a.has_syntax_errors:
            continue
        fixed = SortedEdits.of(a.edits()).apply(text)
        if fixed == text:
            continue
        checked += 1
        if lowering == "none":  # with the lowering, joins and one-per-stream may change lists
            changed += [(seed, t) for t in _untouched(a.document, a.edits())]
        pending = _pending_at_hand_written(a.document, fixed)
        changed += [(seed, p) for p in pending]
    assert checked > 100
    assert not changed, changed[:3]


SERIALIZED = HAND_WRITTEN_CHAINS.replace(
    "  %b = gpu.wait async\n", "").replace(
    "  gpu.memset %m, %v : memref<4xf32>, f32\n",
    "  gpu.memset %m, %v : memref<4xf32>, f32\n  %b = gpu.wait async\n")


def test_check_llvm22_says_where_its_rewrite_serializes_a_stream_started_apart(tmp_path, capsys):
    """`check --semantics llvm22`: the function's hint carries a note at the `gpu.wait async`
    that LLVM 22's threading makes wait for the chain before it; sync-only, none."""
    from gpu_async_lsp.cli import main

    path = tmp_path / "a.mlir"
    path.write_text(SERIALIZED)
    main(["check", "--semantics", "llvm22", str(path)])
    out = capsys.readouterr().out
    line = SERIALIZED[:SERIALIZED.index("%b = gpu.wait async")].count("\n") + 1
    assert (f"{path}:{line}:8: note: this stream, started apart, is made to wait for the chain "
            "before it (serialized); `--semantics sync-only` keeps it apart") in out
    main(["check", "--semantics", "sync-only", str(path)])
    assert "serialized" not in capsys.readouterr().out
