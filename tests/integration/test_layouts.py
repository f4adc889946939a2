"""Properties of every parsing chunk of ../shared/corpus and ../shared/corpus-wide, laid out
again and cut up, with mlir-opt-22 as the oracle.

- **Cut up** (`relayout.cut_variants`: the lines before or after a random line boundary, often
  followed by unmatched `{ ( [ < }`): whenever mlir-opt-22 cannot parse a variant, `check`
  reports at least one `syntax` finding for it and `check --fix` leaves the file byte for byte
  as it was (unless the cut ends an op inside its own custom format, which the product does
  not model for ops other than the GPU ops it rewrites: `_own_format_error`). (mlir-opt-22 runs with its verifier off, so that what it rejects is what its
  parser rejects: a valid prefix whose symbol references point past the cut is no syntax
  error.) Where it parses a variant, we report no syntax finding either.
- **Laid out again** (`relayout.relayout`: line breaks at random token boundaries): each
  variant that mlir-opt-22 reads as the same IR as the chunk (its generic print is the same)
  parses to the same op tree, with the same findings, and `--fix` gives what it gives on the
  chunk as written (both reprinted by mlir-opt-22), in both semantics.

`GPU_ASYNC_LAYOUT_SEED` changes the seed (a failure names the chunk and the seed).
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpu_async_lsp.async_region import analyze, fix_text
from gpu_async_lsp.async_region.rewriter import LLVM22, ORIGINAL
from gpu_async_lsp.ide.host import Analyzer
from gpu_async_lsp.syntax import parse_document
from gpu_async_lsp.syntax.optree import document_trees
from tests.corpora import CORPORA, chunk_id, manifest, parses, require_corpus
from tests.differential.mlir_reference import run_chunks
from tests.mlir_tools import mlir_opt
from tests.relayout import Cut, cut_variants, relayout
from tools.corpus_check import llvm_chunks

SEED = int(os.environ.get("GPU_ASYNC_LAYOUT_SEED", "26"))
CUTS_PER_CHUNK = 3
NO_VERIFIER = "--mlir-very-unsafe-disable-verifier-on-parsing"

pytestmark = pytest.mark.mlir_opt


@dataclass(frozen=True)
class Chunk:
    name: str  # corpus:path#index
    text: str
    unregistered: bool  # mlir-opt-22 needs -allow-unregistered-dialect for it


@pytest.fixture(scope="module")
def chunks() -> list[Chunk]:
    out = []
    for corpus, (folder, _) in CORPORA.items():
        require_corpus(corpus)
        for entry in manifest(corpus):
            text = (folder / entry["path"]).read_text(encoding="utf-8")
            pieces = ([c for _, c in llvm_chunks(text)] if entry["split_input_file"]
                      else [text])
            for i, piece in enumerate(pieces):
                if parses(entry, i):
                    out.append(Chunk(chunk_id(corpus, entry["path"], i), piece,
                                     entry["allow_unregistered"]))
    assert len(out) == 459  # tests/integration/test_corpus.py: 99 + 360
    return out


def _llvm(texts: list[str], unregistered: list[bool], *flags: str):
    """mlir-opt-22's result for each text (one invocation per dialect setting)."""
    results = [None] * len(texts)
    for allow in (False, True):
        idx = [i for i, u in enumerate(unregistered) if u == allow]
        for i, r in zip(idx, run_chunks([texts[i] for i in idx], allow_unregistered=allow,
                                        flags=flags)):
            results[i] = r
    return results


def _command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpu_async_lsp", *args], capture_output=True,
                          text=True, timeout=600, check=False)


# -- cut up -----------------------------------------------------------------------------------

# MLIR's own errors about structure: brackets, op names, function bodies, aliases. The product
# must see every one of these.
_STRUCTURAL = re.compile(r"operation name in quotes|'[}\])>]'|unbalanced|unexpected|"
                         r"non-empty function body|undefined symbol alias")
_ERROR_LINE = re.compile(r"^<stdin>:(\d+):\d+: error: (.*)$", re.M)


def _own_format_error(cut: Cut, unregistered: bool) -> bool:
    """Did the cut end an op inside its own custom format (`linalg.generic` cut before its
    `ins(...)`), which mlir-opt-22 rejects at the cut with the op's own message? The product
    reads the formats of the GPU ops it rewrites exactly and no other op's, so it cannot see
    these: a prefix, whose first error is at the cut (the text before it parsed) and is about
    no structure the product reads."""
    if not cut.prefix:
        return False
    flags = [NO_VERIFIER, *(["-allow-unregistered-dialect"] if unregistered else [])]
    m = _ERROR_LINE.search(mlir_opt(cut.text, *flags).stderr)
    return m is not None and int(m.group(1)) >= cut.lines and not _STRUCTURAL.search(m.group(2))


