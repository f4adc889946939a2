"""Navigation in the syntax IR (gpu_async_lsp/syntax/navigation.py): what a name refers to,
scoped as MLIR's parser scopes it, and every place that names the same thing."""

from __future__ import annotations

import pytest

from gpu_async_lsp.syntax import navigation as nav
from gpu_async_lsp.syntax import parse_document

TEXT = """\
func.func @scale(%arg0: memref<4xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %0:2 = "test.two"() : () -> (index, index)
  %buf = gpu.alloc (%n) : memref<?xf32>
  gpu.memcpy %buf, %arg0 : memref<?xf32>, memref<4xf32>
  %s = arith.addi %0#1, %0#0 : index
  %t = arith.addi %0#1, %c1 : index
  scf.for %i = %c1 to %n step %c1 {
    %v = memref.load %arg0[%i] : memref<4xf32>
    scf.for %j = %c1 to %i step %c1 {
      %w = memref.load %arg0[%j] : memref<4xf32>
    }
  }
  scf.if %true {
    %x = arith.constant 0 : index
  } else {
    %x = arith.constant 1 : index
  }
  cf.br ^bb1(%c1 : index)
^bb1(%y: index):
  cf.br ^bb1(%y : index)
}
"""


def ops():
    doc = parse_document(TEXT)
    assert not doc.errors
    return doc.chunks[0].ops


def at(needle: str, occurrence: int = 0, delta: int = 1) -> int:
    index = -1
    for _ in range(occurrence + 1):
        index = TEXT.index(needle, index + 1)
    return index + delta


def line_of(offset: int) -> int:
    return TEXT.count("\n", 0, offset) + 1


def where(refs) -> list[tuple[str, int]]:
    return [(TEXT[r.start:r.end], line_of(r.start)) for r in refs]


def definition(offset: int):
    o = ops()
    name = nav.name_at(o, offset)
    assert name is not None, TEXT[offset - 5:offset + 5]
    return nav.definition(o, name)


def references(offset: int):
    o = ops()
    return where(nav.references(o, nav.name_at(o, offset)))


@pytest.mark.parametrize("needle, occurrence, expected", [
    ("%arg0[%i]", 0, ("%arg0", 1)),        # a function argument, written in the header
    ("%n) :", 0, ("%n", 1)),
    ("%i]", 0, ("%i", 8)),                 # an scf.for induction variable
    ("%i step", 0, ("%i", 8)),             # used in the header of a nested loop
    ("%j]", 0, ("%j", 10)),
    ("%c1 to %i", 0, ("%c1", 2)),
    ("%buf, %arg0", 0, ("%buf", 4)),
    ("%0#1", 0, ("%0:2", 3)),              # one result of a group
    ("%y : index)", 0, ("%y", 20)),         # a block argument
])
def test_navigation_value_use_resolves_to_its_definition(needle, occurrence, expected):
    found = definition(at(needle, occurrence))
    assert (TEXT[found.start:found.end], line_of(found.start)) == expected


def test_navigation_definition_site_is_its_own_definition():
    found = definition(at("%i =", 0))
    assert (TEXT[found.start:found.end], line_of(found.start)) == ("%i", 8)
    found = definition(at("%c1 =", 0))
    assert line_of(found.start) == 2


def test_navigation_sibling_regions_reuse_a_name_each_its_own():
    assert references(at("%x = arith.constant 0")) == [("%x", 15)]
    assert references(at("%x = arith.constant 1")) == [("%x", 17)]


def test_navigation_references_of_an_argument_cover_header_and_body():
    assert references(at("%arg0: memref")) == [
        ("%arg0", 1), ("%arg0", 5), ("%arg0", 9), ("%arg0", 11)]


def test_navigation_references_of_a_result_group_member_only_that_member():
    assert references(at("%0#1", 0)) == [("%0:2", 3), ("%0#1", 6), ("%0#1", 7)]
    assert references(at("%0#0", 0)) == [("%0:2", 3), ("%0#0", 6)]


def test_navigation_references_of_a_result_group_definition_every_member():
    assert references(at("%0:2")) == [("%0:2", 3), ("%0#1", 6), ("%0#0", 6), ("%0#1", 7)]


def test_navigation_block_label_resolves_in_its_region():
    found = definition(at("^bb1(%c1"))
    assert (TEXT[found.start:found.end], line_of(found.start)) == ("^bb1", 20)
    assert references(at("^bb1(%y: index)")) == [("^bb1", 19), ("^bb1", 20), ("^bb1", 21)]


def test_navigation_cursor_just_after_a_name_is_on_it():
    found = definition(at("%buf, %arg0", delta=len("%buf")))
    assert line_of(found.start) == 4


def test_navigation_symbol_reference_reports_component_under_cursor():
    doc = parse_document("func.func @f() {\n  gpu.launch_func @kernels::@kernel blocks in "
                         "(%c, %c, %c) threads in (%c, %c, %c)\n  return\n}\n")
    text = doc.text
    o = doc.chunks[0].ops
    first = nav.name_at(o, text.index("@kernels") + 2)
    second = nav.name_at(o, text.index("@kernel ") + 2)
    assert first.kind == second.kind == nav.SYMBOL
    assert (first.component, second.component) == (0, 1)
    assert first.ref.path == ("@kernels", "@kernel")


def test_navigation_whitespace_and_comments_name_nothing():
    o = ops()
    assert nav.name_at(o, at("  %c1 =", delta=0)) is None
    assert nav.name_at(o, at("arith.constant 1")) is None


def test_navigation_symbol_ops_nest_by_owner():
    doc = parse_document("builtin.module @outer {\n  func.func @f() {\n    return\n  }\n}\n")
    found = [(op.name, owner.name if owner else None)
             for op, owner in nav.symbol_ops(doc.chunks[0].ops)]
    assert found == [("builtin.module", None), ("func.func", "builtin.module")]
