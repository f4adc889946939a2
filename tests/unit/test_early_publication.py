"""A big first open's diagnostics, published before the forked process's results are loaded
(`ide.host.EarlyPublication`, the server's `_EarlyPublication`): the same text, byte for byte,
as the publication of the same document analysed in one process, in every encoding, with
header findings, suppression comments outside units, CRLF and non-ASCII text and a severity
table that drops a code; where a unit the other process analysed lies twice, nothing early;
once joined, the results hold the fragments that were published."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from benchmarks.gen_host import generate
from gpu_async_lsp.async_region.findings import Severity
from gpu_async_lsp.async_region.suppression import NO_CONTEXT
from gpu_async_lsp.ide import host
from gpu_async_lsp.ide.host import Analyzer
from gpu_async_lsp.ide.units import PlacedUnit
from gpu_async_lsp.parallel import can_fork
from gpu_async_lsp.server import convert, responses
from gpu_async_lsp.server.documents import DocState
from gpu_async_lsp.server.server import _EarlyPublication

URI = "file:///big.mlir"
pytestmark = [pytest.mark.skipif(not can_fork(threaded=True), reason="shares need os.fork"),
              pytest.mark.usefixtures("second_process_always")]


class _Loop:
    """The event loop's part: the callback runs at once (the loop is idle meanwhile)."""

    def call_soon_threadsafe(self, fn, *args):
        fn(*args)


def _server(text: str, encoding: str, version: int = 1):
    doc = SimpleNamespace(version=version, source=text)
    sent: list[str] = []
    server = SimpleNamespace(encoding=encoding, current=lambda uri: doc,
                             _is_current=lambda state: True,
                             protocol=SimpleNamespace(send_json_text=sent.append))
    return server, doc, sent


def _early_open(text: str, encoding: str, severity: dict):
    """(what went out early, the shared analysis, the publisher) of a first open of `text`."""
    server, _, sent = _server(text, encoding)
    early = _EarlyPublication(server, _Loop(), DocState(URI), text, 1, severity)
    analysis = Analyzer().analyze(text, 1, None, encoding, early)
    return sent, analysis, early


def _one_process(text: str, encoding: str, severity: dict) -> str:
    analyzer = Analyzer()
    analyzer.share_big_batches = False
    return responses.diagnostics(URI, analyzer.analyze(text, 1, None, encoding), None, encoding,
                                 severity)


_BLOCKED = """  func.func @blocked{i}(%n: index) {{
    %a = gpu.alloc (%n) : memref<?xf32>  // \N{GRINNING FACE}
    gpu.wait
    gpu.dealloc %a : memref<?xf32>
    return
  }}"""


def _decorated(n_lines: int) -> str:
    """Host code with non-ASCII comments (a character outside the BMP: two UTF-16 units)
    before and in functions, a suppression comment outside every unit (a finding of the
    headers), an alias used and defined nowhere (another), functions with other findings,
    indented units and CRLF."""
    lines = generate(n_lines, seed=3).split("\n")
    out = []
    for i, line in enumerate(lines):
        if line.lstrip().startswith("func.func") and i % 3 == 0:
            out.append("  // é 字 \N{GRINNING FACE} notes")
            out.append("  // gpu-async-lsp: ignore[no-such-code]")
            out.append(_BLOCKED.format(i=i))
        out.append(line)
        if "arith.ceildivui" in line and i % 5 == 0:
            out.append("    %u = affine.apply #nowhere(%c0)  // \N{GRINNING FACE}")
    return "\r\n".join(out)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
def test_early_publication_equals_one_process_host_code(encoding):
    text = generate(12000)
    sent, analysis, early = _early_open(text, encoding, {})
    assert any(u.result._rebuild is not None for u in analysis.units)  # the other's units
    reference = _one_process(text, encoding, {})
    assert early.delivered and sent == [reference]
    assert responses.diagnostics(URI, analysis, None, encoding, {}) == reference


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
def test_early_publication_equals_one_process_crlf_non_ascii_headers(encoding):
    text = _decorated(12000)
    assert len(text) > 400_000
    reference = _one_process(text, encoding, {})
    sent, analysis, _ = _early_open(text, encoding, {})
    assert analysis.header_findings and "\r\n" in text
    assert sent == [reference]
    # A severity table that drops the commonest code and changes another.
    codes = sorted({f.code for u in analysis.units for f in u.result.findings})
    assert len(codes) >= 2
    severity = {codes[0]: None, codes[-1]: Severity.ERROR}
    sent, _, _ = _early_open(text, encoding, severity)
    assert sent == [_one_process(text, encoding, severity)] != [reference]


