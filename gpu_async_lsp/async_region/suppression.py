"""Analysis layer: suppression comments, and the findings they hide.

    %a = gpu.alloc (%n) : memref<?xf32>  // gpu-async-lsp: ignore
    // gpu-async-lsp: ignore[pre-existing-wait, already-async]
    gpu.wait

ruff's `# noqa`, in MLIR's comment form. At the end of a line (after code), the comment hides
the findings that start on that line; alone on its line (only blanks before the `//`), those
that start on the next line. A finding starts at its op's name (for `sync-gpu-ops`, at the
function's `@name`), so a comment at the end of an op's first line, or on the line just above
it, hides that op's findings. `ignore` hides every code, `ignore[a, b]` the codes listed
(blanks around them and a trailing comma are allowed). Text after the directive is free (a
reason). The directive starts its comment (`//`, blanks, `gpu-async-lsp:`): a `//` inside a
"..." string starts no comment, and the phrase later in a comment is prose (a comment that
writes about the directive hides nothing; the server's quick fix never appends a directive to
another comment but puts it alone on the line above). Lines end at
"\\n" as the lexer reads comments; the "\\r" of a CRLF line is not part of the line's text.

`syntax` findings are never hidden (as in ruff: a file that does not parse is always said to),
nor `invalid-suppression`: the warning, one per problem, of a directive that names an unknown
code, names one of those two, lists no code, or is neither `ignore` nor `ignore[...]`. A
warning, not an error: a mistyped code must not fail a CI run that passed, and it is seen,
with the finding it meant to hide. The directive still hides the valid codes it lists.

Suppression only filters findings once the analysis is done: a hidden blocker still blocks
its function's rewrite (plans, edits and code actions do not change).

A text without `gpu-async-lsp:` costs one substring search; otherwise each line that holds it
is read once, and each finding costs a bisection. Must not import pygls or lsprotocol.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable
from typing import NamedTuple

from gpu_async_lsp import regex_cache
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.findings import Finding
from gpu_async_lsp.edits import TextEdit
from gpu_async_lsp.syntax.patterns import STRING

MARKER = "gpu-async-lsp:"
UNSUPPRESSIBLE = frozenset({F.SYNTAX, F.INVALID_SUPPRESSION})
SUPPRESSIBLE = frozenset(F.CODES) - UNSUPPRESSIBLE
# What the server's quick fix `Ignore <code> here` is offered for: not the hint of a function
# (its quick fix is the rewrite).
QUICK_FIXABLE = SUPPRESSIBLE - {F.SYNC_GPU_OPS}
NOTHING: frozenset[str] = frozenset()
# What comments outside a text hide on its first and on its last line (see `outside`).
NO_CONTEXT = (NOTHING, NOTHING)

# A line's text up to the `//` that starts its comment: other characters, strings, lone `/`s.
# An unterminated string runs to the end of the line: no comment after it.
_CODE = regex_cache.compile(rf'(?:[^"/\n]++|{STRING}|/(?!/))*+')
_DIRECTIVE = regex_cache.compile(r"//[ \t]*gpu-async-lsp:")
_MARKER = regex_cache.compile(re.escape(MARKER))
_BREAK = regex_cache.compile("\n")
_IGNORE = regex_cache.compile(r"[ \t]*ignore(?:[ \t]*\[(?P<codes>[^\]\n]*)\]|(?=[ \t\r]|\Z))")
_FORMS = "`// gpu-async-lsp: ignore` or `// gpu-async-lsp: ignore[code, ...]`"


class Directive(NamedTuple):
    """One `// gpu-async-lsp: ...` comment."""

    start: int  # its `//`
    end: int  # the end of its line's text
    own_line: bool  # only blanks before it: it applies to the next line
    codes: frozenset[str]  # what it hides
    codes_span: tuple[int, int] | None  # the inside of its `[...]`
    problems: tuple[Finding, ...]  # its invalid-suppression warnings


def _problem(start: int, end: int, message: str) -> Finding:
    return Finding(F.INVALID_SUPPRESSION, message, start, end,
                   F.DEFAULT_SEVERITY[F.INVALID_SUPPRESSION])


def _why_not(code: str) -> str:
    if code in UNSUPPRESSIBLE:
        return f"'{code}' findings cannot be suppressed"
    known = ", ".join(c for c in F.CODES if c in SUPPRESSIBLE)
    return f"unknown finding code '{code}' in a suppression comment (known: {known})"


def _parse(text: str, start: int, after_marker: int, end: int, own_line: bool) -> Directive:
    m = _IGNORE.match(text, after_marker, end)
    if m is None:
        problem = _problem(start, end, f"malformed suppression comment: expected {_FORMS}")
        return Directive(start, end, own_line, NOTHING, None, (problem,))
    listed = m["codes"]
    if listed is None:
        return Directive(start, end, own_line, SUPPRESSIBLE, None, ())
    codes: set[str] = set()
    problems = []
    at = m.start("codes")
    for item in listed.split(","):
        code = item.strip()
        if code:
            where = at + item.index(code)
            if code in SUPPRESSIBLE:
                codes.add(code)
            else:
                problems.append(_problem(where, where + len(code), _why_not(code)))
        at += len(item) + 1
    if not codes and not problems:
        problems.append(_problem(start, end, f"suppression comment lists no code: write {_FORMS}"))
    return Directive(start, end, own_line, frozenset(codes), m.span("codes"), tuple(problems))


def _comment_start(text: str, start: int, end: int) -> int | None:
    """The `//` that starts a comment in text[start:end] (one line's text, `start` outside
    any string), or None."""
    at = _CODE.match(text, start, end).end()
    return at if text.startswith("//", at) and at + 2 <= end else None


def _in_comment(text: str, comment: int | None, end: int, own_line: bool) -> Directive | None:
    if comment is None:
        return None
    d = _DIRECTIVE.match(text, comment, end)
    return None if d is None else _parse(text, d.start(), d.end(), end, own_line)


def _line_text(text: str, offset: int) -> tuple[int, int]:
    """(start, end) of the text of the line holding `offset` (its "\\r\\n" or "\\n" left out)."""
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    end = len(text) if end < 0 else end
    if end > start and text[end - 1] == "\r":
        end -= 1
    return start, end


def _line_directive(text: str, start: int, end: int) -> Directive | None:
    """The directive in the comment of the line text[start:end], if any."""
    comment = _comment_start(text, start, end)
    own_line = comment is not None and not text[start:comment].strip()
    return _in_comment(text, comment, end, own_line)


def directives(text: str) -> list[Directive]:
    """Every directive of `text`, in text order."""
    out = []
    at = text.find(MARKER)
    while at >= 0:
        start, end = _line_text(text, at)
        d = _line_directive(text, start, end)
        if d is not None:
            out.append(d)
        at = text.find(MARKER, end)  # the next line (each line is read once)
    return out


def outside(text: str, start: int, end: int) -> tuple[frozenset[str], frozenset[str]]:
    """What comments outside text[start:end] (a unit of the server's analysis) hide on its
    first and on its last line: a comment alone on the line above its first line, and one
    after its end on its last line (the last op of a module closed on the same line). For
    the many units of one text, `Outside(text).of`."""
    return Outside(text).of(start, end)


class Outside:
    """`outside` for every unit of one text, in time linear in the text: its line breaks and
    markers are found once, each line's comment read once. (Read afresh for each unit, a
    line holding thousands of units, as minified IR does, was read once per unit: 20k units
    on one line took 2.1 s, 80k 33 s.)"""

    def __init__(self, text: str):
        self.text = text
        self.breaks = [m.start() for m in _BREAK.finditer(text)]
        self.markers = [m.start() for m in _MARKER.finditer(text)]
        self._above: dict[int, frozenset[str]] = {}  # by the line's start
        self._after: dict[int, tuple[int | None, frozenset[str]]] = {}

    def _line(self, offset: int) -> tuple[int, int]:
        """`_line_text`, by bisection."""
        i = bisect.bisect_left(self.breaks, offset)
        start = self.breaks[i - 1] + 1 if i > 0 else 0
        end = self.breaks[i] if i < len(self.breaks) else len(self.text)
        if end > start and self.text[end - 1] == "\r":
            end -= 1
        return start, end

    def _marker_in(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self.markers, start)
        return i < len(self.markers) and self.markers[i] < end

    def of(self, start: int, end: int) -> tuple[frozenset[str], frozenset[str]]:
        line_start, _ = self._line(start)
        first = NOTHING
        if line_start > 0:
            if line_start not in self._above:
                above_start, above_end = self._line(line_start - 1)
                codes = NOTHING
                if self._marker_in(above_start, line_start):
                    d = _line_directive(self.text, above_start, above_end)
                    codes = d.codes if d is not None and d.own_line else NOTHING
                self._above[line_start] = codes
            first = self._above[line_start]
        last = NOTHING
        line_begin, line_end = self._line(end)
        if self._marker_in(end, line_end):
            if line_begin not in self._after:
                # The line's comment: a unit ends in code, so one after its end is this one.
                comment = _comment_start(self.text, line_begin, line_end)
                d = _in_comment(self.text, comment, line_end, False)
                self._after[line_begin] = (comment, d.codes if d is not None else NOTHING)
            comment, codes = self._after[line_begin]
            if comment is not None and comment >= end:
                last = codes
        return first, last


class _Hidden:
    """The codes hidden on each line some directive applies to, by the line's start."""

    def __init__(self, text: str, found: list[Directive], context=NO_CONTEXT):
        lines: dict[int, tuple[int, frozenset[str]]] = {}

        def hide(line_start: int, line_end: int, codes: frozenset[str]) -> None:
            if codes:
                _, before = lines.get(line_start, (line_end, NOTHING))
                lines[line_start] = (line_end, before | codes)

        for d in found:
            if d.own_line:
                nl = text.find("\n", d.end)
                if nl >= 0:
                    hide(*_line_text(text, nl + 1), d.codes)
            else:
                hide(*_line_text(text, d.start), d.codes)
        first, last = context
        if first:
            hide(*_line_text(text, 0), first)
        if last:
            hide(*_line_text(text, len(text)), last)
        self.starts = sorted(lines)
        self.lines = [lines[s] for s in self.starts]

    def hides(self, f: Finding) -> bool:
        if f.code in UNSUPPRESSIBLE:
            return False
        i = bisect.bisect_right(self.starts, f.start) - 1
        if i < 0:
            return False
        line_end, codes = self.lines[i]
        return f.start <= line_end and f.code in codes


