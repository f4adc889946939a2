"""The editor features never raise, whatever the text: every corpus file, truncated ones, and
generated token soup, with requests at many offsets (a crash in a request handler would cost
the user the server's answers, not the server, but it is still a bug)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_async_lsp.ide import features
from gpu_async_lsp.ide.host import Analyzer
from gpu_async_lsp.text import LineIndex
from tests.corpora import require_corpus

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus" / "upstream"
FILES = sorted(CORPUS.rglob("*.mlir"))


def exercise(text: str, offsets) -> None:
    a = Analyzer().analyze(text, 1)
    index = LineIndex(text)

    def line_of(offset: int) -> int:
        return index.line_of(offset) + 1

    features.document_symbols(a)
    features.folding_ranges(a, index)
    features.code_lenses(a, index, "utf-16")
    features.inlay_hints(a, 0, len(text))
    for offset in offsets:
        features.definition(a, offset)
        features.references(a, offset)
        features.hover(a, offset, line_of)


def test_features_corpus_is_present():
    require_corpus("corpus")  # a skip on a clone without ../shared, a failure in CI
    assert len(FILES) >= 80, CORPUS


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_features_never_raise_on_corpus_files_and_their_prefixes(path):
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    rng = random.Random(path.name)
    step = max(1, len(text) // 150)
    exercise(text, range(0, len(text) + 1, step))
    for cut in sorted(rng.sample(range(len(text) + 1), min(4, len(text) + 1))):
        prefix = text[:cut]
        exercise(prefix, rng.sample(range(cut + 1), min(20, cut + 1)))


_SOUP = st.lists(st.sampled_from([
    "func.func", "@f", "@k::@g", "(", ")", "{", "}", "%a", "%a#1", "%b:2", "=", "^bb0", ":",
    "gpu.alloc", "gpu.wait", "async", "[", "]", "gpu.launch_func", "module", "gpu.module",
    "\n", " ", "// -----\n", "\"", "memref<?xf32>", ",", "scf.for", "return", "é𝄞", "\r\n"]),
    max_size=60)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SOUP, st.lists(st.integers(0, 400), max_size=10))
def test_features_never_raise_on_token_soup(tokens, offsets):
    text = " ".join(tokens)
    exercise(text, [o % (len(text) + 1) for o in offsets])
