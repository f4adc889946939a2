"""Corpus tests of LLVM 22's semantics: `check --fix --semantics llvm22` against mlir-opt-22's
`gpu-async-region` pass on real MLIR, function by function.

Two corpora, each with a `manifest.json` that says how mlir-opt-22 reads every file (split into
`// -----` chunks or not, with `-allow-unregistered-dialect` or not) and which chunks it parses:
`../shared/corpus` (80 files of LLVM's own tests) and `../shared/corpus-wide` (510 files of
buddy-mlir, many dialects). For every chunk that mlir-opt-22 parses:

- our rewrite (the command, run once on a directory of all chunks) keeps every line it does not
  mean to change, and its output parses in mlir-opt-22;
- where the pass succeeds on the chunk, each function our rewrite rewrites (it holds a
  synchronous GPU op and nothing blocks it) equals the pass's output for it, both reprinted;
- every other function (no synchronous GPU op, or blocked: `unsupported-form`, or
  `launch-not-outlined` where the pass fails on a `gpu.launch`) is left as written.

Any difference fails. A chunk our parser cannot read yet (listed in PARSER_GAPS, with the
syntax it misreads) is a strict xfail: it starts failing, loudly, when the parser reads it.
`pytest -s` shows one summary line per corpus (`test_llvm22_corpus_summary`).
"""

from __future__ import annotations

import collections
import functools
from dataclasses import dataclass, field

import pytest

from gpu_async_lsp.async_region import Analysis, analyze
from gpu_async_lsp.async_region.rewriter import LLVM22
from gpu_async_lsp.syntax.lexer import split_chunks
from tests.corpora import (
    CORPORA,
    chunk_id,
    fix_with_the_command,
    manifest,
    parses,
    require_corpus,
)
from tests.differential.function_compare import (
    BLOCKED,
    DIFFERS,
    NO_SYNC_OP,
    NOT_COMPARED,
    NOT_LEFT_AS_WRITTEN,
    REWRITTEN,
    FunctionResult,
    compare_functions,
)
from tests.differential.mlir_reference import (
    ChunkResult,
    reference,
    reprint,
    untouched_lines_survive,
)

# What may block a function in llvm22 semantics (a gpu.launch makes the pass fail, too).
LLVM22_BLOCKERS = {"unsupported-form", "launch-not-outlined"}
SHOWN = 3

pytestmark = pytest.mark.mlir_opt


CHUNKS = [(corpus, e["path"], i) for corpus in CORPORA for e in manifest(corpus)
          for i in range(e["chunks"]) if parses(e, i)]


# -- one run over a whole corpus --------------------------------------------------------------

@dataclass
class ChunkRun:
    entry: dict
    index: int
    text: str
    analysis: Analysis  # llvm22 semantics
    fixed: str  # `check --fix --semantics llvm22` of the chunk
    printed: ChunkResult  # the chunk, reprinted
    ours: ChunkResult  # `fixed`, reprinted
    reference: ChunkResult  # the pass on the chunk, reprinted
    # Where the pass fails on a gpu.launch: the pass on the chunk without its launches.
    without_launches: ChunkResult | None = None
    results: list[FunctionResult] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # what fails the chunk's test


def _diagnosis(c: ChunkRun) -> None:
    """Judge one chunk: fill `results` and `problems`."""
    if c.analysis.has_syntax_errors:
        # The command leaves such a text as it is: wrong only where the pass changes it.
        if c.fixed != c.text:
            c.problems.append("--fix changed a text with syntax errors")
        elif not c.reference.ok or c.reference.output != c.printed.output:
            errors = [f"{e.message} at {c.text[e.start:e.start + 40]!r}"
                      for chunk in c.analysis.document.chunks for e in chunk.errors]
            c.problems.append("the pass rewrites this chunk, ours cannot: our parser reports "
                              f"syntax errors where mlir-opt-22 reports none: {errors}")
        return
    survival = untouched_lines_survive(c.text, c.fixed, llvm22=True)
    if survival:
        c.problems.append(f"--fix changed a line it must keep: {survival}")
    if not c.ours.ok:
        c.problems.append(f"our output does not parse in mlir-opt-22:\n{c.ours.stderr}")
        return
    launches = any(b.code == "launch-not-outlined" for fn in c.analysis.functions
                   for b in fn.blockers)
    if not c.reference.ok and not launches:
        c.problems.append(f"the pass failed on a chunk without gpu.launch:\n{c.reference.stderr}")
        return
    reference = c.reference if c.reference.ok else c.without_launches
    c.results = compare_functions(c.analysis, c.fixed, c.ours.output,
                                  reference.output if reference is not None else None)
    for r in c.results:
        if r.outcome == DIFFERS:
            c.problems.append(f"{r.name} differs from the pass:\n{r.detail}")
        elif r.outcome == NOT_LEFT_AS_WRITTEN:
            c.problems.append(f"{r.name} ({r.blockers}) is not left as written:\n{r.detail}")
        elif r.outcome == BLOCKED and not set(r.blockers) <= LLVM22_BLOCKERS:
            c.problems.append(f"{r.name} is blocked by {r.blockers}")


