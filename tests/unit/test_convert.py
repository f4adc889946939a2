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


def _general_fragment(uri, findings, source, encoding, line, column, severity, tails):
    """A unit's diagnostics as the general path makes them: each finding placed by the
    unit's positions (text.positions_of), then formatted (placed_diagnostic_text)."""
    from gpu_async_lsp.ide.units import UnitResult

    positions = UnitResult(source, tuple(findings), (), False).positions(encoding)
    return ",".join(convert.placed_diagnostic_text(uri, f, line, column, s, e, r, severity, tails)
                    for f, (s, e, r) in zip(findings, positions, strict=True)
                    if severity.get(f.code, f.severity) is not None)


_PIECES = ["%a = gpu.alloc (%n) : memref<?xf32>", "gpu.wait", "  ", "\n", "\r\n", "\n\n",
           "// é 𝔸", "return", "\t", "\r"]
_CODES = [("pre-existing-wait", Severity.ERROR), ("not-lowered", Severity.WARNING),
          ("sync-gpu-ops", Severity.HINT)]


@pytest.mark.parametrize("seed", range(300))
def test_unit_fragment_in_one_pass_equals_each_finding_placed_and_formatted(seed):
    """A unit's diagnostics written in one pass (`unit_fragment`, the build's) are, byte for
    byte, those placed and formatted one by one, for random units (LF, CRLF, a lone CR,
    non-ASCII text, offsets at line ends, between CR and LF, past the end), findings (in
    order or not, overlapping, with related information), encodings, places and severity
    tables; the build writes every unit it can (ASCII or UTF-32, no lone CR, in order, no
    related information), the Python leaves all to the general path."""
    import random

    rng = random.Random(seed)
    source = "".join(rng.choice(_PIECES) for _ in range(rng.randrange(1, 30)))
    if rng.random() < 0.5:
        source = source.replace("\r", "").replace("é 𝔸", "e A")
    findings = []
    at = 0
    for _ in range(rng.randrange(0, 8)):
        if rng.random() < 0.9:
            start = at + rng.randrange(0, max(1, len(source) + 2 - at))
        else:
            start = rng.randrange(0, len(source) + 2)  # out of order
        end = start + rng.randrange(0, 12)
        at = end if rng.random() < 0.8 else start  # or overlapping the next
        code, level = rng.choice(_CODES)
        related = (Related(0, 1, "r é"),) if rng.random() < 0.1 else ()
        findings.append(Finding(code, rng.choice(['m "q" \\ é', "m2", "m\t3"]), start, end,
                                level, related, None))
    encoding = rng.choice([UTF8, UTF16, UTF32])
    line, column = rng.randrange(0, 5), rng.randrange(0, 9)
    severity = rng.choice([{}, {"not-lowered": None}, {"sync-gpu-ops": Severity.WARNING}])
    uri = "file:///u.mlir"
    fast = convert.unit_fragment(tuple(findings), source, encoding, line, column, severity, {})
    expected = _general_fragment(uri, findings, source, encoding, line, column, severity, {})
    ascii_or_32 = encoding == UTF32 or source.isascii()
    lone_cr = source.count("\r") != source.count("\r\n")
    ordered = all(0 <= f.end - f.start for f in findings) and all(
        a.end <= b.start for a, b in zip(findings, findings[1:]))
    eligible = ascii_or_32 and not lone_cr and ordered and not any(f.related for f in findings)
    if convert.COMPILED and eligible:
        assert fast == expected
    elif not convert.COMPILED:
        assert fast is None
    else:
        assert fast is None or fast == expected
