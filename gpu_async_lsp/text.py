"""Text layer: offsets <-> (line, column) in UTF-16, UTF-8 or UTF-32 code units.

Spans everywhere else are offsets into the document `str` (code points). This is the one
module that converts them to line/column positions, with a line index built once per text
(pygls's own converter re-splits the document on each call). It imports nothing above it.

Lines end at "\n", "\r\n" or a lone "\r", as LSP defines them; a column past the end of its
line is clamped to the line end (LSP 3.17, "Position").
"""

from __future__ import annotations

import bisect
import itertools
from typing import NamedTuple

from gpu_async_lsp import regex_cache

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"
ENCODINGS = (UTF8, UTF16, UTF32)

_LINE_BREAK = regex_cache.compile(r"\r\n|\r|\n")
_OTHER_BREAKS = regex_cache.compile("[\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_ASCII = regex_cache.compile(r"[\x00-\x7f]*\Z")
_NON_ASCII = regex_cache.compile(r"[^\x00-\x7f]")
# Lines at least this long get their wide characters listed once (`LineIndex._wide`): many
# positions on one long line then cost a bisection each, not a scan of the line each.
_LONG_LINE = 512


def _width(cp: int, encoding: str) -> int:
    """Code units of `encoding` taken by the code point `cp`."""
    if encoding == UTF16:
        return 2 if cp > 0xFFFF else 1
    return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4


def _units(s: str, encoding: str) -> int:
    """Length of `s` in code units of `encoding`."""
    if encoding == UTF32 or _ASCII.match(s):
        return len(s)
    if encoding == UTF16:
        return len(s) + sum(1 for ch in s if ord(ch) > 0xFFFF)
    return len(s.encode("utf-8", "surrogatepass"))


def _offset_in_line(line: str, units: int, encoding: str) -> int:
    """Code-point index in `line` of a column given in code units (clamped)."""
    if units <= 0:
        return 0
    if encoding == UTF32 or _ASCII.match(line):
        return min(units, len(line))
    seen = 0
    for i, ch in enumerate(line):
        cp = ord(ch)
        if encoding == UTF16:
            seen += 2 if cp > 0xFFFF else 1
        else:
            seen += 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
        if seen > units:
            return i  # a column inside a character points at that character
        if seen == units:
            return i + 1
    return len(line)


def _offset_in_wide_line(wide: tuple[list[int], list[int]], length: int, units: int) -> int:
    """`_offset_in_line` for a line of `length` code points whose wide characters are `wide`
    (see `LineIndex._wide_chars`), by bisection."""
    if units <= 0:
        return 0
    columns, extra = wide

    def units_before(col: int) -> int:  # code units of the line's first `col` code points
        return col + extra[bisect.bisect_left(columns, col)]

    if units_before(length) < units:
        return length
    lo, hi = 1, length  # the first column after which `units` are reached
    while lo < hi:
        mid = (lo + hi) // 2
        if units_before(mid) >= units:
            hi = mid
        else:
            lo = mid + 1
    # A column inside a character points at that character.
    return lo if units_before(lo) == units else lo - 1


# Up to this many offsets, each is counted from the start of the text (still linear in it).
_FEW_OFFSETS = 4


def positions_of(text: str, offsets: list[int], encoding: str = UTF16) -> list[tuple[int, int]]:
    """(line, column) of each of `offsets` in `text`, as LineIndex.position gives them: for a
    text whose lines end in "\n" or "\r\n" by counting line breaks between the offsets in
    order, at C speed, without building an index (a 50k-line text: 30-60 ms saved on the first
    diagnostics); else with a LineIndex. Columns of a line that is not ASCII are its code units
    counted from the previous offset on that line, so that many offsets on one long line cost
    its length once. Linear in the text and the number of offsets."""
    if "\r" in text and text.count("\r") != text.count("\r\n"):  # a lone "\r" ends a line
        index = LineIndex(text)
        places = [index.position(o, encoding) for o in offsets]
        return [(p.line, p.character) for p in places]
    ascii_text = encoding == UTF32 or text.isascii()
    n = len(text)
    if len(offsets) <= _FEW_OFFSETS:  # a unit's finding or two (each diagnostic of a first
        # publication): each offset counted from the start, no sort, no table
        out = []
        for offset in offsets:
            o = max(0, min(offset, n))
            line_start = text.rfind("\n", 0, o) + 1
            column = o - line_start if ascii_text else _units(text[line_start:o], encoding)
            if column and o < n and text[o] == "\n" and text[o - 1] == "\r":
                column -= 1  # between "\r" and "\n": the end of the line
            out.append((text.count("\n", 0, line_start), column))
        return out
    # In order (a unit's findings come sorted, their offsets most often too): placed as they
    # come; else each distinct offset in order, then looked up.
    ordered = True
    previous = -1
    for offset in offsets:
        if offset < previous:
            ordered = False
            break
        previous = offset
    found: dict[int, tuple[int, int]] = {}
    out = []
    line, at, line_start = 0, 0, 0  # line breaks before `at`, where the line of `at` starts
    units = 0  # code units of text[line_start:at]
    for offset in (offsets if ordered else sorted(set(offsets))):
        o = max(0, min(offset, n))
        breaks = text.count("\n", at, o) if o > at else 0
        if breaks:
            line += breaks
            line_start = text.rfind("\n", at, o) + 1
            at, units = line_start, 0
        column = o - line_start if ascii_text else units + _units(text[at:o], encoding)
        at, units = o, column
        if column and o < n and text[o] == "\n" and text[o - 1] == "\r":
            column -= 1  # between "\r" and "\n": the end of the line
        if ordered:
            out.append((line, column))
        else:
            found[offset] = (line, column)
    return out if ordered else [found[o] for o in offsets]


class Position(NamedTuple):
    """A zero-based line and a column in code units of some encoding."""

    line: int
    character: int


def placed(relative: tuple[int, int], base: tuple[int, int]) -> tuple[int, int]:
    """A (line, column) relative to a piece of text that starts at `base` (line, column) of
    the document, as a (line, column) of the document: positions on the piece's first line
    move by the column too, all of them by the line."""
    line, column = relative
    return (line + base[0], column + base[1]) if line == 0 else (line + base[0], column)


class LineIndex:
    """Line starts of one text, for conversions in any position encoding."""

    __slots__ = ("text", "_starts", "_wide")

    def __init__(self, text: str):
        self.text = text
        self._wide: dict[tuple[int, str], tuple[list[int], list[int]]] = {}
        if _OTHER_BREAKS.search(text) is None:
            # str.splitlines also splits at \v, \f, U+2028, ...: only without those is it
            # LSP's notion of a line (and far faster than a Python loop over a 50k-line text).
            starts = [0, *itertools.accumulate(map(len, text.splitlines(True)))]
            if starts[-1] == len(text) and len(starts) > 1 and not text.endswith(("\n", "\r")):
                starts.pop()
        else:
            starts = [0]
            starts.extend(m.end() for m in _LINE_BREAK.finditer(text))
        self._starts = starts

    def edited(self, new_text: str, start: int, old_end: int, new_end: int) -> LineIndex:
        """The index of `new_text`, which is this text with [start, old_end) replaced by
        new_text[start:new_end]. Cheap when neither side holds a line break (a keystroke):
        the line starts after the edit just move."""
        old = self.text
        if ("\n" in old[start:old_end] or "\r" in old[start:old_end]
                or "\n" in new_text[start:new_end] or "\r" in new_text[start:new_end]
                or old[start - 1:start] == "\r" or _OTHER_BREAKS.search(new_text, start, new_end)):
            return LineIndex(new_text)
        index = LineIndex.__new__(LineIndex)
        index.text = new_text
        index._wide = {}
        delta = new_end - old_end
        starts = self._starts
        k = bisect.bisect_right(starts, start)
        index._starts = starts[:k] + [x + delta for x in starts[k:]] if delta else starts
        return index

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line_start(self, line: int) -> int:
        return self._starts[line]

    def line_end(self, line: int) -> int:
        """Offset of the line break ending `line` (or of the end of text)."""
        if line + 1 >= len(self._starts):
            return len(self.text)
        end = self._starts[line + 1] - 1
        if self.text[end] == "\n" and end > self._starts[line] and self.text[end - 1] == "\r":
            end -= 1
        return end

    def line_of(self, offset: int) -> int:
        offset = max(0, min(offset, len(self.text)))
        return bisect.bisect_right(self._starts, offset) - 1

    def line_text(self, line: int) -> str:
        return self.text[self._starts[line] : self.line_end(line)]

    def _wide_chars(self, line: int, encoding: str) -> tuple[list[int], list[int]] | None:
        """For a long line: the columns (code points) of its characters wider than one code
        unit of `encoding`, and the extra units before each (one more entry: all of them);
        None for a short line or UTF-32."""
        start, end = self._starts[line], self.line_end(line)
        if end - start < _LONG_LINE or encoding == UTF32:
            return None
        key = (line, encoding)
        found = self._wide.get(key)
        if found is None:
            columns: list[int] = []
            extra = [0]
            text = self.text
            for m in _NON_ASCII.finditer(text, start, end):
                w = _width(ord(text[m.start()]), encoding) - 1
                if w:
                    columns.append(m.start() - start)
                    extra.append(extra[-1] + w)
            found = self._wide[key] = (columns, extra)
        return found

    def position(self, offset: int, encoding: str = UTF16) -> Position:
        """Zero-based line and column (in `encoding` units) of a text offset."""
        offset = max(0, min(offset, len(self.text)))
        line = self.line_of(offset)
        start = self._starts[line]
        # An offset between "\r" and "\n" belongs to the end of the line.
        col_end = min(offset, self.line_end(line))
        wide = self._wide_chars(line, encoding)
        if wide is not None:
            columns, extra = wide
            col = col_end - start
            return Position(line, col + extra[bisect.bisect_left(columns, col)])
        return Position(line, _units(self.text[start:col_end], encoding))

    def line_columns(self, offsets, encoding: str = UTF16) -> list[tuple[int, int]]:
        """(line, column) of each offset, as `position` gives them, without a Position each
        (a publication places every unit that has findings: 2,229 at 50k lines of host code,
        at each keystroke)."""
        out = []
        append = out.append
        starts, text = self._starts, self.text
        size, last = len(text), len(self._starts) - 1
        for offset in offsets:
            offset = 0 if offset < 0 else size if offset > size else offset
            line = bisect.bisect_right(starts, offset) - 1
            start = starts[line]
            end = size if line >= last else self.line_end(line)
            col_end = offset if offset < end else end
            wide = self._wide_chars(line, encoding)
            if wide is not None:
                columns, extra = wide
                col = col_end - start
                append((line, col + extra[bisect.bisect_left(columns, col)]))
            else:
                append((line, _units(text[start:col_end], encoding)))
        return out

    def offset(self, position: Position, encoding: str = UTF16) -> int:
        """Text offset of an LSP-style position; out-of-range values are clamped."""
        line = position.line
        if line < 0:
            return 0
        if line >= len(self._starts):
            return len(self.text)
        start, end = self._starts[line], self.line_end(line)
        wide = self._wide_chars(line, encoding)
        if wide is not None:
            return start + _offset_in_wide_line(wide, end - start, position.character)
        return start + _offset_in_line(self.text[start:end], position.character, encoding)

    def line_col_1based(self, offset: int) -> tuple[int, int]:
        """1-based line and 1-based column in code points, as compilers print them."""
        p = self.position(offset, UTF32)
        return p.line + 1, p.character + 1
