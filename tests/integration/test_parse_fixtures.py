"""The syntax fixtures of tests/fixtures/parse: shapes of real MLIR whose structure the parser
must read as LLVM 22 does (attribute dictionaries on lines of their own, what follows a
region's `}`, `affine_set` bodies, ...).

Every `// -----` chunk must parse in mlir-opt-22 (a fixture LLVM rejects is a broken fixture),
and our op tree must equal LLVM's (its generic print read back), with no syntax finding: the
same comparison `tools/corpus_check.py` makes on any folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mlir_tools import require_mlir_opt
from tools.corpus_check import check_chunk, llvm_chunks

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "parse"
CHUNKS = [(path, i) for path in sorted(FIXTURES.glob("*.mlir"))
          for i in range(len(llvm_chunks(path.read_text(encoding="utf-8"))))]

pytestmark = pytest.mark.mlir_opt


def test_there_are_parse_fixtures():
    assert len(CHUNKS) >= 15


@pytest.mark.parametrize("path,index", CHUNKS, ids=[f"{p.stem}#{i}" for p, i in CHUNKS])
def test_parse_fixture_has_llvm_tree(path, index):
    mlir_opt = require_mlir_opt()
    text = path.read_text(encoding="utf-8")
    offset, chunk = llvm_chunks(text)[index]
    report = check_chunk(mlir_opt, path.name, text, index, offset, chunk)
    assert report.llvm == "parses", "mlir-opt-22 rejects this fixture chunk"
    assert report.syntax_findings == 0, report.first_syntax
    assert report.tree == "equal", report.difference
