"""Editor features answered from the stored analysis (gpu_async_lsp/ide/features.py):
inlay hints and hover that preview the rewrite, code lenses, the outline, folding, and symbol
resolution across units. The protocol side is tested in tests/e2e."""

from __future__ import annotations

import bisect
import re
from pathlib import Path

import pytest

from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.edits import apply_edits, sort_edits
from gpu_async_lsp.ide import features
from gpu_async_lsp.ide.host import Analyzer
from gpu_async_lsp.text import LineIndex, Position

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REWRITTEN = sorted(p for p in FIXTURES.glob("*.mlir")
                   if not p.name.endswith(".expected.mlir")
                   and p.with_name(p.stem + ".expected.mlir").exists())


def analysis(text: str, strict: bool = False):
    return Analyzer(strict=strict).analyze(text, 1)


def hints_of(text: str) -> list[tuple[int, str]]:
    a = analysis(text)
    return [(u.base + h.offset, h.label) for u, h in features.inlay_hints(a, 0, len(text))]


@pytest.mark.parametrize("path", REWRITTEN, ids=lambda p: p.name)
def test_features_inlay_hints_preview_exactly_what_the_fix_inserts(path):
    """Each hint names what the rewrite writes at its place: the `gpu.wait`s it inserts
    (one hint each) and, on each op it makes async, the dependency and the new token."""
    text = path.read_text(encoding="utf-8")
    edits = sort_edits(analyze(text).edits())
    fixed = apply_edits(text, edits)
    starts = [e.start for e in edits]
    shift = [0]
    for e in edits:
        shift.append(shift[-1] + len(e.new_text) - (e.end - e.start))

    def moved(offset: int) -> int:  # before the insertions made at `offset`
        return offset + shift[bisect.bisect_left(starts, offset)]

    def line_at(offset: int) -> str:
        return fixed[fixed.rfind("\n", 0, offset) + 1:fixed.find("\n", offset)].strip()

    hints = hints_of(text)
    waits = 0
    for offset, label in hints:
        if label.startswith("waits on "):
            continue  # threaded code the fix leaves alone
        if label.startswith("+ gpu.wait ["):
            waits += 1
            # Before the op at the hint; at a block's end, on its own line before the `}`.
            statement = label[2:-1]
            line_start = text.rfind("\n", 0, offset) + 1
            assert statement in fixed[moved(line_start):moved(offset) + len(statement)], (
                label, line_at(moved(offset)))
        elif label.endswith(" = gpu.wait async;"):
            waits += 1
            assert label.startswith("+ ")
            assert fixed[moved(offset):].startswith(label[2:-1]), (label, line_at(moved(offset)))
        else:
            m = re.fullmatch(r"async \[(%\w+)\] → (%\w+)", label)
            assert m, label
            # The op's text, up to the hint, as the fix leaves it (ops may span lines).
            end = moved(offset)
            op_text = fixed[fixed.rfind("\n", 0, fixed.rfind(m.group(2), 0, end)) + 1:end]
            assert f"async [{m.group(1)}" in op_text, (label, op_text)
            assert re.search(rf"{re.escape(m.group(2))}\b[^=]*=", op_text), (label, op_text)
    assert waits == fixed.count("gpu.wait") - text.count("gpu.wait")
    assert sum("→" in label for _, label in hints) == sum(
        len(fn.sync_ops) for fn in analyze(text).functions if fn.rewritable)


THREADED = """\
func.func @threaded(%n: index, %dep: !gpu.async.token) {
  %t0 = gpu.wait async
  %a, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>
  %t2 = gpu.dealloc async [%t1, %dep] %a : memref<?xf32>
  gpu.wait [%t2]
  return
}
"""


def test_features_inlay_hints_in_threaded_code_name_the_tokens_waited_on():
    assert [label for _, label in hints_of(THREADED)] == [
        "waits on %t0 (gpu.wait)",
        "waits on %t1 (gpu.alloc), %dep (argument)",
        "waits on %t2 (gpu.dealloc)",
    ]
    # At the end of the op.
    offset, _ = hints_of(THREADED)[1]
    assert THREADED[offset] == "\n" and THREADED[offset - 1] == ">"


