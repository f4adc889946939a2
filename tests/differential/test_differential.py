"""Differential tests: `fix_text` on random GPU host programs against `mlir-opt-22`'s own pass.

The rewrite of a function must equal what
`mlir-opt-22 --pass-pipeline='builtin.module(func.func(gpu-async-region))'` produces, up to SSA
names and formatting; every byte the rewrite does not mean to change stays.

The programs come from `program_generator.py` (seeded, so a failure names the seed that
reproduces it); those of odd seeds are laid out again with line breaks at random token
boundaries (`tests/relayout.py`), which must change nothing but the layout. All programs go through `mlir-opt-22` in four invocations
(`-split-input-file`), so the suite takes seconds. `GPU_ASYNC_DIFF_PROGRAMS` and
`GPU_ASYNC_DIFF_SEED` change how many programs and which seeds, for longer local runs.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass

import pytest

from gpu_async_lsp.async_region import analyze, fix_text
from tests.differential.mlir_reference import (
    ChunkResult,
    reference,
    reprint,
    untouched_lines_survive,
)
from tests.differential.program_generator import generate_program
from tests.relayout import laid_out, meaning_changed

PROGRAMS = int(os.environ.get("GPU_ASYNC_DIFF_PROGRAMS", "300"))
FIRST_SEED = int(os.environ.get("GPU_ASYNC_DIFF_SEED", "0"))
SEEDS = range(FIRST_SEED, FIRST_SEED + PROGRAMS)
SHOWN = 3  # failures shown in full in an assertion message


@dataclass
class Program:
    seed: int
    text: str  # as generated, then laid out (tests/relayout.py: odd seeds)
    fixed: str
    written: str  # as generated


@pytest.fixture(scope="module")
def programs() -> list[Program]:
    out = []
    for seed in SEEDS:
        written = generate_program(seed)
        text = laid_out(written, seed)
        out.append(Program(seed, text, fix_text(text), written))
    return out


@dataclass
class MlirRuns:
    inputs: list[ChunkResult]  # each program, reprinted
    fixed: list[ChunkResult]  # each fix_text output, reprinted
    reference: list[ChunkResult]  # the reference pass on each program, reprinted


@pytest.fixture(scope="module")
def mlir_runs(programs) -> MlirRuns:
    texts = [p.text for p in programs]
    return MlirRuns(reprint(texts), reprint([p.fixed for p in programs]), reference(texts))


def _report(failures: list[str]) -> str:
    shown = "\n\n".join(failures[:SHOWN])
    more = f"\n\n... and {len(failures) - SHOWN} more" if len(failures) > SHOWN else ""
    return f"{len(failures)} of {PROGRAMS} programs failed:\n\n{shown}{more}"


def test_generator_same_seed_same_program():
    assert generate_program(12345) == generate_program(12345)
    assert generate_program(12345) != generate_program(12346)


def test_generator_programs_cover_every_shape(programs):
    """The generator is not degenerate: across the programs every shape the suite is about
    appears, and most programs give the rewrite work to do."""
    corpus = "\n".join(p.written for p in programs)
    shapes = {
        "host_shared alloc": "host_shared (",
        "alloc with an existing dependency list": "gpu.alloc [%",
        "empty dependency list": "[] ",
        "memcpy": "gpu.memcpy ", "memset": "gpu.memset ", "dealloc": "gpu.dealloc ",
        "launch_func on one line": ") threads in (",
        "launch_func over several lines": "\n        blocks in (",
        "launch_func args over several lines": ",\n",
        "dynamic shared memory": "dynamic_shared_memory_size %",
        "func.call": "call @ext_", "scf.for": "scf.for ", "iter_args": "iter_args(",
        "scf.if with else": "} else {", "scf.while": "scf.while ",
        "scf.execute_region": "scf.execute_region {", "cf.br": "cf.br ^bb",
        "cf.cond_br": "cf.cond_br ", "block arguments": ":\n", "pure one-line region": "{ %",
        "name colliding with a fresh token": "%t0 = ", "tab indentation": "\n\t",
        "non-ASCII comment": "größe", "trailing comment": "  // ", "loc()": " loc(",
        "memref.store": "memref.store ", "memref.load": "memref.load ",
        "index dialect": "index.add ", "math dialect": "math.", "affine.apply": "affine.apply ",
        "memref.dim": "memref.dim ", "token from a call": "@ext_token()",
    }
    missing = [what for what, needle in shapes.items() if needle not in corpus]
    assert not missing, f"the generator never produced: {missing}"
    rewritten = sum(p.fixed != p.text for p in programs)
    assert rewritten >= 0.8 * len(programs), f"only {rewritten} programs were rewritten"


def test_laid_out_programs_mean_what_was_generated(programs, mlir_runs):
    """The layout pass breaks lines only where MLIR reads the same IR."""
    failures = meaning_changed(programs, mlir_runs.inputs)
    assert not failures, _report(failures)


def test_generator_programs_parse_in_mlir_opt(programs, mlir_runs):
    failures = [f"seed {p.seed}:\n{r.stderr}" for p, r in zip(programs, mlir_runs.inputs)
                if not r.ok]
    assert not failures, _report(failures)


def test_analyze_random_programs_find_only_sync_gpu_ops(programs):
    """The programs have nothing that blocks the rewrite, so the only findings are the hints."""
    failures = []
    for p in programs:
        unexpected = [f for f in analyze(p.text).findings if f.code != "sync-gpu-ops"]
        if unexpected:
            failures.append(f"seed {p.seed}: {unexpected}")
    assert not failures, _report(failures)


def test_fix_text_random_programs_keep_untouched_lines(programs):
    failures = []
    for p in programs:
        problem = untouched_lines_survive(p.text, p.fixed)
        if problem:
            failures.append(f"seed {p.seed}: {problem}")
    assert not failures, _report(failures)


def test_fix_text_random_programs_parse_in_mlir_opt(programs, mlir_runs):
    failures = [f"seed {p.seed}:\n{r.stderr}\n{p.fixed}" for p, r in zip(programs, mlir_runs.fixed)
                if not r.ok]
    assert not failures, _report(failures)


def test_fix_text_random_programs_equal_reference_pass(programs, mlir_runs):
    failures = []
    for p, ours, ref in zip(programs, mlir_runs.fixed, mlir_runs.reference):
        if not ref.ok:
            failures.append(f"seed {p.seed}: the reference pass failed:\n{ref.stderr}")
        elif ours.ok and ours.output != ref.output:
            diff = "".join(difflib.unified_diff(
                ref.output.splitlines(keepends=True), ours.output.splitlines(keepends=True),
                "mlir-opt-22 pass", "fix_text"))
            failures.append(f"seed {p.seed}:\n{diff}")
    assert not failures, _report(failures)


_ORIGINAL = ("func.func @f(%n: index) {\r\n  %a = gpu.alloc (%n) : memref<?xf32>  // buf\r\n"
             "  return\r\n}")


def test_untouched_lines_survive_accepts_token_insertions_and_wait_lines():
    fixed = ("func.func @f(%n: index) {\r\n  %t0 = gpu.wait async\r\n"
             "  %a, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>  // buf\r\n"
             "  gpu.wait [%t1]\r\n  return\r\n}")
    assert untouched_lines_survive(_ORIGINAL, fixed) is None


@pytest.mark.parametrize("fixed", [
    _ORIGINAL.replace("// buf", "// bu"),  # a byte lost
    _ORIGINAL.replace("  return\r\n", "  return\n"),  # a line ending changed
    _ORIGINAL + "\n",  # a final newline added
    _ORIGINAL.replace("%a = gpu", "%a, %x = gpu"),  # an insertion the rewrite never makes
    _ORIGINAL.replace("  return", "  gpu.wait [%t0]\r\n  gpu.wait [%t1]\r\n  retur"),
], ids=["lost-byte", "line-ending", "final-newline", "foreign-insertion", "changed-line"])
def test_untouched_lines_survive_rejects_other_changes(fixed):
    assert untouched_lines_survive(_ORIGINAL, fixed) is not None