def test_early_publication_of_broken_text_equals_one_process():
    """Ops broken inside functions (NULs, wide characters, stray parentheses, block labels,
    garbage words: what leaves the units where they are) and a few units broken whole
    (unclosed braces and strings): the early publication is the one-process one, syntax
    findings included; where the units collapse (an unclosed brace takes the rest of the
    text) nothing is shared and the one publication is the same."""
    import random

    rng = random.Random(11)
    inner = ["%", "gpu.wait", "\x00", "字", "\N{GRINNING FACE}", "(", ")", "^bb0:", "= =",
             "#map", "!t", "%a = "]
    lines = generate(12000, seed=5).split("\n")
    for _ in range(400):
        k = rng.randrange(len(lines))
        if lines[k].startswith("    "):  # inside a function
            cut = rng.randrange(4, len(lines[k]) + 1)
            lines[k] = lines[k][:cut] + rng.choice(inner) + lines[k][cut:]
    text = "\n".join(lines)
    for encoding in ("utf-16", "utf-8"):
        sent, analysis, early = _early_open(text, encoding, {})
        reference = _one_process(text, encoding, {})
        assert analysis.has_syntax_errors and early.delivered and sent == [reference]
    k = len(lines) // 2
    collapsed = "\n".join([*lines[:k], "  func.func @open() {", '    "', *lines[k:]])
    sent, analysis, _ = _early_open(collapsed, "utf-16", {})
    reference = _one_process(collapsed, "utf-16", {})
    assert sent in ([reference], []) and (
        responses.diagnostics(URI, analysis, None, "utf-16", {}) == reference)


def test_joined_results_keep_the_fragments_published(monkeypatch):
    """The next publication (after an edit elsewhere) formats nothing of what was published:
    the fragments the other process made are kept on the results rebuilt here."""
    text = generate(12000)
    sent, analysis, _ = _early_open(text, "utf-16", {})
    calls = []
    original = convert.placed_diagnostic_text
    monkeypatch.setattr(convert, "placed_diagnostic_text",
                        lambda *a: calls.append(a) or original(*a))
    assert responses.diagnostics(URI, analysis, None, "utf-16", {}) == sent[0]
    assert calls == []


def test_no_early_publication_of_a_unit_the_other_made_that_lies_twice():
    """Where a unit the other process analysed lies a second time, its fragment there needs
    its result (loaded only after): the callback publishes nothing. Units this process
    analysed are formatted at each of their places."""
    text = "a\nbb\ncc\nd\n"
    key_x, key_y = ("x", None, False, NO_CONTEXT), ("y", None, False, NO_CONTEXT)
    placed = [PlacedUnit(0, "x", None, False), PlacedUnit(2, "y", None, False),
              PlacedUnit(5, "x", None, False)]
    published, formatted = [], []

    class Publisher:
        encoding = "utf-16"

        def fragment(self, result, line, character):
            formatted.append((result, line, character))
            return f"{result.name}@{line}"

        def publish(self, text, headers, parts):
            published.append(parts)

    early = host._early(text, placed, {key_x: [0, 2], key_y: [1]}, [], Publisher())
    assert early.places == [(0, 0), (1, 0)]
    early.received([], ["fy", "fx"])  # the other took both: x's second place is unknown
    assert published == [] and formatted == []
    x = SimpleNamespace(name="x", findings=[1])
    early.received([x], ["fy"])  # this process took x
    assert published == [["x@0", "fy", "x@2"]]


def test_early_publication_of_a_version_changed_meanwhile_is_not_sent():
    server, doc, sent = _server("text", "utf-16")
    early = _EarlyPublication(server, _Loop(), DocState(URI), "text", 1, {})
    doc.version = 2
    early.publish("text", [], ["{}"])  # returns: the loop said it was not sent
    assert sent == [] and not early.delivered and early._done.is_set()
    early._done.clear()
    doc.version = 1
    early.publish("text", [], ["{}"])
    assert early.delivered and sent == [responses.publication_of(URI, 1, ["{}"])]