def test_features_inlay_hints_of_a_range_only_those_in_it():
    text = "".join(f"func.func @f{i}(%n: index) {{\n  %a = gpu.alloc (%n) : memref<?xf32>\n"
                   "  return\n}\n" for i in range(50))
    a = analysis(text)
    index = LineIndex(text)
    found = features.inlay_hints(a, index.line_start(20), index.line_start(24))
    assert [(index.line_of(u.base + h.offset), h.label) for u, h in found] == [
        (21, "+ %t0 = gpu.wait async;"), (21, "async [%t0] → %t1"), (22, "+ gpu.wait [%t1];")]


DOC = """\
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel() kernel {
      gpu.return
    }
  }
  gpu.module @other {
    gpu.func @kernel() kernel {
      gpu.return
    }
  }
  func.func @scale(%n: index) {
    %c1 = arith.constant 1 : index
    %buf = gpu.alloc (%n) : memref<?xf32>
    gpu.launch_func @kernels::@kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    gpu.launch_func @other::@kernel blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    %v = memref.load %buf[%c1] : memref<?xf32>
    return
  }
  func.func @blocked(%n: index) {
    %b = gpu.alloc (%n) : memref<?xf32>
    gpu.wait
    return
  }
}
"""


def line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def test_features_nested_symbol_reference_resolves_each_component():
    a = analysis(DOC)
    use = DOC.index("@other::@kernel")
    [module] = features.definition(a, use + 2)
    [kernel] = features.definition(a, use + len("@other::@") + 2)
    assert (line(DOC, module.start), DOC[module.start:module.end]) == (7, "@other")
    assert (line(DOC, kernel.start), DOC[kernel.start:kernel.end]) == (8, "@kernel")
    [kernel] = features.definition(a, DOC.index("@kernels::@kernel") + len("@kernels::@") + 1)
    assert line(DOC, kernel.start) == 3


def test_features_symbol_references_are_found_across_units():
    a = analysis(DOC)
    refs = features.references(a, DOC.index("@kernels {") + 2)
    assert [(line(DOC, s.start), DOC[s.start:s.end]) for s in refs] == [
        (2, "@kernels"), (15, "@kernels")]
    refs = features.references(a, DOC.index("@kernel()") + 2, include_declaration=False)
    assert [(line(DOC, s.start), DOC[s.start:s.end]) for s in refs] == [(15, "@kernel")]


def outline(nodes, depth=0):
    out = []
    for n in nodes:
        out.append(("  " * depth) + f"{n.detail} {n.name}")
        out.extend(outline(n.children, depth + 1))
    return out


def test_features_document_symbols_nest_modules_and_functions():
    assert outline(features.document_symbols(analysis(DOC))) == [
        "builtin.module module",
        "  gpu.module @kernels", "    gpu.func @kernel",
        "  gpu.module @other", "    gpu.func @kernel",
        "  func.func @scale", "  func.func @blocked"]


def test_features_document_symbols_survive_a_syntax_error_in_one_function():
    broken = DOC.replace("%c1 = arith.constant 1 : index", "%c1 = arith.constant 1 : (")
    a = analysis(broken)
    assert a.has_syntax_errors
    assert outline(features.document_symbols(a)) == outline(
        features.document_symbols(analysis(DOC)))


def test_features_folding_ranges_for_regions_and_split_chunks():
    text = "func.func @a() {\n  return\n}\n// -----\nfunc.func @b() {\n  scf.if %c {\n" \
           "    \"test.op\"() : () -> ()\n  }\n  return\n}\n"
    a = analysis(text)
    assert features.folding_ranges(a, LineIndex(text)) == [
        (0, 1, "region"), (0, 2, "chunk"), (3, 9, "chunk"), (4, 8, "region"),
        (5, 6, "region")]


def hover_text(text: str, needle: str, occurrence: int = 0) -> str | None:
    a = analysis(text)
    index = LineIndex(text)
    at = -1
    for _ in range(occurrence + 1):
        at = text.index(needle, at + 1)
    found = features.hover(a, at + 1, lambda o: index.line_of(o) + 1)
    return found[0] if found else None