def suppress(text: str, findings: Iterable[Finding], context=NO_CONTEXT) -> list[Finding]:
    """The findings of `text` its comments do not hide, with the warnings of its invalid
    directives, in text order. `context`: what comments outside `text` hide on its first and
    last line (`outside`), when `text` is a piece of a document."""
    findings = list(findings)
    found = directives(text) if MARKER in text else []
    if not found and context == NO_CONTEXT:
        return findings
    hidden = _Hidden(text, found, context)
    kept = [f for f in findings if not hidden.hides(f)]
    problems = [p for d in found for p in d.problems]
    if problems:
        kept.extend(problems)
        kept.sort(key=lambda f: (f.start, f.end, f.code))
    return kept


def suppression_edit(text: str, offset: int, code: str) -> TextEdit | None:
    """The edit that makes a comment hide `code` on the line that holds `offset`: the code
    added to the list of the comment that applies there (at the line's end, else alone on the
    line above), else a new comment at the line's end, or, when the line ends with another
    comment, alone on a new line above with the line's indentation. None when a comment hides
    `code` there already, or `code` cannot be hidden."""
    if code not in SUPPRESSIBLE:
        return None
    start, end = _line_text(text, offset)
    comment = _comment_start(text, start, end)
    here = _in_comment(text, comment, end, False)
    above = None
    if start > 0:
        above = _line_directive(text, *_line_text(text, start - 1))
        above = above if above is not None and above.own_line else None
    applying = [d for d in (here, above) if d is not None]
    if any(code in d.codes for d in applying):
        return None
    for d in applying:
        if d.codes_span is not None:
            list_start, list_end = d.codes_span
            listed = text[list_start:list_end].rstrip(" \t")
            at = list_start + len(listed)
            sep = "" if not listed.strip() else " " if listed.endswith(",") else ", "
            return TextEdit(at, at, sep + code)
    new = f"// gpu-async-lsp: ignore[{code}]"
    if comment is None:
        at = start + len(text[start:end].rstrip())
        return TextEdit(at, at, " " + new)
    line = text[start:end]
    indent = line[:len(line) - len(line.lstrip(" \t"))]
    # The line's own break; the last line has none: the break of the line before it.
    crlf = text.startswith("\r\n", end) if end < len(text) else text.endswith("\r\n", 0, start)
    return TextEdit(start, start, indent + new + ("\r\n" if crlf else "\n"))
