"""The tolerant parser: op boundaries, default dialects, spans, chunks, error recovery."""

from __future__ import annotations

from gpu_async_lsp.syntax import parse_document
from gpu_async_lsp.syntax.lexer import split_chunks
from gpu_async_lsp.syntax.tree import format_tree


def tree(text: str) -> list[str]:
    return format_tree(parse_document(text)).splitlines()


def ops(text: str):
    return list(parse_document(text).walk())


def test_syntax_default_dialect_resolves_return_in_func_and_module_at_top():
    assert tree("module {\n  func.func @f() {\n    return\n  }\n}\n") == [
        "builtin.module", "  func.func", "    func.return"]


def test_syntax_bare_name_outside_its_default_dialect_is_a_syntax_error():
    doc = parse_document("func.func @f() {\n  scf.execute_region {\n    return\n  }\n  return\n}\n")
    assert doc.errors  # `return` has no default dialect inside scf.execute_region (mlir-opt agrees)


def test_syntax_multiline_launch_func_is_one_op_with_its_operands():
    text = ("func.func @f(%n: index, %a: memref<?xf32>) {\n"
            "  gpu.launch_func @kernels::@k\n"
            "      blocks in (%n, %n, %n)   // grid\n"
            "      threads in (%n, %n, %n)\n"
            "      args(%a : memref<?xf32>)\n"
            "  return\n}\n")
    launch = [o for o in ops(text) if o.name == "gpu.launch_func"]
    assert len(launch) == 1
    assert [v.name for v in launch[0].uses] == ["%n"] * 6 + ["%a"]
    assert [s.path for s in launch[0].symbols] == [("@kernels", "@k")]
    assert text[launch[0].start:launch[0].end].endswith("args(%a : memref<?xf32>)")


def test_syntax_spans_of_results_name_and_async_clause_are_exact():
    text = "func.func @f(%n: index, %t: !gpu.async.token) {\n  %m, %u = gpu.alloc async [%t] host_shared (%n) : memref<?xf32>\n  return\n}\n"
    alloc = next(o for o in ops(text) if o.name == "gpu.alloc")
    assert [text[r.start:r.end] for r in alloc.results] == ["%m", "%u"]
    assert text[alloc.name_start:alloc.name_end] == "gpu.alloc"
    assert text[slice(*alloc.gpu.async_kw)] == "async"
    assert text[alloc.gpu.deps_open:alloc.gpu.deps_close] == "[%t]"
    assert [d.name for d in alloc.gpu.deps] == ["%t"]


def test_syntax_result_groups_and_uses_with_index():
    text = "func.func @f() {\n  %a:2 = \"test.two\"() : () -> (i32, i32)\n  \"test.use\"(%a#1) : (i32) -> ()\n  return\n}\n"
    all_ops = ops(text)
    two = next(o for o in all_ops if o.name == "test.two")
    assert (two.results[0].name, two.results[0].count) == ("%a", 2)
    use = next(o for o in all_ops if o.name == "test.use")
    assert [(u.name, u.index) for u in use.uses] == [("%a", 1)]


def test_syntax_region_vs_attribute_dictionary():
    text = ("module attributes {gpu.container_module} {\n"
            "  gpu.module @k {\n    gpu.func @g() kernel { gpu.return }\n  }\n"
            "  func.func @f() attributes {llvm.emit_c_interface} {\n    return\n  }\n}\n")
    assert tree(text) == ["builtin.module", "  gpu.module", "    gpu.func", "      gpu.return",
                          "  func.func", "    func.return"]


def test_syntax_blocks_with_labels_and_arguments():
    text = ("func.func @f(%c: i1) {\n  cf.cond_br %c, ^bb1(%c : i1), ^bb2\n"
            "^bb1(%x: i1):  // comment\n  cf.br ^bb2\n^bb2:\n  return\n}\n")
    (func,) = parse_document(text).chunks[0].ops
    blocks = func.regions[0].blocks
    assert [b.label.name if b.label else None for b in blocks] == [None, "^bb1", "^bb2"]
    assert [a.name for a in blocks[1].args] == ["%x"]
    assert [s.name for s in blocks[0].ops[0].successors] == ["^bb1", "^bb2"]