def _without_launches(c: ChunkRun) -> str:
    """The chunk with the `gpu.launch` ops of its host functions taken out (`%t = gpu.launch
    async ...` becomes `%t = gpu.wait async`). The pass fails on a `gpu.launch`, and does to
    every other function what it would do with the launch there: each function is a pass of
    its own."""
    edits = []
    for fn in c.analysis.functions:
        for op in fn.func.walk():
            if op.name == "gpu.launch":
                token = c.text[op.start:op.results_end] + " = gpu.wait async" if op.results else ""
                edits.append((op.start, op.end, token))
    out, pos = [], 0
    for start, end, replacement in sorted(edits):
        if start >= pos:  # a launch nested in one taken out goes with it
            out.append(c.text[pos:start] + replacement)
            pos = end
    return "".join(out) + c.text[pos:]


@functools.cache
def corpus_run(corpus: str) -> dict[tuple[str, int], ChunkRun]:
    folder = CORPORA[corpus][0]
    chunks = []
    for entry in manifest(corpus):
        text = (folder / entry["path"]).read_text(encoding="utf-8")
        pieces = [text[s:e] for s, e in split_chunks(text)] if entry["split_input_file"] \
            else [text]
        chunks.extend((entry, i, pieces[i]) for i in range(entry["chunks"]) if parses(entry, i))
    texts = [t for _, _, t in chunks]
    fixed = fix_with_the_command(texts, "--semantics", LLVM22)
    runs: list[ChunkRun] = []
    # One batch per flag set: a chunk is read the way the manifest says mlir-opt-22 reads it.
    for unregistered in (False, True):
        batch = [k for k, (e, _, _) in enumerate(chunks) if e["allow_unregistered"] == unregistered]
        if not batch:
            continue
        printed = reprint([texts[k] for k in batch], allow_unregistered=unregistered)
        ours = reprint([fixed[k] for k in batch], allow_unregistered=unregistered)
        ref = reference([texts[k] for k in batch], allow_unregistered=unregistered)
        group = []
        for k, p, o, r in zip(batch, printed, ours, ref):
            entry, index, text = chunks[k]
            group.append(ChunkRun(entry, index, text, analyze(text, semantics=LLVM22), fixed[k],
                                  p, o, r))
        # Where the pass failed and our rewrite rewrites a function: the pass once more,
        # without the launches.
        retry = [(c, _without_launches(c)) for c in group if not c.reference.ok
                 and not c.analysis.has_syntax_errors
                 and any(fn.rewritable for fn in c.analysis.functions)]
        for (c, _), r in zip(retry, reference([t for _, t in retry],
                                              allow_unregistered=unregistered)):
            c.without_launches = r if r.ok else None
        runs.extend(group)
    for c in runs:
        _diagnosis(c)
    return {(c.entry["path"], c.index): c for c in runs}


# -- the tests --------------------------------------------------------------------------------

# Chunks whose syntax our parser misreads (so it cannot rewrite what the pass rewrites).
PARSER_GAPS: dict[str, str] = {}


def _params():
    out = []
    for c in CHUNKS:
        cid = chunk_id(*c)
        marks = [pytest.mark.xfail(strict=True, reason=PARSER_GAPS[cid])] \
            if cid in PARSER_GAPS else []
        out.append(pytest.param(*c, id=cid, marks=marks))
    return out


@pytest.mark.parametrize("corpus,path,chunk", _params())
def test_llvm22_corpus_chunk_equals_pass_function_by_function(corpus, path, chunk):
    require_corpus(corpus)
    run = corpus_run(corpus)[(path, chunk)]
    assert not run.problems, "\n\n".join(run.problems)


@pytest.mark.parametrize("corpus", list(CORPORA))
def test_llvm22_corpus_summary(corpus):
    """Counts, printed (pytest -s); also a check that the corpus exercised the comparison."""
    require_corpus(corpus)
    runs = corpus_run(corpus).values()
    outcomes = collections.Counter(r.outcome for c in runs for r in c.results)
    blocked = collections.Counter(b for c in runs for r in c.results if r.outcome == BLOCKED
                                  for b in r.blockers)
    compared = outcomes[REWRITTEN] + outcomes[DIFFERS]
    pass_failed = sum(not c.reference.ok for c in runs)
    without_launches = sum(r.outcome in (REWRITTEN, DIFFERS) for c in runs if not c.reference.ok
                           for r in c.results)
    syntax_errors = sum(c.analysis.has_syntax_errors for c in runs)
    failing = sum(bool(c.problems) for c in runs)
    xfailed = sum(chunk_id(corpus, c.entry["path"], c.index) in PARSER_GAPS for c in runs)
    with_execute = sum(r.async_execute for c in runs for r in c.results if r.outcome == REWRITTEN)
    print(f"\nllvm22 {corpus}: {len(runs)} chunks that mlir-opt-22 parses ({pass_failed} where "
          f"the pass fails on a gpu.launch); functions compared with the pass: {compared} "
          f"({without_launches} with the chunk's launches taken out for the pass; "
          f"{outcomes[REWRITTEN]} equal, {with_execute} of them with async.execute; "
          f"{outcomes[DIFFERS]} differ); left alone: {outcomes[NO_SYNC_OP]} without a "
          f"synchronous GPU op, {outcomes[BLOCKED]} blocked ({dict(blocked)}); "
          f"{outcomes[NOT_COMPARED]} rewritten where the pass fails (not compared); "
          f"{syntax_errors} chunks left as written for our syntax errors; "
          f"chunks failing: {failing} ({xfailed} known parser gaps)")
    assert compared, "no function of the corpus was compared with the pass"
