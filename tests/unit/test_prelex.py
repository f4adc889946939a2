"""The pre-lexer (gpu_async_lsp/syntax/prelex.py): op boundaries, the brace decision, what may
follow a region, the exactly modeled GPU ops, and its errors.

Only public entry points are used, so that these tests survive a restructuring of prelex's
internals: `prelex(text, raw, dialect)` on the items of `lexer.tokenize_lines`, its
`PrelexError`, `braces.opens_region`, and `parse_document` for the op trees. Each test names
what MLIR's own parser (mlir-opt-22) does with the text.
"""

from __future__ import annotations

import pytest

from gpu_async_lsp.op_tables import KNOWN_OPS
from gpu_async_lsp.syntax import parse_document
from gpu_async_lsp.syntax.braces import OP_WORDS, opens_region
from gpu_async_lsp.syntax.lexer import tokenize_lines
from gpu_async_lsp.syntax.prelex import PrelexError, prelex

# --- helpers ----------------------------------------------------------------------------------


def prelex_tokens(text: str, dialect: str = "func") -> list:
    """The pre-lexer's tokens of `text` as one unit whose frame has default dialect `dialect`
    ("func": as if inside a func.func body; "builtin": a top-level unit)."""
    raw = tokenize_lines(text, 0, len(text), OP_WORDS)
    return prelex(text, raw, dialect)  # `raw` is used up


def types(text: str, dialect: str = "func") -> list[str]:
    return [t.type for t in prelex_tokens(text, dialect)]


def span(text: str, tok) -> str:
    return text[tok.start_pos:tok.end_pos]


def prelex_error(text: str, dialect: str = "func") -> PrelexError:
    with pytest.raises(PrelexError) as info:
        prelex_tokens(text, dialect)
    return info.value


def names(text: str) -> list[str]:
    """Every op of the document, in program order (fully qualified names)."""
    return [op.name for op in parse_document(text).walk()]


def only_op(text: str, name: str):
    """The single op called `name` in a document that parses without errors."""
    doc = parse_document(text)
    assert doc.errors == []
    found = [op for op in doc.walk() if op.name == name]
    assert len(found) == 1
    return found[0]


def resolver(dialect: str | None):
    """`resolve` of opens_region: a bare name through the owner's default dialect."""

    def resolve(name: str) -> str | None:
        if name in KNOWN_OPS:
            return name
        if dialect and f"{dialect}.{name}" in KNOWN_OPS:
            return f"{dialect}.{name}"
        return None

    return resolve


def brace_opens_region(text: str, nth: int = 0, *, generic: bool = False,
                       in_parens: bool = False, dialect: str | None = None) -> bool:
    """opens_region for the `nth` `{` of `text`."""
    brace = -1
    for _ in range(nth + 1):
        brace = text.index("{", brace + 1)
    return opens_region(text, brace, generic, in_parens, resolver(dialect))


# --- op boundaries ------------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    '%a, %b:2 = "test.op"() : () -> (i32, i32, i32)\nreturn\n',  # raw tokens (a string)
    "%a, %b:2 = test.op %x,\n  %y\nreturn\n",  # a line item that continues
])
def test_result_list_with_a_group_is_one_results_token(text):
    """MLIR's parseOperation reads `%a, %b:2 =` as one result list before the op name."""
    toks = prelex_tokens(text)
    assert toks[0].type == "RESULTS"
    assert span(text, toks[0]) == "%a, %b:2"
    assert toks[1].type in ("OP_NAME", "GENERIC_NAME")


def test_consecutive_whole_line_ops_are_packed_into_one_ops_token():
    """Each line is a whole op (MLIR ends each op where the next one starts)."""
    text = ("%a = arith.constant 0 : i32\n"
            "%b = arith.addi %a, %a : i32\n"
            "return\n")
    toks = prelex_tokens(text)
    assert [t.type for t in toks] == ["OPS"]
    assert span(text, toks[0]) == text.rstrip("\n")


def test_packed_ops_resolve_their_bare_names():
    """Inside func.func (default dialect `func`) MLIR reads a bare `return` as func.return."""
    text = "func.func @f() {\n  %a = arith.constant 0 : i32\n  return\n}\n"
    assert names(text) == ["func.func", "arith.constant", "func.return"]


