"""`not-lowered` against LLVM 22's lowering itself: the ops the product reports are exactly the
GPU memory ops `mlir-opt-22 --gpu-to-llvm` leaves in the IR without an error.

The lowering is `gpu-to-llvm` after the kernels' `convert-gpu-to-nvvm`. The ops left are read
from the lowered IR printed with `--mlir-print-debuginfo
--mlir-print-local-scope`: each keeps the location (line, column of its name) it had in the
input. Inputs: every chunk of the shared corpora that holds a GPU memory op, generated
programs of both profiles (tests/differential), and a matrix of forms (each op synchronous
or async with 0-2 dependencies, host_shared or not, in every layout, memory space and element
width the rules tell apart). A chunk the lowering rejects with an error is not compared (the
lowering said so itself). After `check --fix`, the same comparison on the fixed text: what the
product says remains (`analyze(fixing=True)`) is what the lowering leaves of it.
"""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import pytest

from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.lowering import LLVM22_LOWERING
from gpu_async_lsp.async_region.rewriter import LLVM22, ORIGINAL, SYNC_ONLY, moved_findings
from gpu_async_lsp.edits import SortedEdits
from gpu_async_lsp.syntax import split_chunks
from tests.differential.mlir_reference import run_chunks
from tests.differential.program_generator import generate_program
from tests.differential.program_generator_llvm22 import generate_llvm22_program
from tests.relayout import laid_out

SHARED = Path(__file__).resolve().parents[3] / "shared"
# The kernels are converted first, as a real pipeline does before gpu-to-llvm (else a
# gpu.launch_func whose kernel takes a memref is an error: its operands are expanded, the
# gpu.func's are not).
LOWER = ("--pass-pipeline=builtin.module(gpu.module(convert-gpu-to-nvvm),gpu-to-llvm)",
         "--mlir-print-debuginfo", "--mlir-print-local-scope")
MEMORY_OP = re.compile(r"\bgpu\.(?:alloc|memcpy|memset|dealloc)\b")
_LEFT = re.compile(r'\bgpu\.(alloc|memcpy|memset|dealloc)\b.*loc\("[^"]*":(\d+):(\d+)\)\s*$', re.M)


# An op's own `loc(...)`, also over lines where a relayout broke it (`loc` then `(`).
_OWN_LOC = re.compile(r"(?<![%\w])loc\s*\((?:[^()]|\([^()]*\))*\)")
_NOT_NEWLINE = re.compile(r"[^\n]")


def _line_col(text: str, offset: int) -> tuple[int, int]:
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def _ours(text: str, semantics: str = ORIGINAL, fixed: bool = False) -> set[tuple]:
    """(op, line, column) of each not-lowered finding of `text` (of its --fix output when
    `fixed`, at that text's positions), and the fixed text."""
    a = analyze(text, semantics=semantics, lowering=LLVM22_LOWERING, fixing=fixed)
    findings = [f for f in a.findings if f.code == F.NOT_LOWERED]
    if not fixed:
        return {(f.message.split("'")[1], *_line_col(text, f.start)) for f in findings}, text
    edits = SortedEdits.of(a.edits())
    out = moved_findings(findings, set(), edits.mover())
    new_text = edits.apply(text)
    return {(f.message.split("'")[1], *_line_col(new_text, f.start)) for f in out}, new_text


def _compare(texts: list[str], semantics: str = ORIGINAL, fixed: bool = False) -> dict:
    """Each text (a chunk: no split marker in it) ours against the lowering's; returns counts
    and the differences."""
    ours = [_ours(t, semantics, fixed) for t in texts]
    # An op's own `loc(...)` (generated programs write some) would be its location in the
    # lowered IR: blanked (its line breaks kept), so that every op keeps its place here.
    results = run_chunks([_OWN_LOC.sub(lambda m: _NOT_NEWLINE.sub(" ", m.group()), t)
                          for _, t in ours],
                         flags=LOWER)
    stats = {"compared": 0, "rejected": 0, "ops": 0, "differ": []}
    first_line = 1  # of each chunk in the input run_chunks joins (the locations' lines)
    for (found, text), result in zip(ours, results):
        base, first_line = first_line - 1, first_line + text.count("\n") + 2
        if not result.ok:
            stats["rejected"] += 1
            continue
        left = {(f"gpu.{m.group(1)}", int(m.group(2)) - base, int(m.group(3)))
                for m in _LEFT.finditer(result.output)}
        stats["compared"] += 1
        stats["ops"] += len(left)
        if left != found:
            stats["differ"].append((text, sorted(left - found), sorted(found - left)))
    return stats


def _assert_same(stats: dict, what: str) -> None:
    print(f"{what}: {stats['compared']} compared ({stats['ops']} ops left by LLVM 22), "
          f"{stats['rejected']} rejected by the lowering, {len(stats['differ'])} differ")
    if stats["differ"]:
        text, only_llvm, only_ours = stats["differ"][0]
        raise AssertionError(f"{what}: {len(stats['differ'])} texts differ; the first:\n"
                             f"left by LLVM 22 only: {only_llvm}\nreported only: {only_ours}\n"
                             f"{text}")


