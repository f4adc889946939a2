"""The lexer stage (gpu_async_lsp/syntax/lexer.py): `// -----` chunks, top-level units, raw
tokens and line tokens, checked against what MLIR's own lexer and parser do."""

from __future__ import annotations

import re

import pytest

from gpu_async_lsp.syntax.braces import OP_WORDS
from gpu_async_lsp.syntax.lexer import (
    GpuLineToken,
    LineToken,
    RawToken,
    split_chunks,
    split_units,
    tokenize,
    tokenize_lines,
)


def units(text: str):
    return split_units(text, 0, len(text))


def unit_texts(text: str) -> list[str]:
    return [text[u.start:u.end] for u in units(text)]


def kinds_texts(text: str) -> list[tuple[str, str]]:
    return [(t.kind, t.text) for t in tokenize(text)]


def lines(text: str) -> list:
    return tokenize_lines(text, 0, len(text), OP_WORDS)


# --- split_chunks ----------------------------------------------------------------------------


def test_split_marker_line_splits_and_belongs_to_no_chunk():
    """`mlir-opt -split-input-file` cuts at a line holding `// -----`; the marker is dropped."""
    text = "func.func @a()\n// -----\nfunc.func @b()\n"
    chunks = split_chunks(text)
    assert [text[s:e].strip() for s, e in chunks] == ["func.func @a()", "func.func @b()"]
    assert all("// -----" not in text[s:e] for s, e in chunks)
    # Offsets are into the whole text, so positions keep their line numbers.
    assert chunks[0][0] == 0 and chunks[-1][1] == len(text)


def test_split_marker_may_be_indented_with_trailing_blanks_and_crlf():
    """Blanks before and after the marker, and a CRLF line end, still make a marker line."""
    text = "a\r\n  \t// -----  \t\r\nb\r\n"
    chunks = split_chunks(text)
    assert len(chunks) == 2
    assert text[slice(*chunks[0])].strip() == "a"
    assert text[slice(*chunks[1])].strip() == "b"
    assert all("-----" not in text[s:e] for s, e in chunks)


@pytest.mark.parametrize("line", ["// ------ section ------", "//-----", "x // -----"])
def test_split_near_misses_do_not_split(line):
    """Only the exact marker splits: more dashes, no blank after `//`, or code before it do not."""
    text = f"a\n{line}\nb\n"
    assert split_chunks(text) == [(0, len(text))]


def test_split_text_without_marker_is_one_chunk():
    text = "module {\n}\n"
    assert split_chunks(text) == [(0, len(text))]
    assert split_chunks("") == [(0, 0)]


# --- split_units -----------------------------------------------------------------------------


def test_units_top_level_ops_are_units_and_func_is_not_a_container():
    """Each top-level op is parsed on its own; a func's body stays inside its unit."""
    text = "func.func @f() {\n  return\n}\nfunc.func @g() {\n  return\n}\n"
    us = units(text)
    assert [text[u.start:u.end] for u in us] == [
        "func.func @f() {\n  return\n}", "func.func @g() {\n  return\n}"]
    assert all(u.region is None and u.children == [] for u in us)


@pytest.mark.parametrize("head", ["module", "builtin.module", "gpu.module @kernels"])
def test_units_container_has_region_and_children(head):
    """`module`, `builtin.module` and `gpu.module` hold ops that are units of their own."""
    text = f"{head} {{\n  func.func @a() {{\n    return\n  }}\n  func.func @b()\n}}\n"
    (u,) = units(text)
    assert text[u.start:u.end] == text.rstrip("\n")
    lbrace, rbrace = u.region
    assert lbrace == text.index("{") and text[rbrace] == "}" and rbrace == u.end - 1
    assert [text[c.start:c.end] for c in u.children] == [
        "func.func @a() {\n    return\n  }", "func.func @b()"]


