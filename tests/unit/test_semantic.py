"""Semantic tokens of one text: positions in every encoding, CRLF, broken text, linear cost."""

from __future__ import annotations

import pytest

from gpu_async_lsp.ide import semantic
from gpu_async_lsp.ide.host import Analyzer
from gpu_async_lsp.text import ENCODINGS, LineIndex, Position

TEXT = ('func.func @f(%n: index) {  // é𝄞 here\n'
        '  %s = "x.y"() {k = "é𝄞"} : () -> i32 %a = gpu.alloc (%n) : memref<4x4xf32>\n'
        '  %t = gpu.wait async\n'
        '  return\n'
        '}\n')


def decoded(text: str, encoding: str) -> list[tuple[str, str]]:
    analysis = Analyzer().analyze(text, 1)
    index = LineIndex(text)
    data = [int(x) for x in semantic.document_data(analysis, index, encoding).split(",")]
    out, line, col = [], 0, 0
    for i in range(0, len(data), 5):
        dl, dc, length, kind, _ = data[i:i + 5]
        line, col = line + dl, (dc if dl else col + dc)
        start = index.offset(Position(line, col), encoding)
        end = index.offset(Position(line, col + length), encoding)
        out.append((text[start:end], semantic.TOKEN_TYPES[kind]))
    return out


@pytest.mark.parametrize("encoding", ENCODINGS)
@pytest.mark.parametrize("eol", ["\n", "\r\n"])
def test_semantic_tokens_in_every_encoding_and_line_ending(encoding, eol):
    text = TEXT.replace("\n", eol)
    found = decoded(text, encoding)
    assert ("// é𝄞 here", "comment") in found
    assert ('"é𝄞"', "string") in found and ('"x.y"', "macro") in found
    assert ("gpu", "namespace") in found and ("alloc", "macro") in found
    assert ("4x4xf32", "type") in found and ("%a", "variable") in found
    assert ("return", "macro") in found and ("k", "property") in found
    assert all("\r" not in t and "\n" not in t for t, _ in found)


def test_semantic_tokens_mark_tokens_and_definitions():
    tokens = semantic.scan(TEXT, 0, len(TEXT), Analyzer().analyze(TEXT, 1).units[0].result.ops,
                           "utf-32")  # columns in code points
    lines = TEXT.split("\n")
    named = {(lines[line][col:col + n], mods) for line, col, n, _, mods in tokens}
    assert ("%t", semantic.DECLARATION | semantic.ASYNC_TOKEN) in named
    assert ("%a", semantic.DECLARATION) in named and ("%n", 0) in named


def test_semantic_tokens_of_unparsed_text():
    """No parse at all (a syntax error in every op): words heading a line are op names."""
    text = "  %x = arith.addi (\n  memref.store %x, %y[] :\n"
    tokens = semantic.scan(text, 0, len(text))
    kinds = {text.split("\n")[line][col:col + n]: semantic.TOKEN_TYPES[k]
             for line, col, n, k, _ in tokens}
    assert kinds["arith"] == "namespace" and kinds["addi"] == "macro"
    assert kinds["memref"] == "namespace" and kinds["store"] == "macro"


PIECES = ["func.func", " @f", "(", "%a", ": index", ")", " {", "}", "\n", "\r\n", "\r",
          "  gpu.wait", " async", " [%t0]", "é", "𝄞", '"s"', '"x\\"y"', "// c", "%t:2",
          "\x00", "\x0b", "\u2028", "\ud800", "^bb0", "#map", "!gpu.async.token", "4x?xf32",
          "=", ",", "-1.5e3", "0x1F", "memref.store", "{k = 1}", "\t"]


def test_semantic_tokens_of_random_and_broken_text():
    """Any text (garbage, NULs, lone surrogates, lone "\\r", CRLF, wide characters): tokens are
    non-empty, on one line each, in order, their lengths exact, the same in every encoding
    (for non-ASCII text UTF-32 counts line breaks, the others use the LineIndex)."""
    import random
    import re

    rng = random.Random(5)
    for _ in range(400):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 40)))
        found = {}
        for encoding in ENCODINGS:
            analysis = Analyzer().analyze(text, 1)
            index = LineIndex(text)
            data = semantic.document_data(analysis, index, encoding)
            ints = [int(x) for x in data.split(",")] if data else []
            assert len(ints) % 5 == 0
            out, line, col, last = [], 0, 0, -1
            for i in range(0, len(ints), 5):
                dl, dc, length, kind, _ = ints[i:i + 5]
                line, col = line + dl, (dc if dl else col + dc)
                s = index.offset(Position(line, col), encoding)
                e = index.offset(Position(line, col + length), encoding)
                assert e > s > last, (text, encoding)
                assert not re.search(r"[\r\n]", text[s:e]), (text, encoding)
                # Within its line: the end is where the length says, not clamped to it.
                assert index.position(e, encoding) == Position(line, col + length), (text, encoding)
                last = s
                out.append((s, text[s:e], kind))
            found[encoding] = out
        assert found["utf-8"] == found["utf-16"] == found["utf-32"], text


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_semantic_tokens_comment_over_a_lone_carriage_return(encoding):
    """MLIR reads a lone "\\r" as a blank (the comment goes on to the "\\n"); LSP as a line
    break: the comment is one token on each of its lines. A CRLF's "\\r" is in none."""
    text = "// a\r%b c\r\n%d = gpu.wait async\r\n"
    assert decoded(text, encoding)[:3] == [("// a", "comment"), ("%b c", "comment"),
                                            ("%d", "variable")]


def test_semantic_tokens_of_a_range_between_functions():
    """A range on the comment between two functions gets its tokens (whole units and gaps
    around the range may come along)."""
    text = ("func.func @f() {\n  return\n}\n// between\n// them\n"
            "func.func @g() {\n  return\n}\n")
    analysis = Analyzer().analyze(text, 1)
    index = LineIndex(text)
    at = text.index("// them")
    data = semantic.document_data(analysis, index, "utf-16", at + 1, at + 2)
    ints = [int(x) for x in data.split(",")]
    starts, line, col = [], 0, 0
    for i in range(0, len(ints), 5):
        line, col = line + ints[i], (ints[i + 1] if ints[i] else col + ints[i + 1])
        starts.append(index.offset(Position(line, col)))
    assert at in starts
