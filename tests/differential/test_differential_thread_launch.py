"""Differential tests of `check --fix --thread-launch`: an inline `gpu.launch` threaded in place,
on generated programs, against the compiler's own way past a launch, outlining.

The programs (`program_generator_launch.py`, seeded: a failure names the seed that reproduces
it) hold inline `gpu.launch` ops at every depth and in every layout, synchronous or already
async, among `gpu.launch_func`, allocations, copies, waits and host ops with side effects.
Per host function (`outlining_reference.py`): `mlir-opt-22 --gpu-kernel-outlining` of our
output equals `mlir-opt-22 --pass-pipeline='builtin.module(gpu-kernel-outlining,
func.func(gpu-async-region))'` of the program where we rewrite the function, and the outlined
program where we leave it alone (byte for byte, too); the kernel modules are the same.

In both semantics. The pass is LLVM 22's, so in the original semantics a function is compared
where the two semantics agree on it: a function holding a pre-existing `gpu.wait` or async op
is blocked (and left as written), and one holding an `async.execute` is rewritten without
LLVM 22's phases for it (its difference with the pass is counted, not failed).

Two differences found here are pinned by tests on their smallest reproducers: a host op with
regions holding only a launch whose kernel is free of memory effects
(EFFECT_FREE_KERNEL_NESTED: the outlined gpu.launch_func has effects), and, in LLVM 22's rules
whether or not a launch is involved, a token of an `async.execute` taken twice
(TWO_DEPENDENT_EXECUTES: cloning an execute re-creates its operands' uses in front).

`--fix` is run as the command (on a directory of all programs), twice. All programs go
through `mlir-opt-22` in a few invocations. `GPU_ASYNC_DIFF_LAUNCH_PROGRAMS` and
`GPU_ASYNC_DIFF_LAUNCH_SEED` change how many programs and which seeds; `pytest -s` shows the
summary line of `test_thread_launch_summary`.
"""

from __future__ import annotations

import collections
import functools
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpu_async_lsp.async_region import Analysis, analyze, fix_text
from gpu_async_lsp.async_region.rewriter import (
    LLVM22,
    ORIGINAL,
    host_functions,
)
from gpu_async_lsp.async_region.rewriter import (
    PASS_SEMANTICS as SEMANTICS,
)
from gpu_async_lsp.syntax import parse_document
from tests.differential.function_compare import (
    BLOCKED,
    DIFFERS,
    NO_SYNC_OP,
    NOT_LEFT_AS_WRITTEN,
    REWRITTEN,
    FunctionResult,
)
from tests.differential.mlir_reference import (
    ChunkResult,
    reprint,
    untouched_lines_survive,
)
from tests.differential.outlining_reference import (
    SEMANTICS_DIFFER,
    OutlinedComparison,
    OutlinedRuns,
    compare_outlined,
    outline,
    outline_and_pass,
    semantics_differ,
)
from tests.differential.program_generator_launch import generate_launch_program
from tests.relayout import laid_out, meaning_changed

PROGRAMS = int(os.environ.get("GPU_ASYNC_DIFF_LAUNCH_PROGRAMS", "300"))
FIRST_SEED = int(os.environ.get("GPU_ASYNC_DIFF_LAUNCH_SEED", "0"))
SEEDS = range(FIRST_SEED, FIRST_SEED + PROGRAMS)
SHOWN = 3
# What blocks a function in the original semantics here (LLVM 22's rules: nothing).
ORIGINAL_BLOCKERS = {"pre-existing-wait", "already-async"}

pytestmark = pytest.mark.mlir_opt


@dataclass
class Program:
    seed: int
    text: str
    analyses: dict[str, Analysis]  # by semantics, with thread_launch
    written: str  # as generated (`text` is laid out again for odd seeds: tests/relayout.py)

    @property
    def name(self) -> str:
        return f"p{self.seed:05d}.mlir"