def test_units_nested_containers_recurse():
    """A gpu.module inside a module is itself a container with its gpu.func children."""
    text = ("module attributes {gpu.container_module} {\n"
            "  gpu.module @k {\n    gpu.func @f() kernel {\n      gpu.return\n    }\n  }\n"
            "  func.func @main()\n}\n")
    (top,) = units(text)
    gmod, main = top.children
    assert text[main.start:main.end] == "func.func @main()"
    assert gmod.region is not None
    assert [text[c.start:c.end] for c in gmod.children] == [
        "gpu.func @f() kernel {\n      gpu.return\n    }"]
    assert gmod.children[0].region is None  # gpu.func is not a container


def test_units_children_split_with_the_braces_of_the_whole_scan():
    """A container's children are split from the braces the scan of the whole text found: the
    same units as splitting its body alone, around braces in strings (with escaped quotes),
    comments and metadata."""
    bodies = [
        'func.func @f() {\n  %s = "d.op"() {a = "}{"} : () -> ()\n  return\n}\n'
        'gpu.module @k {\n  gpu.func @g() kernel { // } {\n    gpu.return\n  }\n}\n',
        'module @inner {\n  func.func @h() {\n    return\n  }\n}\n{-# x = "{" #-}\n',
        '%a = "d.op"() : () -> ()\n%b = "e.op"() {s = "a\\"}{"} : () -> ()\n"func.func"() ({\n})',
        'func.func @u() {\n  return // {\n}\n{-# dialect_resources: { x } #-}\n',
    ]
    for body in bodies:
        text = "module {\n" + body + "}\n"
        (unit,) = split_units(text, 0, len(text))
        assert unit.region is not None
        lbrace, rbrace = unit.region
        assert unit.children == split_units(text, lbrace + 1, rbrace), body


def test_units_module_attributes_on_several_lines_before_body():
    """`module attributes {...} {` : the region is the second `{`, not the attribute dict."""
    text = ('module attributes {\n  gpu.container_module,\n  a = "}",\n  b = {c = 1}\n} {\n'
            "  func.func @f()\n}\n")
    (u,) = units(text)
    assert u.region == (text.index("} {") + 2, len(text.rstrip("\n")) - 1)
    assert [text[c.start:c.end] for c in u.children] == ["func.func @f()"]


@pytest.mark.parametrize("first_line, next_line", [
    ("%0 = test.op %a,", "test.attr"),
    ("%0 = test.op(", "test.attr)"),
    ("%0 =", "arith.constant 0 : i32"),
    ("%0 = test.op %a ->", "test.t"),
    ("%0 = test.op %a :", "test.t"),
    ("%0 = test.op <", "test.a>"),
])
def test_units_line_ending_inside_an_op_continues_it(first_line, next_line):
    """MLIR is free-form: an op whose line ends in `,` `(` `=` `->` `:` `<` goes on, even
    when the next line starts with a dotted name that looks like an op."""
    text = f"{first_line}\n    {next_line}\n%1 = test.next\n"
    assert unit_texts(text) == [f"{first_line}\n    {next_line}", "%1 = test.next"]


def test_units_trailing_punctuation_in_a_comment_does_not_continue():
    """`// see (` is a comment: the op before it is finished."""
    text = "%a = test.op %x // see (\ntest.other\n"
    assert unit_texts(text) == ["%a = test.op %x // see (", "test.other"]


def test_units_braces_in_strings_comments_and_metadata_are_not_counted():
    """MLIR's lexer reads `"}"`, `// }` and `{-# ... #-}` whole; their braces nest nothing."""
    text = ('func.func @f() {\n  %s = test.str "}" // }\n  {-# } #-}\n}\n'
            "func.func @g()\n")
    assert unit_texts(text) == [
        'func.func @f() {\n  %s = test.str "}" // }\n  {-# } #-}\n}', "func.func @g()"]


