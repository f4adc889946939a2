"""Protocol layer: core results -> lsprotocol types, positions in the negotiated encoding.

Every range the server sends or reads goes through a `LineIndex` of the document version it
belongs to, in the position encoding agreed at initialization (utf-16 unless the client
offered utf-8 or utf-32 first).
"""

from __future__ import annotations

import json

from lsprotocol import types as lsp
from lsprotocol.converters import get_converter

import gpu_async_lsp.syntax.fields as tf
from gpu_async_lsp.async_region.findings import SOURCE, Finding, Severity
from gpu_async_lsp.edits import TextEdit
from gpu_async_lsp.ide import features
from gpu_async_lsp.text import UTF8, UTF16, UTF32, LineIndex, Position, placed

try:
    import cython

    COMPILED = cython.compiled
except ImportError:  # no Cython: Python (unit_fragment then leaves every unit to the caller)
    COMPILED = False

_ENCODINGS = {lsp.PositionEncodingKind.Utf8: UTF8, lsp.PositionEncodingKind.Utf16: UTF16,
              lsp.PositionEncodingKind.Utf32: UTF32, "utf-8": UTF8, "utf-16": UTF16,
              "utf-32": UTF32}
_SEVERITY = {Severity.ERROR: lsp.DiagnosticSeverity.Error,
             Severity.WARNING: lsp.DiagnosticSeverity.Warning,
             Severity.INFORMATION: lsp.DiagnosticSeverity.Information,
             Severity.HINT: lsp.DiagnosticSeverity.Hint}

CONVERTER = get_converter()  # lsprotocol objects <-> JSON values

SYMBOL_KINDS = {features.MODULE: lsp.SymbolKind.Module, features.FUNCTION: lsp.SymbolKind.Function,
                features.VARIABLE: lsp.SymbolKind.Variable, features.OBJECT: lsp.SymbolKind.Object}


def encoding_of(kind) -> str:
    """Our encoding name for an lsprotocol PositionEncodingKind (utf-16 when unknown)."""
    return _ENCODINGS.get(kind, UTF16)


def lsp_range(index: LineIndex, start: int, end: int, encoding: str) -> lsp.Range:
    s = index.position(start, encoding)
    e = index.position(end, encoding)
    return lsp.Range(lsp.Position(s.line, s.character), lsp.Position(e.line, e.character))


def json_range(index: LineIndex, start: int, end: int, encoding: str) -> dict:
    """A Range as JSON values (for results sent without lsprotocol objects)."""
    s = index.position(start, encoding)
    e = index.position(end, encoding)
    return _json_range(s.line, s.character, e.line, e.character)


def json_range_of(start: tuple[int, int], end: tuple[int, int]) -> dict:
    """A Range as JSON values from (line, column) pairs."""
    return _json_range(start[0], start[1], end[0], end[1])


def offset_of(index: LineIndex, position: lsp.Position, encoding: str) -> int:
    return index.offset(Position(position.line, position.character), encoding)


def diagnostic(uri: str, index: LineIndex, f: Finding, encoding: str,
               severity: dict[str, Severity]) -> lsp.Diagnostic:
    related = None
    if f.related:
        related = [lsp.DiagnosticRelatedInformation(
            lsp.Location(uri, lsp_range(index, r.start, r.end, encoding)), r.message)
            for r in f.related]
    return lsp.Diagnostic(
        range=lsp_range(index, f.start, f.end, encoding),
        message=f.message,
        severity=_SEVERITY[severity.get(f.code, f.severity)],
        code=f.code,
        source=SOURCE,
        related_information=related,
    )


def _json_range(l0: int, c0: int, l1: int, c1: int) -> dict:
    return {"start": {"line": l0, "character": c0}, "end": {"line": l1, "character": c1}}


def diagnostic_json(uri: str, index: LineIndex, f: Finding, encoding: str,
                    severity: dict[str, Severity]) -> dict:
    """A Diagnostic as JSON values, from absolute offsets."""
    def rng(start: int, end: int) -> dict:
        s = index.position(start, encoding)
        e = index.position(end, encoding)
        return _json_range(s.line, s.character, e.line, e.character)

    d = {"range": rng(f.start, f.end), "message": f.message,
         "severity": int(severity.get(f.code, f.severity)), "code": f.code, "source": SOURCE}
    if f.related:
        d["relatedInformation"] = [{"location": {"uri": uri, "range": rng(r.start, r.end)},
                                    "message": r.message} for r in f.related]
    return d


_json_string = json.encoder.encode_basestring_ascii  # json.dumps of a str, in C
_SOURCE_JSON = _json_string(SOURCE)