@pytest.mark.parametrize("text, expected", [
    # `,`: MLIR's lexer skips line breaks; the operand list goes on.
    ("func.func @f(%a: i32) {\n  %s = arith.addi %a,\n      %a : i32\n  return\n}\n",
     ["func.func", "arith.addi", "func.return"]),
    # `,` in a result list, before a generic op.
    ('func.func @f() {\n  %a,\n  %b = "test.two"() : () -> (i32, i32)\n  return\n}\n',
     ["func.func", "test.two", "func.return"]),
    # `(`: an operand list opened at the end of the line.
    (("func.func private @g(i32) -> i32\n"
     "func.func @f(%a: i32) {\n  %r = func.call @g(\n      %a) : (i32) -> i32\n  return\n}\n"),
     ["func.func", "func.func", "func.call", "func.return"]),
    # `=`: scf.for's `%iv = %lb to %ub step %s`, broken after the `=`.
    (("func.func @f(%n: index) {\n  scf.for %i =\n      %n to %n step %n {\n    scf.yield\n  }\n"
     "  return\n}\n"),
     ["func.func", "scf.for", "scf.yield", "func.return"]),
    # `->`: a function type broken after the arrow.
    ("func.func private @g(%a: i32) ->\n    i32\nfunc.func private @h()\n",
     ["func.func", "func.func"]),
])
def test_op_continues_on_the_next_line_after_a_trailing_continuation(text, expected):
    """A line ending in `,` `(` `=` `->` leaves the op unfinished; MLIR reads on."""
    doc = parse_document(text)
    assert doc.errors == []
    assert [op.name for op in doc.walk()] == expected


def test_line_ending_in_comma_continues_the_op_in_the_pre_lexer():
    """The continued line is part of the same op's body, not the start of another op."""
    text = "%s = arith.addi %a,\n    %a : i32\nreturn\n"
    toks = prelex_tokens(text)
    assert [t.type for t in toks] == ["RESULTS", "OP_NAME", "BODY", "OPS"]
    assert span(text, toks[2]) == "%a,\n    %a : i32"


def test_result_list_broken_after_a_comma_before_a_custom_op():
    """mlir-opt-22 accepts `%lo,` and `%hi = arith.mului_extended ...` on the next line."""
    text = ("func.func @f(%x: i32) {\n  %lo,\n  %hi = arith.mului_extended %x, %x : i32\n"
            "  return\n}\n")
    op = only_op(text, "arith.mului_extended")
    assert [r.name for r in op.results] == ["%lo", "%hi"]


def test_op_name_on_the_line_after_the_results_equal_sign():
    """mlir-opt-22 accepts `%a =\\n    arith.constant 0 : i32`."""
    text = "func.func @f() {\n  %a =\n    arith.constant 0 : i32\n  return\n}\n"
    op = only_op(text, "arith.constant")
    assert [r.name for r in op.results] == ["%a"]


def test_bare_return_in_func_func_resolves_to_func_return():
    """OpAsmOpInterface::getDefaultDialect of func.func is `func`: `return` is func.return."""
    text = "func.func @f() { return }"
    toks = prelex_tokens(text, "builtin")
    assert [t.type for t in toks] == ["OP_NAME", "BODY", "LBRACE_REGION", "OP_NAME", "RBRACE"]
    ret = toks[3]
    assert ret.value == "func.return"
    assert span(text, ret) == "return"


def test_bare_return_inside_scf_execute_region_is_unknown():
    """scf.execute_region has no default dialect: MLIR says custom op 'return' is unknown."""
    text = "func.func @f() {\n  scf.execute_region {\n    return\n  }\n  return\n}\n"
    e = prelex_error(text, "builtin")
    assert e.message == "custom op 'return' is unknown"
    assert text[e.start:e.end] == "return"
    assert text.index("return") == e.start  # the inner one, not the func's own


def test_generic_op_gives_generic_name():
    """`"d.op"(...)` is MLIR's generic form; the name is the string's contents."""
    text = 'func.func @f() {\n  "d.op"() : () -> ()\n  return\n}\n'
    toks = prelex_tokens(text, "builtin")
    generic = [t for t in toks if t.type == "GENERIC_NAME"]
    assert len(generic) == 1
    assert generic[0].value == "d.op"
    assert span(text, generic[0]) == '"d.op"'


