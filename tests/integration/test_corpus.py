"""Corpus tests over ../shared/corpus/upstream (80 files from LLVM's own tests).

For every file or `// -----` chunk that mlir-opt-22 parses: our parser reports no syntax error,
and our op tree equals mlir-opt-22's (`--mlir-print-op-generic`, parsed back with our parser),
ignoring the terminators MLIR elides in custom form and the implicit top-level module. Where the
reference pass changed a function that our rewrite rewrites, the two agree after reprinting.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.op_tables import TERMINATOR_OPS
from gpu_async_lsp.syntax import parse_document
from gpu_async_lsp.syntax.ir import Op
from gpu_async_lsp.syntax.lexer import split_chunks
from tests.mlir_tools import mlir_opt, require_mlir_opt

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
MANIFEST = CORPUS / "manifest.json"


def _entries():
    if not MANIFEST.exists():
        return []
    return json.loads(MANIFEST.read_text())


ENTRIES = _entries()


def _require_corpus():
    if not MANIFEST.exists():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing at {CORPUS}")
        pytest.skip(f"corpus missing at {CORPUS}")


def _flags(entry) -> list[str]:
    return ["-allow-unregistered-dialect"] if entry["allow_unregistered"] else []


def _chunks(entry, text):
    """(chunk text, chunk index) of an entry, as mlir-opt -split-input-file sees them."""
    if entry["split_input_file"]:
        return [text[s:e] for s, e in split_chunks(text)]
    return [text]


Tree = tuple[str, tuple]


def _tree(op: Op) -> Tree:
    # A region without blocks (`({})` of a declaration in generic form) is no region in custom
    # form (`func.func private @f()`, `gpu.all_reduce add %x {}`): leave those out.
    kids = tuple(tuple(tuple(_tree(o) for o in b.ops) for b in r.blocks)
                 for r in op.regions if r.blocks)
    return (op.name, kids)


def _strip_terminators(ref: Tree, ours: Tree) -> Tree:
    """Drop from `ref` the trailing terminators that `ours` does not have (elided in custom form)."""
    name, ref_regions = ref
    _, our_regions = ours
    regions = []
    for ri, rblocks in enumerate(ref_regions):
        oblocks = our_regions[ri] if ri < len(our_regions) else ()
        blocks = []
        for bi, rops in enumerate(rblocks):
            oops = oblocks[bi] if bi < len(oblocks) else ()
            rops = list(rops)
            if (rops and len(rops) == len(oops) + 1 and rops[-1][0] in TERMINATOR_OPS
                    and not rops[-1][1]):
                rops.pop()
            blocks.append(tuple(_strip_terminators(r, o) for r, o in zip(rops, oops))
                          + tuple(rops[len(oops):]))
        regions.append(tuple(blocks))
    return (name, tuple(regions))


def _empty_regions_out(tree: Tree) -> Tree:
    """`{\n}` is a region whose one block holds only an elided terminator: same as none."""
    name, regions = tree
    kept = tuple(tuple(tuple(_empty_regions_out(o) for o in b) for b in r)
                 for r in regions if any(len(b) for b in r))
    return (name, kept)


def _chunk_trees(text: str) -> list[Tree]:
    doc = parse_document(text)
    assert not doc.errors, doc.errors
    return [_tree(op) for chunk in doc.chunks for op in chunk.ops]


PARSEABLE = [
    (e["path"], i)
    for e in ENTRIES
    for i in range(e["chunks"])
    if (e["chunk_details"][i]["parses"] if e["chunk_details"] else e["mlir_opt_parses"])
]


@pytest.mark.parametrize("path,chunk", PARSEABLE, ids=[f"{p.split('/')[-1]}#{c}" for p, c in PARSEABLE])
def test_corpus_parseable_chunk_has_reference_tree(path, chunk):
    _require_corpus()
    entry = next(e for e in ENTRIES if e["path"] == path)
    text = (CORPUS / path).read_text(encoding="utf-8")
    chunk_text = _chunks(entry, text)[chunk]

    ours = parse_document(chunk_text)
    assert not ours.errors, [(e.message, chunk_text[e.start:e.start + 60]) for e in ours.errors]
    our_trees = [_tree(op) for op in ours.chunks[0].ops]

    require_mlir_opt()
    generic = mlir_opt(chunk_text, "--mlir-print-op-generic", *_flags(entry), check=True).stdout
    (ref_module,) = _chunk_trees(generic)
    # The implicit top-level module: present in ours only when the text has exactly one module.
    if len(our_trees) == 1 and our_trees[0][0] == "builtin.module":
        ref_trees = [ref_module]
    else:
        ref_trees = list(ref_module[1][0][0]) if ref_module[1] else []
    assert len(ref_trees) == len(our_trees)
    for ref, our in zip(ref_trees, our_trees):
        assert _empty_regions_out(_strip_terminators(ref, our)) == _empty_regions_out(our)


FUNC_RE = re.compile(r"^(\s*)func\.func (?:private )?(@[\w$.\-]+)", re.M)


def _functions(printed: str) -> dict[str, str]:
    """Function name -> its reprinted text (mlir-opt's layout: body ends at the same indent)."""
    out = {}
    for m in FUNC_RE.finditer(printed):
        indent = m.group(1).lstrip("\n")
        end = printed.find(f"\n{indent}}}", m.end())
        out[m.group(2)] = printed[m.start():end if end != -1 else len(printed)]
    return out


CHANGED = [e["path"] for e in ENTRIES if e.get("expected") and not e["split_input_file"]]


@pytest.mark.parametrize("path", CHANGED, ids=[p.split("/")[-1] for p in CHANGED])
def test_corpus_changed_function_equals_reference_rewrite(path):
    _require_corpus()
    entry = next(e for e in ENTRIES if e["path"] == path)
    text = (CORPUS / path).read_text(encoding="utf-8")
    analysis = analyze(text)
    rewritten = {fn.name for fn in analysis.functions if fn.rewritable}
    # Functions we leave alone are blocked the way the original pass was (rules 2-3 of
    # docs/ARCHITECTURE.md, "Rewrite semantics, in short": LLVM 22 accepts pre-existing
    # gpu.waits and async ops, the product follows the original).
    for fn in analysis.functions:
        if fn.has_work and not fn.rewritable:
            assert {b.code for b in fn.blockers} <= {"pre-existing-wait", "already-async"}, fn.name
    if not rewritten:
        return
    flags = _flags(entry)
    ours = mlir_opt(analysis.fixed_text(), *flags, check=True).stdout
    reference = (CORPUS / entry["expected"]).read_text(encoding="utf-8")
    ref = mlir_opt(reference, *flags, check=True).stdout
    our_fns, ref_fns = _functions(ours), _functions(ref)
    compared = 0
    for name in sorted(rewritten):
        if "async.execute" in our_fns[name]:
            continue  # LLVM 22's async.execute phases are out of scope
        assert our_fns[name] == ref_fns[name], name
        compared += 1
    # Functions with async.execute are not compared (LLVM 22's later phases are out of scope).
    assert compared or all("async.execute" in our_fns[name] for name in rewritten)
