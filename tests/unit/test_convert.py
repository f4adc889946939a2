"""A diagnostic formatted as JSON text from positions relative to its unit
(`placed_diagnostic_text`, what publications are made of) is the diagnostic that
`diagnostic_json` makes from the document's offsets: in every position encoding, with
non-ASCII text, CRLF line ends, related information and a severity table, with or without
the texts a publication shares between its findings."""

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


@pytest.mark.parametrize("severity", [{}, {"sync-gpu-ops": Severity.WARNING}])
def test_placed_text_with_one_publication_s_tails_is_the_text_without(severity):
    """A publication keeps the text after each range by (message, code, severity): findings
    that share some of the three and differ in the rest are formatted as on their own."""
    uri = "file:///tmp/a.mlir"
    findings = [Finding(code, message, 3 * i, 3 * i + 2, sev)
                for i, (code, message, sev) in enumerate(
                    (code, message, sev)
                    for code in ("sync-gpu-ops", "not-lowered")
                    for message in ("m “é”", "m", 'm "x"')
                    for sev in (Severity.HINT, Severity.WARNING))]
    tails: dict = {}
    for _ in range(2):  # the second time, every tail comes from the dict
        for f in findings:
            alone = convert.placed_diagnostic_text(uri, f, 4, 2, (0, f.start), (1, f.end), [],
                                                   severity)
            assert convert.placed_diagnostic_text(uri, f, 4, 2, (0, f.start), (1, f.end), [],
                                                  severity, tails) == alone
    assert len(tails) == len(findings)


PUBLISHED = {
    "non-ascii and CRLF": ("// 𝔸 “x”\r\nmodule {\r\n  func.func @f(%n: index) {  // é\r\n"
                           "    %a = gpu.alloc (%n) : memref<?xf32>\r\n    %t = gpu.wait async\r\n"
                           "    return\r\n  }\r\n}\r\n"),
    "findings outside units": ("module {\n  // gpu-async-lsp: ignore[bogus] “é”\r\n"
                               "  func.func @g(%n: index) {\n"
                               "    %a = gpu.alloc (%n) : memref<?xf32>\n    return\n  }\n}\n"),
    "a lone CR and a tab": ("func.func @h(%n: index) {\r\t%a = gpu.alloc (%n) : memref<?xf32>\n"
                            "  return\n}\n"),
}


@pytest.mark.parametrize("encoding", [UTF8, UTF16, UTF32])
@pytest.mark.parametrize("name", list(PUBLISHED))
def test_first_publication_without_a_line_index_equals_one_with_it(name, encoding):
    """A first analysis publishes before the text's line index is made: the places of its
    units, counted in one pass, are those the index gives."""
    from gpu_async_lsp.config import DEFAULTS
    from gpu_async_lsp.ide.host import Analyzer
    from gpu_async_lsp.server import responses
    from gpu_async_lsp.server.settings import severity_table

    text = PUBLISHED[name]
    severity = severity_table(DEFAULTS)
    uri = "file:///tmp/x.mlir"
    without = responses.diagnostics(uri, Analyzer().analyze(text, 1), None, encoding, severity)
    with_index = responses.diagnostics(uri, Analyzer().analyze(text, 1), LineIndex(text),
                                       encoding, severity)
    assert json.loads(without) == json.loads(with_index)
    codes = [d["code"] for d in json.loads(without)["params"]["diagnostics"]]
    assert "sync-gpu-ops" in codes or "pre-existing-wait" in codes
    assert ("invalid-suppression" in codes) == (name == "findings outside units")