@pytest.mark.parametrize("branch, label, between", [
    ("cf.br ^bb1", "^bb1:", []),
    ("cf.br ^bb1(%c : i32)", "^bb1(%x: i32):", ["BODY"]),  # the argument list
])
def test_block_label_gives_block_label_then_colon(branch, label, between):
    """A block label `^bb1(args):` starts a new block of the region."""
    text = f"func.func @f(%c: i32) {{\n  {branch}\n{label}\n  return\n}}\n"
    toks = prelex_tokens(text, "builtin")
    ts = [t.type for t in toks]
    k = ts.index("BLOCK_LABEL")
    assert span(text, toks[k]) == "^bb1"
    assert ts[k:] == ["BLOCK_LABEL", *between, "COLON", "OPS", "RBRACE"]


@pytest.mark.parametrize("branch", [
    "cf.br\n    ^bb1(%c : i32)",
    "cf.br\n    ^bb1(%c :\n    i32)",
    "cf.br\n    ^bb1\n    (%c : i32)",
    "cf.cond_br %p,\n    ^bb1(%c : i32),\n    ^bb1(%c\n   : i32)",
    "cf.cond_br %p, ^bb1(%c : i32)\n  , ^bb1(%c :\n   i32)",
])
@pytest.mark.parametrize("label", ["^bb1(%x: i32):", "^bb1(%x:\n i32):", "^bb1(%x\n : i32)\n  :",
                                   "^bb1(\n%x: i32):"])
def test_a_successor_on_a_line_of_its_own_goes_on_with_its_branch(branch, label):
    """A caret that starts a line is a block label only if a `:` follows it (after its
    argument list, which may run over lines); else it is a successor of the branch before
    (MLIR reads on over line breaks)."""
    text = f"func.func @f(%c: i32, %p: i1) {{\n  {branch}\n{label}\n  return\n}}\n"
    doc = parse_document(text)
    assert not doc.errors
    branch_op = next(op for op in doc.walk() if op.name.startswith("cf."))
    assert text[branch_op.start:branch_op.end] == branch
    func = next(op for op in doc.walk() if op.name == "func.func")
    assert len(func.regions[0].blocks) == 2


@pytest.mark.parametrize("text", ["#map = affine_map<(d0) -> (d0)>\n", "!t = !gpu.async.token\n"])
def test_alias_definition_at_top_level(text):
    """MLIR's top level allows `#name = attr` and `!name = type` alias definitions."""
    toks = prelex_tokens(text, "builtin")
    assert [t.type for t in toks] == ["ALIAS_DEF", "EQUAL", "BODY"]
    assert span(text, toks[0]) == text.split(" ")[0]


# --- the brace decision ---------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "test.op {a = 1}",  # `name =`
    "test.op {a, b}",  # `name ,`
    'test.op {"key" = 1}',  # a string key
    "test.op {\n  a = 1\n}",  # ending a line
    "test.op\n{\n  a = 1\n}",  # alone on a line
    "test.op { unit_attr }",  # a unit attribute
    "test.op {llvm.noalias}",  # a dotted unit attribute that is no op
    "test.op {}",  # `{}` on one line
])
def test_brace_before_an_attribute_entry_is_a_dictionary(text):
    """parseOptionalAttrDict: `{` (name (`=` value)? (`,` ...)*)? `}`."""
    assert brace_opens_region(text, dialect="func") is False


@pytest.mark.parametrize("text, dialect", [
    ("test.op { %x = arith.constant 0 : i32 }", None),  # a result list
    ("test.op {\n^bb0:\n}", None),  # a block label
    ('test.op { "t.op"() : () -> () }', None),  # a generic op
    ("test.op { arith.addi %a, %b : i32 }", None),  # a dotted op name and its operands
    ("test.op { gpu.return }", None),  # `{ name }` where name is an op
    ("test.op { return }", None),  # the bare name of an op (MLIR then says it is unknown)
    ("func.func @f(%x: i32) -> i32 { return %x : i32 }", "func"),  # resolved by the dialect
    ("test.op {\n}", None),  # `{` and `}` on separate lines: an empty body
])
def test_brace_before_the_start_of_an_op_opens_a_region(text, dialect):
    """parseRegion: `{` block* `}`, its first op a result list, label, generic or custom op."""
    assert brace_opens_region(text, dialect=dialect) is True