def test_syntax_generic_form_ops_and_their_result_types():
    text = '"func.func"() <{function_type = () -> (), sym_name = "f"}> ({\n  %0 = "gpu.wait"() : () -> !gpu.async.token\n  "func.return"() : () -> ()\n}) : () -> ()\n'
    all_ops = ops(text)
    assert [o.name for o in all_ops] == ["func.func", "gpu.wait", "func.return"]
    assert all(o.generic for o in all_ops)
    assert "!gpu.async.token" in all_ops[1].result_types


def test_syntax_split_marker_only_alone_on_its_line():
    text = "func.func private @a()\n// -----\nfunc.func private @b()\n  // -----  \n// ------ not a marker\nfunc.func private @c()\n"
    assert len(split_chunks(text)) == 3
    assert tree(text) == ["func.func", "// -----", "func.func", "// -----", "func.func"]


def test_syntax_error_costs_only_its_own_top_level_op():
    text = ("module {\n  func.func @good1() {\n    return\n  }\n"
            "  func.func @bad() {\n    %x = arith.addi %a, : index\n    return ( \n  }\n"
            "  func.func @good2() {\n    return\n  }\n}\n")
    doc = parse_document(text)
    assert len(doc.errors) == 1
    names = [o.symbol_name.path[0] for o in doc.walk() if o.name == "func.func"]
    assert names == ["@good1", "@good2"]


def test_syntax_error_is_reported_at_the_offending_token():
    text = "func.func @f(%n: index) {\n  %a = gpu.alloc (%n : memref<?xf32>\n  return\n}\n"
    (error,) = parse_document(text).errors
    assert text[error.start] == ":" and error.message == "expected ')', found ':'"


def test_syntax_strings_with_braces_and_escapes_do_not_confuse_structure():
    text = 'func.func @f() attributes {note = "a } { \\" b"} {\n  "test.op"() {s = "}"} : () -> ()\n  return\n}\n'
    assert tree(text) == ["func.func", "  test.op", "  func.return"]


def test_syntax_aliases_and_file_metadata_at_top_level():
    text = "#map = affine_map<(d0) -> (d0)>\n!tok = !gpu.async.token\nfunc.func private @f()\n{-#\n  dialect_resources: {}\n#-}\n"
    doc = parse_document(text)
    assert not doc.errors
    assert [a.name for a in doc.chunks[0].aliases] == ["#map", "!tok"]
    assert tree(text) == ["func.func"]


def test_syntax_ops_sharing_a_line_are_separate_ops():
    text = "func.func @f(%m: memref<4xf32>) {\n  %c = arith.constant 0 : index  gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32> return }\n"
    assert tree(text) == ["func.func", "  arith.constant", "  gpu.memcpy", "  func.return"]


def test_syntax_deep_nesting_and_garbage_never_raise():
    deep = "func.func @f() {\n" + "scf.execute_region {\n" * 3000 + "}\n" * 3000 + "return\n}\n"
    assert parse_document(deep).walk
    for garbage in ["}", "{{{{", "\"", "%", "@", "^", "\x00\x01", "é", "(" * 1000, "module {"]:
        doc = parse_document(garbage)
        assert doc.errors or not list(doc.walk())



def test_leaf_shares_skip_chunks_whole_and_parse_each_chunk_once():
    """With the leaf counts of the chunks, a share skips the chunks that hold none of its leaf
    units; a chunk of no leaf unit (a module with an empty body) is parsed by exactly one share,
    the one that holds its place, wherever the shares are cut."""
    from gpu_async_lsp.syntax.parser import LeafShare, leaf_counts, parse_document, split_document

    chunks = ["func.func @a() {\n  return\n}", "module @empty {\n}",
              "module {\n  func.func @b() {\n    return\n  }\n}", "module @e2 {\n}",
              "func.func @c() {\n  return\n}", "module @e3 {\n}"]
    text = "\n// -----\n".join(chunks)
    layout = split_document(text)
    counts = leaf_counts(layout)
    assert counts == [1, 0, 1, 0, 1, 0]
    for cut in range(0, 4):
        shares = [(0, cut), (cut, None)]
        seen: list[int] = []
        for lo, hi in shares:
            doc = parse_document(text, LeafShare(lo, hi, counts), layout)
            seen.extend(c.start for c in doc.chunks)
        assert sorted(seen) == [s for s, _, _ in layout], cut


