"""A text MLIR's parser rejects for its structure gets a `syntax` finding where the parser
stops, and `--fix` leaves such a file as it is: unclosed regions and dictionaries, brackets
that never close, a `{` that neither a region nor a dictionary can follow, a function body of
no block, aliases used and never defined. (tests/integration/test_layouts.py checks the rule on
every cut of the shared corpora with mlir-opt-22 as the oracle; each case here was found so.)
"""

from __future__ import annotations

import pytest

from gpu_async_lsp.async_region import analyze, fix_text
from gpu_async_lsp.async_region.rewriter import LLVM22

HEALTHY = """\
func.func @healthy(%n: index) {
  %m = gpu.alloc (%n) : memref<?xf32>
  gpu.dealloc %m : memref<?xf32>
  return
}
"""

# (what follows a healthy function, the message, the text the finding starts at)
CASES = {
    "unclosed region at the end": (
        "func.func @broken() {\n  {\n", "expected an operation or an attribute name, found '{'",
        "{\n"),
    "brackets of every kind": (
        "func.func @g() {\n{(<[{(<[{(<[\n", "expected an operation or an attribute name",
        "{(<["),
    "unclosed region inside a function": (
        "func.func @h() {\n  scf.execute_region {\n    scf.yield\n  \n  return\n}\n",
        "expected '}' to close the region", ""),
    "a dictionary nothing closes": (
        "func.func @d() attributes {a = [1,\n", "expected '}' to match this '{'", "{a"),
    "a dictionary with an unclosed bracket": (
        "func.func @i() {\n  // comment\n  [ [ }\n", "expected ')' or ']' before '}'", "}"),
    "a stray angle bracket after a function": (
        "func.func @j() {\n  return\n}\n<\n", "expected '>' to match this '<'", "<"),
    "an angle bracket between two closing braces": (
        "module {\n  func.func @k() {\n    return\n  } < }\n",
        "expected '>' to match this '<'", "< }"),
    "a region opened by a bracket": (
        "func.func @l(%a: memref<4xf32>) {\n  scf.execute_region {\n< } }\n",
        "expected an operation or an attribute name, found '<'", "<"),
    "an empty function body": (
        "func.func @main() -> i32 {\n}\n", "expected non-empty function body", "{"),
    "an undefined alias": (
        "func.func @m(%a: memref<4xf32, #map>) {\n  return\n}\n",
        "undefined symbol alias id 'map'", "#map"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_unclosed_or_unbalanced_text_gets_syntax_finding_where_llvm_stops(name):
    tail, message, at = CASES[name]
    text = HEALTHY + tail
    syntax = [f for f in analyze(text).findings if f.code == "syntax"]
    assert any(f.message.startswith(message) for f in syntax), syntax
    finding = next(f for f in syntax if f.message.startswith(message))
    assert text.startswith(at, finding.start)
    assert finding.start >= len(HEALTHY)  # the healthy function keeps its own analysis


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("semantics", ["original", LLVM22])
def test_unclosed_or_unbalanced_text_is_never_rewritten(name, semantics):
    text = HEALTHY + CASES[name][0]
    assert fix_text(text, semantics=semantics) == text


def test_function_body_of_named_arguments_is_a_block():
    """`func.func @f(%a: i32) {` `}`: the entry block holds the arguments (MLIR parses it)."""
    text = "func.func @f(%a: i32) {\n}\n"
    assert not [f for f in analyze(text).findings if f.code == "syntax"]


def test_alias_defined_over_lines_or_after_its_use_is_defined():
    text = ("func.func @f(%a: memref<4xf32, #map>) {\n  return\n} loc(#loc1)\n"
            "#map\n  =\n  affine_map<(d0) -> (d0)>\n#loc1 = loc(\"x.mlir\":1:1)\n")
    assert not [f for f in analyze(text).findings if f.code == "syntax"]


def test_alias_in_comment_or_string_is_no_use():
    text = ('// CHECK: #map\nfunc.func @f() attributes {note = "#nothere"} {\n'
            "  return  // !also\n}\n")
    assert not [f for f in analyze(text).findings if f.code == "syntax"]
