"""tools/corpus_check.py: the comparison of our parser with LLVM's on a folder of MLIR."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpu_async_lsp.syntax import parse_document
from gpu_async_lsp.syntax.optree import document_trees, first_difference
from tests.mlir_tools import require_mlir_opt
from tools import corpus_check
from tools.corpus_check import llvm_chunks


def test_chunks_are_cut_where_mlir_opt_cuts():
    # At every marker, anywhere on a line; what follows on its line is the next chunk's.
    text = "a\n// -----\nb // ----- c\n// ----- notes\nd\n// ------\ne"
    assert [c for _, c in llvm_chunks(text)] == ["a\n", "\nb ", " c\n", " notes\nd\n", "-\ne"]
    assert [o for o, _ in llvm_chunks(text)] == [0, 10, 21, 32, 49]
    assert llvm_chunks("no marker") == [(0, "no marker")]


def _trees(text: str):
    doc = parse_document(text)
    assert not doc.errors
    return [t for trees in document_trees(doc) for t in trees]


def _op(name, *regions):
    """A tree: each region a list of blocks, each block a list of ops."""
    return (name, tuple(tuple(tuple(block) for block in region) for region in regions))


def test_elided_terminators_and_implicit_regions_are_no_difference():
    ours = _trees("func.func @f() {\n  scf.execute_region {\n    func.return\n  }\n  return\n}\n")
    reference = _op("builtin.module", [[_op("func.func", [[
        _op("scf.execute_region", [[_op("func.return"), _op("scf.yield")]]),
        _op("func.return")]])]])
    assert first_difference(ours, reference) is None
    matmul = _trees("func.func @m(%a: memref<2x2xf32>) {\n  linalg.matmul ins(%a, %a : "
                    "memref<2x2xf32>, memref<2x2xf32>) outs(%a : memref<2x2xf32>)\n  return\n}\n")
    reference = _op("builtin.module", [[_op("func.func", [[
        _op("linalg.matmul", [[_op("linalg.yield")]]), _op("func.return")]])]])
    assert first_difference(matmul, reference) is None


def test_a_difference_is_located_by_op_names():
    ours = _trees("func.func @f() {\n  return\n}\n")
    reference = _op("builtin.module", [[_op("func.func", [[
        _op("func.call"), _op("func.return")]])]])
    assert first_difference(ours, reference) == "#0 func.func / func.return: LLVM has func.call here"
    longer = _op("builtin.module", [[_op("func.func", [[
        _op("func.return"), _op("func.call"), _op("func.call")]])]])
    assert first_difference(ours, longer) == (
        "#0 func.func region 0 block 0: 1 ops, LLVM has 3 ([func.call, func.call] left over)")
    assert "top level: 2 ops, LLVM has 1" in first_difference(ours + ours, reference)


def test_script_reports_each_chunk_and_a_summary(tmp_path: Path, capsys):
    require_mlir_opt()
    good = "func.func @f(%n: index) {\n  %a = gpu.alloc (%n) : memref<?xf32>\n  return\n}\n"
    rejected = "func.func @g() {\n  %x = arith.addi %nope, %nope : i32\n  return\n}\n"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "two.mlir").write_text(good + "// -----\n" + rejected)
    # A unit attribute named like a bare op name, alone in a dictionary on lines of its own:
    # the one shape of `{` that the brace rule reads as a region and LLVM as a dictionary.
    (tmp_path / "limit.mlir").write_text(
        "func.func @h() -> i32 {\n  %c = arith.constant {\n    return\n  } 1 : i32\n"
        "  return %c : i32\n}\n")
    out = tmp_path / "report.json"
    status = corpus_check.main([str(tmp_path), "--json", str(out), "--verbose"])
    printed = capsys.readouterr().out
    assert status == 1
    assert "ok      sub/two.mlir#0" in printed
    assert "rejected sub/two.mlir#1" in printed
    assert "differs limit.mlir#0" in printed and "3:5: custom op 'return' is unknown" in printed
    assert printed.splitlines()[-1] == (
        "2 files, 3 chunks, 2 parsed by LLVM: 1 trees equal to LLVM's (1 differ), "
        "1 with a syntax finding; 1/2 clean")
    records = {(r["path"], r["chunk"]): r for r in json.loads(out.read_text())}
    assert records["sub/two.mlir", 1]["llvm"] == "rejects"
    assert records["sub/two.mlir", 1]["line"] == 5
    assert records["limit.mlir", 0]["syntax_findings"] == 1


def test_script_usage_errors(tmp_path: Path, capsys):
    assert corpus_check.main([str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert corpus_check.main([str(tmp_path), "--mlir-opt", "no-such-mlir-opt"]) == 2


@pytest.mark.parametrize("name", ["bad.mlir"])
def test_script_skips_undecodable_files(tmp_path: Path, capsys, name):
    require_mlir_opt()
    (tmp_path / name).write_bytes(b"\xff\xfe not utf-8")
    assert corpus_check.main([str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert f"skipped {name}" in captured.err
    assert "0 files" not in captured.out and "0 chunks" in captured.out
