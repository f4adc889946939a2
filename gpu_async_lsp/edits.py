"""Text-edit layer: planned replacements of offset ranges, applied with an overlap check.

The rewrite never re-prints an op: it plans insertions and replacements anchored on spans the
parser recorded, and this module applies them. It imports nothing above it.
"""

from __future__ import annotations

import bisect
import operator
from array import array
from collections import namedtuple


class OverlappingEditsError(ValueError):
    """Two planned edits touch the same text; the plan is wrong, nothing is applied."""


class TextEdit(namedtuple("TextEdit", ("start", "end", "new_text"))):
    """Replace text[start:end] by new_text (start == end inserts). A named tuple: compared,
    ordered and hashed by its fields, immutable. A fix makes one per change (30k at 50k lines
    of host code) and its fields are read where edits are sorted, checked, moved and applied:
    read by index, with no instance dictionary made for them (it was a frozen dataclass that
    wrote its fields into one). Its __new__ is this module's (compiled), not the generated
    Python one."""

    __slots__ = ()

    def __new__(cls, start: int, end: int, new_text: str):
        return _new(cls, (start, end, new_text))

    def __reduce__(self):
        return (TextEdit, tuple(self))


_new = tuple.__new__


def _overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> bool:
    """Do edit a and edit b, sorted by (start, end), touch the same text? Two insertions at
    one offset do not (they apply in planned order); a replacement and an insertion at its
    start do not either."""
    return b_start < a_end or (a_start == b_start and a_end > a_start and b_end > b_start)


# A stable sort by this key: insertions at one offset keep the order they were planned in.
_ORDER = operator.itemgetter(0, 1)  # (start, end), by index


def sort_edits(edits: list[TextEdit]) -> list[TextEdit]:
    """Edits in text order; insertions at one offset keep the order they were planned in."""
    result = sorted(edits, key=_ORDER)
    for a, b in zip(result, result[1:]):
        if _overlap(a.start, a.end, b.start, b.end):
            raise OverlappingEditsError(f"edits overlap: {a} and {b}")
    return result


def apply_edits(text: str, edits: list[TextEdit]) -> str:
    """Apply non-overlapping edits, given in any order, to `text` in one pass."""
    return SortedEdits.of(edits).apply(text)


