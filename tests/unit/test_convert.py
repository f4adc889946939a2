"""A diagnostic formatted as JSON text from positions relative to its unit
(`placed_diagnostic_text`, what publications are made of) is the diagnostic that
`diagnostic_json` makes from the document's offsets: in every position encoding, with
non-ASCII text, CRLF line ends, related information and a severity table."""

from __future__ import annotations

import json

import pytest

from gpu_async_lsp.async_region.findings import Finding, Related, Severity
from gpu_async_lsp.server import convert
from gpu_async_lsp.text import UTF8, UTF16, UTF32, LineIndex, positions_of

PREFIX = '// 𝔸 prefix “quoted” ∀\r\n  module {\r\n    '
UNIT = ('func.func @f() {  // é 𝔸\r\n    %0 = gpu.wait async\r\n'
        '    "x.y"() {s = "\\"é\\n"} : () -> ()\r\n  }')
TEXT = PREFIX + UNIT + "\r\n}\r\n"


def _findings(base: int) -> list[Finding]:
    wait = UNIT.index("gpu.wait")
    quote = UNIT.index('"x.y"')
    return [
        Finding("pre-existing-wait", 'unexpected "gpu.wait" \\ é\t𝔸', wait, wait + 8,
                Severity.ERROR, (Related(0, 9, "in 𝔸 “f”"), Related(quote, quote + 5, "r")),
                "@f"),
        Finding("sync-gpu-ops", "1 GPU op in @f runs synchronously", 10, 12, Severity.HINT),
    ] if base == 0 else []


def _shifted(f: Finding, delta: int) -> Finding:
    return Finding(f.code, f.message, f.start + delta, f.end + delta, f.severity,
                   tuple(Related(r.start + delta, r.end + delta, r.message) for r in f.related),
                   f.function)


@pytest.mark.parametrize("encoding", [UTF8, UTF16, UTF32])
@pytest.mark.parametrize("severity", [{}, {"sync-gpu-ops": Severity.WARNING}])
def test_placed_text_equals_the_diagnostic_of_document_offsets(encoding, severity):
    base = len(PREFIX)
    index = LineIndex(TEXT)
    where = index.position(base, encoding)
    uri = "file:///tmp/ü dir/a.mlir"
    for f in _findings(0):
        offsets = [f.start, f.end] + [o for r in f.related for o in (r.start, r.end)]
        at = positions_of(UNIT, offsets, encoding)
        related = [(at[2 + 2 * i], at[3 + 2 * i]) for i in range(len(f.related))]
        text = convert.placed_diagnostic_text(uri, f, where.line, where.character, at[0], at[1],
                                              related, severity)
        expected = convert.diagnostic_json(uri, index, _shifted(f, base), encoding, severity)
        assert json.loads(text) == expected
        assert text.isascii()  # escaped as json.dumps does
