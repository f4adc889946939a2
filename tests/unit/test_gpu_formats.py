"""The GPU op formats of gpu_formats.FORMATS: the fast path (one regular expression per op,
matched at C speed) and the grammar path (the op's LALR rule, token by token) accept the same
texts and read the same op from them.

Adding an op to FORMATS needs samples here: `test_every_format_has_samples` fails until it
has them.
"""

from __future__ import annotations

import pytest

from gpu_async_lsp.syntax import gpu_formats, lexer, parse_document
from gpu_async_lsp.syntax.braces import OP_WORDS
from gpu_async_lsp.syntax.lexer import tokenize_lines

# Op name -> texts of the op that follow its format (after the async clause, every optional
# part of GPUOps.td's assembly format at least once).
SAMPLES = {
    "gpu.wait": [
        "gpu.wait",
        "gpu.wait async",
        "%t = gpu.wait async",
        "%t = gpu.wait async [%a, %b]",
        "gpu.wait [%t]",
        "gpu.wait [%t0, %t1#1]",
    ],
    "gpu.alloc": [
        "%m = gpu.alloc (%n) : memref<?xf32>",
        "%m, %t = gpu.alloc async [%t0] (%n, %k) : memref<?x?xf32>",
        "%m = gpu.alloc host_shared () : memref<4xf32>",
        "%m = gpu.alloc  ( %n )  [%s] : memref<?xf32, strided<[1], offset: ?>>",
        "%m, %t = gpu.alloc async (%n) : memref<?xf32, #gpu.address_space<global>>",
    ],
    "gpu.dealloc": [
        "gpu.dealloc %m : memref<?xf32>",
        "%t = gpu.dealloc async [%t0] %m : memref<?xf32>",
        "%t = gpu.dealloc async %m#1 : memref<4x4xf32, 1>",
    ],
    "gpu.memcpy": [
        "gpu.memcpy %d, %s : memref<?xf32>, memref<?xf32>",
        "%t = gpu.memcpy async [%a] %d, %s : memref<4xf32, 1>, memref<4xf32>",
        "%t = gpu.memcpy async %d,%s : memref<2x2xf16, strided<[2, 1]>>, memref<2x2xf16>",
    ],
    "gpu.memset": [
        "gpu.memset %d, %v : memref<?xf32>, f32",
        "%t = gpu.memset async [%t0, %t1] %d, %v : memref<?xi32>, i32",
    ],
    "gpu.launch_func": [
        "gpu.launch_func @k::@f blocks in (%a, %b, %c) threads in (%a, %b, %c)",
        "%t = gpu.launch_func async [%t0] @k::@f blocks in (%a, %b, %c) threads in (%a, %b, %c)"
        " args(%x : memref<?xf32>, %n : index)",
        "gpu.launch_func @k::@f clusters in (%a, %a, %a) blocks in (%a, %b, %c)"
        " threads in (%a, %b, %c) : i64 dynamic_shared_memory_size %s args()",
        "gpu.launch_func <%stream : !llvm.ptr> @k::@f blocks in (%a, %b, %c)"
        " threads in (%a, %b, %c)",
        "gpu.launch_func @k::@f\n      blocks in (%a, %b, %c)\n      threads in (%a, %b, %c)\n"
        "      args(%x : memref<?xf32>,\n           %n : index)",
    ],
}

# Texts that break their op's format: both paths reject them (the fast path by not
# matching, the grammar with a syntax finding).
WRONG = [
    "gpu.dealloc %m",
    "gpu.memcpy %d : memref<?xf32>",
    "%m = gpu.alloc %n : memref<?xf32>",
    "gpu.launch_func @k::@f blocks in (%a, %b) threads in (%a, %b, %c)",
    "gpu.memset %d, %v : memref<?xf32>",
    "gpu.wait async [%t",
]


def _in_function(op: str) -> str:
    return f"func.func @f() {{\n  {op}\n  return\n}}\n"


def _op(text: str):
    doc = parse_document(text)
    return doc, (doc.chunks[0].ops[0].regions[0].blocks[0].ops[0]
                 if not doc.errors else None)


def _facts(op, text: str):
    """What the rewrite and the editor features read of a GPU op."""
    g = op.gpu
    return {
        "name": op.name,
        "span": text[op.start:op.end],
        "results": [(v.name, v.start, v.count) for v in op.results],
        "async": g.async_kw,
        "deps": [(v.name, v.start, v.end) for v in g.deps],
        "deps_brackets": (g.deps_open, g.deps_close),
        "uses": [(v.name, v.start, v.end) for v in op.uses],
        "symbols": [(s.path, s.start) for s in op.symbols],
    }


def _no_fast_path(monkeypatch) -> None:
    """The tokenizer finds no format: the expressions' (Python) nor the scan's (compiled)."""
    monkeypatch.setattr(gpu_formats, "WHOLE_OP", {})
    monkeypatch.setattr(lexer, "FORMAT_CODE", {})


def test_every_format_has_samples():
    assert set(SAMPLES) == set(gpu_formats.EXACT_GPU_OPS)
    assert [f.name for f in gpu_formats.FORMATS] == list(gpu_formats.EXACT_GPU_OPS)


SAMPLE_CASES = [(name, text) for name, texts in SAMPLES.items() for text in texts]


@pytest.mark.parametrize("name,sample", SAMPLE_CASES,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(SAMPLE_CASES)])
def test_fast_path_and_grammar_read_the_same_op(name, sample, monkeypatch):
    text = _in_function(sample)
    items = tokenize_lines(text, 0, len(text), OP_WORDS)
    assert any(t.kind == "gpuline" and t.text == name for t in items), "fast path not taken"
    doc, fast = _op(text)
    assert not doc.errors, doc.errors
    _no_fast_path(monkeypatch)  # every op token by token
    items = tokenize_lines(text, 0, len(text), OP_WORDS)
    assert not any(t.kind == "gpuline" for t in items)
    doc, slow = _op(text)
    assert not doc.errors, doc.errors
    assert fast.name == slow.name == name
    assert _facts(fast, text) == _facts(slow, text)


@pytest.mark.parametrize("sample", WRONG)
def test_both_paths_reject_a_broken_format(sample, monkeypatch):
    text = _in_function(sample)
    items = tokenize_lines(text, 0, len(text), OP_WORDS)
    assert not any(t.kind == "gpuline" for t in items)
    assert parse_document(text).errors
    _no_fast_path(monkeypatch)
    assert parse_document(text).errors


def test_the_grammar_has_one_alternative_per_format():
    rules = gpu_formats.grammar_rules()
    for f in gpu_formats.FORMATS:
        assert f"%extend op: [RESULTS] {f.terminal} async_deps" in rules
        assert f"{gpu_formats.operand_rule(f)}: {f.rule}" in rules