def test_units_aliases_and_file_metadata_are_top_level_units():
    """Alias definitions `#map = ...`, `!t = ...` and the `{-# ... #-}` resource block."""
    text = ("#map = affine_map<(d0) -> (d0)>\n!t = !llvm.ptr\nfunc.func @f()\n"
            "{-#\n  dialect_resources: { builtin: {} }\n#-}\n")
    assert unit_texts(text) == [
        "#map = affine_map<(d0) -> (d0)>", "!t = !llvm.ptr", "func.func @f()",
        "{-#\n  dialect_resources: { builtin: {} }\n#-}"]


def test_units_blank_lines_and_trailing_comments_belong_to_no_unit():
    """A unit ends at the end of its last token; what follows it is only trivia."""
    text = ("\n  // leading\nfunc.func @a()   \n\n  // trailing\n\n"
            "module {\n  func.func @b()\n\n  // end of body\n}\n// end of file\n")
    us = units(text)
    assert [text[u.start:u.end] for u in us] == [
        "func.func @a()", "module {\n  func.func @b()\n\n  // end of body\n}"]
    assert [text[c.start:c.end] for c in us[1].children] == ["func.func @b()"]
    assert units("\n\n  // only a comment\n") == []


def test_units_of_a_chunk_have_offsets_into_the_whole_text():
    text = "func.func @a()\n// -----\nfunc.func @b()\nfunc.func @c()\n"
    (_, (s, e)) = split_chunks(text)
    us = split_units(text, s, e)
    assert [text[u.start:u.end] for u in us] == ["func.func @b()", "func.func @c()"]


# --- tokenize ----------------------------------------------------------------------------------


def test_tokenize_values_with_result_index():
    """`%x`, `%0`, `%arg0`, and `%x#1` (result 1 of a multi-result op) are one value each."""
    assert kinds_texts("%x %0 %arg0 %x#1") == [
        ("value", "%x"), ("value", "%0"), ("value", "%arg0"), ("value", "%x#1")]


@pytest.mark.parametrize("blob", [
    "memref<?x4xf32, strided<[4, 1]>>",
    "affine_map<(d0) -> (d0)>",
    "affine_set<(d0) : (d0 - 1 >= 0, d0 <= 5)>",
    'tensor<4xf32, "a>b">',
])
def test_tokenize_bare_name_with_angle_body_is_one_token(blob):
    """Nested `<>`, `->`, `>=`/`<=` comparisons and strings inside a body do not end it."""
    text = f"%v : {blob} -> i32"
    toks = tokenize(text)
    assert [(t.kind, t.text) for t in toks] == [
        ("value", "%v"), (":", ":"), ("blob", blob), ("arrow", "->"), ("bare", "i32")]
    assert text[toks[2].start:toks[2].end] == blob


def test_tokenize_nested_symbol_reference_and_string_symbol():
    """`@a::@b` is one nested symbol reference; `@"name"` a symbol spelled as a string."""
    assert kinds_texts('@a::@b @"foo bar" @k') == [
        ("symbol", "@a::@b"), ("symbol", '@"foo bar"'), ("symbol", "@k")]


def test_tokenize_string_with_escapes_is_one_token():
    text = r'{s = "a\"b\\", t = "}"}'
    assert kinds_texts(text) == [
        ("{", "{"), ("bare", "s"), ("=", "="), ("string", r'"a\"b\\"'), (",", ","),
        ("bare", "t"), ("=", "="), ("string", '"}"'), ("}", "}")]


def test_tokenize_block_label_alias_and_dialect_types():
    """`^bb0`, `#alias`, `#dialect.attr<...>`, `!dialect.type<...>`, `!"quoted"`."""
    text = '^bb0(%a: !llvm.ptr<1>): #map #gpu.address_space<workgroup> !gpu.async.token !"q"'
    assert kinds_texts(text) == [
        ("caret", "^bb0"), ("(", "("), ("value", "%a"), (":", ":"), ("bang", "!llvm.ptr<1>"),
        (")", ")"), (":", ":"), ("hash", "#map"), ("hash", "#gpu.address_space<workgroup>"),
        ("bang", "!gpu.async.token"), ("bang", '!"q"')]


