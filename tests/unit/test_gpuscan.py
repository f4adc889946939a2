"""The GPU ops' fast path written for C (syntax/gpuscan.py) is gpu_formats.WHOLE_OP: the same
spans or the same no-match after every GPU op name of the corpora and of generated host code,
and at every position of random text made of the pieces the formats are written with. Both the
build the package runs (compiled where the install has it) and the module run as Python."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

from gpu_async_lsp.syntax import gpuscan
from gpu_async_lsp.syntax.gpu_formats import FORMATS, WHOLE_OP
from tests.corpora import corpus_texts
from tests.python_twin import as_python

ROOT = Path(__file__).resolve().parents[2]


PYTHON = as_python("gpu_async_lsp/syntax/gpuscan.py")  # the same module, run as Python
SCANNERS = {"package": gpuscan.op_spans, "python": PYTHON.op_spans}
_NAME = re.compile(r"gpu\.(?:wait|alloc|dealloc|memcpy|memset|launch_func)(?![\w$.])")


def _expected(name: str, text: str, pos: int, end: int):
    m = WHOLE_OP[name].match(text, pos, end)
    return None if m is None else gpuscan.flat(m)


def _check(scan, name: str, text: str, pos: int, end: int) -> bool:
    got = scan(text, gpuscan.FORMAT_CODE[name], pos, end)
    assert got == _expected(name, text, pos, end), (name, text[pos:pos + 120], pos, end)
    return got is not None


def _check_names(scan, text: str, end: int | None = None) -> tuple[int, int]:
    """Every GPU op name in `text`: checked, and how many matched."""
    end = len(text) if end is None else end
    checked = matched = 0
    for m in _NAME.finditer(text, 0, end):
        checked += 1
        matched += _check(scan, m.group(), text, m.end(), end)
    return checked, matched


def test_the_codes_name_every_format():
    assert set(gpuscan.FORMAT_CODE) == {f.name for f in FORMATS} == set(WHOLE_OP)


@pytest.mark.parametrize("which", SCANNERS)
def test_op_spans_are_whole_op_after_every_gpu_op_of_generated_host_code(which):
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gen_host import generate

    text = generate(3000)
    checked, matched = _check_names(SCANNERS[which], text)
    assert checked > 500 and matched > checked // 2


@pytest.mark.parametrize("which", SCANNERS)
def test_op_spans_are_whole_op_after_every_gpu_op_of_the_corpora(which):
    checked = matched = 0
    for text in corpus_texts():
        for end in (len(text), len(text) // 2):  # and a bound inside the text, as a unit's
            c, m = _check_names(SCANNERS[which], text, end)
            checked += c
            matched += m
    assert checked > 1000 and matched > 100


# Pieces of the formats and of what breaks them: keywords whole and cut, values, symbols,
# types with `<...>` bodies, strings, comments, line breaks, non-ASCII word characters.
_PIECES = [" ", " ", "\t", "\n", "\r\n", "\r", "async", "asyncx", "[", "]", "(", ")", "<", ">",
           ",", ":", "::", "=", "-", "->", ">=", "<=", "%a", "%b1", "%x#1", "%y#", "%", "%é",
           "@k", "@kernels::@f", '@"q s"', "@", "@kblocks", "@xclusters", "blocks", "in",
           "threads", "clusters", "args", "dynamic_shared_memory_size", "host_shared", "loc",
           "f32", "!gpu.async.token", "memref<?xf32>", "memref<4x?xf32, strided<[1, 4]>>",
           "vector<4xf32>", "!t<\"s\\\">\">", "i32", "index", "//c\n", "{", "}", '"', "\\",
           "٣", "²", "字", "$", ".", "_", "x", "\u00a0", "\x0c", "#1", "t<\"\\\n\">", "<=>",
           "t<a->b>", "t<a>=b>", "t<<=>"]
_SHAPES = {
    "gpu.wait": [" async", " [%a, %b]", " async [%a]", "\n"],
    "gpu.alloc": [" async [%t] host_shared (%n, %m) [%s] : memref<?x?xf32>",
                  " (%n) : memref<?xf32>", " () : memref<4xf32>"],
    "gpu.dealloc": [" async [%t] %m : memref<?xf32>", " %m : memref<4xf32, 1>"],
    "gpu.memcpy": [" %a, %b : memref<?xf32>, memref<?xf32>",
                   " async [%t0, %t1] %a, %b : memref<4xf32>, memref<4xf32>"],
    "gpu.memset": [" %a, %v : memref<?xf32>, f32"],
    "gpu.launch_func": [
        " @k::@f blocks in (%a, %b, %c) threads in (%a, %b, %c)",
        " async [%t] <%s : !gpu.async.token> @k::@f\n  clusters in (%a, %a, %a)\n"
        "  blocks in (%a, %b, %c) threads in (%a, %b, %c) : i64\n"
        "  dynamic_shared_memory_size %d args(%x : memref<?xf32>,\n   %y : f32)",
        " @kblocks in (%a, %b, %c) threads in (%a, %b, %c)",
        " @m::@xclusters in (%a, %b, %c) blocks in (%a, %b, %c) threads in (%a, %b, %c)",
    ],
}


def _random_text(rng: random.Random, name: str) -> str:
    """A valid shape of `name`, cut and spliced with random pieces, then a next line."""
    shape = rng.choice(_SHAPES[name])
    cut = sorted(rng.randint(0, len(shape)) for _ in range(2))
    noise = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 6)))
    body = shape if rng.random() < 0.3 else shape[:cut[0]] + noise + shape[cut[1]:]
    after = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 5)))
    return body + rng.choice(["", "\n", "\r\n", " // c\n", "\n\n"]) + after


@pytest.mark.parametrize("which", SCANNERS)
def test_op_spans_are_whole_op_on_random_text(which):
    rng = random.Random(29)
    scan = SCANNERS[which]
    matched = 0
    for _ in range(6000):
        name = rng.choice(list(_SHAPES))
        text = _random_text(rng, name)
        end = len(text) if rng.random() < 0.7 else rng.randint(0, len(text))
        for pos in (0, rng.randint(0, len(text))):
            matched += _check(scan, name, text, min(pos, end), end)
    assert matched > 500


@pytest.mark.parametrize("which", SCANNERS)
def test_op_spans_are_whole_op_on_random_pieces(which):
    rng = random.Random(30)
    scan = SCANNERS[which]
    for _ in range(4000):
        text = "".join(rng.choice(_PIECES) for _ in range(rng.randint(0, 16)))
        end = rng.randint(0, len(text))
        name = rng.choice(list(_SHAPES))
        for pos in range(0, end + 1):
            _check(scan, name, text, pos, end)


# --- where a line starts something new (lexer._next_line_starts_op's expression) ------------

from gpu_async_lsp.syntax.braces import OP_WORDS  # noqa: E402
from gpu_async_lsp.syntax.lexer import _NEXT_OP_START_RE  # noqa: E402

STARTS = {"package": gpuscan.next_line_starts_op, "python": PYTHON.next_line_starts_op}


def _expected_start(text: str, pos: int, end: int) -> bool:
    m = _NEXT_OP_START_RE.match(text, pos, end)
    if m is None:
        return False
    word = m.group("word")
    return word is None or "." in word or word in OP_WORDS


def _check_starts(which: str, text: str, positions, end: int) -> int:
    n = 0
    for pos in positions:
        got = STARTS[which](text, pos, end, OP_WORDS)
        assert got == _expected_start(text, pos, end), (text[pos:pos + 80], pos, end)
        n += got
    return n


@pytest.mark.parametrize("which", STARTS)
def test_next_line_starts_op_is_the_expression_at_every_line_of_the_corpora(which):
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gen_host import generate

    texts = [generate(2000), *corpus_texts()]
    starts = 0
    for text in texts:
        lines = [0, *(i + 1 for i, c in enumerate(text) if c == "\n")]
        starts += _check_starts(which, text, lines, len(text))
        _check_starts(which, text, lines[:40], len(text) // 2)
    assert starts > 10_000


_START_PIECES = ["%a", "%b:2", " : 3", ":", ",", " ", "\t", "=", "==", "=>", "\n", "\r\n", "//c\n",
                 "func.call", "return", "yield", "x", "_", "é", "٣", "$", ".", '"d.op"', '"s"',
                 '"', "}", "^bb1", "{-#", "{", "#map", "!t", " = ", "-", "%", "\\", "\u2028"]


@pytest.mark.parametrize("which", STARTS)
def test_next_line_starts_op_is_the_expression_on_random_text(which):
    rng = random.Random(31)
    for _ in range(5000):
        text = "".join(rng.choice(_START_PIECES) for _ in range(rng.randint(0, 12)))
        end = rng.randint(0, len(text))
        _check_starts(which, text, range(0, end + 1), end)