def _corpus_chunks() -> list[str]:
    if not SHARED.is_dir():
        if os.environ.get("CI"):
            pytest.fail("../shared is missing in CI")
        pytest.skip("../shared (the corpora) is not beside this clone")
    chunks = []
    for path in sorted(SHARED.rglob("*.mlir")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if not MEMORY_OP.search(text):
            continue
        for s, e in split_chunks(text):
            chunk = text[s:e]
            if MEMORY_OP.search(chunk) and "// -----" not in chunk:
                chunks.append(chunk)
    return chunks


@pytest.mark.parametrize("fixed", [False, True], ids=["as-written", "after-fix"])
def test_not_lowered_is_what_llvm22_leaves_in_the_corpora(fixed):
    chunks = _corpus_chunks()
    assert len(chunks) > 20
    _assert_same(_compare(chunks, ORIGINAL, fixed), f"corpora ({'fixed' if fixed else 'as written'})")


@pytest.mark.parametrize("fixed", [False, True], ids=["as-written", "after-fix"])
@pytest.mark.parametrize("profile", ["original", "llvm22"])
def test_not_lowered_is_what_llvm22_leaves_in_generated_programs(profile, fixed):
    generate = generate_program if profile == "original" else generate_llvm22_program
    semantics = ORIGINAL if profile == "original" else LLVM22
    # Every other program laid out again at random token boundaries (tests/relayout.py): an
    # op over several lines, a successor on a line of its own, must be read as MLIR reads it.
    programs = [laid_out(generate(seed), seed)
                for seed in range(int(os.environ.get("GPU_ASYNC_LOWERING_N", 200)))]
    stats = _compare(programs, semantics, fixed)
    assert stats["compared"] >= len(programs) // 2, stats["rejected"]
    # After --fix the original profile's programs lower completely (lowerable.py): nothing is
    # left to compare there, which test_fix_output_lowers_wherever_nothing_blocks_the_rewrite
    # asserts; as written, and in the llvm22 profile, the comparison has ops to compare.
    assert stats["ops"] > 0 or (fixed and profile == "original")
    _assert_same(stats, f"{profile} programs ({'fixed' if fixed else 'as written'})")


_TYPES = ["memref<16xELT>", "memref<?xELT>", "memref<4x4xELT>", "memref<ELT>",
          "memref<16xELT, strided<[2]>>", "memref<16xELT, strided<[1]>>",
          "memref<16xELT, strided<[1], offset: 0>>", "memref<16xELT, strided<[1], offset: 4>>",
          "memref<4x4xELT, strided<[4, 1]>>", "memref<16xELT, affine_map<(d0) -> (d0)>>",
          "memref<16xELT, 1>", "memref<16xELT, #gpu.address_space<global>>"]
_ELEMENTS = ["f32", "f16", "bf16", "i32", "i16", "i8", "i64", "f64", "i1", "index"]


def _form(op: str, ty: str, elt: str, deps: int | None, used: bool) -> str:
    """One function around one op: synchronous (deps None) or async with `deps` of two
    tokens."""
    a = "" if deps is None else " async" + (f" [{', '.join(['%t0', '%t1'][:deps])}]" if deps else "")
    dyn = "(%n)" if "?" in ty else "()"
    token = deps is not None
    lines = ["  %t0 = gpu.wait async", "  %t1 = gpu.wait async"]
    if op.startswith("alloc"):
        shared = " host_shared" if op == "alloc_hs" else ""
        lines.append(f"  %r{', %tk' if token else ''} = gpu.alloc{a}{shared} {dyn} : {ty}")
        if used:
            lines.append(f"  func.call @use(%r) : ({ty}) -> ()")
    else:
        head = "%tk = " if token else ""
        body = {"memcpy": f"%m, %m : {ty}, {ty}", "memset": f"%m, %v : {ty}, {elt}",
                "dealloc": f"%m : {ty}"}[op]
        lines.append(f"  {head}gpu.{op}{a} {body}")
    if token:
        lines.append("  gpu.wait [%tk]")
    return (f"func.func private @use({ty})\n"
            f"func.func @f(%m: {ty}, %v: {elt}, %n: index) {{\n" + "\n".join(lines)
            + "\n  return\n}\n")


def test_not_lowered_is_what_llvm22_leaves_in_a_matrix_of_forms():
    texts = []
    for op, ty, elt, deps in itertools.product(
            ["alloc", "alloc_hs", "memcpy", "memset", "dealloc"], _TYPES, _ELEMENTS,
            [None, 0, 1, 2]):
        if elt not in ("f32", "i8", "f16") and op != "memset":
            continue  # only memset's value width matters
        texts.append(_form(op, ty.replace("ELT", elt), elt, deps, True))
    texts += [_form(op, "memref<16xf32>", "f32", deps, False)
              for op in ("alloc", "alloc_hs") for deps in (None, 0, 1, 2)]
    stats = _compare(texts)
    assert stats["compared"] > len(texts) // 2
    _assert_same(stats, "matrix")


def test_not_lowered_matrix_after_fix_leaves_only_what_the_rewrite_cannot_lower():
    """The rewrite makes each synchronous op async with one dependency: lowered, unless it is
    a host_shared alloc (which must stay synchronous) or has a layout or width the lowering
    never takes."""
    texts = [_form(op, ty.replace("ELT", "f32"), "f32", None, True)
             for op in ("alloc", "alloc_hs", "memcpy", "memset", "dealloc") for ty in _TYPES]
    for semantics in (ORIGINAL, LLVM22):
        _assert_same(_compare(texts, semantics, fixed=True), f"matrix fixed ({semantics})")


def _functions_with_dependent_synchronous_ops(a) -> set[str]:
    """The functions holding a synchronous GPU op written with dependencies."""
    return {fn.name for fn in a.functions
            if any(op.gpu is not None and op.gpu.async_kw is None and op.gpu.deps
                   for op in fn.sync_ops)}


# What no edit of ours can make lower: the op's types, or a host_shared alloc written async.
_UNFIXABLE = ("identity layout", "memory space", "16 or 32 bits")


def _left_after_fix(a, fixed_analysis) -> list:
    """The not-lowered findings after --fix that the fix should have prevented: an op with
    other than one dependency in a function that is rewritten or not blocked, a host_shared
    alloc the rewrite made async."""
    blocked = {fn.name for fn in fixed_analysis.functions if fn.blockers}
    written_async = {op.name_start for op in a.document.walk()
                     if op.gpu is not None and op.gpu.async_kw is not None}
    wrong = []
    for f in fixed_analysis.findings:
        if f.code != F.NOT_LOWERED or any(u in f.message for u in _UNFIXABLE):
            continue
        if "host_shared" in f.message and f.start in written_async:
            continue  # written async: the user's, the rewrite leaves it
        if "exactly one dependency" in f.message and f.function in blocked:
            continue  # a synchronous op of a function the rewrite cannot change
        wrong.append(f)
    return wrong


@pytest.mark.parametrize("thread_launch", [False, True], ids=["default", "thread-launch"])
@pytest.mark.parametrize("profile", ["original", "llvm22", "sync-only"])
def test_fix_output_lowers_wherever_nothing_blocks_the_rewrite(profile, thread_launch):
    """With `--lowering llvm22` (the default), what `check --fix` writes lowers completely
    with `mlir-opt-22`: the ops the lowering leaves are exactly those reported after the fix
    (`_compare`), and those are only what no edit can change (a layout, a memory space, a
    memset width, a host_shared alloc written async, a synchronous op of a function a
    blocker keeps from the rewrite). In `original` and `sync-only` semantics the fix adds no
    stream hazard to a function that had none; LLVM 22's threading may make the rewrite
    destroy a stream the text uses afterwards (no gpu-dialect form waits for a stream without
    destroying it once canonicalized): those are counted, and reported after --fix."""
    generate = generate_program if profile == "original" else generate_llvm22_program
    semantics = {"original": ORIGINAL, "llvm22": LLVM22}.get(profile, SYNC_ONLY)
    n = int(os.environ.get("GPU_ASYNC_LOWERING_N", 200))
    programs = [laid_out(generate(seed), seed) for seed in range(n)]
    wrong, added_hazards, fixed_texts = [], [], []
    for text in programs:
        a = analyze(text, semantics=semantics, thread_launch=thread_launch,
                    lowering=LLVM22_LOWERING)
        fixed = analyze(text, semantics=semantics, thread_launch=thread_launch,
                        lowering=LLVM22_LOWERING, fixing=True)
        wrong += [(text, f.message) for f in _left_after_fix(a, fixed)]
        # A function with a hazard as written may carry it on (LLVM 22's threading takes a
        # token of a destroyed stream along): the fix is to add none to one without.
        hazardous = {f.function for f in a.findings if f.code == F.STREAM_HAZARD}
        # A synchronous op the text gave dependencies (`gpu.alloc [%dep] ...`) runs, made
        # async, on its dependency's stream, which the rewrite's wait then destroys: no form
        # waits for a stream the text uses again without destroying it (canonicalization
        # folds `gpu.wait async [%dep]` into `%dep`). Those hazards are the text's to change.
        given = _functions_with_dependent_synchronous_ops(a)
        added_hazards += [(text, f.message) for f in fixed.findings
                          if f.code == F.STREAM_HAZARD and f.function not in hazardous
                          and f.function not in given]
        fixed_texts.append(SortedEdits.of(fixed.edits()).apply(text))
    assert not wrong, f"{len(wrong)} ops left unlowered by the fix; the first: {wrong[0][1]}\n{wrong[0][0]}"
    print(f"{profile}: {len(added_hazards)} stream hazards added by --fix")
    if semantics != LLVM22:
        assert not added_hazards, (f"{len(added_hazards)} stream hazards added by the fix; "
                                   f"the first: {added_hazards[0][1]}\n{added_hazards[0][0]}")
    # And the lowering agrees on what is left (the fixed text, re-analyzed as written).
    stats = _compare(fixed_texts, semantics)
    assert stats["compared"] >= len(programs) // 2, stats["rejected"]
    _assert_same(stats, f"{profile} programs after --fix ({'thread-launch' if thread_launch else 'default'})")