def test_leaf_shares_parse_their_leaves_and_every_container():
    """Any share [lo, hi) of a chunk with nested containers (holding one leaf unit of it at
    least) parses exactly its leaf units (counted in text order) and every container op: the
    shares of a big check are cut anywhere."""
    from gpu_async_lsp.syntax.parser import LeafShare, leaf_counts, parse_document, split_document

    leaf = "func.func @f{}() {{\n  return\n}}\n"
    text = (leaf.format(0) + "module @a {\n" + leaf.format(1)
            + "  gpu.module @k {\n    gpu.func @g() kernel {\n      gpu.return\n    }\n  }\n"
            + leaf.format(2) + "  module @empty {\n  }\n  module @b {\n" + leaf.format(3)
            + leaf.format(4) + "  }\n}\n" + leaf.format(5) + leaf.format(6))
    layout = split_document(text)
    counts = leaf_counts(layout)
    whole = parse_document(text, layout=layout)

    containers = {op.start for op in whole.walk() if op.name in ("builtin.module", "gpu.module")}
    leaves = [op.start for op in whole.walk()
              if op.start not in containers and not _inside_leaf(op, whole, containers)]
    assert sum(counts) == len(leaves) == 8, (counts, leaves)
    for lo in range(len(leaves)):  # a share holding none of a chunk's leaves skips it whole
        for hi in list(range(lo + 1, len(leaves) + 1)) + [None]:
            doc = parse_document(text, LeafShare(lo, hi, counts), layout)
            wanted = set(leaves[lo:hi])
            got_containers = {op.start for op in doc.walk() if op.start in containers}
            got_leaves = {op.start for op in doc.walk() if op.start in leaves}
            assert got_containers == containers, (lo, hi)
            assert got_leaves == wanted, (lo, hi, sorted(got_leaves), sorted(wanted))


def _inside_leaf(op, doc, containers) -> bool:
    """Is `op` nested in a leaf op (a function's body), not a container's block?"""
    for top in doc.walk():
        if top.start not in containers and top is not op and top.start < op.start < top.end:
            return True
    return False


def test_written_out_inits_give_every_field_its_declared_default():
    """The IR's __init__s are written out (speed): a field added to a class must be set there,
    to its declared default (Op's: OP_FIELDS, empty or None but `end`), and lists must not be
    shared between objects (Op's sequences start as the shared empty tuple: the parser sets a
    list of its own)."""
    from gpu_async_lsp.syntax.ir import (
        OP_FIELDS,
        Alias,
        Block,
        Chunk,
        Document,
        GpuSyntax,
        Op,
        Region,
        SyntaxIssue,
    )
    from gpu_async_lsp.syntax.refs import SymbolRef, ValueRef

    a, b = Op("t.op", 1, 2, 0, 9), Op("t.op", 1, 2, 0)
    assert (a.name, a.name_start, a.name_end, a.start, a.end, b.end) == ("t.op", 1, 2, 0, 9, 0)
    assert Op.__slots__ == OP_FIELDS and len(set(OP_FIELDS)) == len(OP_FIELDS)
    op_defaults = {"generic": False, "results_end": None, "src": "", "symbol_name": None,
                   "gpu": None, "result_types": None, "results": (), "explicit_uses": (),
                   "explicit_symbols": (), "spans": (), "regions": ()}
    assert set(op_defaults) | {"name", "name_start", "name_end", "start", "end"} == set(
        OP_FIELDS)
    for name, want in op_defaults.items():
        assert getattr(a, name) == want and getattr(b, name) == want, name
    # Each class made with its required arguments: every field set, to its default.
    made = {
        GpuSyntax: (lambda: GpuSyntax(), {"async_kw": None, "deps_open": None,
                                          "deps_close": None, "deps": ()}),
        Block: (lambda: Block(None), {"label": None, "args": [], "ops": [], "start": 0,
                                      "end": 0}),
        Region: (lambda: Region(1, 2), {"lbrace": 1, "rbrace": 2, "blocks": []}),
        Chunk: (lambda: Chunk(1, 2), {"start": 1, "end": 2, "ops": [], "aliases": [],
                                      "errors": []}),
        Document: (lambda: Document("t", []), {"text": "t", "chunks": []}),
        Alias: (lambda: Alias("#a", 1, 2), {"name": "#a", "start": 1, "end": 2}),
        SyntaxIssue: (lambda: SyntaxIssue("m", 1, 2), {"message": "m", "start": 1, "end": 2}),
        ValueRef: (lambda: ValueRef("%a", 1, 3), {"name": "%a", "start": 1, "end": 3,
                                                  "index": None, "count": 1}),
        SymbolRef: (lambda: SymbolRef(("@f",), 1, 3), {"path": ("@f",), "start": 1,
                                                      "end": 3}),
    }
    for cls, (make, defaults) in made.items():
        assert tuple(defaults) == cls.__slots__, cls
        x, y = make(), make()
        for name, want in defaults.items():
            assert getattr(x, name) == want, (cls, name)
            if isinstance(want, list):
                assert getattr(x, name) is not getattr(y, name), (cls, name)