@pytest.fixture(scope="module")
def programs() -> list[Program]:
    out = []
    for seed in SEEDS:
        written = generate_launch_program(seed)
        text = laid_out(written, seed)
        out.append(Program(seed, text, {s: analyze(text, semantics=s, thread_launch=True)
                                        for s in SEMANTICS}, written))
    return out


def _report(failures: list[str]) -> str:
    shown = "\n\n".join(failures[:SHOWN])
    more = f"\n\n... and {len(failures) - SHOWN} more" if len(failures) > SHOWN else ""
    return f"{len(failures)} failures in {PROGRAMS} programs:\n\n{shown}{more}"


# -- the command, in both semantics -----------------------------------------------------------

def _command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpu_async_lsp", *args], capture_output=True,
                          text=True, timeout=600, check=False)


@dataclass
class CliRuns:
    fix: subprocess.CompletedProcess
    fixed: list[str]  # each program after `check --fix --thread-launch`
    fix_again: subprocess.CompletedProcess
    fixed_again: list[str]  # ... after a second one
    findings: dict[str, list[dict]]  # what the first --fix said remains, by file name


@pytest.fixture(scope="module")
def cli_runs(programs, tmp_path_factory) -> dict[str, CliRuns]:
    runs = {}
    for semantics in SEMANTICS:
        directory = tmp_path_factory.mktemp(f"launch-programs-{semantics}")
        paths = [directory / p.name for p in programs]
        for p, path in zip(programs, paths):
            path.write_bytes(p.text.encode("utf-8"))
        args = ("--thread-launch", "--semantics", semantics, "--lowering", "none", "--output-format", "json",
                str(directory))
        fix = _command("check", "--fix", *args)
        fixed = [path.read_bytes().decode("utf-8") for path in paths]
        fix_again = _command("check", "--fix", *args)
        fixed_again = [path.read_bytes().decode("utf-8") for path in paths]
        findings = collections.defaultdict(list)
        for item in json.loads(fix.stdout or "[]"):
            findings[Path(item["file"]).name].append(item)
        runs[semantics] = CliRuns(fix, fixed, fix_again, fixed_again, findings)
    return runs


# -- mlir-opt-22 ------------------------------------------------------------------------------

@dataclass
class MlirRuns:
    inputs: list[ChunkResult]  # each program, reprinted
    reference: list[ChunkResult]  # outlining then the pass, on each program
    outlined: list[ChunkResult]  # each program, outlined
    ours: dict[str, list[ChunkResult]]  # our --fix of each program, outlined, by semantics


@pytest.fixture(scope="module")
def mlir_runs(programs, cli_runs) -> MlirRuns:
    texts = [p.text for p in programs]
    return MlirRuns(reprint(texts), outline_and_pass(texts), outline(texts),
                    {s: outline(cli_runs[s].fixed) for s in SEMANTICS})


@pytest.fixture(scope="module")
def comparisons(programs, cli_runs,
                mlir_runs) -> dict[str, list[tuple[Program, OutlinedComparison]]]:
    """Each program's functions judged, by semantics (programs where mlir-opt-22 failed are
    left out: other tests report them). In the original semantics, a function whose rewrite
    is not LLVM 22's rewrite of it, and that differs from the pass, is SEMANTICS_DIFFER."""
    out = {}
    for semantics in SEMANTICS:
        judged = []
        for k, p in enumerate(programs):
            runs = OutlinedRuns(mlir_runs.ours[semantics][k], mlir_runs.reference[k],
                                mlir_runs.outlined[k])
            if not (runs.ours.ok and runs.reference.ok and runs.source.ok):
                continue
            fixed = cli_runs[semantics].fixed[k]
            comparison = compare_outlined(p.analyses[semantics], fixed, runs)
            if semantics == ORIGINAL:
                comparison = semantics_differ(p.analyses[ORIGINAL], comparison, fixed,
                                              cli_runs[LLVM22].fixed[k])
            judged.append((p, comparison))
        out[semantics] = judged
    return out