def test_cut_chunk_llvm_rejects_gets_syntax_finding_and_no_fix(chunks, tmp_path):
    rng = random.Random(SEED)
    cuts, names, unregistered = [], [], []
    for c in chunks:
        for k, cut in enumerate(cut_variants(c.text, rng, CUTS_PER_CHUNK)):
            cuts.append(cut)
            names.append(f"{c.name} cut {k}")
            unregistered.append(c.unregistered)
    variants = [cut.text for cut in cuts]
    llvm = _llvm(variants, unregistered, NO_VERIFIER)
    rejected = [i for i, r in enumerate(llvm) if not r.ok]
    accepted = [i for i, r in enumerate(llvm) if r.ok]
    assert len(rejected) > len(variants) // 2  # the property has many cases to hold on

    paths = []
    for i, v in enumerate(variants):
        path = tmp_path / f"v{i:05d}.mlir"
        path.write_bytes(v.encode("utf-8"))
        paths.append(path)
    json_out = _command("check", "--output-format", "json", str(tmp_path))
    assert json_out.returncode in (0, 1), json_out.stderr
    syntax = {Path(f["file"]).name for f in json.loads(json_out.stdout) if f["code"] == "syntax"}
    fixed = _command("check", "--fix", "--semantics", LLVM22, "--thread-launch", str(tmp_path))
    assert fixed.returncode in (0, 1), fixed.stderr

    unseen = [i for i in rejected if paths[i].name not in syntax]
    excused = {i for i in unseen if _own_format_error(cuts[i], unregistered[i])}
    unseen = [names[i] for i in unseen if i not in excused]
    rewritten = [names[i] for i in rejected if i not in excused
                 and paths[i].read_bytes() != variants[i].encode("utf-8")]
    false_alarms = [names[i] for i in accepted if paths[i].name in syntax]
    print(f"seed {SEED}: {len(chunks)} chunks, {len(variants)} cut variants, "
          f"{len(rejected)} rejected by mlir-opt-22 ({len(excused)} in an op's own format), "
          f"{len(accepted)} accepted")
    assert not unseen, f"{len(unseen)} rejected variants with no syntax finding: {unseen[:10]}"
    assert not rewritten, f"{len(rewritten)} rejected variants rewritten: {rewritten[:10]}"
    assert not false_alarms, f"{len(false_alarms)} accepted variants with a syntax finding: " \
        f"{false_alarms[:10]}"


# -- laid out again ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def relaid(chunks) -> list[tuple[Chunk, str]]:
    """(chunk, variant) for each variant mlir-opt-22 reads as the chunk."""
    rng = random.Random(SEED)
    variants = [relayout(c.text, rng) for c in chunks]
    unregistered = [c.unregistered for c in chunks]
    generic = ("--mlir-print-op-generic",)
    before = _llvm([c.text for c in chunks], unregistered, *generic)
    after = _llvm(variants, unregistered, *generic)
    kept = [(c, v) for c, v, b, a in zip(chunks, variants, before, after)
            if v != c.text and a.ok and a.output == b.output]
    print(f"seed {SEED}: {len(chunks)} chunks laid out again, {len(kept)} read by mlir-opt-22 "
          f"as written")
    # A variant mlir-opt-22 reads otherwise is a mistake of relayout (e.g. a break it should
    # not have made): few are allowed, so that the property keeps its cases.
    assert len(kept) >= 0.9 * len(chunks)
    return kept


def test_relaid_chunk_parses_to_the_same_tree(relaid):
    wrong = []
    for c, v in relaid:
        ours = parse_document(v)
        if ours.errors:
            e = ours.errors[0]
            wrong.append(f"{c.name}: {e.message} at {v[e.start:e.start + 40]!r}")
        elif document_trees(ours) != document_trees(parse_document(c.text)):
            wrong.append(f"{c.name}: another tree")
    assert not wrong, f"{len(wrong)} of {len(relaid)} (seed {SEED}):\n" + "\n".join(wrong[:15])


def _findings(text: str, semantics: str) -> list[tuple[str, str]]:
    return sorted((f.code, f.message) for f in analyze(text, semantics=semantics).findings)


@pytest.mark.parametrize("semantics", [ORIGINAL, LLVM22])
def test_relaid_chunk_gets_the_same_findings_and_rewrite(relaid, semantics):
    wrong = []
    pairs = []  # (chunk, its fix, the variant's fix) where the chunk is rewritten
    for c, v in relaid:
        if _findings(v, semantics) != _findings(c.text, semantics):
            wrong.append(f"{c.name}: other findings")
            continue
        fixed = fix_text(c.text, semantics=semantics)
        if fixed != c.text:
            pairs.append((c, fixed, fix_text(v, semantics=semantics)))
    assert not wrong, f"{len(wrong)} of {len(relaid)} (seed {SEED}):\n" + "\n".join(wrong[:15])
    unregistered = [c.unregistered for c, _, _ in pairs]
    ours = _llvm([f for _, f, _ in pairs], unregistered)
    theirs = _llvm([f for _, _, f in pairs], unregistered)
    for (c, _, _), a, b in zip(pairs, ours, theirs):
        if a.output != b.output:
            wrong.append(f"{c.name}: another rewrite")
    print(f"{len(pairs)} rewritten chunks compared")
    assert not wrong, f"{len(wrong)} of {len(pairs)} (seed {SEED}):\n" + "\n".join(wrong[:15])


def _all_findings(findings) -> list[tuple]:
    return sorted((f.code, f.message, f.start, f.end) for f in findings)


def test_relaid_and_cut_chunks_server_analysis_equals_check(chunks, relaid):
    """The server's analysis (per unit, cached, ide/analysis.py) finds what `check`'s finds on
    the laid-out and the cut-up variants alike."""
    rng = random.Random(SEED)
    texts = [v for _, v in relaid] + [cut.text for c in chunks
                                      for cut in cut_variants(c.text, rng, 1)]
    wrong = [text[:60] for text in texts
             if _all_findings(Analyzer().analyze(text).findings)
             != _all_findings(analyze(text).findings)]
    assert not wrong, f"{len(wrong)} of {len(texts)} (seed {SEED}): {wrong[:5]}"
