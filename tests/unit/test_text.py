"""Offsets <-> positions in UTF-16 (LSP's default), UTF-8 and UTF-32; CRLF; edits."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpu_async_lsp.edits import OverlappingEditsError, TextEdit, apply_edits, sort_edits
from gpu_async_lsp.text import UTF8, UTF16, UTF32, LineIndex, Position

TEXT = "// héllo 😀 wörld\r\n%a = gpu.wait async\r\n\n  x😀y\rlast"


@pytest.mark.parametrize("encoding", [UTF16, UTF8, UTF32])
def test_text_position_plain_ascii_prefix_same_in_every_encoding(encoding):
    index = LineIndex(TEXT)
    x = TEXT.index("x😀y")
    assert index.position(x, encoding) == Position(3, 2)
    assert index.offset(Position(3, 2), encoding) == x


def test_text_position_after_astral_char_counts_code_units():
    index = LineIndex(TEXT)
    y = TEXT.index("y\rlast")
    assert index.position(y, UTF16) == Position(3, 5)  # 😀 is two UTF-16 units
    assert index.position(y, UTF8) == Position(3, 7)  # and four UTF-8 bytes
    assert index.position(y, UTF32) == Position(3, 4)
    w = TEXT.index("wörld")
    assert index.position(w, UTF16) == Position(0, 12)
    assert index.position(w, UTF8) == Position(0, 15)  # é 2 bytes, 😀 4 bytes


def test_text_line_breaks_crlf_lf_and_lone_cr_each_end_a_line():
    index = LineIndex(TEXT)
    assert index.line_count == 5
    assert [index.line_text(i) for i in range(5)] == [
        "// héllo 😀 wörld", "%a = gpu.wait async", "", "  x😀y", "last"]


def test_text_offset_between_cr_and_lf_is_end_of_line():
    index = LineIndex(TEXT)
    cr = TEXT.index("\r\n")
    assert index.position(cr + 1, UTF16) == index.position(cr, UTF16)


def test_text_offset_clamps_columns_past_line_end_and_lines_past_end():
    index = LineIndex(TEXT)
    assert index.offset(Position(1, 999), UTF16) == TEXT.index("\r\n\n")
    assert index.offset(Position(99, 0), UTF16) == len(TEXT)
    assert index.offset(Position(-1, 3), UTF16) == 0


def test_text_offset_inside_surrogate_pair_points_at_the_character():
    index = LineIndex(TEXT)
    emoji = TEXT.index("😀")
    assert index.offset(Position(0, 9 + 1), UTF16) == emoji  # second half of the pair


def test_text_line_col_1based_counts_code_points():
    index = LineIndex(TEXT)
    assert index.line_col_1based(TEXT.index("gpu.wait")) == (2, 6)
    assert index.line_col_1based(TEXT.index("y\rlast")) == (4, 5)


def test_text_line_index_without_final_newline_has_last_line():
    assert LineIndex("a\nb").line_count == 2
    assert LineIndex("a\n").line_count == 2
    assert LineIndex("").line_count == 1


@given(st.text(alphabet=st.sampled_from("ab\r\n\u2028\x0bé😀 "), max_size=40),
       st.sampled_from([UTF8, UTF16, UTF32]))
def test_text_position_offset_round_trip_property(text, encoding):
    index = LineIndex(text)
    for offset in range(len(text) + 1):
        pos = index.position(offset, encoding)
        back = index.offset(pos, encoding)
        # Offsets inside a line break map to the end of the line.
        assert back == offset or text[back:offset] in ("\r", "\n", "\r\n"[: offset - back])


def test_edits_apply_in_text_order_keeping_planned_order_at_one_offset():
    edits = [TextEdit(4, 4, "B"), TextEdit(0, 0, "1"), TextEdit(0, 0, "2"), TextEdit(1, 3, "")]
    assert apply_edits("abcdef", edits) == "12adBef"


def test_edits_overlapping_are_rejected_and_nothing_applied():
    with pytest.raises(OverlappingEditsError):
        sort_edits([TextEdit(0, 3, "x"), TextEdit(2, 4, "y")])
    with pytest.raises(OverlappingEditsError):
        apply_edits("abc", [TextEdit(2, 9, "x")])


def test_positions_of_equals_the_line_index_on_random_texts():
    """The counting fast path ("\\n" and "\\r\\n" lines, ASCII or not) and its fallback give what
    LineIndex.position gives, for offsets in any order or in order, repeated or out of
    range."""
    import random

    from gpu_async_lsp.text import ENCODINGS, positions_of

    rng = random.Random(1)
    wide = ["a", " ", "\n", "\r\n", "\r", "é", "𝄞", "\t", "%", "\x0b", "\u2028"]
    plain = ["a", " ", "\n", "\r\n", "x"]
    counted = ["a", "\n", "\r\n", "é", "𝄞", "\ud800", "\x0b", "\u2028", "\x85", "字"]  # no lone "\r"
    for trial in range(9000):
        pool = (plain, wide, counted)[trial % 3]
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 30)))
        offsets = [rng.randint(-2, len(text) + 2) for _ in range(rng.randint(0, 12))]
        if trial % 2:
            offsets.sort()  # in order, as a unit's findings most often give them
        index = LineIndex(text)
        for encoding in ENCODINGS:
            want = [(p.line, p.character) for p in (index.position(o, encoding) for o in offsets)]
            assert positions_of(text, offsets, encoding) == want, (text, offsets, encoding)


def test_line_columns_equal_positions_on_random_texts_and_long_lines():
    """LineIndex.line_columns (what a publication places units with) gives what position
    gives, offset by offset, on short lines and on long ones (their wide-character tables),
    in every encoding, for offsets in any order, repeated or out of range; also on an index
    moved by an edit."""
    import random

    from gpu_async_lsp.text import ENCODINGS

    rng = random.Random(2)
    pool = ["a", " ", "\n", "\r\n", "\r", "é", "𝄞", "\x0b", "\u2028", "字"]
    for trial in range(3000):
        long_line = "é𝄞a" * rng.choice([0, 0, 200])  # > 512 characters: the wide tables
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 30)))
        text = text[:len(text) // 2] + long_line + text[len(text) // 2:]
        offsets = [rng.randint(-2, len(text) + 2) for _ in range(rng.randint(0, 8))]
        index = LineIndex(text)
        if text and trial % 2:
            at = rng.randint(0, len(text))
            moved = text[:at] + "b" + text[at:]
            index = index.edited(moved, at, at, at + 1)
            text = moved
        for encoding in ENCODINGS:
            want = [(p.line, p.character) for p in (index.position(o, encoding) for o in offsets)]
            assert index.line_columns(offsets, encoding) == want, (text, offsets, encoding)


def _reference_apply(text: str, edits: list) -> str:
    """Edits applied one at a time from the last, in planned order among equal positions."""
    ordered = sorted(enumerate(edits), key=lambda ie: (ie[1].start, ie[1].end, ie[0]))
    for _, e in reversed(ordered):
        text = text[:e.start] + e.new_text + text[e.end:]
    return text


def _reference_moved(edits: list, offset: int) -> int:
    """Where `offset` lands: past every edit that starts at or before it."""
    return offset + sum(len(e.new_text) - (e.end - e.start) for e in edits if e.start <= offset)


def test_sorted_edits_pickled_keep_offsets_past_32_bits():
    """A part's offsets go as 32-bit integers where they fit, else as 64-bit ones."""
    from gpu_async_lsp.edits import SortedEdits

    far = 1 << 33
    edits = [TextEdit(far, far, "é"), TextEdit(far + 5, far + 7, ""), TextEdit(3, 3, "ab")]
    flat = SortedEdits.of(edits)
    loaded = pickle.loads(pickle.dumps(flat))
    assert loaded == flat and loaded.to_list() == sort_edits(edits)
    assert loaded.mover()(far + 9) == far + 9 + 2 + 1 - 2