def test_features_hover_on_a_rewritten_op_shows_its_new_form_and_tokens():
    text = hover_text(DOC, "gpu.launch_func @kernels")
    assert "%t2 = gpu.launch_func async [%t1] @kernels::@kernel" in text
    assert "waits on `%t1`, the token of `gpu.alloc` (line 14)" in text
    assert "- produces `%t2`" in text
    assert "`%t2` is awaited by `gpu.launch_func` (line 16)" in text
    last = hover_text(DOC, "gpu.launch_func @other")
    assert "before `memref.load` (line 17), which has side effects" in last


def test_features_hover_on_a_host_op_explains_the_wait_before_it():
    text = hover_text(DOC, "memref.load")
    assert "A `gpu.wait [%t3]` is inserted before it" in text
    assert "side effects" in text


def test_features_hover_in_a_blocked_function_names_the_blocker():
    assert "blocked by unexpected pre-existing gpu.wait (line 22)" in hover_text(
        DOC, "gpu.alloc", 1)
    assert "pre-existing `gpu.wait`" in hover_text(DOC, "gpu.wait\n")


def test_features_hover_on_an_already_async_op_names_its_producers():
    text = hover_text(THREADED, "gpu.dealloc")
    assert "Already asynchronous" in text
    assert "It waits on `%t1` (gpu.alloc), `%dep` (argument)." in text


def test_features_hover_elsewhere_is_empty():
    assert hover_text(DOC, "arith.constant") is None
    assert hover_text(DOC, "gpu.return") is None
    assert "leaves it" in hover_text(DOC.replace("gpu.return", "gpu.barrier\n      gpu.return")
                                     .replace("gpu.barrier", "gpu.memset %x, %y : memref<?xf32>, f32", 1),
                                     "gpu.memset")


def lenses(text: str, strict: bool = False, encoding: str = "utf-16"):
    a = analysis(text, strict)
    index = LineIndex(text)
    found = []
    for _unit, _placement, unit_lenses in features.code_lenses(a, index, encoding):
        for lens in unit_lenses:
            # The lens sits on the function's name.
            start = index.offset(Position(*lens.start), encoding)
            end = index.offset(Position(*lens.end), encoding)
            assert text[start:end] == lens.function, (text[start:end], lens.function)
            found.append((lens.title, lens.start[0] + 1, lens.nth))
    return found


def test_features_code_lenses_for_rewritable_and_blocked_functions():
    assert lenses(DOC) == [
        ("3 GPU ops run synchronously · Make asynchronous", 12, 0),
        ("async rewrite blocked: unexpected pre-existing gpu.wait (line 22)", 20, 0),
        ("Thread the token through it as LLVM 22 does", 20, 0)]


def test_features_code_lens_on_one_op_is_singular_and_names_repeat_per_chunk():
    one = "func.func @f(%n: index) {\n  %a = gpu.alloc (%n) : memref<?xf32>\n  return\n}\n"
    assert lenses(one + "// -----\n" + one) == [
        ("1 GPU op runs synchronously · Make asynchronous", 1, 0),
        ("1 GPU op runs synchronously · Make asynchronous", 6, 1)]


def test_features_code_lens_on_threaded_code_only_in_strict_mode():
    assert lenses(THREADED) == []
    assert lenses(THREADED, strict=True) == [
        ("async rewrite blocked: unexpected pre-existing gpu.wait (line 2)", 1, 0)]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_features_symbol_places_equal_positions_read_from_the_document(encoding):
    """Symbols keep their places relative to their unit; placed, they must be where the
    document's own line index puts them (non-ASCII before them on their line, CRLF)."""
    text = ("// é𝄞\r\nmodule {\r\n  /*x*/ func.func @é() {\r\n    return\r\n  }\r\n"
            "  \"t.o\"() : () -> () func.func @𝄞g() {\r\n    return\r\n  }\r\n}\r\n")
    text = text.replace("/*x*/ ", "")
    a = analysis(DOC + "// -----\n" + text)
    index = LineIndex(a.text)
    bases: dict = {}
    stack = list(features.document_symbols(a))
    seen = 0
    while stack:
        node = stack.pop()
        stack.extend(node.children)
        expected = tuple((p.line, p.character) for p in (
            index.position(o, encoding) for o in (node.start, node.end, *node.selection)))
        assert features.symbol_places(node, index, encoding, bases) == expected, node.name
        seen += 1
    assert seen >= 9