def test_tokenize_punctuation_kind_is_the_character_and_arrow_is_one_token():
    text = "( ) { } [ ] < > = , : * + ? | ->"
    toks = tokenize(text)
    assert [t.kind for t in toks] == text.split()[:-1] + ["arrow"]
    assert all(t.kind == t.text for t in toks[:-1])


def test_tokenize_numbers_negative_float_and_hex():
    assert kinds_texts("0 42 -1 2.5 2.5e3 -1.5e-3 0x1F") == [
        ("number", n) for n in ["0", "42", "-1", "2.5", "2.5e3", "-1.5e-3", "0x1F"]]
    # A `-` standing alone (between operands) is its own token.
    assert kinds_texts("%x - %y") == [("value", "%x"), ("-", "-"), ("value", "%y")]


@pytest.mark.xfail(strict=True, reason="`-0x1F` is lexed as number `-0` and bare `x1F`; MLIR "
                   "reads a minus and the hex integer 0x1F (`arith.constant -0x1F : i32`)")
def test_tokenize_negative_hex_integer_keeps_its_digits():
    assert [t.text for t in tokenize("-0x1F")] in (["-0x1F"], ["-", "0x1F"])


def test_tokenize_drops_comments_and_flags_line_starts():
    """Comments are trivia; `line_start` is True for the first token of each line."""
    text = "  // head comment\n  %a = x.y %b // tail\n  // own line\n  return\n"
    toks = tokenize(text)
    assert [(t.text, t.line_start) for t in toks] == [
        ("%a", True), ("=", False), ("x.y", False), ("%b", False), ("return", True)]
    assert all(text[t.start:t.end] == t.text for t in toks)
    assert all(isinstance(t, RawToken) for t in toks)


def test_tokenize_sub_range_has_absolute_offsets_and_starts_a_line():
    text = "%a = x.y %b, %c\n"
    start = text.index("%b")
    toks = tokenize(text, start, text.index(","))
    assert [(t.text, t.start, t.line_start) for t in toks] == [("%b", start, True)]


def test_tokenize_unterminated_string_is_badstring_to_end_of_line():
    """MLIR reports `expected '"' in string literal`; the next line lexes normally."""
    text = 'test.op "abc\n  %x'
    assert [(t.kind, t.text, t.line_start) for t in tokenize(text)] == [
        ("bare", "test.op", True), ("badstring", '"abc', False), ("value", "%x", True)]


def test_tokenize_unknown_character_is_err():
    assert kinds_texts("a $ ~ b") == [("bare", "a"), ("err", "$"), ("err", "~"), ("bare", "b")]


# --- tokenize_lines -------------------------------------------------------------------------


def test_lines_simple_op_is_one_line_token():
    text = "  %c = arith.constant 0 : index\n"
    (t,) = lines(text)
    assert isinstance(t, LineToken) and t.kind == "line" and t.line_start
    assert t.text == "arith.constant" == text[t.name_start:t.name_end]
    assert text[t.results_start:t.results_end] == "%c"
    assert text[t.start:t.end] == "%c = arith.constant 0 : index"
    assert (t.cont, t.depth) == (False, 0)


def test_lines_result_group_and_op_without_results():
    """`%r:2 = ...` names two results; a line without results has results_start -1."""
    text = "%r:2 = test.two(%a, %b) : (i32) -> (i32, i32)\ntest.use %r#1 : i32\n"
    a, b = lines(text)
    assert text[a.results_start:a.results_end] == "%r:2"
    assert (b.results_start, b.results_end) == (-1, -1)
    assert b.start == b.name_start and text[b.start:b.end] == "test.use %r#1 : i32"


