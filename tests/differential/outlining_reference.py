"""Test helper: the reference for `--thread-launch` (an inline `gpu.launch` threaded in place).

`mlir-opt-22`'s pass fails on a `gpu.launch`; the compiler's own way to get past one is to
outline it first. So the reference for our rewrite of a source is
`mlir-opt-22 --pass-pipeline='builtin.module(gpu-kernel-outlining,func.func(gpu-async-region))'`
on the source, and what is compared with it is `mlir-opt-22 --gpu-kernel-outlining` applied to
our output (outlining keeps a launch's `async` and dependencies on its `gpu.launch_func`).
Per host function:

- a function our rewrite rewrites (it holds a synchronous GPU op, `gpu.launch` counted, and
  nothing blocks it): our output, outlined, equals the pipeline's output for it;
- every other function: left as written byte for byte, and our output, outlined, equals the
  outlined source for it (LLVM 22's pass changes functions without a synchronous op too);
- the kernel modules the outlining creates (`gpu.module @f_kernel`, ...) are the same in our
  outlined output as in the pipeline's.

Both outlining and the pass also run in nested `builtin.module`s (as
`mlir_reference.PASS_PIPELINE` does). Everything is reprinted once more, so both sides of a
comparison went through the same parse-and-print. A chunk mlir-opt-22 crashes on (outlining
does, on a kernel it cannot outline) is run on its own and fails alone.
"""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass

from gpu_async_lsp.async_region import Analysis
from gpu_async_lsp.async_region.rewriter import host_functions
from gpu_async_lsp.syntax import parse_document
from tests.differential.function_compare import (
    BLOCKED,
    DIFFERS,
    NO_SYNC_OP,
    NOT_LEFT_AS_WRITTEN,
    REWRITTEN,
    FunctionResult,
)
from tests.differential.mlir_reference import ChunkResult, reprint, run_chunks

__all__ = ["OUTLINE", "OUTLINE_AND_PASS", "SEMANTICS_DIFFER", "OutlinedComparison", "OutlinedRuns",
           "compare_outlined", "function_texts", "kernel_modules", "launch_count", "outline",
           "outline_and_pass", "outlined_runs", "semantics_differ"]

_NESTING_DEPTH = 4
# In the original semantics: a rewritten function that differs from the pass and whose
# rewrite is not the one of LLVM 22's rules (an `async.execute`: the original rules have no
# phases for it), so the pass is not its reference.
SEMANTICS_DIFFER = "semantics-differ"


def _pipeline(passes: str, depth: int = _NESTING_DEPTH) -> str:
    inner = f",{_pipeline(passes, depth - 1)}" if depth > 1 else ""
    return f"builtin.module({passes}{inner})"


# `--gpu-kernel-outlining` on the top-level module outlines the launches of named nested
# modules but not those of an unnamed `module attributes {gpu.container_module} {...}` beside
# other top-level ops (an implicit top-level module holds them): run it in nested modules too.
OUTLINE = f"--pass-pipeline={_pipeline('gpu-kernel-outlining')}"
OUTLINE_AND_PASS = (
    f"--pass-pipeline={_pipeline('gpu-kernel-outlining,func.func(gpu-async-region)')}")


def _run(chunks: list[str], flag: str, allow_unregistered: bool) -> list[ChunkResult]:
    """`run_chunks` with `flag`; when mlir-opt-22 crashes on a chunk (outlining does, on a
    kernel it fails to outline: the rest of the batch is lost), one invocation per chunk."""
    try:
        return run_chunks(chunks, flags=(flag,), allow_unregistered=allow_unregistered)
    except AssertionError:
        return [run_chunks([c], flags=(flag,), allow_unregistered=allow_unregistered)[0]
                for c in chunks]


def _reprinted(ran: list[ChunkResult], allow_unregistered: bool) -> list[ChunkResult]:
    again = reprint([r.output if r.ok else "" for r in ran], allow_unregistered=allow_unregistered)
    return [ChunkResult(a.output if r.ok else None, r.stderr) for r, a in zip(ran, again)]


@dataclass(frozen=True)
class OutlinedRuns:
    """One chunk's three texts, each reprinted (None output: mlir-opt-22 failed on it)."""

    ours: ChunkResult  # our output, outlined
    reference: ChunkResult  # the source, outlined, then the pass
    source: ChunkResult  # the source, outlined


def outline(texts: list[str], *, allow_unregistered: bool = False) -> list[ChunkResult]:
    """`--gpu-kernel-outlining` (in nested modules too) on each text, reprinted."""
    return _reprinted(_run(texts, OUTLINE, allow_unregistered), allow_unregistered)


def outline_and_pass(texts: list[str], *, allow_unregistered: bool = False) -> list[ChunkResult]:
    """Outlining, then the pass, on each text, reprinted: the reference."""
    return _reprinted(_run(texts, OUTLINE_AND_PASS, allow_unregistered), allow_unregistered)


def outlined_runs(sources: list[str], ours: list[str], *,
                  allow_unregistered: bool = False) -> list[OutlinedRuns]:
    """The three runs for each (source, our output) pair."""
    flags = {"allow_unregistered": allow_unregistered}
    return [OutlinedRuns(o, r, s) for o, r, s in zip(
        outline(ours, **flags), outline_and_pass(sources, **flags), outline(sources, **flags))]