@pytest.mark.parametrize("text, nth", [
    ("%0 = test.op <{ %x }>", 0),  # properties `<{...}>`
    ("func.func @f() attributes { %x = a.b }", 0),  # after `attributes`
    ("%0 = test.op {dict = { gpu.return }}", 1),  # a dictionary value after `=`
    ("%0 = test.op [{ gpu.return }]", 0),  # an element of an array attribute
])
def test_brace_in_an_attribute_position_is_a_dictionary(text, nth):
    """Where MLIR's grammar only allows an attribute, a `{` is a dictionary whatever follows."""
    assert brace_opens_region(text, nth, dialect="func") is False


def test_generic_form_has_regions_only_inside_its_parentheses():
    """Generic form: `"op"(operands) ({regions}) {attr-dict} : type`."""
    text = '"test.op"() ({ %x = "a.b"() : () -> i32 }) { %x = a.b } : () -> ()'
    assert brace_opens_region(text, 0, generic=True, in_parens=True) is True
    assert brace_opens_region(text, 1, generic=True, in_parens=False) is False


def test_generic_op_with_region_and_dictionary_in_the_op_tree():
    """The region in `({...})` holds the op; the `{attr}` after `)` is the attr-dict."""
    text = ('func.func @f() {\n  "scf.execute_region"() ({\n    "scf.yield"() : () -> ()\n'
            "  }) {attr} : () -> ()\n  return\n}\n")
    op = only_op(text, "scf.execute_region")
    assert op.generic
    assert len(op.regions) == 1
    assert [o.name for o in op.regions[0].blocks[0].ops] == ["scf.yield"]


def test_dictionary_ending_a_line_before_the_region_of_linalg_generic():
    """linalg.generic's format: attr-dict `{indexing_maps = ..., ...}` first, then its body."""
    text = ("#map = affine_map<(d0) -> (d0)>\n"
            "func.func @f(%a: memref<4xf32>, %b: memref<4xf32>) {\n"
            "  linalg.generic {\n"
            "    indexing_maps = [#map, #map],\n"
            '    iterator_types = ["parallel"]\n'
            "  } ins(%a : memref<4xf32>) outs(%b : memref<4xf32>) {\n"
            "  ^bb0(%x: f32, %y: f32):\n"
            "    linalg.yield %x : f32\n"
            "  }\n"
            "  return\n}\n")
    op = only_op(text, "linalg.generic")
    assert len(op.regions) == 1
    (block,) = op.regions[0].blocks
    assert block.label.name == "^bb0"
    assert [o.name for o in block.ops] == ["linalg.yield"]


def test_unit_attribute_dictionaries_in_the_op_tree():
    """`{llvm.noalias}` (argument attributes) and `{unit_attr}` are attr-dicts, not regions."""
    text = ("func.func @f(%a: memref<f32> {llvm.noalias}) {\n"
            "  %c = arith.constant {unit_attr} 0 : i32\n"
            "  return\n}\n")
    assert len(only_op(text, "func.func").regions) == 1
    assert not only_op(text, "arith.constant").regions


def test_region_of_one_op_on_the_brace_line():
    """`{ gpu.return }`: a region holding one op (gpu.func's body)."""
    text = "gpu.func @g() kernel { gpu.return }"
    toks = prelex_tokens(text, "builtin")
    assert [t.type for t in toks] == ["OP_NAME", "BODY", "LBRACE_REGION", "OP_NAME", "RBRACE"]
    assert toks[3].value == "gpu.return"


def test_braces_on_separate_lines_are_an_empty_region():
    """`{` then `}` on the next line: an empty body, as regions are written."""
    text = "func.func @f() {\n  scf.execute_region {\n  }\n  return\n}\n"
    op = only_op(text, "scf.execute_region")
    assert len(op.regions) == 1
    assert op.regions[0].blocks == []