# -- the generator ----------------------------------------------------------------------------

def test_generator_same_seed_same_program():
    assert generate_launch_program(12345) == generate_launch_program(12345)
    assert generate_launch_program(12345) != generate_launch_program(12346)


_LAUNCH = r"gpu\.launch(?![_\w])"
SHAPES = {
    "launch header and { on one line": rf"{_LAUNCH}[^\n]* threads\([^\n]*\{{\s*(//.*)?$",
    "launch all on one line": rf"{_LAUNCH} [^\n]*\{{ gpu\.terminator \}}",
    "launch over several lines": rf"{_LAUNCH}[^\n{{]*\n\s+(blocks|threads|clusters|dynamic)",
    "launch name alone on its line": rf"{_LAUNCH}(?: async(?: \[[^\]\n]*\])?)?[ \t]*$",
    "comment between launch clauses": rf"{_LAUNCH}[^{{]*\n\s*// ",
    "comment after a launch's {": rf"{_LAUNCH}[^{{]*\{{  // ",
    "clusters": r"clusters\(%[^)]*\) in \(", "dynamic_shared_memory_size on a launch":
        rf"{_LAUNCH}[^{{]*dynamic_shared_memory_size",
    "module() function()": r"module\(@\w+\) function\(@\w+\)",
    "workgroup attribution": r"workgroup\(%\S+ : ", "private attribution": r"private\(%\S+ : ",
    "already-async launch": r"= gpu\.launch async ",
    "already-async launch with dependencies": r"= gpu\.launch async \[%",
    "already-async launch without dependencies": r"= gpu\.launch async (blocks|clusters)",
    "loc() after a kernel": r"\} loc\(",
    "pre-existing gpu.wait": r"^\s*gpu\.wait", "launch_func": r"gpu\.launch_func ",
    "gpu.alloc": r"gpu\.alloc ", "gpu.memcpy": r"gpu\.memcpy ", "memref.store": r"memref\.store ",
    "func.call": r"call @ext_", "tab indentation": r"^\t",
}


def _launch_contexts(text: str) -> collections.Counter:
    """Where the host-level launches of `text` are (the op holding them; `^bb` for a later
    block of a function) and what their kernels hold."""
    seen = collections.Counter()
    work = [(fn, None, 0) for fn in host_functions(parse_document(text))]
    while work:
        op, parent, block_index = work.pop()
        if op.name == "gpu.launch":
            seen[f"in {parent}" + (" ^bb" if block_index else "")] += 1
            kernel = [o for r in op.regions for b in r.blocks for o in b.ops]
            names = {o.name for o in kernel}
            if len(op.regions[0].blocks) > 1:
                seen["kernel of several blocks"] += 1
            if names == {"gpu.terminator"}:
                seen["empty kernel"] += 1
            for name in names & {"gpu.launch", "gpu.wait", "gpu.barrier", "gpu.printf",
                                 "memref.store", "gpu.thread_id"}:
                seen[f"kernel holding {name}"] += 1
            continue
        for region in op.regions:
            for b, block in enumerate(region.blocks):
                work.extend((inner, op.name, b) for inner in block.ops)
    return seen


def test_generator_programs_cover_every_shape(programs):
    corpus = "\n".join(p.written for p in programs)
    missing = [what for what, pattern in SHAPES.items()
               if not re.search(pattern, corpus, re.MULTILINE)]
    contexts = sum((_launch_contexts(p.written) for p in programs), collections.Counter())
    wanted = ["in func.func", "in func.func ^bb", "in scf.for", "in scf.if", "in scf.while",
              "in scf.execute_region", "in async.execute", "kernel of several blocks",
              "empty kernel", "kernel holding gpu.launch", "kernel holding gpu.wait",
              "kernel holding gpu.barrier", "kernel holding gpu.printf",
              "kernel holding memref.store", "kernel holding gpu.thread_id"]
    missing += [what for what in wanted if not contexts[what]]
    assert not missing, f"the generator never produced: {missing}"