def test_features_broken_function_after_keywords_keeps_its_outline_entry():
    text = ("func.func private @decl()\n"
            "func.func nested @broken(%n: index) {\n  %a = gpu.alloc (%n : memref<\n  return\n}\n"
            "memref.global \"private\" constant @g : memref<2xf32> = dense<0.0>\n")
    a = analysis(text)
    assert a.has_syntax_errors
    assert outline(features.document_symbols(a)) == [
        "func.func @decl", "func.func @broken", "memref.global @g"]


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_features_code_lens_sits_on_the_name_after_non_ascii_text(encoding):
    text = ('"t.o"() {s = "é𝄞"} : () -> () func.func @f(%n: index) {\r\n'
            "  %a = gpu.alloc (%n) : memref<?xf32>\r\n  return\r\n}\r\n")
    assert lenses(text, encoding=encoding) == [
        ("1 GPU op runs synchronously · Make asynchronous", 1, 0)]


WAITS = """\
func.func @f(%n: index, %dep: !gpu.async.token) {
  %a = gpu.alloc (%n) : memref<?xf32>
  %u = gpu.wait async [%dep]
  gpu.dealloc %a : memref<?xf32>
  gpu.wait
  return
}
"""


def test_features_llvm22_hints_and_hover_show_the_token_threaded_into_a_wait():
    """With LLVM 22's semantics a pre-existing gpu.wait is no blocker: the hints say what it
    gains and which token is current after it, hover says the same in words."""
    from gpu_async_lsp.ide.host import Analyzer

    a = Analyzer(semantics="llvm22").analyze(WAITS, 1)
    assert [f.code for f in a.findings] == ["sync-gpu-ops"]
    labels = [h.label for _, h in features.inlay_hints(a, 0, len(WAITS))]
    assert labels == ["+ %t0 = gpu.wait async;", "async [%t0] → %t1", "+ [%t1] → %u",
                      "async [%u] → %t2", "+ [%t2] → no token"]
    index = LineIndex(WAITS)
    markdown, _ = features.hover(a, WAITS.index("gpu.wait async") + 2,
                                 lambda o: index.line_of(o) + 1)
    assert "also wait on `%t1`, the token of `gpu.alloc` (line 2)" in markdown
    assert "`%u` is awaited by `gpu.dealloc` (line 4)" in markdown
    markdown, _ = features.hover(a, WAITS.index("  gpu.wait\n") + 3,
                                 lambda o: index.line_of(o) + 1)
    assert "The host waits here" in markdown


LAUNCH = """\
func.func @f(%n: index, %h: memref<?xf32>) {
  %d = gpu.alloc (%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n)
             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {
    %v = memref.load %d[%tx] : memref<?xf32>
    gpu.terminator
  }
  gpu.memcpy %h, %d : memref<?xf32>, memref<?xf32>
  return
}
"""


def test_features_thread_launch_hints_and_hover_treat_gpu_launch_as_a_gpu_op():
    """With threadLaunch, a gpu.launch gets its hint before its body's `{` and its hover
    shows the launch's head as rewritten, not the kernel; nothing inside the kernel is
    previewed (it is device code)."""
    from gpu_async_lsp.ide.host import Analyzer

    a = Analyzer(thread_launch=True).analyze(LAUNCH, 1)
    assert [f.message for f in a.findings] == ["3 GPU ops in @f run synchronously"]
    hints = [(u.base + h.offset, h.label) for u, h in features.inlay_hints(a, 0, len(LAUNCH))]
    assert (LAUNCH.index("{", LAUNCH.index("gpu.launch")), "async [%t1] → %t2") in hints
    kernel = LAUNCH.index("%v = memref.load"), LAUNCH.index("gpu.terminator") + 14
    assert not [h for h in hints if kernel[0] <= h[0] <= kernel[1]]
    index = LineIndex(LAUNCH)
    markdown, _ = features.hover(a, LAUNCH.index("gpu.launch") + 3,
                                 lambda o: index.line_of(o) + 1)
    assert "%t2 = gpu.launch async [%t1] blocks" in markdown
    assert "memref.load" not in markdown