def test_the_ir_values_compare_show_and_pickle_as_the_dataclasses_they_were():
    """The IR's classes lost their dataclass decorator (the import and the class made at start
    were ~25 ms of `check`): those with values (GpuSyntax, Alias, SyntaxIssue, ValueRef,
    SymbolRef) are still equal by their fields and unhashable, the others by identity; each
    is shown with its fields; each takes no field it does not declare and is pickled whole
    (a forked process sends findings and issues back)."""
    import pickle

    import pytest

    from gpu_async_lsp.syntax.ir import Alias, Block, GpuSyntax, Region, SyntaxIssue
    from gpu_async_lsp.syntax.refs import SymbolRef, ValueRef

    v = ValueRef("%a", 1, 3, 2)
    assert v == ValueRef("%a", 1, 3, 2) and v != ValueRef("%a", 1, 3) and v != ("%a", 1, 3, 2)
    assert repr(v) == "ValueRef(name='%a', start=1, end=3, index=2, count=1)"
    assert SymbolRef(("@m", "@k"), 0, 6) == SymbolRef(("@m", "@k"), 0, 6)
    assert SyntaxIssue("m", 1, 2) == SyntaxIssue("m", 1, 2) != SyntaxIssue("m", 1, 3)
    assert Alias("#a", 0, 9) == Alias("#a", 0, 9) and GpuSyntax() == GpuSyntax()
    assert Block(None) != Block(None) and Region(1, 2) != Region(1, 2)
    assert repr(Region(1, 2)) == "Region(lbrace=1, rbrace=2, blocks=[])"
    for x in (v, SymbolRef(("@f",), 0, 2), SyntaxIssue("m", 1, 2), Alias("#a", 0, 9),
              GpuSyntax()):
        with pytest.raises(TypeError):
            hash(x)
        assert pickle.loads(pickle.dumps(x)) == x
        with pytest.raises(AttributeError):
            x.misspelt = 1
    block = pickle.loads(pickle.dumps(Block(v, [v], [], 4, 9)))
    assert (block.label, block.args, block.ops, block.start, block.end) == (v, [v], [], 4, 9)


def test_an_op_takes_no_field_it_does_not_declare():
    """Op has slots (as Python) or C fields (compiled): a misspelt field fails, in both."""
    import pytest

    from gpu_async_lsp.syntax.ir import Op

    op = Op("t.op", 1, 2, 0, 9)
    with pytest.raises(AttributeError):
        op.regoins = []
    assert repr(op) == "Op('t.op', start=0, end=9)" and op != Op("t.op", 1, 2, 0, 9)


def test_text_edit_is_a_frozen_value_whatever_its_init():
    """TextEdit is a named tuple made by a __new__ of its own (speed): it is still frozen,
    compared, ordered, hashed, replaced and pickled by its three fields, and shown as the
    dataclass it was."""
    import pickle

    import pytest

    from gpu_async_lsp.edits import TextEdit

    e = TextEdit(3, 5, "x")
    assert TextEdit._fields == ("start", "end", "new_text")
    assert (e.start, e.end, e.new_text) == (3, 5, "x") and e._asdict() == {
        "start": 3, "end": 5, "new_text": "x"}
    assert repr(e) == "TextEdit(start=3, end=5, new_text='x')"
    with pytest.raises(AttributeError):
        e.start = 4
    assert e == TextEdit(3, 5, "x") and hash(e) == hash(TextEdit(3, 5, "x"))
    assert sorted([TextEdit(4, 4, ""), e, TextEdit(3, 4, "y")]) == [
        TextEdit(3, 4, "y"), e, TextEdit(4, 4, "")]
    back = pickle.loads(pickle.dumps(e))
    assert back == e and type(back) is TextEdit
    assert e._replace(end=6) == TextEdit(3, 6, "x") and type(e._replace(end=6)) is TextEdit
