"""Test helper: a rewrite against `mlir-opt-22`'s pass, one host function at a time.

LLVM 22's pass changes every function it reaches, even one without a synchronous GPU op (a
`%t = gpu.wait async` before a `return` gets a `gpu.wait [%t]`): it is not idempotent, and our
`--fix` must be. So a comparison is per function:

- a function our rewrite rewrites (it holds a synchronous GPU op and nothing blocks it) must
  equal the pass's output for it, both reprinted by `mlir-opt-22` (SSA names and layout aside);
- every other function (no synchronous GPU op, or blocked) must be left as written, byte for
  byte.

Functions are found in printed text by our own parser (`host_functions`: every `func.func`
outside device code), so the i-th function of the input, of our output and of both reprints
are the same function.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from gpu_async_lsp.async_region import Analysis
from gpu_async_lsp.async_region.rewriter import host_functions
from gpu_async_lsp.syntax import parse_document

# How a function came out.
REWRITTEN = "rewritten"  # compared with the pass, equal
DIFFERS = "differs"  # compared with the pass, not equal
NO_SYNC_OP = "no-sync-op"  # left as written: nothing for the rewrite to do
BLOCKED = "blocked"  # left as written: a blocker stops the rewrite
NOT_COMPARED = "not-compared"  # rewritten, but there is no pass output (the pass failed)
NOT_LEFT_AS_WRITTEN = "not-left-as-written"  # should have been left as written, was not


@dataclass(frozen=True)
class FunctionResult:
    name: str
    outcome: str
    blockers: tuple[str, ...] = ()
    async_execute: bool = False  # the function holds an `async.execute`
    detail: str = ""  # the diff, for DIFFERS and NOT_LEFT_AS_WRITTEN

    @property
    def ok(self) -> bool:
        return self.outcome not in (DIFFERS, NOT_LEFT_AS_WRITTEN)


def host_function_texts(text: str) -> list[tuple[str, str]]:
    """(`@name`, text) of every host function of `text`, in order."""
    doc = parse_document(text)
    return [(f.symbol_name.path[0] if f.symbol_name else "@<anonymous>", text[f.start:f.end])
            for f in host_functions(doc)]


def _diff(a: str, b: str, a_name: str, b_name: str) -> str:
    return "".join(difflib.unified_diff(a.splitlines(keepends=True), b.splitlines(keepends=True),
                                        a_name, b_name))


def compare_functions(analysis: Analysis, fixed: str, ours_printed: str | None,
                      reference_printed: str | None) -> list[FunctionResult]:
    """Each host function of `analysis`'s text, judged as the module docstring says.

    `fixed` is our rewrite of the text; `ours_printed` and `reference_printed` are `fixed` and
    the pass's output, both reprinted, or None when the pass failed on the text (the functions
    our rewrite rewrites are then NOT_COMPARED). Raises AssertionError when the texts do not
    hold the same functions.
    """
    text = analysis.document.text
    fixed_fns = host_function_texts(fixed)
    ours = host_function_texts(ours_printed) if ours_printed is not None else None
    ref = host_function_texts(reference_printed) if reference_printed is not None else None
    n = len(analysis.functions)
    counts = {"fixed": len(fixed_fns)}
    if ours is not None:
        counts["ours reprinted"] = len(ours)
    if ref is not None:
        counts["pass output"] = len(ref)
    if any(c != n for c in counts.values()):
        raise AssertionError(f"{n} host functions in the input, but {counts}")
    results = []
    for i, fn in enumerate(analysis.functions):
        if not fn.func.regions:
            continue  # a declaration (`func.func private @f(index)`): nothing to rewrite
        original = text[fn.func.start:fn.func.end]
        blockers = tuple(sorted({b.code for b in fn.blockers}))
        has_execute = "async.execute" in original
        if fn.rewritable:
            if ours is None or ref is None:
                results.append(FunctionResult(fn.name, NOT_COMPARED, (), has_execute))
            elif ours[i][1] == ref[i][1]:
                results.append(FunctionResult(fn.name, REWRITTEN, (), has_execute))
            else:
                results.append(FunctionResult(fn.name, DIFFERS, (), has_execute, _diff(
                    ref[i][1], ours[i][1], "mlir-opt-22 pass", "ours")))
            continue
        outcome = BLOCKED if fn.has_work else NO_SYNC_OP
        if fixed_fns[i][1] != original:
            results.append(FunctionResult(fn.name, NOT_LEFT_AS_WRITTEN, blockers, has_execute,
                                          _diff(original, fixed_fns[i][1], "input", "ours")))
        else:
            results.append(FunctionResult(fn.name, outcome, blockers, has_execute))
    return results