class SortedEdits:
    """Non-overlapping edits in text order, kept as parts of flat lists (starts, ends, new
    texts): what the blocks of a big file's check produce and join in text order, with no
    sort and no object per edit in the process that applies them (20k edits of a 50k-line
    file: sorting and moving them as TextEdits cost ~50 ms after the analysis).

    A part made with the text (`of(edits, text)`) also holds its edits applied (the text from
    its first edit's start to its last edit's end, rewritten) and the running sum of their
    length changes: a block's process makes both while the others analyse, and the one that
    joins the parts only glues the pieces and bisects (400k edits of a 500k-line fix: 180 ms
    to apply them in one process, 75 ms to sum their shifts)."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[_Part] | None = None):
        self.parts = parts if parts is not None else []

    @classmethod
    def of(cls, edits: list[TextEdit], text: str | None = None) -> SortedEdits:
        """`edits` in any order (OverlappingEditsError if two overlap, as in sort_edits);
        given the text they apply to, with the part's piece made. One pass after the sort
        checks, flattens, sums and applies (six passes were 60 ms for 40k edits)."""
        if not edits:
            return cls()
        ordered = sorted(edits, key=_ORDER)
        if text is not None and (ordered[0].start < 0 or ordered[-1].end > len(text)):
            raise OverlappingEditsError("an edit lies outside the text")
        return cls([_flat(ordered, text)])

    @property
    def starts(self) -> list[int]:
        return [x for p in self.parts for x in p.starts]

    @property
    def ends(self) -> list[int]:
        return [x for p in self.parts for x in p.ends]

    @property
    def texts(self) -> list[str]:
        return [x for p in self.parts for x in p.texts]

    def __len__(self) -> int:
        return sum(len(p.starts) for p in self.parts)

    def __reduce__(self):
        return (SortedEdits, (self.parts,))

    def __eq__(self, other) -> bool:
        return isinstance(other, SortedEdits) and (self.starts, self.ends, self.texts) == (
            other.starts, other.ends, other.texts)

    def to_list(self) -> list[TextEdit]:
        return [TextEdit(s, e, t) for p in self.parts
                for s, e, t in zip(p.starts, p.ends, p.texts)]

    def extend(self, other: SortedEdits) -> None:
        """Append edits that follow these in the text; any other order (not expected of
        blocks taken in text order) is sorted again, so only a real overlap raises."""
        if not other.parts:
            return
        if self.parts:
            last, first = self.parts[-1], other.parts[0]
            a_start, a_end, b_start, b_end = (last.starts[-1], last.ends[-1], first.starts[0],
                                              first.ends[0])
            if b_start < a_start or _overlap(a_start, a_end, b_start, b_end):
                self.parts = SortedEdits.of(self.to_list() + other.to_list()).parts
                return
        self.parts.extend(other.parts)

    def apply(self, text: str) -> str:
        """`text` with the edits applied: the parts' pieces glued, or the edits applied in
        one pass."""
        if not self.parts:
            return text
        if self.parts[0].starts[0] < 0 or self.parts[-1].ends[-1] > len(text):
            raise OverlappingEditsError("an edit lies outside the text")
        out: list[str] = []
        append = out.append
        pos = 0
        for part in self.parts:
            if part.piece is not None:
                append(text[pos:part.starts[0]])
                append(part.piece)
                pos = part.ends[-1]
                continue
            for s, e, t in zip(part.starts, part.ends, part.texts):
                append(text[pos:s])
                append(t)
                pos = e
        append(text[pos:])
        return "".join(out)

    def mover(self):
        """offset in the text -> offset in the text with the edits applied, for offsets
        outside the edited spans (an insertion at an offset moves what starts there)."""
        parts = self.parts
        firsts = [p.starts[0] for p in parts]
        bases = [0]
        for p in parts:
            bases.append(bases[-1] + p.shift[-1])

        def moved(offset: int) -> int:
            k = bisect.bisect_right(firsts, offset) - 1
            if k < 0:
                return offset
            part = parts[k]
            return offset + bases[k] + part.shift[bisect.bisect_right(part.starts, offset)]

        return moved


def _flat(ordered: list[TextEdit], text: str | None) -> _Part:
    """The part of `ordered` (sorted, in range of `text`): its edits checked, flattened,
    their shifts summed and, given the text, applied, in one pass. A C loop in the build
    (edits.pxd): its lists appended to in C."""
    starts: list[int] = []
    ends: list[int] = []
    texts: list[str] = []
    shift = [0]
    out: list[str] = []
    total = 0
    a_start = a_end = -1
    prev = None
    pos = ordered[0].start
    for e in ordered:
        s, en, t = e.start, e.end, e.new_text
        if en < s:
            raise OverlappingEditsError(f"edit ends before it starts: {e}")
        if _overlap(a_start, a_end, s, en):
            raise OverlappingEditsError(f"edits overlap: {prev} and {e}")
        starts.append(s)
        ends.append(en)
        texts.append(t)
        total += len(t) - (en - s)
        shift.append(total)
        if text is not None:
            out.append(text[pos:s])
            out.append(t)
            pos = en
        a_start, a_end, prev = s, en, e
    return _Part(starts, ends, texts, shift, "".join(out) if text is not None else None)


class _Part:
    """A run of sorted edits (flat sequences of int), the running sum of their length changes
    (`shift`: one more entry than edits, from 0), and, when made with the text, the text from
    the first edit's start to the last one's end with the edits applied (`piece`).

    Pickled (a block of a big check, sent by the process that made it) as machine integers
    and one string: the process that joins the blocks loaded 400k int and str objects in
    ~50 ms at 500k lines; its --fix reads only the starts, shifts and pieces. The new texts
    are split again on first use (`texts`)."""

    __slots__ = ("starts", "ends", "_texts", "shift", "piece", "_packed")

    def __init__(self, starts, ends, texts: list[str] | None, shift, piece: str | None,
                 packed: tuple[str, array] | None = None):
        self.starts, self.ends, self._texts, self.shift, self.piece = (starts, ends, texts,
                                                                       shift, piece)
        self._packed = packed  # (the texts joined, their lengths) while `_texts` is None

    @property
    def texts(self) -> list[str]:
        if self._texts is None:
            joined, lengths = self._packed
            texts = []
            at = 0
            for n in lengths:
                texts.append(joined[at:at + n])
                at += n
            self._texts, self._packed = texts, None
        return self._texts

    def __reduce__(self):
        if self._texts is None:
            joined, lengths = self._packed
        else:
            joined, lengths = "".join(self._texts), _ints([len(t) for t in self._texts])
        return (_Part, (_ints(self.starts), _ints(self.ends), None, _ints(self.shift),
                        self.piece, (joined, lengths)))


def _ints(values: list[int] | array) -> array:
    """`values` (offsets and shifts of a text) as machine integers: 32 bits where they fit
    (a text under 2 GB), else 64."""
    if isinstance(values, array):
        return values
    try:
        return array("i", values)
    except OverflowError:
        return array("q", values)