def test_unknown_bare_op_with_operands_in_a_region_is_an_error():
    """mlir-opt-22: scf.execute_region's body `{ return %x : i32 }` is a region, and
    `return` there has no dialect (error at `return`)."""
    text = ("func.func @f(%x: i32) -> i32 {\n"
            "  %r = scf.execute_region -> i32 { return %x : i32 }\n"
            "  return %r : i32\n}\n")
    errors = parse_document(text).errors
    assert len(errors) == 1
    assert text[errors[0].start:errors[0].end] == "return"


def test_brace_decided_by_the_next_value_or_label_is_decided_as_by_the_first_token():
    """opens_region takes a `{` whose next token (after blanks and line breaks) is a value
    or a block label for a region without its expression: that expression says the same, for
    every brace of the corpora and of random text."""
    import random

    from gpu_async_lsp.syntax.braces import by_first_token
    from tests.corpora import corpus_texts

    texts = corpus_texts()
    rng = random.Random(29)
    pieces = ["{", " ", "\n", "\r\n", "\t", "%", "^", "//", "x", "}", "=", "(", '"']
    texts += ["".join(rng.choice(pieces) for _ in range(12)) for _ in range(5000)]
    resolve = resolver(None)
    decided = 0
    for text in texts:
        brace = text.find("{")
        while brace >= 0:
            k = brace + 1
            while k < len(text) and text[k] in " \t\r\n":
                k += 1
            if k < len(text) and text[k] in "%^":
                decided += 1
                assert by_first_token(text, brace, "", resolve) is True, text[brace:brace + 80]
            brace = text.find("{", brace + 1)
    assert decided > 1000


# --- after a region's `}` -------------------------------------------------------------------


@pytest.mark.parametrize("sep", [" ", "\n  "])
def test_else_after_the_then_region_continues_scf_if(sep):
    """scf.if's format: `{then}` (`else` `{else}`)?, on the brace's line or the next."""
    text = (f"func.func @f(%c: i1) {{\n  scf.if %c {{\n    scf.yield\n  }}{sep}else {{\n"
            "    scf.yield\n  }\n  return\n}\n")
    op = only_op(text, "scf.if")
    assert len(op.regions) == 2
    assert names(text) == ["func.func", "scf.if", "scf.yield", "scf.yield", "func.return"]


def test_do_on_the_next_line_continues_scf_while():
    """scf.while's format: `{before}` `do` `{after}`."""
    text = ("func.func @f(%c: i1) {\n  scf.while : () -> () {\n    scf.condition(%c)\n  }\n"
            "  do {\n    scf.yield\n  }\n  return\n}\n")
    assert len(only_op(text, "scf.while").regions) == 2


def test_case_and_default_continue_scf_index_switch():
    """scf.index_switch's format: (`case` N `{...}`)* `default` `{...}`."""
    text = ("func.func @f(%i: index) {\n  scf.index_switch %i\n  case 2 {\n    scf.yield\n  }\n"
            "  default {\n    scf.yield\n  }\n  return\n}\n")
    assert len(only_op(text, "scf.index_switch").regions) == 2
    assert names(text)[-1] == "func.return"


@pytest.mark.parametrize("after", [" {unroll}", "\n  {\n    unroll\n  }"])
def test_attribute_dictionary_after_a_region_continues_the_op(after):
    """scf.for's format ends `$region attr-dict`: a dictionary after the `}` is the op's."""
    text = (f"func.func @f(%n: index) {{\n  scf.for %i = %n to %n step %n {{\n    scf.yield\n"
            f"  }}{after}\n  return\n}}\n")
    op = only_op(text, "scf.for")
    assert len(op.regions) == 1
    assert text[op.start:op.end].endswith("unroll}" if "\n" not in after else "unroll\n  }")
    assert names(text) == ["func.func", "scf.for", "scf.yield", "func.return"]


def test_op_on_the_line_after_a_region_starts_the_next_op():
    """A line starting with an op (a result list, a dotted name) is the next op."""
    text = ("func.func @f(%n: index) {\n"
            "  scf.for %i = %n to %n step %n {\n    scf.yield\n  }\n"
            "  %c = arith.constant 0 : index\n"
            "  scf.for %i = %n to %n step %n {\n    scf.yield\n  }\n"
            "  return\n}\n")
    (func,) = parse_document(text).chunks[0].ops
    assert [o.name for o in func.regions[0].blocks[0].ops] == [
        "scf.for", "arith.constant", "scf.for", "func.return"]


