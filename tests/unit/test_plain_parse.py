"""The parser's path around Lark for plain units (`parser._plain_parse`) builds exactly the IR
that Lark's parse builds, and leaves every other unit to Lark: checked on every unit of the
fixtures, of the corpora and of generated host code and real IR, and on cut-up units."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_async_lsp.syntax import ir, parser, refs
from gpu_async_lsp.syntax.ir import OP_FIELDS, Op
from gpu_async_lsp.syntax.lexer import tokenize_lines
from gpu_async_lsp.syntax.parser import OP_WORDS, TOP_LEVEL_DIALECT, split_document
from gpu_async_lsp.syntax.prelex import PrelexError, prelex
from tests.corpora import CORPORA, manifest, require_corpus

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


# The IR's classes but Op, whose fields are their __slots__.
_IR_VALUES = (ir.GpuSyntax, ir.Block, ir.Region, ir.Alias, ir.SyntaxIssue, ir.Chunk,
              ir.Document, refs.ValueRef, refs.SymbolRef)


def dump(x):
    """Every field of the IR, recursively (tokens by type and span)."""
    if isinstance(x, list | tuple):
        return [dump(v) for v in x]
    if isinstance(x, Op):
        return ("Op", [(name, dump(getattr(x, name))) for name in OP_FIELDS if name != "src"])
    if type(x) in _IR_VALUES:
        return (type(x).__name__,
                [(name, dump(getattr(x, name))) for name in type(x).__slots__])
    if hasattr(x, "start_pos"):
        return ("token", x.type, x.start_pos, x.end_pos)
    return x


def _leaf_units(text: str):
    from gpu_async_lsp.op_tables import DEFAULT_DIALECT

    def walk(units, dialect):
        for u in units:
            if u.region is None:
                yield u, dialect
            else:
                name = text[u.start:u.region[0]].split()[0] if text[u.start:u.region[0]].split() else ""
                yield from walk(u.children, DEFAULT_DIALECT.get(
                    "builtin.module" if name == "module" else name, dialect))

    for _, _, units in split_document(text):
        yield from walk(units, TOP_LEVEL_DIALECT)


def _compare(text: str) -> tuple[int, int]:
    """(units read by the plain path, units left to Lark); asserts both parse alike."""
    plain = lark = 0
    for unit, dialect in _leaf_units(text):
        source = text[unit.start:unit.end]
        try:
            tokens = prelex(source, tokenize_lines(source, 0, len(source), OP_WORDS), dialect)
        except (PrelexError, RecursionError):
            continue
        try:
            fast = parser._plain_parse(list(tokens))
        except parser._NotPlain:
            lark += 1
            continue
        plain += 1
        assert dump(fast) == dump(parser._lark().parse(list(tokens))), source[:200]
    return plain, lark


def _texts() -> list[tuple[str, str]]:
    files = sorted(FIXTURES.glob("*.mlir")) + sorted((FIXTURES / "parse").glob("*.mlir"))
    return [(p.name, p.read_text(encoding="utf-8")) for p in files]


@pytest.mark.parametrize("name,text", _texts(), ids=[n for n, _ in _texts()])
def test_plain_path_builds_what_lark_builds_on_fixture(name, text):
    _compare(text)


def test_plain_path_reads_most_units_of_host_code():
    import sys
    sys.path.insert(0, str(BENCHMARKS))
    from gen_host import generate

    plain, lark = _compare(generate(3000))
    assert plain > 10 * lark


@pytest.mark.parametrize("corpus", list(CORPORA))
def test_plain_path_builds_what_lark_builds_on_corpus(corpus):
    require_corpus(corpus)
    folder = CORPORA[corpus][0]
    plain = lark = 0
    for entry in manifest(corpus):
        p, q = _compare((folder / entry["path"]).read_text(encoding="utf-8", errors="replace"))
        plain, lark = plain + p, lark + q
    assert plain and lark  # both paths are exercised


CUT = ("func.func @f(%n: index) {\n  %a = gpu.alloc (%n) : memref<?xf32>\n"
       "  scf.for %i = %c0 to %n step %c1 {\n    %v = arith.addi %i, %i : index\n  }\n"
       "^bb1(%x: index):\n  cf.br ^bb1(%x : index)\n}\n")


def _parses_as_with_lark(source: str) -> None:
    """parse_unit_tokens (the plain path first) gives Lark's result, or fails where Lark does."""
    raw = tokenize_lines(source, 0, len(source), OP_WORDS)
    items, issue = parser.parse_unit_tokens(source, raw, TOP_LEVEL_DIALECT, len(source))
    try:
        tokens = prelex(source, tokenize_lines(source, 0, len(source), OP_WORDS),
                        TOP_LEVEL_DIALECT)
    except PrelexError as e:
        # The pre-lexer's error is the unit's one issue, with nothing parsed.
        assert items == [] and issue is not None, source
        assert (issue.message, issue.start, issue.end) == (e.message, e.start, e.end), source
        return
    try:
        expected, expected_issue = dump(parser._lark().parse(list(tokens))), None
    except Exception:  # noqa: BLE001 - Lark's error: parse_unit_tokens made the issue
        expected, expected_issue = [], True
    assert dump(items) == expected, source
    assert (issue is not None) == bool(expected_issue), source


@pytest.mark.parametrize("cut", range(0, len(CUT), 3))
def test_a_cut_up_unit_parses_or_fails_as_with_lark(cut):
    """Any prefix of a unit, any unit with a token dropped: the result or the syntax issue
    is Lark's."""
    for source in (CUT[:cut], CUT[:cut] + CUT[cut + 3:]):
        _parses_as_with_lark(source)