@functools.lru_cache(maxsize=2048)
def _parts(text: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The text of every host function of `text`, and of every `gpu.module` (at any depth of
    modules), in order: one parse (a reference's output is judged once per semantics)."""
    doc = parse_document(text)
    functions = tuple(text[f.start:f.end] for f in host_functions(doc))
    kernels = []
    work = [op for chunk in doc.chunks for op in reversed(chunk.ops)]
    while work:
        op = work.pop()
        if op.name == "gpu.module":
            kernels.append(text[op.start:op.end])
        elif op.name != "func.func":
            for region in reversed(op.regions):
                for block in reversed(region.blocks):
                    work.extend(reversed(block.ops))
    return functions, tuple(kernels)


def function_texts(text: str) -> tuple[str, ...]:
    """The text of every host function of `text`, in order (`host_function_texts`, cached)."""
    return _parts(text)[0]


def kernel_modules(text: str) -> list[str]:
    """The text of every `gpu.module` of `text` (at any depth of modules), in order."""
    return list(_parts(text)[1])


def launch_count(fn_op) -> int:
    """The `gpu.launch` ops of a host function that the walk meets as host ops (a launch
    nested in a launch's body is device code)."""
    count, work = 0, [fn_op]
    while work:
        op = work.pop()
        if op.name == "gpu.launch":
            count += 1
            continue
        for region in op.regions:
            for block in region.blocks:
                work.extend(block.ops)
    return count


def _diff(a: str, b: str, a_name: str, b_name: str) -> str:
    return "".join(difflib.unified_diff(a.splitlines(keepends=True), b.splitlines(keepends=True),
                                        a_name, b_name))


@dataclass(frozen=True)
class OutlinedComparison:
    functions: list[FunctionResult]  # every host function with a body, in order
    kernels: int  # the kernel modules of the pipeline's output
    kernels_detail: str  # their diff with ours, outlined ("" when the same)


def compare_outlined(analysis: Analysis, fixed: str, runs: OutlinedRuns) -> OutlinedComparison:
    """Each host function of `analysis`'s text and the kernel modules, judged as the module
    docstring says (the outcomes of `function_compare.compare_functions`, the same way).
    Raises AssertionError when the texts do not hold the same functions."""
    if not (runs.ours.ok and runs.reference.ok and runs.source.ok):
        raise AssertionError("compare_outlined needs the three outputs")
    text = analysis.document.text
    fixed_fns = _parts(fixed)[0]
    ours, our_kernels = _parts(runs.ours.output)
    ref, ref_kernels = _parts(runs.reference.output)
    source = _parts(runs.source.output)[0]
    n = len(analysis.functions)
    counts = {"fixed": len(fixed_fns), "ours outlined": len(ours), "pipeline": len(ref),
              "source outlined": len(source)}
    if any(c != n for c in counts.values()):
        raise AssertionError(f"{n} host functions in the input, but {counts}")
    results = []
    for i, fn in enumerate(analysis.functions):
        if not fn.func.regions:
            continue  # a declaration
        original = text[fn.func.start:fn.func.end]
        blockers = tuple(sorted({b.code for b in fn.blockers}))
        execute = "async.execute" in original
        if fn.rewritable:
            same = ours[i] == ref[i]
            results.append(FunctionResult(
                fn.name, REWRITTEN if same else DIFFERS, (), execute,
                "" if same else _diff(ref[i], ours[i], "outlining, then the pass",
                                      "ours outlined")))
        elif fixed_fns[i] != original:
            results.append(FunctionResult(fn.name, NOT_LEFT_AS_WRITTEN, blockers, execute,
                                          _diff(original, fixed_fns[i], "input", "ours")))
        elif ours[i] != source[i]:
            results.append(FunctionResult(fn.name, NOT_LEFT_AS_WRITTEN, blockers, execute,
                                          _diff(source[i], ours[i], "source outlined",
                                                "ours outlined")))
        else:
            results.append(FunctionResult(fn.name, BLOCKED if fn.has_work else NO_SYNC_OP,
                                          blockers, execute))
    detail = "" if ref_kernels == our_kernels else _diff(
        "\n".join(ref_kernels), "\n".join(our_kernels), "pipeline", "ours outlined")
    return OutlinedComparison(results, len(ref_kernels), detail)


def semantics_differ(analysis: Analysis, comparison: OutlinedComparison, fixed: str,
                     fixed_llvm22: str) -> OutlinedComparison:
    """`comparison` of the original semantics' rewrite `fixed`, each function that differs
    from the pass and that LLVM 22's rules rewrite otherwise (`fixed_llvm22`) made
    SEMANTICS_DIFFER."""
    if all(r.outcome != DIFFERS for r in comparison.functions):
        return comparison
    ours, theirs = function_texts(fixed), function_texts(fixed_llvm22)
    bodies = [i for i, fn in enumerate(analysis.functions) if fn.func.regions]
    functions = [
        FunctionResult(r.name, SEMANTICS_DIFFER, r.blockers, r.async_execute, r.detail)
        if r.outcome == DIFFERS and ours[i] != theirs[i] else r
        for i, r in zip(bodies, comparison.functions)]
    return OutlinedComparison(functions, comparison.kernels, comparison.kernels_detail)