def test_laid_out_programs_mean_what_was_generated(programs, mlir_runs):
    """The layout pass (tests/relayout.py) breaks lines only where MLIR reads the same IR."""
    failures = meaning_changed(programs, mlir_runs.inputs)
    assert not failures, _report(failures)


def test_generator_programs_parse_and_the_pipeline_succeeds(programs, mlir_runs):
    failures = [f"seed {p.seed}:\n{r.stderr}" for p, r in zip(programs, mlir_runs.inputs)
                if not r.ok]
    failures += [f"seed {p.seed}: outlining then the pass failed:\n{r.stderr}"
                 for p, r in zip(programs, mlir_runs.reference) if not r.ok]
    failures += [f"seed {p.seed}: outlining failed:\n{r.stderr}"
                 for p, r in zip(programs, mlir_runs.outlined) if not r.ok]
    assert not failures, _report(failures)


def test_generator_programs_have_no_syntax_errors_for_our_parser(programs):
    failures = [f"seed {p.seed}: {c.errors}" for p in programs
                for c in p.analyses[LLVM22].document.chunks if c.errors]
    assert not failures, _report(failures)


# -- against the pipeline, in both semantics --------------------------------------------------

@pytest.mark.parametrize("semantics", SEMANTICS)
def test_thread_launch_fix_as_command_equals_library(programs, cli_runs, semantics):
    run = cli_runs[semantics]
    assert run.fix.returncode in (0, 1), run.fix.stderr
    failures = [f"seed {p.seed}" for p, fixed in zip(programs, run.fixed)
                if fixed != p.analyses[semantics].fixed_text()]
    assert not failures, _report(failures)
    assert fix_text(programs[0].text, semantics, thread_launch=True) == run.fixed[0]


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_thread_launch_fix_keeps_untouched_lines(programs, cli_runs, semantics):
    """Only the first line of a launch changes (`%tN = ` and ` async [%tok]`); its other lines
    and its kernel stay byte for byte, as every line the rewrite does not mean to change."""
    failures = []
    for p, fixed in zip(programs, cli_runs[semantics].fixed):
        problem = untouched_lines_survive(p.text, fixed, llvm22=semantics == LLVM22)
        if problem:
            failures.append(f"seed {p.seed}: {problem}")
    assert not failures, _report(failures)


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_thread_launch_fixed_programs_outline_in_mlir_opt(programs, cli_runs, mlir_runs,
                                                          semantics):
    failures = [f"seed {p.seed}:\n{r.stderr}\n{fixed}" for p, fixed, r in
                zip(programs, cli_runs[semantics].fixed, mlir_runs.ours[semantics]) if not r.ok]
    assert not failures, _report(failures)


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_thread_launch_fix_equals_outlined_pipeline_function_by_function(comparisons, semantics):
    """Every function we rewrite, outlined, equals the pipeline's output for it; every other
    one is left as written (its outlined form is the outlined source's); the kernel modules
    are the same."""
    failures = []
    for p, c in comparisons[semantics]:
        failures += [f"seed {p.seed} {r.name} ({r.outcome}):\n{r.detail}"
                     for r in c.functions if not r.ok]
        if c.kernels_detail:
            failures.append(f"seed {p.seed}: kernel modules differ:\n{c.kernels_detail}")
    assert not failures, _report(failures)


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_thread_launch_blocked_functions(comparisons, semantics):
    """With --thread-launch nothing blocks a function in LLVM 22's semantics here; in the
    original one only a pre-existing gpu.wait or async op (an async gpu.launch too) does. A
    function the two semantics rewrite differently holds an async.execute."""
    failures = []
    for p, c in comparisons[semantics]:
        for r in c.functions:
            if r.outcome == BLOCKED and (semantics == LLVM22
                                         or not set(r.blockers) <= ORIGINAL_BLOCKERS):
                failures.append(f"seed {p.seed} {r.name}: blocked by {r.blockers}")
            if r.outcome == SEMANTICS_DIFFER and not r.async_execute:
                failures.append(f"seed {p.seed} {r.name}: differs from the pass without an "
                                f"async.execute:\n{r.detail}")
    assert not failures, _report(failures)


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_thread_launch_fix_twice_equals_once(programs, cli_runs, semantics):
    run = cli_runs[semantics]
    failures = [f"seed {p.seed}" for p, once, twice in zip(programs, run.fixed, run.fixed_again)
                if once != twice]
    assert not failures, _report(failures)
    assert "rewrote" in run.fix.stderr, run.fix.stderr
    assert "rewrote" not in run.fix_again.stderr, run.fix_again.stderr


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_thread_launch_leaves_no_launch_not_outlined(cli_runs, semantics):
    run = cli_runs[semantics]
    codes = collections.Counter(f["code"] for fs in run.findings.values() for f in fs
                                if f["severity"] == "error")
    assert "launch-not-outlined" not in codes
    assert set(codes) <= (set() if semantics == LLVM22 else ORIGINAL_BLOCKERS), codes
    assert run.fix.returncode == (1 if codes else 0), run.fix.stderr