def test_unknown_word_after_a_function_region_is_an_unknown_op():
    """func.func's format ends with its body; mlir-opt-22: custom op 'oops' is unknown."""
    text = "func.func @f() {\n  return\n}\noops}\n"
    e = prelex_error(text, "builtin")
    assert e.message == "custom op 'oops' is unknown"
    assert text[e.start:e.end] == "oops"


@pytest.mark.xfail(strict=True, reason="a word after a function's `}` on the same line is "
                   "merged into the func.func's body: no error")
def test_unknown_word_after_a_function_region_on_the_same_line():
    """mlir-opt-22 on `} oops`: custom op 'oops' is unknown (tried 'builtin.oops' as well)."""
    text = "func.func @f() {\n  return\n} oops\n"
    e = prelex_error(text, "builtin")
    assert e.message == "custom op 'oops' is unknown"
    assert text[e.start:e.end] == "oops"


# --- GPU ops, modeled exactly -----------------------------------------------------------------


def test_gpu_wait_on_the_line_fast_path_gives_its_exact_tokens():
    """gpu.wait: `custom<AsyncDependencies>` = `async`? (`[` deps `]`)?, then attr-dict."""
    text = '%t2 = gpu.wait async [%t]\n"test.op"() : () -> ()\n'
    toks = prelex_tokens(text)
    assert [t.type for t in toks] == [
        "RESULTS", "GPU_WAIT", "KW_ASYNC", "LSQB", "VALUE", "RSQB", "GENERIC_NAME", "BODY"]
    assert [span(text, t) for t in toks[:6]] == ["%t2", "gpu.wait", "async", "[", "%t", "]"]


def test_gpu_wait_token_by_token_gives_the_same_tokens():
    """A location `loc(...)` takes the op off the fast path; the async clause is the same."""
    text = '%t2 = gpu.wait async [%t, %u] loc("w")\nreturn\n'
    toks = prelex_tokens(text)
    assert [t.type for t in toks] == [
        "RESULTS", "GPU_WAIT", "KW_ASYNC", "LSQB", "VALUE", "COMMA", "VALUE", "RSQB", "LOC",
        "OPS"]
    assert span(text, toks[8]) == 'loc("w")'


def test_gpu_alloc_with_an_attribute_dictionary_gives_attr_dict():
    """gpu.alloc's format: ... `(` operands `)` (`[` symbols `]`)? attr-dict `:` type."""
    text = "%m, %t2 = gpu.alloc async [%t] (%n) {foo = 1} : memref<?xf32>\nreturn\n"
    toks = prelex_tokens(text)
    assert [t.type for t in toks] == [
        "RESULTS", "GPU_ALLOC", "KW_ASYNC", "LSQB", "VALUE", "RSQB", "LPAR", "VALUE", "RPAR",
        "ATTR_DICT", "COLON", "TYPE", "OPS"]
    assert span(text, toks[9]) == "{foo = 1}"


_LAUNCH_MODULE = ("module attributes {gpu.container_module} {\n"
                  "  gpu.module @k {\n    gpu.func @f(%a: memref<?xf32>) kernel { gpu.return }\n"
                  "  }\n"
                  "  func.func @g(%n: index, %a: memref<?xf32>, %t: !gpu.async.token) {\n"
                  "    LAUNCH\n    return\n  }\n}\n")


def test_gpu_launch_func_over_several_lines_on_the_fast_path():
    """gpu.launch_func: $kernel `blocks` `in` (...) `threads` `in` (...) `args`(...)."""
    launch = ("gpu.launch_func @k::@f\n        blocks in (%n, %n, %n)\n"
              "        threads in (%n, %n, %n)\n        args(%a : memref<?xf32>)")
    text = _LAUNCH_MODULE.replace("LAUNCH", launch)
    op = only_op(text, "gpu.launch_func")
    assert text[op.start:op.end] == launch
    assert [v.name for v in op.uses] == ["%n"] * 6 + ["%a"]