def _range_text(s: tuple[int, int], e: tuple[int, int]) -> str:
    return (f'{{"start":{{"line":{s[0]},"character":{s[1]}}},'
            f'"end":{{"line":{e[0]},"character":{e[1]}}}}}')


def placed_diagnostic_text(uri: str, f: Finding, line: int, column: int, start, end, related,
                           severity: dict[str, Severity], tails: dict | None = None) -> str:
    """A Diagnostic as JSON text, from positions relative to a unit that starts at (line,
    column) of the document (text.placed); what diagnostic_json gives, formatted directly
    (a 50k-line file publishes thousands of these on its first open). `tails`: a dict the
    caller keeps for one publication, of the text after the range by (message, code,
    severity): most findings of a file repeat a few messages, escaped once each (of the
    12,242 diagnostics of 50k lines of host code, 10,013 are `not-lowered` in 4 messages)."""
    (sl, sc), (el, ec) = start, end
    sc, ec = (sc + column if sl == 0 else sc), (ec + column if el == 0 else ec)  # text.placed
    key = (f.message, f.code, f.severity)
    tail = tails.get(key) if tails is not None else None
    if tail is None:
        tail = (f'"message":{_json_string(f.message)},'
                f'"severity":{int(severity.get(f.code, f.severity))},'
                f'"code":{_json_string(f.code)},"source":{_SOURCE_JSON}')
        if tails is not None:
            tails[key] = tail
    out = (f'{{"range":{{"start":{{"line":{sl + line},"character":{sc}}},'
           f'"end":{{"line":{el + line},"character":{ec}}}}},{tail}')
    if not related:
        return out + "}"
    return f'{out},"relatedInformation":[{_related_text(uri, f, related, line, column)}]}}'


def unit_fragment(findings: tuple, source: str, encoding: str, line: int, column: int,
                  severity: dict, tails: dict) -> str | None:
    """The diagnostics of one unit's findings, placed at (line, column) of the document where
    its text `source` starts, as JSON text joined by commas: what `placed_diagnostic_text`
    gives for each published finding with its positions (`text.positions_of`), counted and
    written in one pass into one buffer (a first open of 10k lines of host code placed and
    formatted 2,465 diagnostics in ~4 ms, an eighth of the open, with a tuple per position
    and ~6 strings per diagnostic). The build's only: None as Python, and None where the
    general way is needed (the caller takes it): a column that is not a code point's count
    (text not ASCII, unless UTF-32), a lone "\r" (a line break `str.count` does not see),
    related information, offsets out of order."""
    if not COMPILED:
        return None
    if encoding != UTF32 and not source.isascii():
        return None
    if "\r" in source and source.count("\r") != source.count("\r\n"):
        return None
    n = len(findings)
    kept: list = []  # the tail of each finding, None where it is not published
    size = 0
    previous = 0
    for k in range(n):
        f = findings[k]
        if tf.at(f, tf.FINDING_RELATED):
            return None
        start = tf.at(f, tf.FINDING_START)
        end = tf.at(f, tf.FINDING_END)
        if start < previous or end < start:
            return None
        previous = end
        code = tf.at(f, tf.FINDING_CODE)
        level = severity.get(code, tf.at(f, tf.FINDING_SEVERITY))
        if level is None:
            kept.append(None)
            continue
        message = tf.at(f, tf.FINDING_MESSAGE)
        key = (message, code, tf.at(f, tf.FINDING_SEVERITY))
        tail = tails.get(key)
        if tail is None:
            tail = tails[key] = (f'"message":{_json_string(message)},'
                                 f'"severity":{int(level)},'
                                 f'"code":{_json_string(code)},"source":{_SOURCE_JSON}')
        kept.append(tail)
        size += len(tail) + _MOST_PER_RANGE
    if size == 0:
        return ""
    buf = cython.cast(cython.p_char, malloc(size))  # noqa: F821 (C, convert.pxd)
    if buf == cython.NULL:
        raise MemoryError()
    try:
        at = 0
        length = len(source)
        lines = 0  # line breaks before `scanned`
        scanned = 0
        line_start = 0
        first = True
        for k in range(n):
            tail = kept[k]
            f = findings[k]
            start = tf.at(f, tf.FINDING_START)
            end = tf.at(f, tf.FINDING_END)
            # The start's place, then the end's: counted on from the last offset.
            for side in range(2):
                o = min(max(start if side == 0 else end, 0), length)
                if o > scanned:
                    breaks = source.count("\n", scanned, o)
                    if breaks:
                        lines += breaks
                        line_start = source.rfind("\n", scanned, o) + 1
                    scanned = o
                here = o - line_start
                if here and o < length and source[o] == "\n" and source[o - 1] == "\r":
                    here -= 1  # between "\r" and "\n": the end of the line
                if side == 0:
                    sl, sc = lines, here
                else:
                    el, ec = lines, here
            if tail is None:
                continue
            if sl == 0:
                sc += column
            if el == 0:
                ec += column
            if not first:
                buf[at] = 44  # ","
                at += 1
            first = False
            at = _put(buf, at, '{"range":{"start":{"line":')
            at = _put_int(buf, at, sl + line)
            at = _put(buf, at, ',"character":')
            at = _put_int(buf, at, sc)
            at = _put(buf, at, '},"end":{"line":')
            at = _put_int(buf, at, el + line)
            at = _put(buf, at, ',"character":')
            at = _put_int(buf, at, ec)
            at = _put(buf, at, '}},')
            at = _put(buf, at, tail)
            buf[at] = 125  # "}"
            at += 1
        return PyUnicode_DecodeASCII(buf, at, cython.NULL)  # noqa: F821 (C, convert.pxd)
    finally:
        free(buf)  # noqa: F821 (C, convert.pxd)