# -- known differences ------------------------------------------------------------------------

def _judge(cases: list[tuple[str, str]]) -> list[list[FunctionResult]]:
    """Each (text, semantics)'s functions judged against the outlined pipeline, as the
    programs' are (one batch of mlir-opt-22 invocations)."""
    fixed = [fix_text(text, semantics, thread_launch=True) for text, semantics in cases]
    texts = [text for text, _ in cases]
    runs = zip(outline(fixed), outline_and_pass(texts), outline(texts))
    return [compare_outlined(analyze(text, semantics=semantics, thread_launch=True), f,
                             OutlinedRuns(*r)).functions
            for (text, semantics), f, r in zip(cases, fixed, runs)]


@functools.cache
def _known_results() -> dict[tuple[str, str], list[FunctionResult]]:
    cases = [(t, s) for t in _KNOWN_CASES for s in SEMANTICS]
    return dict(zip(cases, _judge(cases)))


def _judged(text: str, semantics: str) -> list[FunctionResult]:
    """`_judge` of one case of the known differences below (all judged at once)."""
    return _known_results()[(text, semantics)]


_KERNEL = ("gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n) "
           "threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {")
# A host op with regions whose only GPU work is a launch with a kernel free of memory effects,
# met with a token current: the pass (after outlining) waits for the token before the op, as
# the `gpu.launch_func` in it has effects; our rewrite treats the op as free of effects (a
# `gpu.launch` has the effects of its kernel) and carries the token past it.
EFFECT_FREE_KERNEL_NESTED = {
    "scf.for": f"""func.func @f(%n: index, %a: memref<?xf32>, %x: f32) {{
  gpu.memset %a, %x : memref<?xf32>, f32
  scf.for %i = %n to %n step %n {{
    {_KERNEL}
      gpu.terminator
    }}
  }}
  return
}}
""",
    "scf.if": f"""func.func @f(%n: index, %a: memref<?xf32>, %x: f32, %p: i1) {{
  gpu.memset %a, %x : memref<?xf32>, f32
  scf.if %p {{
    {_KERNEL}
      %t = gpu.thread_id x
      gpu.terminator
    }}
  }}
  gpu.dealloc %a : memref<?xf32>
  return
}}
""",
    "async.execute": f"""func.func @f(%n: index, %a: memref<?xf32>, %x: f32) {{
  gpu.memset %a, %x : memref<?xf32>, f32
  %e = async.execute {{
    {_KERNEL}
      gpu.terminator
    }}
    async.yield
  }}
  return
}}
""",
}
_EFFECT_FREE_KERNEL_AT_TOP = EFFECT_FREE_KERNEL_NESTED["scf.for"].replace(
    "  scf.for %i = %n to %n step %n {\n", "").replace("    }\n  }\n", "    }\n")