def test_sorted_edits_apply_move_and_join_as_text_edits_do():
    """SortedEdits (the flat edits `check` joins from its shares, and apply_edits): applying,
    moving offsets and joining parts in text order give what applying the edits one by one
    gives; parts out of order are sorted again; an overlap raises."""
    import random

    from gpu_async_lsp.edits import SortedEdits

    rng = random.Random(7)
    for _ in range(500):
        text = "".join(rng.choice("ab\n%é") for _ in range(rng.randint(0, 40)))
        cuts = sorted(rng.randint(0, len(text)) for _ in range(rng.randint(0, 12)))
        edits, at = [], 0
        for a, b in zip(cuts[::2], cuts[1::2]):
            if a >= at:
                edits.append(TextEdit(a, b if rng.random() < 0.5 else a, rng.choice(["", "x", "yz"])))
                at = b if b > a else a + 1
        rng.shuffle(edits)
        flat = SortedEdits.of(edits)
        assert flat.apply(text) == _reference_apply(text, edits) == apply_edits(text, edits)
        ordered = sort_edits(edits)
        assert flat.to_list() == ordered
        want = [_reference_moved(edits, o) for o in range(len(text) + 1)]
        assert [flat.mover()(o) for o in range(len(text) + 1)] == want
        k = rng.randint(0, len(ordered))
        joined = SortedEdits.of(ordered[:k])
        joined.extend(SortedEdits.of(ordered[k:]))
        assert joined == flat
        assert [joined.mover()(o) for o in range(len(text) + 1)] == want
        # Parts made with the text carry their edits applied: glued, the same text.
        cuts = sorted(rng.sample(range(len(ordered) + 1), min(3, len(ordered) + 1)))
        applied = SortedEdits()
        for a, b in zip([0, *cuts], [*cuts, len(ordered)]):
            applied.extend(SortedEdits.of(ordered[a:b], text))
        assert applied == flat
        assert applied.apply(text) == _reference_apply(text, edits)
        assert [applied.mover()(o) for o in range(len(text) + 1)] == want
        backwards = SortedEdits.of(ordered[k:])
        backwards.extend(SortedEdits.of(ordered[:k]))
        assert backwards == flat
        # As a block's parts arrive from the process that made them (machine integers, the
        # texts joined): the same edits, applied, moved and joined alike.
        loaded = pickle.loads(pickle.dumps(applied, pickle.HIGHEST_PROTOCOL))
        assert loaded.apply(text) == _reference_apply(text, edits)
        assert [loaded.mover()(o) for o in range(len(text) + 1)] == want
        assert loaded == flat and loaded.to_list() == ordered
        mixed = pickle.loads(pickle.dumps(SortedEdits.of(ordered[k:]), pickle.HIGHEST_PROTOCOL))
        mixed.extend(SortedEdits.of(ordered[:k]))  # out of order: sorted again
        assert mixed == flat and pickle.loads(pickle.dumps(mixed)) == flat
    with pytest.raises(OverlappingEditsError):
        SortedEdits.of([TextEdit(0, 3, "x"), TextEdit(2, 4, "y")])
    late = SortedEdits.of([TextEdit(2, 4, "y")])
    with pytest.raises(OverlappingEditsError):
        late.extend(SortedEdits.of([TextEdit(0, 3, "x")]))
    with pytest.raises(OverlappingEditsError):
        SortedEdits.of([TextEdit(5, 9, "x")]).apply("abc")
    with pytest.raises(OverlappingEditsError):
        SortedEdits.of([TextEdit(5, 9, "x")], "abc")
