"""The server's analysis with suppression comments: each unit carries the findings the comments
leave (its own comments and those just outside it), incremental edits and the forked share
give what a fresh analysis in one process gives, and the findings equal `check`'s."""

from __future__ import annotations

import random

import pytest

from benchmarks.gen_host import generate
from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.suppression import suppress
from gpu_async_lsp.ide.host import Analyzer

# Tests of the shared path: it is taken whatever else the machine runs (conftest.py).
pytestmark = pytest.mark.usefixtures("second_process_always")


FUNC = "func.func @f(%n: index) {\n  %a = gpu.alloc (%n) : memref<?xf32>\n  return\n}\n"
BLOCKED = ("func.func @g(%n: index) {\n  %b = gpu.alloc (%n) : memref<?xf32>\n  gpu.wait\n"
           "  return\n}\n")


def codes(a) -> list[tuple[str, int]]:
    return [(f.code, a.text.count("\n", 0, f.start) + 1) for f in a.findings]


def as_check(text: str) -> list:
    """The findings `check` reports for `text`, as the server's analysis lists them."""
    return [(f.code, f.start, f.end, f.message, f.related)
            for f in suppress(text, analyze(text).findings)]


def findings(a) -> list:
    return [(f.code, f.start, f.end, f.message, f.related) for f in a.findings]


def test_server_suppression_comment_in_a_unit_hides_its_finding():
    text = FUNC + BLOCKED.replace("gpu.wait\n", "gpu.wait // gpu-async-lsp: ignore\n")
    a = Analyzer().analyze(text, 1)
    assert codes(a) == [("sync-gpu-ops", 1)]
    assert a.functions[1].first_blocker is not None  # still blocked: only hidden
    assert not a.functions[1].rewritable


def test_server_suppression_comment_above_a_unit_hides_its_hint():
    """The comment above `func.func` lies outside the function's unit."""
    text = FUNC + "// gpu-async-lsp: ignore[sync-gpu-ops]\n" + FUNC.replace("@f", "@h")
    a = Analyzer().analyze(text, 1)
    assert codes(a) == [("sync-gpu-ops", 1)]
    assert findings(a) == as_check(text)


def test_server_suppression_same_unit_text_differently_suppressed_is_kept_apart():
    """Two copies of one function, one with a comment above it: the cache key holds what
    comments outside a unit hide, so the copies do not share a result."""
    text = FUNC + "// gpu-async-lsp: ignore\n" + FUNC + FUNC
    analyzer = Analyzer()
    a = analyzer.analyze(text, 1)
    assert codes(a) == [("sync-gpu-ops", 1), ("sync-gpu-ops", 10)]
    b = analyzer.analyze("// gpu-async-lsp: ignore\n" + FUNC, 2)  # the suppressed copy, cached
    assert codes(b) == []


def test_server_suppression_last_op_of_a_one_line_module_sees_the_comment_after_it():
    text = "module { func.func @f() { gpu.wait } } // gpu-async-lsp: ignore\n"
    a = Analyzer(strict=True).analyze(text, 1)
    assert codes(a) == []
    assert [f.code for f in analyze(text, strict=True).findings] == [F.PRE_EXISTING_WAIT]


def test_server_suppression_invalid_comment_outside_units_is_reported_once():
    text = ("module {\n  // gpu-async-lsp: ignore[nonsense]\n" + FUNC.replace("\n", "\n  ")
            + "}\n" + "// gpu-async-lsp: ignroe\n")
    a = Analyzer().analyze(text, 1)
    assert codes(a) == [(F.INVALID_SUPPRESSION, 2), ("sync-gpu-ops", 3),
                        (F.INVALID_SUPPRESSION, 8)]
    assert findings(a) == as_check(text)
    inside = FUNC.replace("return", "return // gpu-async-lsp: ignore[nonsense]")
    assert codes(Analyzer().analyze(inside, 1)) == [("sync-gpu-ops", 1),
                                                    (F.INVALID_SUPPRESSION, 3)]


@pytest.mark.parametrize("seed", range(4))
def test_server_suppression_incremental_equals_fresh_after_random_edits(seed):
    """Edits in and around comments (typing a directive, a code, a blank line between a
    comment and its op) re-analyse what they change, as a fresh analysis would."""
    rng = random.Random(seed)
    text = (FUNC + "// gpu-async-lsp: ignore[sync-gpu-ops]\n" + BLOCKED
            + BLOCKED.replace("gpu.wait\n",
                              "gpu.wait // gpu-async-lsp: ignore[pre-existing-wait]\n")
            + "  // gpu-async-lsp: ignore\n" + BLOCKED) * 3
    incremental = Analyzer()
    previous = incremental.analyze(text, 0)
    pieces = ["// gpu-async-lsp: ignore\n", " // gpu-async-lsp: ignore[pre-existing-wait]",
              "\n", " ", "x", "gpu.wait\n  ", ",already-async", "]", "["]
    for version in range(1, 40):
        pos = rng.randrange(len(text))
        if rng.random() < 0.7:
            text = text[:pos] + rng.choice(pieces) + text[pos:]
        else:
            text = text[:pos] + text[pos + rng.randint(1, 4):]
        previous = incremental.analyze(text, version, previous)
        fresh = Analyzer().analyze(text, version)
        assert findings(previous) == findings(fresh), (seed, version)
        assert findings(fresh) == as_check(text), (seed, version)


def test_server_suppression_keystroke_in_a_suppressed_op_keeps_it_hidden():
    """The incremental path (an edit inside one body) keeps what comments outside the unit
    hide: the comment above the function still hides its hint."""
    text = FUNC + "// gpu-async-lsp: ignore\n" + FUNC.replace("@f", "@h")
    analyzer = Analyzer()
    a = analyzer.analyze(text, 1)
    at = text.rindex("%a = gpu.alloc")
    b = analyzer.analyze(text[:at] + " " + text[at:], 2, a)
    assert codes(b) == [("sync-gpu-ops", 1)]
    assert b.units[0].result is a.units[0].result  # only the edited unit was analysed


def test_server_suppression_shared_with_a_process_equals_one_process():
    """A big first open is shared with a forked process: its units' findings are filtered
    there too (a hidden wait in every other function, a hidden hint in the last one)."""
    text = generate(12000)
    parts = text.split("    gpu.memcpy %dev, %host")
    wait = "    // gpu-async-lsp: ignore\n    gpu.wait\n"
    text = parts[0] + "".join((wait if k % 2 else "") + "    gpu.memcpy %dev, %host" + part
                              for k, part in enumerate(parts[1:]))
    text = text.replace("  func.func @step536(", "  // gpu-async-lsp: ignore[sync-gpu-ops]\n"
                        "  func.func @step536(")
    assert len(text) > 400_000
    a = Analyzer().analyze(text, 1)
    assert any(u.result._rebuild is not None for u in a.units)  # from the other process
    single = Analyzer()
    single.share_big_batches = False
    assert findings(a) == findings(single.analyze(text, 1)) == as_check(text)
    hidden = len(analyze(text).findings) - len(a.findings)
    assert hidden == text.count(wait) + 1 == 269
    assert any("@step534 " in f.message for f in a.findings)
    assert not any("@step536 " in f.message for f in a.findings)