_EFFECTFUL_KERNEL_NESTED = EFFECT_FREE_KERNEL_NESTED["scf.for"].replace(
    "      gpu.terminator", "      gpu.barrier\n      gpu.terminator")


@pytest.mark.parametrize("semantics", SEMANTICS)
@pytest.mark.parametrize("shape", list(EFFECT_FREE_KERNEL_NESTED))
def test_thread_launch_effect_free_kernel_nested_in_a_host_op(shape, semantics):
    (result,) = _judged(EFFECT_FREE_KERNEL_NESTED[shape], semantics)
    assert result.outcome == REWRITTEN, result.detail


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_thread_launch_effect_free_kernel_directly_in_a_function(semantics):
    """The same kernel directly in the function, or nested with effects: no difference."""
    for text in (_EFFECT_FREE_KERNEL_AT_TOP, _EFFECTFUL_KERNEL_NESTED):
        assert [r.outcome for r in _judged(text, semantics)] == [REWRITTEN], text


def _executes(body: str, *users: str, after: str = "", first_awaits: bool = False) -> str:
    """`%e, %v = async.execute {body}` (yielding a token argument), then one
    `async.execute [deps] (operands) {body}` per item of `users` (`"[%e, %u0]"`,
    `"(%v)"`; the first awaiting `%e` in its body with `first_awaits`), then `after`."""
    lines = ["func.func @f(%n: index, %a: memref<?xf32>, %x: f32, %d: !gpu.async.token) {",
             f"  %e, %v = async.execute -> {AVALUE} {{", f"    {body}",
             f"    async.yield %d : {TOKEN}", "  }"]
    for i, user in enumerate(users):
        head = user.replace("(%v)", f"(%v as %w{i}: {AVALUE})")
        lines.append(f"  %u{i} = async.execute {head} {{")
        if first_awaits and i == 0:
            lines.append("    async.await %e : !async.token")
        lines += [f"    {body}", "    async.yield", "  }"]
    return "\n".join([*lines, *([after] if after else []), "  return", "}"]) + "\n"


AVALUE, TOKEN = "!async.value<!gpu.async.token>", "!gpu.async.token"
_MEMSET = "gpu.memset %a, %x : memref<?xf32>, f32"
_LAUNCH_BODY = f"{_KERNEL}\n      gpu.barrier\n      gpu.terminator\n    }}"
# LLVM 22's rules, not --thread-launch: a token (or value) of `%e` is taken by two later
# async.execute ops (or by one and an `async.await` in its body), and the first of them, `%u0`,
# gets a token result from the pass (another op depends on it or awaits it). The pass gives
# the first use the second copy of the token `%e` yields (`%bodyResults#1`) and the second
# use the first (`#0`); our rewrite the other way round. (The pass recreates `%u0` to add the
# result, which moves `%u0`'s use of the token to the front of its uses.)
_AWAIT_U0, _AWAIT_U1 = "  async.await %u0 : !async.token", "  async.await %u1 : !async.token"
TWO_DEPENDENT_EXECUTES = {
    "[e], [e, u0]": {"users": ("[%e]", "[%e, %u0]")},
    "[e], [e], [u0]": {"users": ("[%e]", "[%e]", "[%u0]")},
    "[e], [u0, e]": {"users": ("[%e]", "[%u0, %e]")},
    "[e], [e], await u0": {"users": ("[%e]", "[%e]"), "after": _AWAIT_U0},
    "(v), (v), [u0]": {"users": ("(%v)", "(%v)", "[%u0]")},
    "(v), (v), await u0": {"users": ("(%v)", "(%v)"), "after": _AWAIT_U0},
    "[e] awaiting e, await u0": {"users": ("[%e]",), "after": _AWAIT_U0, "first_awaits": True},
}
# Where the first user is not recreated: the same order.
TWO_EXECUTES_DEPENDING_ON_ONE = {
    "[e], [e]": {"users": ("[%e]", "[%e]")},
    "[e], [e], [e]": {"users": ("[%e]", "[%e]", "[%e]")},
    "[e], [e], [u1]": {"users": ("[%e]", "[%e]", "[%u1]")},
    "[e], [e], await u1": {"users": ("[%e]", "[%e]"), "after": _AWAIT_U1},
    "(v), (v)": {"users": ("(%v)", "(%v)")},
    "[e] awaiting e": {"users": ("[%e]",), "first_awaits": True},
}