def test_lines_line_ending_with_brace_gives_line_token_then_brace():
    text = "func.func @f(%a: i32) {  // body\n  return\n}\n"
    toks = lines(text)
    assert [(type(t).__name__, t.kind) for t in toks] == [
        ("LineToken", "line"), ("RawToken", "{"), ("LineToken", "line"), ("RawToken", "}")]
    assert text[toks[0].start:toks[0].end] == "func.func @f(%a: i32)"
    assert text[toks[1].start] == "{" and not toks[1].line_start
    assert toks[2].text == "return" and toks[3].line_start


def test_lines_open_operand_list_continues_with_depth():
    """A line ending in `,` inside `(` leaves the op open: cont, and one `(` unclosed."""
    (t,) = lines("%a = test.op(%x,\n")
    assert (t.cont, t.depth) == (True, 1)
    (u,) = lines("%a = test.op %x : i32 // note,\n")  # the comma is in the comment
    assert (u.cont, u.depth) == (False, 0)
    assert u.end == len("%a = test.op %x : i32")


def test_brace_after_attributes_keyword_at_end_of_line_is_a_dictionary():
    """`func.func @f() attributes` then `{` on the next line: the keyword makes it a
    dictionary, whatever follows the brace; a value `%attributes` is no keyword."""
    from gpu_async_lsp.syntax.braces import opens_region

    def resolve(name):
        return None

    text = "func.func @f() attributes\n    {\n      return\n    }\n"
    assert not opens_region(text, text.index("{"), False, False, resolve)
    text = "test.op %attributes {\n  %x = arith.constant 0 : i32\n}\n"
    assert opens_region(text, text.index("{"), False, False, resolve)


def test_lines_gpu_wait_with_async_and_dependencies_is_one_gpu_line():
    text = "%t = gpu.wait async [%a, %b]\n"
    (t,) = lines(text)
    assert isinstance(t, GpuLineToken) and t.kind == "gpuline"
    assert text[t.name_start:t.name_end] == "gpu.wait"
    assert text[t.results_start:t.results_end] == "%t"
    assert text[t.async_start:t.async_start + 5] == "async"
    assert text[t.deps_open:t.deps_close] == "[%a, %b]"
    assert t.operands_start == t.deps_close == t.end
    assert (t.cont, t.depth) == (False, 0)


def test_lines_gpu_wait_without_async_clause():
    """`gpu.wait` alone (a blocking wait): no async keyword, no dependency list."""
    text = "  gpu.wait  // block\n"
    (t,) = lines(text)
    assert t.kind == "gpuline" and text[t.start:t.end] == "gpu.wait"
    assert (t.results_start, t.async_start, t.deps_open, t.deps_close) == (-1, -1, -1, -1)
    assert t.operands_start == t.name_end


def test_lines_gpu_alloc_with_two_results_is_one_gpu_line():
    text = "%m, %t1 = gpu.alloc async [%t] (%n) : memref<?xf32>\nreturn\n"
    g, r = lines(text)
    assert g.kind == "gpuline" and g.text == "gpu.alloc"
    assert text[g.results_start:g.results_end] == "%m, %t1"
    assert text[g.name_start:g.name_end] == "gpu.alloc"
    assert text[g.deps_open:g.deps_close] == "[%t]"
    assert text[g.operands_start:g.end] == " (%n) : memref<?xf32>"
    assert r.kind == "line" and r.text == "return"


def test_lines_dealloc_memcpy_memset_match_their_formats():
    ops = ["gpu.dealloc async [%t0] %d : memref<4xf32>",
           "gpu.memcpy async [%t0] %d, %s : memref<4xf32>, memref<4xf32>",
           "gpu.memset async [%t0] %d, %v : memref<4xf32>, f32"]
    text = "".join(f"%t{i} = {op}\n" for i, op in enumerate(ops))
    toks = lines(text)
    assert [t.kind for t in toks] == ["gpuline"] * 3
    assert [text[t.start:t.end] for t in toks] == [f"%t{i} = {op}" for i, op in enumerate(ops)]
    assert [text[t.deps_open:t.deps_close] for t in toks] == ["[%t0]"] * 3


