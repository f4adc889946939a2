"""The lexer's scans written for C (syntax/linescan.py) are its expressions: the line match is
LINE_RE (the same spans or the same no-match) at every line start of the corpora and of
generated host code and at every position of random text made of the characters the expression
cares about; the brace scan finds the braces the splitter's expressions find (`braces_matched`)
on the same texts and random ones; a unit's end is `trimmed_end`'s; a line of only `}` is
`_CLOSE_LINE_RE`'s. Both the build the package runs (compiled where the install
has it) and the module run as Python."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from gpu_async_lsp.syntax import linescan
from gpu_async_lsp.syntax.lexer import _CLOSE_LINE_RE, LINE_RE, braces_matched, trimmed_end
from tests.corpora import corpus_texts
from tests.python_twin import as_python

ROOT = Path(__file__).resolve().parents[2]


PYTHON = as_python("gpu_async_lsp/syntax/linescan.py")  # the same module, run as Python
SCANNERS = {"package": linescan.line_spans, "python": PYTHON.line_spans}


def _expected(text: str, pos: int, end: int):
    m = LINE_RE.match(text, pos, end)
    return None if m is None else linescan.flat(m)


def _check_all(scan, text: str, positions, end: int | None = None) -> int:
    end = len(text) if end is None else end
    n = 0
    for pos in positions:
        assert scan(text, pos, end) == _expected(text, pos, end), (text[pos:pos + 80], pos, end)
        n += 1
    return n


@pytest.mark.parametrize("which", SCANNERS)
def test_line_spans_are_line_re_at_every_line_of_generated_host_code(which):
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gen_host import generate

    text = generate(3000)
    starts = [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]
    assert _check_all(SCANNERS[which], text, starts) == len(starts)
    assert sum(LINE_RE.match(text, p) is not None for p in starts) > len(starts) // 2


@pytest.mark.parametrize("which", SCANNERS)
def test_line_spans_are_line_re_at_every_line_of_the_corpora(which):
    texts = corpus_texts()
    checked = 0
    for text in texts:
        starts = [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]
        checked += _check_all(SCANNERS[which], text, starts)
        # and a bound inside the text, as a unit's end is
        checked += _check_all(SCANNERS[which], text, starts[:50], end=len(text) // 2)
    assert checked > 10_000


_ALPHABET = ["%", "a", "Z", "_", "0", "7", "٣", "é", "字", "$", ".", "-", "=", ">", ":", ",",
             " ", "\t", "\r", "\n", "/", "{", "}", '"', "(", "#", "\x0b", "²", "x.y", "%r",
             "= ", " : 2", "//c\n", "{\r\n", "\u00a0", "\u2028", "\x0c", "->", "return", "[",
             ")", "%x = op"]


@pytest.mark.parametrize("which", SCANNERS)
def test_line_spans_are_line_re_on_random_text(which):
    rng = random.Random(5)
    scan = SCANNERS[which]
    for _ in range(6000):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 24)))
        end = rng.randint(0, len(text))
        _check_all(scan, text, range(0, end + 1), end)


# -- a line of only `}` -----------------------------------------------------------------------------

CLOSE_SCANNERS = {"package": linescan.close_line, "python": PYTHON.close_line}


def _expected_close(text: str, pos: int, end: int) -> int:
    m = _CLOSE_LINE_RE.match(text, pos, end)
    return -1 if m is None else m.end() - 1


_CLOSE_ALPHABET = ["}", "}", " ", "\t", "\n", "\r\n", "\r", "//", "// c", "/", "x", "{",
                   "\x0c", "\u2028", "é", "%v = op"]


@pytest.mark.parametrize("which", CLOSE_SCANNERS)
def test_close_line_is_the_close_line_expression_on_random_text(which):
    scan = CLOSE_SCANNERS[which]
    found = 0
    for text, s, e in _random_spans(29, _CLOSE_ALPHABET, 14):
        got = scan(text, s, e)
        assert got == _expected_close(text, s, e), (text, s, e)
        found += got >= 0
    assert found > 500


# -- the brace scan -------------------------------------------------------------------------------

BRACE_SCANNERS = {"package": linescan.brace_scan, "python": PYTHON.brace_scan}


@pytest.mark.parametrize("which", BRACE_SCANNERS)
def test_brace_scan_is_the_brace_expressions_on_the_corpora_and_generated_code(which):
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gen_host import generate

    texts = [generate(3000), *corpus_texts()]
    scan = BRACE_SCANNERS[which]
    braces = 0
    for text in texts:
        expected = braces_matched(text, 0, len(text))
        assert scan(text, 0, len(text)) == expected
        braces += len(expected[0])
        # from a unit's start to a bound inside the text, as the splitter scans a chunk
        lo, hi = len(text) // 3, 2 * len(text) // 3
        assert scan(text, lo, hi) == braces_matched(text, lo, hi)
    assert braces > 5_000


_BRACE_ALPHABET = ["{", "}", '"', "\\", "/", "//", "\n", "\r\n", "a", " ", "{-#", "#-}", "#",
                   "-", "é", "字", '"x"', '\\"', "\\\n", '{"', "\u2028", "%v = op {", "}\n",
                   "\x00"]
# Texts of 1-byte characters only (ASCII, `é`; str.find is memchr there) and wider ones
# (`字`, U+2028): the random texts hold both.


def _random_spans(seed: int, alphabet: list[str], longest: int, count: int = 20_000):
    """`count` random texts of up to `longest` pieces of `alphabet`, each with a random
    (start, end) inside it."""
    rng = random.Random(seed)
    for _ in range(count):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest)))
        start = rng.randint(0, len(text))
        yield text, start, rng.randint(start, len(text))


@pytest.mark.parametrize("which", BRACE_SCANNERS)
def test_brace_scan_is_the_brace_expressions_on_random_text(which):
    scan = BRACE_SCANNERS[which]
    for text, start, end in _random_spans(11, _BRACE_ALPHABET, 30):
        assert scan(text, start, end) == braces_matched(text, start, end), (text, start, end)


# -- the end of a unit --------------------------------------------------------------------------

TRIM_SCANNERS = {"package": linescan.trim_end, "python": PYTHON.trim_end}


@pytest.mark.parametrize("which", TRIM_SCANNERS)
def test_trim_end_is_trimmed_end_at_every_line_of_the_corpora(which):
    """From each line start back to the line start 40 lines before (a unit's start)."""
    trim = TRIM_SCANNERS[which]
    texts = corpus_texts()
    checked = 0
    for text in texts:
        starts = [0, *(i + 1 for i, c in enumerate(text) if c == "\n"), len(text)]
        for k, e in enumerate(starts):
            s = starts[max(0, k - 40)]
            assert trim(text, s, e) == trimmed_end(text, s, e), (text[s:e][-200:], s, e)
            checked += 1
    assert checked > 10_000


_TRIM_ALPHABET = ["\n", "\r\n", " ", "\t", "//", "/", "// c\n", "x", "}", "\x0c", "\u2028",
                  "\u00a0", "é", "%v = op", '"//"', "\x1c", "  // é\n"]


@pytest.mark.parametrize("which", TRIM_SCANNERS)
def test_trim_end_is_trimmed_end_on_random_text(which):
    trim = TRIM_SCANNERS[which]
    for text, s, e in _random_spans(17, _TRIM_ALPHABET, 16):
        assert trim(text, s, e) == trimmed_end(text, s, e), (text, s, e)


# -- the line token ---------------------------------------------------------------------------------


def _pure_lexer():
    """lexer.py run as Python, its scans the expressions (as in an install without the build)."""
    lexer = as_python("gpu_async_lsp/syntax/lexer.py")
    lexer._LINE_SCAN_COMPILED = False
    lexer._GPU_SCAN_COMPILED = False
    return lexer


def _leaf_units(text: str) -> list[tuple[int, int]]:
    from gpu_async_lsp.syntax.parser import iter_units, split_document

    return [(v.unit.start, v.unit.end) for s, e, units in split_document(text)
            for v in iter_units(text, s, e, units) if v.header is None]


def test_line_tokens_are_the_tokenizer_s_on_the_corpora_and_generated_code():
    """The tokens of every leaf unit, by the package's tokenizer (which takes the line scan's
    LineTokens where it is compiled) and by the tokenizer of the expressions."""
    import sys

    from gpu_async_lsp.syntax.braces import OP_WORDS
    from gpu_async_lsp.syntax.lexer import tokenize_lines

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gen_host import generate

    pure = _pure_lexer()
    texts = [generate(3000), *corpus_texts()]
    lines = 0
    for text in texts:
        for s, e in _leaf_units(text):
            got = tokenize_lines(text, s, e, OP_WORDS)
            assert got == pure.tokenize_lines(text, s, e, OP_WORDS), text[s:e][:300]
            lines += sum(t.kind == "line" for t in got)
    assert lines > 10_000


_LINE_ALPHABET = ["%a = ", "%b, %c:2 = ", "x.y", "op", "return", " ", "\t", "(", ")", "[", "]",
                  ",", "=", ":", "<", "->", ">", "-", "{", "}", "\n", "\r\n", "// c", ".", "é",
                  "\u2028", "\x0c", " %v", "gpu.wait", "gpu.alloc ", "async", "\"s\"", "^bb0:"]


def test_line_tokens_are_the_tokenizer_s_on_random_lines():
    from gpu_async_lsp.syntax.braces import OP_WORDS
    from gpu_async_lsp.syntax.lexer import tokenize_lines

    pure = _pure_lexer()
    rng = random.Random(23)
    for _ in range(6000):
        text = "".join(rng.choice(_LINE_ALPHABET) for _ in range(rng.randint(0, 30)))
        expected = pure.tokenize_lines(text, 0, len(text), OP_WORDS)
        assert tokenize_lines(text, 0, len(text), OP_WORDS) == expected, text
