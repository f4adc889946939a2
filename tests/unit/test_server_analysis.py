"""The server's incremental analysis equals a fresh one after any edit."""

from __future__ import annotations

import random

import pytest

from benchmarks.gen_host import generate
from gpu_async_lsp.ide.analysis import Analyzer, changed_span


def _snapshot(a):
    from gpu_async_lsp.ide import features
    from gpu_async_lsp.text import LineIndex

    def symbols(nodes):
        return [(n.name, n.detail, n.start, n.end, n.selection, symbols(n.children))
                for n in nodes]

    hints = [(u.base + h.offset, h.label) for u, h in features.inlay_hints(a, 0, len(a.text))]
    # Symbol resolution (its table is carried from version to version when it can be).
    definitions = [(i, features.definition(a, i + 1)) for i in range(len(a.text))
                   if a.text[i] == "@"]
    return ([(f.code, f.start, f.end, f.message, f.related) for f in a.findings],
            [(fn.name, fn.start, fn.end, fn.anchor, fn.rewritable, fn.edits) for fn in a.functions],
            a.has_syntax_errors, a.containers, a.chunks, symbols(features.document_symbols(a)),
            features.folding_ranges(a, LineIndex(a.text)), hints, definitions)


def test_server_analysis_changed_span_finds_the_differing_region():
    assert changed_span("abcdef", "abXdef") == (2, 3, 3)
    assert changed_span("abc", "abc") == (3, 3, 3)
    assert changed_span("aaa", "aaaa") == (3, 3, 4)
    assert changed_span("", "x") == (0, 0, 1)


@pytest.mark.parametrize("seed", range(6))
def test_server_analysis_incremental_equals_fresh_after_random_edits(seed):
    rng = random.Random(seed)
    text = generate(400, seed=seed)
    incremental = Analyzer()
    previous = incremental.analyze(text, 0)
    for version in range(1, 40):
        pos = rng.randrange(len(text))
        kind = rng.random()
        if kind < 0.4:
            text = text[:pos] + rng.choice([" ", "x", "\n", "%t0 ", "gpu.wait\n  "]) + text[pos:]
        elif kind < 0.7:
            text = text[:pos] + text[pos + rng.randint(1, 3):]
        else:  # edits that move unit boundaries: a full split must follow
            text = text[:pos] + rng.choice(["{", "}", "\"", "// -----\n", "/"]) + text[pos:]
        previous = incremental.analyze(text, version, previous)
        fresh = Analyzer().analyze(text, version)
        assert _snapshot(previous) == _snapshot(fresh), (seed, version)


def test_server_analysis_symbol_table_carried_over_unasked_versions_stays_right():
    """Versions whose symbols nobody asked for pass the table on (edits in two different
    function bodies), and it still resolves as a fresh analysis does."""
    from gpu_async_lsp.ide import features

    text = ("module {\n  func.func @a() {\n    return\n  }\n"
            "  func.func @b() {\n    \"test.op\"() : () -> ()\n    return\n  }\n"
            "  func.func @c() {\n    func.call @a() : () -> ()\n    return\n  }\n}\n")
    analyzer = Analyzer()
    a = analyzer.analyze(text, 0)
    use = text.index("@a()", text.index("func.call"))
    assert features.definition(a, use + 1)[0].start == text.index("@a")
    for version, (old, new) in enumerate([("return\n  }\n  func.func @b", "return \n  }\n  func.func @b"),
                                          ("\"test.op\"() :", "\"test.op\"()  :")], 1):
        text = text.replace(old, new, 1)
        a = analyzer.analyze(text, version, a)  # nobody asks about these versions
    use = text.index("@a()", text.index("func.call"))
    fresh = Analyzer().analyze(text, 9)
    assert features.definition(a, use + 1) == features.definition(fresh, use + 1)
    assert features.definition(a, use + 1)[0].start == text.index("@a")


def test_server_analysis_results_need_no_cycle_collector():
    """What the server keeps per document (IR, plans, findings, the features' memos) has no
    reference cycles: dropped, it is freed at once, so the server may freeze big analyses
    out of the collector's sight (gc.freeze) without leaking them."""
    import gc

    from gpu_async_lsp.ide import features
    from gpu_async_lsp.text import LineIndex

    text = generate(300, seed=3)
    Analyzer().analyze(text, 0)  # warm: the parser and its caches are built once
    gc.collect()
    gc.disable()
    try:
        analyzer = Analyzer()
        a = analyzer.analyze(text, 1)
        index = LineIndex(text)
        features.document_symbols(a)
        features.folding_ranges(a, index)
        features.inlay_hints(a, 0, len(text))
        features.code_lenses(a, index, "utf-16")
        at = text.index("@kernels::")
        features.definition(a, at + 2)
        features.references(a, at + 2)
        features.hover(a, text.index("gpu.memcpy") + 1, lambda o: index.line_of(o) + 1)
        at = text.index("gpu.alloc", len(text) // 2)
        b = analyzer.analyze(text[:at] + " " + text[at:], 2, a)  # the incremental path
        features.definition(b, at + 2)
        del a, b, analyzer
        assert gc.collect() == 0
    finally:
        gc.enable()