def test_lines_multiline_launch_func_is_one_gpu_line():
    """gpu.launch_func's format spreads over lines; the whole op is one token."""
    op = ("gpu.launch_func @kernels::@k\n"
          "      blocks in (%n, %n, %n)\n"
          "      threads in (%n, %n, %n)\n"
          "      args(%a : memref<?xf32>)")
    text = f"  {op}\n  return\n"
    g, r = lines(text)
    assert g.kind == "gpuline" and text[g.start:g.end] == op
    assert text[g.name_start:g.name_end] == "gpu.launch_func"
    assert g.async_start == g.deps_open == -1
    assert r.kind == "line" and r.text == "return"


def test_lines_gpu_op_off_its_format_becomes_raw_tokens():
    """An attribute dictionary before the `:` is not in the fast format: token by token."""
    text = "%m = gpu.alloc (%n) {x = 1} : memref<?xf32>\n"
    toks = lines(text)
    assert all(isinstance(t, RawToken) for t in toks)
    assert [t.text for t in toks] == [
        "%m", "=", "gpu.alloc", "(", "%n", ")", "{", "x", "=", "1", "}", ":", "memref<?xf32>"]


def test_lines_two_ops_on_one_line_become_raw_tokens():
    """MLIR allows a second op on the same line; the line is cut into raw tokens."""
    text = "gpu.dealloc %a : memref<4xf32> return\n%b = test.op %x : i32 return\n"
    toks = lines(text)
    assert all(isinstance(t, RawToken) for t in toks)
    assert [t.text for t in toks if t.line_start] == ["gpu.dealloc", "%b"]
    assert [t.text for t in toks].count("return") == 2


def test_lines_block_label_and_generic_op_are_raw_tokens():
    text = '^bb0(%a: i32):\n  "test.op"(%a) : (i32) -> ()\n'
    toks = lines(text)
    assert all(isinstance(t, RawToken) for t in toks)
    assert [(t.kind, t.line_start) for t in toks][:1] == [("caret", True)]
    assert ("string", True) in [(t.kind, t.line_start) for t in toks]


def test_lines_blank_and_comment_lines_before_an_op_are_skipped():
    text = "\n  // a comment\n\n  %a = test.op %x,\r\n  %b = test.op\r\n"
    a, b = lines(text)
    assert text[a.start:a.end] == "%a = test.op %x," and a.cont
    assert text[b.start:b.end] == "%b = test.op"


def test_split_chunks_equals_the_marker_line_pattern_on_random_texts():
    """The literal search for markers cuts where the whole-line pattern cuts."""
    import random

    from gpu_async_lsp.syntax.lexer import SPLIT_MARKER, split_chunks

    def reference(text):
        chunks, pos = [], 0
        for m in SPLIT_MARKER.finditer(text):
            chunks.append((pos, m.start()))
            pos = m.end()
        return chunks + [(pos, len(text))]

    rng = random.Random(2)
    pieces = ["// -----", "\n", "\r\n", " ", "\t", "x", "// ----- a", "// ------", "a // -----"]
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        assert split_chunks(text) == reference(text), repr(text)


# The line pattern as it was written before its quantifiers were made possessive: possessive
# quantifiers must match what these greedy ones match, on any line (patterns.py's rule).
_GREEDY_RESULT = r"%[\w$.\-]+(?:[ \t]*:[ \t]*\d+)?"
_GREEDY_LINE = re.compile(
    r"(?:[ \t]*+(?://[^\n]*+)?\r?\n)*+[ \t]*"
    rf"(?:(?P<res>{_GREEDY_RESULT}(?:[ \t]*,[ \t]*{_GREEDY_RESULT})*)[ \t]*=(?![=>])[ \t]*)?"
    r"(?P<name>[A-Za-z_][\w$.]*+)(?P<rest>[^{}\"\n/]*+)"
    r"(?P<brace>\{)?[ \t]*(?://[^\n]*)?(?:\r?\n|\Z)")