# What a diagnostic's range takes in unit_fragment's buffer at most: its 71 characters of
# JSON, four numbers of up to 20 digits, the comma before it and the `}` after its tail.
_MOST_PER_RANGE = 160


def _put(buf, at: int, piece: str) -> int:
    """In the build: `piece` (ASCII) written into `buf` at `at`; where it ends."""
    size = 0
    data = PyUnicode_AsUTF8AndSize(piece, cython.address(size))  # noqa: F821 (C, convert.pxd)
    memcpy(buf + at, data, size)  # noqa: F821 (C, convert.pxd)
    return at + size


def _put_int(buf, at: int, value: int) -> int:
    """In the build: `value` in decimal written into `buf` at `at`; where it ends."""
    if value < 0:  # never a line or a column; written as Python would, not past the buffer
        buf[at] = 45  # "-"
        at += 1
        value = -value
    digits = 1
    rest = value
    while rest >= 10:
        rest //= 10
        digits += 1
    i = at + digits
    while True:
        i -= 1
        buf[i] = 48 + value % 10
        value //= 10
        if value == 0:
            break
    return at + digits


def _related_text(uri: str, f: Finding, related, line: int, column: int) -> str:
    """The relatedInformation items of placed_diagnostic_text, as JSON text (apart: its
    generator may not be in a function the build makes a C function of, convert.pxd)."""
    base = (line, column)
    location = f'{{"location":{{"uri":{_json_string(uri)},"range":'
    return ",".join(
        f'{location}{_range_text(placed(rs, base), placed(re_, base))}}},'
        f'"message":{_json_string(r.message)}}}'
        for r, (rs, re_) in zip(f.related, related))


def workspace_edit(uri: str, version: int | None, edits: list[lsp.TextEdit],
                   document_changes: bool) -> lsp.WorkspaceEdit:
    """Versioned documentChanges when the client supports them, plain changes otherwise."""
    if document_changes:
        return lsp.WorkspaceEdit(document_changes=[lsp.TextDocumentEdit(
            lsp.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version), edits)])
    return lsp.WorkspaceEdit(changes={uri: edits})


def merge_insertions(edits: list[TextEdit]) -> list[TextEdit]:
    """Insertions at one offset as one edit, in planned order (LSP leaves the order of
    same-position insertions to the client; one edit keeps ours)."""
    merged: list[TextEdit] = []
    for e in sorted(edits, key=lambda e: (e.start, e.end)):
        last = merged[-1] if merged else None
        if last is not None and last.start == last.end == e.start == e.end:
            merged[-1] = TextEdit(e.start, e.end, last.new_text + e.new_text)
        else:
            merged.append(e)
    return merged


def text_edits_json(index: LineIndex, edits, encoding: str) -> list[dict]:
    """TextEdits as JSON values, in text order."""
    return [{"range": json_range(index, e.start, e.end, encoding), "newText": e.new_text}
            for e in sorted(edits, key=lambda e: (e.start, e.end))]


def workspace_edit_json(uri: str, version: int | None, edits: list[dict],
                        document_changes: bool) -> dict:
    """A WorkspaceEdit as JSON values: versioned documentChanges when the client supports
    them, plain changes otherwise."""
    if document_changes:
        return {"documentChanges": [{"textDocument": {"uri": uri, "version": version},
                                     "edits": edits}]}
    return {"changes": {uri: edits}}