def test_gpu_launch_func_over_several_lines_token_by_token():
    """A comment after the kernel takes it off the fast path: one token per launch part."""
    text = ("gpu.launch_func @k::@f  // kernel\n    blocks in (%n, %n, %n)\n"
            "    threads in (%n, %n, %n)\n    args(%a : memref<?xf32>, %b : f32)\nreturn\n")
    toks = prelex_tokens(text)
    assert [t.type for t in toks] == [
        "GPU_LAUNCH_FUNC", "SYMBOL", "BLOCKS_DIMS", "THREADS_DIMS", "KERNEL_ARGS", "OPS"]
    assert span(text, toks[2]) == "blocks in (%n, %n, %n)"
    assert span(text, toks[4]) == "args(%a : memref<?xf32>, %b : f32)"


@pytest.mark.parametrize("op_text, name", [
    (("gpu.launch_func @k::@f\n        blocks in (%n, %n, %n)\n"
     "        threads in (%n, %n, %n)\n        args(%a : memref<?xf32>) {x}"), "gpu.launch_func"),
    ("%t2 = gpu.wait async [%t]\n        {x}", "gpu.wait"),
    ("%t2 = gpu.wait async\n        [%t]", "gpu.wait"),
])
def test_gpu_op_continued_on_the_next_line(op_text, name):
    """mlir-opt-22 accepts these (line breaks are blanks): one op, no error."""
    text = _LAUNCH_MODULE.replace("LAUNCH", op_text)
    op = only_op(text, name)
    assert text[op.start:op.end] == op_text


# --- errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, before", [
    ("%a = func.call @g(%x : (i32) -> i32\n%b = arith.addi %a, %a : i32\nreturn\n", "-> i32"),
    ("func.call @g(%x\nreturn\n", "(%x"),
    ('"test.op"(%x\n  %b = arith.addi %a, %a {x} : i32\n', "(%x"),  # the next line token by token
])
def test_unclosed_paren_before_a_line_that_can_only_start_an_op(text, before):
    """MLIR: expected ')' where the operand list stops (the end of the line before)."""
    e = prelex_error(text)
    assert e.message == "expected ')'"
    assert e.start == e.end
    assert text[:e.start].endswith(before)


def test_unclosed_region_at_the_end_of_the_unit():
    """MLIR: expected '}' to close the region, at the end of the input."""
    text = "func.func @f() {\n  return\n"
    e = prelex_error(text, "builtin")
    assert e.message == "expected '}' to close the region"
    assert e.start == e.end == len(text.rstrip("\n"))


def test_stray_closing_brace_at_top_level():
    """MLIR: a `}` where an op must start at the top level is unexpected."""
    text = "func.func @f() {\n  return\n}\n}\n"
    e = prelex_error(text, "builtin")
    assert e.message == "unexpected '}'"
    assert (e.start, text[e.start:e.end]) == (len(text) - 2, "}")


def test_unexpected_character():
    """MLIR's lexer: unexpected character, at the character."""
    text = '"test.op"() $ : () -> ()\nreturn\n'
    e = prelex_error(text)
    assert e.message == "unexpected character '$'"
    assert text[e.start:e.end] == "$"


def test_unclosed_string_literal():
    """MLIR's lexer: expected '"' in string literal (the string runs to the end of its line)."""
    text = '"test.op"() {s = "abc} : () -> ()\nreturn\n'
    e = prelex_error(text)
    assert e.message == "expected '\"' in string literal"
    assert text[e.start:e.end] == '"abc} : () -> ()'


@pytest.mark.parametrize("text", [
    '"test.op"() ) : () -> ()\nreturn\n',
    "%s = arith.addi %a,\n  %a : i32 )\nreturn\n",  # on a continuation line
])
def test_stray_closing_paren_is_reported_at_itself(text):
    """mlir-opt-22 reports a `)` that closes nothing at the `)` itself."""
    e = prelex_error(text)
    assert e.message == "unexpected ')'"
    assert text[e.start:e.end] == ")"


@pytest.mark.xfail(strict=True, reason="a stray `)` at the end of a one-line op (line fast "
                   "path) is reported as \"expected ')'\" after it, before the next op")
def test_stray_closing_paren_ending_a_one_line_op_is_reported_at_itself():
    """mlir-opt-22 on `%a = arith.constant 0 : i32 )`: error at the `)`."""
    text = "%a = arith.constant 0 : i32 )\nreturn\n"
    e = prelex_error(text)
    assert e.message != "expected ')'"
    assert text[e.start:e.end] == ")"