@pytest.mark.parametrize("line", [
    "%a = arith.constant 0 : index\n", "%a:2 = test.op\n", "%a : 2 = test.op\n",
    "%a, %b:3, %c = test.op %x\n", "%a,%b=test.op\n", "%a, = test.op\n", "%a == b\n",
    "%a => b\n", "%a-b.c$d = x.y {\n", "%a:2x = t.op\n", "%a:\n", "%a, %b\n",
    "  // c\n\n  %r = t.op // comment\n", "%a = \tt.op  \t\r\n", "return %x : i32", "%a =\n",
    "%0 = \"t.op\"() : () -> ()\n", "x.y %a, %b : (i32) -> i32 {\n", "%a = t.op /\n",
])
def test_line_pattern_matches_what_its_greedy_form_matches(line):
    from gpu_async_lsp.syntax.lexer import LINE_RE

    got, want = LINE_RE.match(line), _GREEDY_LINE.match(line)
    assert (got and got.regs) == (want and want.regs)
    # tokenize_lines reads the spans of these groups, in this order, from Match.regs.
    assert list(LINE_RE.groupindex) == ["res", "name", "rest", "brace"]


def test_top_level_brace_pairs_summed_in_c_equal_the_walk():
    """_top_pairs finds the braces at depth 0 from depths summed by itertools.accumulate; on
    any sequence (unclosed `{`, a `}` that closes nothing) it equals the brace-by-brace walk."""
    import random

    from gpu_async_lsp.syntax.lexer import _top_pairs, _top_pairs_walked

    rng = random.Random(7)
    for _ in range(2000):
        deltas = [rng.choice((1, 1, -1, -1, -1)) for _ in range(rng.randint(0, 30))]
        lo = rng.randint(0, len(deltas))
        hi = rng.randint(lo, len(deltas))
        assert _top_pairs(deltas, lo, hi) == _top_pairs_walked(deltas, lo, hi), (deltas, lo, hi)
    assert _top_pairs([1, -1, 1, 1, -1], 0, 5) == ([(0, 1)], 2)
    assert _top_pairs([-1, 1, -1], 0, 3) == ([(1, 2)], -1)


def test_token_field_indexes_are_the_named_tuples_fields():
    """syntax/fields.py's indexes (the parser reads whole-line tokens by them) are those of the
    tokens' fields, and fields.pxd's C constants (the build's) are fields.py's."""
    from pathlib import Path

    from gpu_async_lsp.syntax import fields
    from gpu_async_lsp.syntax.lexer import GpuLineToken, LineToken, RawToken

    common = ["kind", "start", "end", "text", "line_start"]
    named = {RawToken: common,
             LineToken: common + ["name_start", "name_end", "results_start", "results_end",
                                  "line_cont", "line_depth"],
             GpuLineToken: common + ["name_start", "name_end", "results_start", "results_end",
                                     "async_start", "deps_open", "deps_close", "operands_start"]}
    for token, names in named.items():
        for name in names:
            field = name.removeprefix("line_") if name in ("line_cont", "line_depth") else name
            assert token._fields.index(field) == getattr(fields, name.upper()), (token, name)
    pxd = (Path(fields.__file__).with_suffix(".pxd")).read_text()
    constants = dict(re.findall(r"^    ([A-Z_]+) = (\d+)$", pxd, re.M))
    assert len(constants) == 21
    for name, value in constants.items():
        assert getattr(fields, name) == int(value), name
    assert fields.at(LineToken("line", 1, 2, "x", True, 3, 4, -1, -1, False, 0), 6) == 4


def test_finding_field_indexes_are_the_named_tuples_fields():
    """The publication (server/convert.py) reads a finding's fields by fields.py's indexes."""
    from gpu_async_lsp.async_region.findings import Finding
    from gpu_async_lsp.syntax import fields

    for name in ("code", "message", "start", "end", "severity", "related"):
        assert Finding._fields.index(name) == getattr(fields, f"FINDING_{name.upper()}"), name