def _shape(body: str, case: dict) -> str:
    options = dict(case)
    return _executes(body, *options.pop("users"), **options)


_KNOWN_CASES = [*EFFECT_FREE_KERNEL_NESTED.values(), _EFFECT_FREE_KERNEL_AT_TOP,
                _EFFECTFUL_KERNEL_NESTED,
                *(_shape(body, case) for body in (_MEMSET, _LAUNCH_BODY)
                  for case in TWO_DEPENDENT_EXECUTES.values()),
                *(_shape(_MEMSET, case) for case in TWO_EXECUTES_DEPENDING_ON_ONE.values())]


@pytest.mark.parametrize("body", [_MEMSET, _LAUNCH_BODY], ids=["memset", "gpu.launch"])
@pytest.mark.parametrize("shape", list(TWO_DEPENDENT_EXECUTES))
def test_llvm22_two_executes_taking_one_token(shape, body):
    (result,) = _judged(_shape(body, TWO_DEPENDENT_EXECUTES[shape]), LLVM22)
    assert result.outcome == REWRITTEN, result.detail


@pytest.mark.parametrize("shape", list(TWO_EXECUTES_DEPENDING_ON_ONE))
def test_llvm22_two_executes_taking_one_token_first_not_recreated(shape):
    (result,) = _judged(_shape(_MEMSET, TWO_EXECUTES_DEPENDING_ON_ONE[shape]), LLVM22)
    assert result.outcome == REWRITTEN, result.detail


# -- what the run covered ---------------------------------------------------------------------

def test_thread_launch_summary(programs, comparisons):
    """Counts, printed (pytest -s); also a check that every kind of function occurs."""
    launches = sum(sum(_launch_contexts(p.written)[k] for k in _launch_contexts(p.written)
                       if k.startswith("in ")) for p in programs)
    lines = []
    for semantics in SEMANTICS:
        counts = collections.Counter(r.outcome for _, c in comparisons[semantics]
                                     for r in c.functions)
        kernels = sum(c.kernels for _, c in comparisons[semantics])
        compared = counts[REWRITTEN] + counts[DIFFERS]
        lines.append(
            f"{semantics}: {sum(counts.values())} functions; compared with the outlined "
            f"pipeline: {compared} ({counts[REWRITTEN]} equal, {counts[DIFFERS]} differ), "
            + (f"{counts[SEMANTICS_DIFFER]} rewritten without LLVM 22's async.execute phases; "
               if semantics == ORIGINAL else "")
            + f"left alone: {counts[NO_SYNC_OP]} without a synchronous GPU op, "
            f"{counts[BLOCKED]} blocked, {counts[NOT_LEFT_AS_WRITTEN]} not left as written; "
            f"{kernels} kernel modules compared")
        assert len(comparisons[semantics]) == len(programs)
        assert counts[REWRITTEN] >= 0.4 * sum(counts.values())
        assert counts[NO_SYNC_OP]
        if semantics == ORIGINAL:
            assert counts[BLOCKED]
    print(f"\nthread-launch differential: {len(programs)} programs, {launches} host-level "
          f"gpu.launch ops; " + "; ".join(lines))