GENERIC = ('#map = affine_map<(d0) -> (d0)>\n'
           '%r:2 = "test.op"(%a, %b) ({\n'
           '^bb0(%x: i32):\n'
           '  "test.yield"(%x) : (i32) -> ()\n'
           '}, {\n'
           '  %c = arith.constant 0 : i32\n'
           '}) {attr = 1 : i32} : (i32, i32) -> (i32, i32)\n'
           '"test.other"() : () -> ()\n'
           '{-#\n  dialect_resources: {builtin: {blob: "0x04"}}\n#-}\n')


def test_generic_ops_and_aliases_take_the_plain_path_as_lark_reads_them():
    """Generic ops (their BODY runs and regions in any order), top-level aliases and file
    metadata are read
    top-down, with the IR Lark builds (a unit of real IR that went to Lark cost ~0.6 ms)."""
    text = GENERIC + "func.func @f() {\n  \"test.op\"() ({\n  }) : () -> ()\n  return\n}\n"
    plain, lark = _compare(text)
    assert plain >= 3 and lark == 0


@pytest.mark.parametrize("cut", range(0, len(GENERIC), 4))
def test_a_cut_up_generic_op_parses_or_fails_as_with_lark(cut):
    for source in (GENERIC[:cut], GENERIC[:cut] + GENERIC[cut + 4:]):
        _parses_as_with_lark(source)


# -- the whole-line path (parser.whole_line_unit): no pre-lexer, no plain parse --------------------

def _whole_line_agrees(source: str, dialect: str | None) -> bool:
    """Did the whole-line path read `source`? Where it did, the pre-lexer takes the unit
    without an error and the plain parse of its tokens builds the same IR (every field)."""
    raw = tokenize_lines(source, 0, len(source), OP_WORDS)
    fast = parser.whole_line_unit(source, list(raw))
    if fast is None:
        return False
    tokens = prelex(source, list(raw), dialect)  # raises if it would have been an error
    assert tokens[0].type == "OP_NAME" and tokens[-1].type == "RBRACE"
    assert dump(fast) == dump(parser._plain_parse(list(tokens))), source[:300]
    return True


def _whole_line_count(text: str) -> tuple[int, int]:
    taken = units = 0
    for unit, dialect in _leaf_units(text):
        units += 1
        taken += _whole_line_agrees(text[unit.start:unit.end], dialect)
    return taken, units


@pytest.mark.parametrize("layout", ["lf", "crlf", "non-ascii", "tabs"])
def test_whole_line_path_builds_what_the_plain_path_builds_on_host_code(layout):
    import sys
    sys.path.insert(0, str(BENCHMARKS))
    from gen_host import generate

    text = generate(3000)
    text = {"lf": text, "crlf": text.replace("\n", "\r\n"),
            "non-ascii": text.replace("// Host step", "// é → 字 Host step"),
            "tabs": text.replace("    ", "\t")}[layout]
    taken, units = _whole_line_count(text)
    assert taken == units  # every function of generated host code takes it


@pytest.mark.parametrize("name,text", _texts(), ids=[n for n, _ in _texts()])
def test_whole_line_path_builds_what_the_plain_path_builds_on_fixture(name, text):
    _whole_line_count(text)


@pytest.mark.parametrize("corpus", list(CORPORA))
def test_whole_line_path_builds_what_the_plain_path_builds_on_corpus(corpus):
    require_corpus(corpus)
    folder = CORPORA[corpus][0]
    taken = 0
    for entry in manifest(corpus):
        taken += _whole_line_count(
            (folder / entry["path"]).read_text(encoding="utf-8", errors="replace"))[0]
    assert taken  # the path is exercised on real IR too


_EDITS = ["", " ", ",", "(", ")", "{", "}", "[", "]", "\n", "// c\n", "%x = ", "return\n",
          "\"s\"", "<", ">", "gpu.wait\n", "^bb1:\n", "= ", "->", ":", "async ", "{-#", "é",
          "scf.if %c {\n", "%r = scf.if %c -> (index) {\n", "} else {\n", "}\n", "loc(#l)\n",
          "scf.yield\n", "return\n}\n", "func.func @g() {\n", "attributes {a} {\n"]


def test_whole_line_path_on_edited_host_functions():
    """Random edits of host functions (a piece dropped, replaced or inserted anywhere): where
    the whole-line path reads the unit, the pre-lexer raises nothing and the plain parse
    builds the same IR; elsewhere the path leaves it to them (returns None)."""
    import random
    import sys
    sys.path.insert(0, str(BENCHMARKS))
    from gen_host import generate

    text = generate(300)
    functions = [text[u.start:u.end] for u, d in _leaf_units(text)
                 if text.startswith("func.func", u.start)]
    rng = random.Random(29)
    taken = 0
    for _ in range(10_000):
        source = rng.choice(functions)
        at = rng.randrange(len(source) + 1)
        cut = at + rng.choice([0, 0, 1, 2, 5])
        source = source[:at] + rng.choice(_EDITS) + source[cut:]
        for dialect in (TOP_LEVEL_DIALECT, None):
            try:
                taken += _whole_line_agrees(source, dialect)
            except PrelexError as e:
                raise AssertionError(f"taken, but the pre-lexer raises {e.message}: {source}") from e
    assert taken > 2000
