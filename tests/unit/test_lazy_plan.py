"""The rewrite's walk without its plan (`analyze(plan=False)`, what the language server's
diagnostics use) finds what the planning walk finds, and plans on first use what the planning
walk plans: on every fixture and every file of the corpora, under both semantics, with and
without `thread_launch`."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.async_region.rewriter import LLVM22, ORIGINAL
from gpu_async_lsp.syntax import parse_document
from tests.corpora import CORPORA, manifest, require_corpus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
MODES = [(s, t) for s in (ORIGINAL, LLVM22) for t in (False, True)]


def _same(text: str) -> None:
    doc = parse_document(text)  # one IR for both: steps refer to its ops
    for semantics, thread_launch in MODES:
        full = analyze(doc, semantics=semantics, thread_launch=thread_launch)
        lazy = analyze(doc, semantics=semantics, thread_launch=thread_launch, plan=False)
        where = f"{semantics}, thread_launch={thread_launch}"
        assert lazy.findings == full.findings, where
        assert len(lazy.functions) == len(full.functions), where
        for a, b in zip(lazy.functions, full.functions, strict=True):
            assert [id(op) for op in a.sync_ops] == [id(op) for op in b.sync_ops], where
            assert a.blockers == b.blockers, where
            assert a.rewritable == b.rewritable, where
        # Asked in either order: edits first, or steps first.
        for i, (a, b) in enumerate(zip(lazy.functions, full.functions)):
            if i % 2:
                assert a.edits == b.edits, (where, a.name)
                assert a.steps == b.steps, (where, a.name)
            else:
                assert a.steps == b.steps, (where, a.name)
                assert a.edits == b.edits, (where, a.name)
        assert lazy.edits() == full.edits(), where


FIXTURE_FILES = sorted(FIXTURES.glob("*.mlir")) + sorted((FIXTURES / "parse").glob("*.mlir"))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: p.name)
def test_lazy_walk_equals_planning_walk_on_fixture(path):
    _same(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("corpus", list(CORPORA))
def test_lazy_walk_equals_planning_walk_on_corpus(corpus):
    require_corpus(corpus)
    folder = CORPORA[corpus][0]
    entries = manifest(corpus)
    assert entries
    for entry in entries:
        _same((folder / entry["path"]).read_text(encoding="utf-8", errors="replace"))


def test_steps_planned_once_when_asked_from_two_threads():
    text = (FIXTURES / "multi_block.mlir").read_text()
    for _ in range(20):
        fn = analyze(text, plan=False).functions[0]
        assert fn._steps is None  # not planned yet
        seen: list = []

        def ask(fn=fn, seen=seen):
            seen.append(fn.steps)

        threads = [threading.Thread(target=ask) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert fn.steps and all(s is fn.steps for s in seen)
        assert fn.edits == analyze(text).functions[0].edits
