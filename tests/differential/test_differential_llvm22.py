"""Differential tests of LLVM 22's semantics: `check --fix --semantics llvm22` on generated
programs against `mlir-opt-22 --pass-pipeline='builtin.module(func.func(gpu-async-region))'`.

The programs (`program_generator_llvm22.py`, seeded: a failure names the seed that reproduces
it) hold pre-existing `gpu.wait`s, already-async GPU ops, tokens from arguments, loops, branches
and blocks, and `async.execute` regions. Per function (`function_compare.py`): each function our
rewrite rewrites equals the pass's output for it after both are reprinted; every other function
(no synchronous GPU op, or blocked by `unsupported-form`) is left as written, byte for byte.

`--fix` is run as the command (`python -m gpu_async_lsp check`, on a directory of all programs)
in both semantics, twice, then `check` once more. All programs go through `mlir-opt-22` in four
invocations (`-split-input-file`). `GPU_ASYNC_DIFF_LLVM22_PROGRAMS` and
`GPU_ASYNC_DIFF_LLVM22_SEED` change how many programs and which seeds; `pytest -s` shows the
summary line of `test_llvm22_summary`.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpu_async_lsp.async_region import Analysis, analyze, fix_text
from gpu_async_lsp.async_region.rewriter import LLVM22, ORIGINAL
from gpu_async_lsp.async_region.rewriter import PASS_SEMANTICS as SEMANTICS
from tests.differential.function_compare import (
    BLOCKED,
    DIFFERS,
    NO_SYNC_OP,
    NOT_LEFT_AS_WRITTEN,
    REWRITTEN,
    FunctionResult,
    compare_functions,
    host_function_texts,
)
from tests.differential.mlir_reference import (
    ChunkResult,
    reference,
    reprint,
    untouched_lines_survive,
)
from tests.differential.program_generator_llvm22 import generate_llvm22_program
from tests.relayout import laid_out, meaning_changed

PROGRAMS = int(os.environ.get("GPU_ASYNC_DIFF_LLVM22_PROGRAMS", "500"))
FIRST_SEED = int(os.environ.get("GPU_ASYNC_DIFF_LLVM22_SEED", "0"))
SEEDS = range(FIRST_SEED, FIRST_SEED + PROGRAMS)
SHOWN = 3  # failures shown in full in an assertion message
# What may block a function in llvm22 semantics here (the programs hold no gpu.launch).
LLVM22_BLOCKERS = {"unsupported-form"}
# What the original pass refuses (and so may remain as an error after --fix).
ORIGINAL_BLOCKERS = {"pre-existing-wait", "already-async"}
# A GPU op in generic form (the generator's way to make our rewrite block a function).
GENERIC_GPU_OP = re.compile(r'"gpu\.\w+"\s*\(')

pytestmark = pytest.mark.mlir_opt


@dataclass
class Program:
    seed: int
    text: str
    analysis: Analysis  # in llvm22 semantics
    written: str  # as generated (`text` is laid out again for odd seeds: tests/relayout.py)

    @property
    def name(self) -> str:
        return f"p{self.seed:05d}.mlir"


@pytest.fixture(scope="module")
def programs() -> list[Program]:
    out = []
    for seed in SEEDS:
        written = generate_llvm22_program(seed)
        text = laid_out(written, seed)
        out.append(Program(seed, text, analyze(text, semantics=LLVM22), written))
    return out


# -- the command, in both semantics -----------------------------------------------------------

def _command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpu_async_lsp", *args], capture_output=True,
                          text=True, timeout=600, check=False)


@dataclass
class CliRuns:
    """`check --fix`, `check --fix` again and `check`, on one directory of all programs."""

    fix: subprocess.CompletedProcess
    fixed: list[str]  # each program after the first --fix
    fix_again: subprocess.CompletedProcess
    fixed_again: list[str]  # ... after the second
    check: subprocess.CompletedProcess
    findings: dict[str, list[dict]]  # `check --output-format json` after the fix, by file name


def _findings_by_file(proc: subprocess.CompletedProcess) -> dict[str, list[dict]]:
    out = collections.defaultdict(list)
    for item in json.loads(proc.stdout):
        out[Path(item["file"]).name].append(item)
    return out


@pytest.fixture(scope="module")
def cli_runs(programs, tmp_path_factory) -> dict[str, CliRuns]:
    runs = {}
    for semantics in SEMANTICS:
        directory = tmp_path_factory.mktemp(f"programs-{semantics}")
        paths = [directory / p.name for p in programs]
        for p, path in zip(programs, paths):
            path.write_bytes(p.text.encode("utf-8"))
        # The pass's text: without the lowering's edits (those are tested against the lowering).
        args = ("--semantics", semantics, "--lowering", "none", "--output-format", "json",
                str(directory))
        fix = _command("check", "--fix", *args)
        fixed = [path.read_bytes().decode("utf-8") for path in paths]
        fix_again = _command("check", "--fix", *args)
        fixed_again = [path.read_bytes().decode("utf-8") for path in paths]
        check = _command("check", *args)
        runs[semantics] = CliRuns(fix, fixed, fix_again, fixed_again, check,
                                  _findings_by_file(check))
    return runs


# -- mlir-opt-22 ------------------------------------------------------------------------------

@dataclass
class MlirRuns:
    inputs: list[ChunkResult]  # each program, reprinted
    fixed: list[ChunkResult]  # each program after `check --fix --semantics llvm22`, reprinted
    reference: list[ChunkResult]  # the pass on each program, reprinted


@pytest.fixture(scope="module")
def mlir_runs(programs, cli_runs) -> MlirRuns:
    texts = [p.text for p in programs]
    return MlirRuns(reprint(texts), reprint(cli_runs[LLVM22].fixed), reference(texts))


@pytest.fixture(scope="module")
def results(programs, cli_runs, mlir_runs) -> list[tuple[Program, list[FunctionResult]]]:
    """Each program's functions, judged against the pass (programs the pass or the reprint of
    our output failed on are left out: other tests report them)."""
    out = []
    for p, fixed, ours, ref in zip(programs, cli_runs[LLVM22].fixed, mlir_runs.fixed,
                                   mlir_runs.reference):
        if ours.ok and ref.ok:
            out.append((p, compare_functions(p.analysis, fixed, ours.output, ref.output)))
    return out


def _report(failures: list[str]) -> str:
    shown = "\n\n".join(failures[:SHOWN])
    more = f"\n\n... and {len(failures) - SHOWN} more" if len(failures) > SHOWN else ""
    return f"{len(failures)} failures in {PROGRAMS} programs:\n\n{shown}{more}"


# -- the generator ----------------------------------------------------------------------------

def test_generator_same_seed_same_program():
    assert generate_llvm22_program(12345) == generate_llvm22_program(12345)
    assert generate_llvm22_program(12345) != generate_llvm22_program(12346)


SHAPES = {
    "bare gpu.wait": r"^\s*gpu\.wait(  //.*)?$",
    "gpu.wait with dependencies": r"^\s*gpu\.wait \[%",
    "gpu.wait []": r"^\s*gpu\.wait \[\]",
    "bare gpu.wait async": r"= gpu\.wait async(  //.*)?$",
    "gpu.wait async with dependencies": r"= gpu\.wait async \[%",
    "async alloc": r", %\S+ = gpu\.alloc async ", "async memcpy": r"= gpu\.memcpy async ",
    "async memset": r"= gpu\.memset async ", "async dealloc": r"= gpu\.dealloc async ",
    "async launch_func on one line": r"= gpu\.launch_func async .* threads in ",
    "async launch_func over several lines": r"= gpu\.launch_func async [^\n]*@k_\w+$",
    "async op without a dependency list": r"= gpu\.\w+ async %",
    "sync op with a dependency list": r"^\s*gpu\.(memcpy|memset|dealloc) \[%",
    "sync alloc with a dependency list": r"= gpu\.alloc \[%",
    "token argument": r"%dep: !gpu\.async\.token",
    "token iter_args": r"iter_args\([^)]*\) -> \(!gpu\.async\.token\) \{",
    "token and index iter_args": r"-> \(!gpu\.async\.token, index\) \{",
    "scf.if yielding a token": r"= scf\.if %\S+ -> \(!gpu\.async\.token\)",
    "result #0 as a dependency": r"\[[^\]]*%\w+#0",
    "token block argument": r"^\s*\^bb\d+\([^)]*!gpu\.async\.token",
    "token through a branch": r"cf\.c?o?n?d?_?br [^\n]*: !gpu\.async\.token",
    "host op taking a token": r"@ext_token_sink\(%",
    "host op returning a token": r"@ext_token_pass\(",
    "function returning a token": r"-> !gpu\.async\.token \{",
    "async.execute": r"= async\.execute \{",
    "async.execute with dependencies": r"async\.execute \[%",
    "async.execute with token operands": r"\(%\S+ as %\S+: !async\.value<!gpu\.async\.token>",
    "async.execute yielding a token": r"-> !async\.value<!gpu\.async\.token> \{",
    "async.execute yielding two values": r"%\S+:2 = async\.execute",
    "async.await of a token": r"async\.await %\S+ : !async\.token",
    "async.await of a GPU token": r"= async\.await %\S+ : !async\.value<!gpu\.async\.token>",
    "generic gpu.wait": r'"gpu\.wait"\(\)', "generic gpu.dealloc": r'"gpu\.dealloc"\(',
    "scf.for": r"scf\.for ", "scf.while": r"scf\.while ",
    "scf.execute_region": r"scf\.execute_region",
    "cf.cond_br": r"cf\.cond_br ", "memref.store": r"memref\.store ", "func.call": r"call @ext_",
    "name colliding with a fresh token": r"%t0 = ", "tab indentation": r"^\t",
    "non-ASCII comment": r"größe", "loc()": r" loc\(",
}


def test_generator_programs_cover_every_shape(programs):
    corpus = "\n".join(p.written for p in programs)
    missing = [what for what, pattern in SHAPES.items()
               if not re.search(pattern, corpus, re.MULTILINE)]
    assert not missing, f"the generator never produced: {missing}"


def test_laid_out_programs_mean_what_was_generated(programs, mlir_runs):
    """The layout pass (tests/relayout.py) breaks lines only where MLIR reads the same IR."""
    failures = meaning_changed(programs, mlir_runs.inputs)
    assert not failures, _report(failures)


def test_generator_programs_parse_and_the_pass_succeeds(programs, mlir_runs):
    failures = [f"seed {p.seed}:\n{r.stderr}" for p, r in zip(programs, mlir_runs.inputs)
                if not r.ok]
    failures += [f"seed {p.seed}: the pass failed:\n{r.stderr}"
                 for p, r in zip(programs, mlir_runs.reference) if not r.ok]
    assert not failures, _report(failures)


def test_generator_programs_have_no_syntax_errors_for_our_parser(programs):
    failures = [f"seed {p.seed}: {c.errors}" for p in programs
                for c in p.analysis.document.chunks if c.errors]
    assert not failures, _report(failures)


# -- llvm22 semantics against the pass --------------------------------------------------------

def test_llvm22_fix_as_command_equals_library(programs, cli_runs):
    run = cli_runs[LLVM22]
    assert run.fix.returncode == 0, run.fix.stderr
    failures = [f"seed {p.seed}" for p, fixed in zip(programs, run.fixed)
                if fixed != p.analysis.fixed_text()]
    assert not failures, _report(failures)
    assert fix_text(programs[0].text, semantics=LLVM22) == run.fixed[0]


def test_llvm22_fix_from_stdin_equals_fix_of_the_file(programs, cli_runs):
    for p, fixed in list(zip(programs, cli_runs[LLVM22].fixed))[:3]:
        proc = subprocess.run([sys.executable, "-m", "gpu_async_lsp", "check", "--fix",
                               "--semantics", LLVM22, "--lowering", "none", "-"], input=p.text.encode("utf-8"),
                              capture_output=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr.decode()
        assert proc.stdout.decode("utf-8") == fixed, f"seed {p.seed}"


def test_llvm22_fix_keeps_untouched_lines(programs, cli_runs):
    failures = []
    for p, fixed in zip(programs, cli_runs[LLVM22].fixed):
        problem = untouched_lines_survive(p.text, fixed, llvm22=True)
        if problem:
            failures.append(f"seed {p.seed}: {problem}")
    assert not failures, _report(failures)


def test_llvm22_fixed_programs_parse_in_mlir_opt(programs, cli_runs, mlir_runs):
    failures = [f"seed {p.seed}:\n{r.stderr}\n{fixed}"
                for p, fixed, r in zip(programs, cli_runs[LLVM22].fixed, mlir_runs.fixed)
                if not r.ok]
    assert not failures, _report(failures)


def test_llvm22_fix_equals_reference_pass_function_by_function(results):
    """Every function our rewrite rewrites equals the pass's output for it, those holding
    `async.execute` (the DeferWait and SingleTokenUse phases) included."""
    differs = [f"seed {p.seed} {r.name}:\n{r.detail}" for p, rs in results for r in rs
               if r.outcome == DIFFERS]
    assert not differs, _report(differs)


def test_llvm22_functions_left_alone_are_left_as_written(results):
    """A function without a synchronous GPU op, or blocked, is left byte for byte; here only
    `unsupported-form` blocks (a GPU op in generic form, or an async.execute the rewrite cannot
    follow the pass into)."""
    failures = []
    for p, rs in results:
        fns = dict(host_function_texts(p.text))
        for r in rs:
            if r.outcome == NOT_LEFT_AS_WRITTEN:
                failures.append(f"seed {p.seed} {r.name} ({r.blockers}):\n{r.detail}")
            elif r.outcome == BLOCKED:
                text = fns[r.name]
                if not set(r.blockers) <= LLVM22_BLOCKERS:
                    failures.append(f"seed {p.seed} {r.name}: blocked by {r.blockers}")
                elif not (GENERIC_GPU_OP.search(text) or "async.execute" in text):
                    failures.append(f"seed {p.seed} {r.name}: blocked with nothing to block it")
    assert not failures, _report(failures)


# -- the command: idempotent, clean afterwards ------------------------------------------------

@pytest.mark.parametrize("semantics", SEMANTICS)
def test_fix_twice_equals_once(programs, cli_runs, semantics):
    run = cli_runs[semantics]
    failures = [f"seed {p.seed}" for p, once, twice in zip(programs, run.fixed, run.fixed_again)
                if once != twice]
    assert not failures, _report(failures)
    assert "rewrote" not in run.fix_again.stderr, run.fix_again.stderr
    assert "rewrote" in run.fix.stderr, run.fix.stderr


@pytest.mark.parametrize("semantics", SEMANTICS)
def test_check_after_fix(programs, cli_runs, semantics, tmp_path):
    """`check` after `check --fix` reports what `--fix` said remains and nothing more. In llvm22
    semantics nothing that remains is an error: exit 0. In original semantics, a function
    holding both a synchronous GPU op and a pre-existing `gpu.wait` or async op stays refused
    (its blocker is an error, exit 1); a program without one exits 0."""
    run = cli_runs[semantics]
    assert _findings_by_file(run.fix) == run.findings
    errors = {name: [f for f in fs if f["severity"] == "error"]
              for name, fs in run.findings.items()}
    errors = {name: fs for name, fs in errors.items() if fs}
    if semantics == LLVM22:
        assert not errors, errors
        assert run.check.returncode == 0, run.check.stderr
        return
    codes = {f["code"] for fs in errors.values() for f in fs}
    assert codes <= ORIGINAL_BLOCKERS, codes
    assert run.check.returncode == (1 if errors else 0), run.check.stderr
    # The programs without a refused function: exit 0, checked as a directory of their own.
    clean = [p for p in programs if p.name not in errors]
    assert clean
    for p, fixed in zip(programs, run.fixed):
        if p.name not in errors:
            (tmp_path / p.name).write_bytes(fixed.encode("utf-8"))
    proc = _command("check", "--semantics", ORIGINAL, str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr


# -- what the run covered ---------------------------------------------------------------------

def test_llvm22_summary(programs, results, mlir_runs):
    """Counts, printed (pytest -s); also a check that every kind of function occurs."""
    counts = collections.Counter()
    pass_changes_left_alone = 0
    for (p, rs), inp, ref in zip(results, mlir_runs.inputs, mlir_runs.reference):
        printed_in = host_function_texts(inp.output)
        printed_ref = host_function_texts(ref.output)
        bodies = [i for i, fn in enumerate(p.analysis.functions) if fn.func.regions]
        for i, r in zip(bodies, rs):
            counts[r.outcome] += 1
            if r.async_execute:
                counts[f"{r.outcome} with async.execute"] += 1
            if r.outcome in (NO_SYNC_OP, BLOCKED) and printed_in[i] != printed_ref[i]:
                pass_changes_left_alone += 1
    compared = counts[REWRITTEN] + counts[DIFFERS]
    functions = sum(counts[o] for o in (REWRITTEN, DIFFERS, NO_SYNC_OP, BLOCKED,
                                        NOT_LEFT_AS_WRITTEN))
    line = (f"llvm22 differential: {len(programs)} programs, {functions} functions; "
            f"compared with the pass: {compared} ({counts[REWRITTEN]} equal, "
            f"{counts[f'{REWRITTEN} with async.execute']} of them with async.execute; "
            f"{counts[DIFFERS]} differ, {counts[f'{DIFFERS} with async.execute']} with "
            f"async.execute); left alone: {counts[NO_SYNC_OP]} without a synchronous GPU op, "
            f"{counts[BLOCKED]} blocked by unsupported-form "
            f"({counts[f'{BLOCKED} with async.execute']} with async.execute); the pass changes "
            f"{pass_changes_left_alone} of those left alone")
    print(f"\n{line}")
    assert len(results) == len(programs)
    assert counts[REWRITTEN] >= 0.4 * compared + 1
    assert counts[NO_SYNC_OP] and counts[BLOCKED] and pass_changes_left_alone
    assert counts[f"{REWRITTEN} with async.execute"]
