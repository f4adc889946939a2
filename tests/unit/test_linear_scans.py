"""Every scan of the syntax layer is linear in its input.

Each test builds an input of one shape at sizes n and 4n and runs it through the public parse
paths: `parse_document` and `analyze` (what `check` runs), and the unit-by-unit path of the
server (`split_document`, then each leaf unit's own text through `tokenize_lines`,
`parse_unit_tokens` and `analyze`). The 4n input must cost less than 8 times the n input:
linear time gives about 4, quadratic time 16. The shapes are those of long-lived buffers
(comments, blank lines, long lines and strings, many chunks, ops, functions, results,
dependencies and block labels, deep nesting) and those that did cost quadratic time once. Two
requests the server answers from the parse, references and positions, are held to the same.

Ratios, not absolute times: the machines that run these tests are shared and noisy, and differ
in speed, so a time limit is either loose or flaky; the ratio of two CPU times measured in the
same run, best of three with the cyclic GC paused, is neither. The n cases were sized to take
some 20-50 ms, well above the clock's noise, and the whole file a quarter of a minute.
"""

from __future__ import annotations

import gc
import itertools
import time

import pytest

from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.async_region.suppression import NO_CONTEXT
from gpu_async_lsp.syntax import Chunk, Document, Op, linescan, parse_document
from gpu_async_lsp.syntax import navigation as nav
from gpu_async_lsp.syntax.parser import iter_units, parse_unit, split_document
from gpu_async_lsp.text import UTF16, LineIndex
from tests.python_twin import as_python

LIMIT = 8  # t(4n) / t(n): linear is about 4, quadratic 16
RUNS = 3


# --- the two parse paths -------------------------------------------------------------------------


def check_path(text: str) -> None:
    """What `gpu-async-lsp check` runs on a buffer."""
    analyze(parse_document(text))


def server_path(text: str) -> None:
    """What the server runs on a buffer it opens: the units of `split_document`, container
    headers parsed in place, each leaf unit parsed and analysed as its own text."""
    for start, end, units in split_document(text):
        for unit, dialect, device, header, _ in iter_units(text, start, end, units):
            if header is not None:
                continue
            source = text[unit.start:unit.end]
            items, issue = parse_unit(source, dialect)
            chunk = Chunk(0, len(source), [] if device else [x for x in items if isinstance(x, Op)])
            if issue is not None:
                chunk.errors.append(issue)
            analyze(Document(source, [chunk]))


PATHS = pytest.mark.parametrize("path", [check_path, server_path], ids=["check", "server"])


@pytest.fixture(scope="module", autouse=True)
def _warm():
    """Build the parser (and fill the regex caches) before anything is timed."""
    check_path(_function(_ops(2)))
    server_path(_function(_ops(2)))


def _cpu(run, arg) -> float:
    gc.disable()
    try:
        start = time.process_time()
        run(arg)
        return time.process_time() - start
    finally:
        gc.enable()


def assert_linear(run, make, n: int) -> None:
    """run(make(4 * n)) costs less than LIMIT times run(make(n)); each time is the best of
    RUNS, and the larger input is not run again once one of its runs is within the limit."""
    small, large = make(n), make(4 * n)
    t_small = min(_cpu(run, small) for _ in range(RUNS))
    t_large = float("inf")
    for _ in range(RUNS):
        t_large = min(t_large, _cpu(run, large))
        if t_large < LIMIT * t_small:
            return
    pytest.fail(f"n={n}: {t_small * 1000:.1f} ms, 4n: {t_large * 1000:.1f} ms, "
                f"ratio {t_large / max(t_small, 1e-9):.1f} (limit {LIMIT})")


# --- shapes --------------------------------------------------------------------------------------

HEADER = "func.func @f(%n: index, %buf: memref<?xf32>, %x: f32) {\n"
COMMENT = "// " + "x" * 76 + "\n"


def _function(body: str, name: str = "@f") -> str:
    return HEADER.replace("@f", name) + body + "  return\n}\n"


def _ops(k: int) -> str:
    return "".join(f"  %a{i} = gpu.alloc (%n) : memref<?xf32>\n"
                   f"  gpu.memcpy %a{i}, %buf : memref<?xf32>, memref<?xf32>\n" for i in range(k))


def _values(k: int, sep: str = ", ") -> str:
    return sep.join(f"%v{i}" for i in range(k))


@PATHS
def test_parse_trailing_comment_lines_linear(path):
    assert_linear(path, lambda n: _function(_ops(2)) + COMMENT * n, 22000)


@PATHS
def test_parse_trailing_comment_lines_in_module_crlf_linear(path):
    def make(n):
        return ("module {\n" + _function(_ops(2)) + ("  " + COMMENT) * n + "}\n").replace(
            "\n", "\r\n")
    assert_linear(path, make, 16000)


@PATHS
def test_parse_interleaved_comment_lines_linear(path):
    def make(n):
        return _function("".join(f'  // step {i}: "quoted" {{ not a brace }}\n'
                                 f"  %v{i} = arith.addf %x, %x : f32\n" for i in range(n)))
    assert_linear(path, make, 2500)


@PATHS
def test_parse_blank_lines_linear(path):
    def make(n):
        return _function(_ops(1) + "\n" * n + "   \t\n" * n + _ops(1)) + "\n \n" * n
    assert_linear(path, make, 30000)


@PATHS
def test_parse_gpu_ops_and_closing_lines_between_comment_runs_linear(path):
    """Each GPU op's one-match format looks past its line for a continuation, and a line of
    only `}` is matched after the blank and comment lines before it: runs of those lines
    between many of both are read a bounded number of times."""
    def make(n):
        block = ("  scf.execute_region {\n  %a = gpu.alloc (%n) : memref<?xf32>\n"
                 + "  // note\n\n" * 4 + "  }\n" + "  // after\n" * 4)
        return _function(block * n)
    assert_linear(path, make, 700)


@PATHS
def test_parse_one_very_long_line_linear(path):
    assert_linear(path, lambda n: _function(f"  %r = arith.addi {_values(n)} : i32\n"), 45000)


@PATHS
def test_parse_long_line_of_raw_tokens_linear(path):
    # A string makes the line one of raw tokens: the values after it are read one by one.
    assert_linear(path, lambda n: _function(f'  %r = test.op "s", {_values(n)} : i32\n'), 5500)


@PATHS
def test_parse_long_string_linear(path):
    assert_linear(path, lambda n: _function(
        '  "test.op"() {s = "' + "abcdefgh" * n + '"} : () -> ()\n'), 160000)


@PATHS
def test_parse_string_with_many_escapes_linear(path):
    # At the top level: the rewrite reads a function's text for its SSA names, with a pattern
    # of its own.
    assert_linear(path, lambda n: '"test.op"() {s = "' + '\\"\\\\' * n + '"} : () -> ()\n',
                  200000)


@PATHS
def test_parse_unterminated_string_at_end_of_long_line_linear(path):
    assert_linear(path, lambda n: _function("  %r = arith.addi " + "%x, " * n + '"\n'), 6000)


@PATHS
def test_parse_escaped_quotes_after_unterminated_string_linear(path):
    assert_linear(path, lambda n: _function(
        '  "test.op"() {s = "' + '\\" ' * n + "} : () -> ()\n"), 56000)


@PATHS
def test_parse_unclosed_metadata_on_many_lines_linear(path):
    assert_linear(path, lambda n: _function(
        "".join(f"  %v{i} = test.op {{-# : i32\n" for i in range(n))), 1800)


@PATHS
def test_parse_blanks_before_form_feed_linear(path):
    assert_linear(path, lambda n: _function(
        '  "test.op"(%x' + " " * n + "\x0c) : (f32) -> ()\n"), 850000)


@PATHS
def test_parse_long_op_name_before_string_linear(path):
    assert_linear(path, lambda n: _function("  " + "a" * n + ' "s" : i32\n'), 1300000)


@PATHS
def test_parse_many_split_chunks_linear(path):
    assert_linear(path, lambda n: "// -----\n".join(
        _function(_ops(1), f"@f{i}") for i in range(n)), 200)


@PATHS
def test_parse_many_top_level_functions_linear(path):
    assert_linear(path, lambda n: "".join(_function(_ops(1), f"@f{i}") for i in range(n)), 200)


DECLARATION = "(memref<?x?xf32>, memref<?x?xf32>, index, index, f32) -> (memref<?x?xf32>, index)"


@PATHS
def test_parse_many_top_level_declarations_linear(path):
    assert_linear(path, lambda n: "".join(
        f"func.func private @d{i}{DECLARATION}\n" for i in range(n)), 700)


@PATHS
def test_parse_many_functions_in_one_module_linear(path):
    assert_linear(path, lambda n: "module {\n" + "".join(
        _function(_ops(1), f"@f{i}") for i in range(n)) + "}\n", 200)


@PATHS
def test_parse_many_declarations_in_one_module_linear(path):
    assert_linear(path, lambda n: "module {\n" + "".join(
        f"  func.func private @d{i}{DECLARATION}\n" for i in range(n)) + "}\n", 700)


@PATHS
def test_parse_many_ops_in_one_function_linear(path):
    assert_linear(path, lambda n: _function(_ops(n)), 720)


def _ops_over_lines(k: int) -> str:
    """GPU ops broken at token boundaries: each goes on past the line its format matched, or
    starts on a line of raw tokens, and a launch configuration spans lines."""
    return "".join(
        f"  %a{i}\n    = gpu.alloc\n    (%n) : memref<?xf32>\n"
        f"  %e{i} = gpu.wait\n    async\n"
        f"  gpu.launch_func @kernels::@k\n    blocks\n    in (%n, %n,\n %n) threads in (%n,\n"
        f"    %n, %n)\n    args(%a{i} :\n memref<?xf32>)\n" for i in range(k))


def test_parse_alias_lookalikes_in_a_long_string_and_comment_linear():
    """Each `#a` in a string or a comment is no use of an alias: telling so reads the line
    once, not once per candidate (the check path looks for undefined aliases)."""
    assert_linear(check_path, lambda n: _function("", "@f").replace(
        "{\n", '{\n  "test.op"() {s = "' + "#a " * n + '"} : () -> ()  // ' + "#b " * n + "\n",
        1), 20000)


@PATHS
def test_parse_many_ops_laid_over_lines_in_one_function_linear(path):
    assert_linear(path, lambda n: _function(_ops_over_lines(n)), 240)


@PATHS
def test_parse_nested_scf_for_linear(path):
    def make(n):
        body = "  %c0 = arith.constant 0 : index\n"
        body += "".join(f"  scf.for %i{i} = %c0 to %n step %n {{\n"
                        f"  %v{i} = arith.addf %x, %x : f32\n" for i in range(n))
        return _function(body + "  }\n" * n)
    assert_linear(path, make, 450)


@PATHS
def test_parse_many_sibling_regions_of_whole_lines_linear(path):
    """The shape `parser.whole_line_unit` builds without the pre-lexer: a function whose
    regions (and theirs) hold a whole op on each line."""
    def make(n):
        body = "  %c0 = arith.constant 0 : index\n"
        body += "".join(f"  scf.for %i{i} = %c0 to %n step %n {{\n"
                        f"    %v{i} = arith.addf %x, %x : f32\n"
                        f"    scf.if %b {{\n      gpu.memcpy %buf, %buf : memref<?xf32>, "
                        f"memref<?xf32>\n    }}\n  }}\n" for i in range(n))
        return _function(body)
    assert_linear(path, make, 300)


@PATHS
def test_parse_nested_generic_regions_linear(path):
    assert_linear(path, lambda n: _function(
        '  "test.r"() ({\n' * n + "  }) : () -> ()\n" * n), 450)


@PATHS
def test_parse_nested_modules_linear(path):
    def make(n):
        return "".join(f"module @m{i} {{\n" + _function(_ops(1), f"@f{i}") for i in range(n)) + (
            "}\n" * n)
    assert_linear(path, make, 90)


@PATHS
def test_parse_nested_angle_brackets_in_types_linear(path):
    def make(n):
        t = "f32"
        for _ in range(n):
            t = f"!test.t<{t}>"
        return _function(f"  %a = gpu.alloc (%n) : memref<?x{t}>\n  \"test.op\"() : () -> {t}\n")
    assert_linear(path, make, 1500)


@PATHS
def test_parse_nested_dense_attribute_linear(path):
    def make(n):
        return _function("  %c = arith.constant dense<" + "[" * n + "-1.5" + "]" * n
                         + "> : tensor<f32>\n" + "  %d = test.op " + "(" * n + ")" * n + "\n")
    assert_linear(path, make, 120000)


@PATHS
def test_parse_long_dense_attribute_linear(path):
    assert_linear(path, lambda n: _function(
        "  %c = arith.constant dense<[" + ", ".join("-1.5" for _ in range(n))
        + f"]> : tensor<{n}xf32>\n"), 90000)


@PATHS
def test_parse_many_results_linear(path):
    assert_linear(path, lambda n: _function(f"  {_values(n)} = test.op : i32\n"), 16000)


@PATHS
def test_parse_many_results_over_lines_linear(path):
    assert_linear(path, lambda n: _function(
        f"  {_values(n, ',' + chr(10) + '  ')} = test.op : i32\n"), 5000)


@PATHS
def test_parse_long_dependency_list_linear(path):
    assert_linear(path, lambda n: _function(
        "  %t = gpu.wait async\n  gpu.wait [" + ", ".join("%t" for _ in range(n)) + "]\n"), 20000)


@PATHS
def test_parse_long_dependency_list_over_lines_linear(path):
    assert_linear(path, lambda n: _function(
        "  %t = gpu.wait async\n  %u = gpu.wait async [" + ",\n".join("%t" for _ in range(n))
        + "]\n"), 2400)


@PATHS
def test_parse_operands_one_per_line_linear(path):
    assert_linear(path, lambda n: _function(
        "  %r = test.op(" + ",\n".join(f"      %x{i}" for i in range(n)) + ") : i32\n"), 3600)


@PATHS
def test_parse_many_block_labels_linear(path):
    def make(n):
        return _function("  cf.br ^bb0\n" + "".join(
            f"^bb{i}(%p{i}: i32,\n    %q{i}: f32):\n  cf.br ^bb{i + 1}\n" for i in range(n))
            + f"^bb{n}:\n")
    assert_linear(path, make, 480)


@PATHS
def test_parse_attribute_dictionary_over_lines_linear(path):
    assert_linear(path, lambda n: _function('  "test.op"() {\n' + "".join(
        f"    a{i} = {i} : i32,\n" for i in range(n)) + "    z = 0 : i32} : () -> ()\n"), 2000)


@PATHS
def test_parse_many_async_ops_of_other_formats_linear(path):
    assert_linear(path, lambda n: _function("".join(
        f"  %d{i}, %t{i} = gpu.create_dn_tensor async [%t] %buf, %n : index into memref<?xf32>\n"
        for i in range(n))), 450)


# --- after the parse: references and positions ---------------------------------------------------


def test_references_many_uses_of_one_argument_linear():
    def make(n):
        text = "func.func @f(%arg0: f32) {\n" + "".join(
            f"  %v{i} = arith.addf %arg0, %arg0 : f32\n" for i in range(n)) + "  return\n}\n"
        ops = parse_document(text).chunks[0].ops
        return ops, nav.name_at(ops, text.index("%arg0,") + 1)

    assert_linear(lambda arg: nav.references(*arg), make, 2000)


def test_line_index_positions_on_one_long_line_linear():
    def make(n):
        ops = [f"%a{i} = gpu.alloc (%n) : memref<?xf32> " for i in range(n)]
        head = "func.func @f(%n: index) { "
        offsets = [len(head) + k for k in itertools.accumulate(map(len, ops), initial=0)][:-1]
        return head + "".join(ops) + "return }\n", offsets

    def run(arg):
        text, offsets = arg
        index = LineIndex(text)
        for offset in offsets:
            index.offset(index.position(offset, UTF16), UTF16)

    assert_linear(run, make, 4500)


def test_split_markers_on_one_long_line_linear():
    """Many `// -----` on one line (none a marker) and many marker lines."""
    from gpu_async_lsp.syntax.lexer import split_chunks

    assert_linear(split_chunks, lambda n: " // -----" * n + "\n// -----\nx\n" * n, 20000)


def test_semantic_tokens_of_a_long_line_and_many_lines_linear():
    from gpu_async_lsp.ide import semantic

    def make(n):
        ops = "".join(f"%a{i} = gpu.alloc (%n) : memref<?xf32> " for i in range(n))
        # and a comment over n lone "\r"s: one token on each of its n lines
        return "func.func @f(%n: index) { " + ops + "return }\n" + "// é\n" * n + "// x\r" * n

    assert_linear(lambda t: semantic.scan(t, 0, len(t)), make, 3000)


def test_unit_positions_of_many_findings_linear():
    """Positions of a unit's findings: many on one long line, and many lines, CRLF too."""
    from gpu_async_lsp.text import positions_of

    def make(n):
        line = "".join(f"%a{i} = gpu.alloc (%n) : memref<?xf32> " for i in range(n))
        lines = "\r\n".join(f"  %b{i} = arith.addi %x, %y : i32" for i in range(n))
        text = line + "\n" + lines
        return text, list(range(0, len(text), 7))

    assert_linear(lambda arg: positions_of(*arg), make, 4500)


def test_unit_positions_of_non_ascii_long_line_linear():
    """Positions counted on a line that is not ASCII: each offset costs the text since the
    previous one, not the line's whole prefix again."""
    from gpu_async_lsp.text import UTF8, positions_of

    def make(n):
        line = "".join(f"%a{i} = gpu.alloc () {{n = \"é𝄞\"}} : memref<?xf32> " for i in range(n))
        text = line + "\n" + "\r\n".join(f"  // ü {i}" for i in range(n))
        return text, list(range(0, len(text), 5))

    assert_linear(lambda arg: positions_of(arg[0], arg[1], UTF8), make, 3000)


def test_suppression_comments_on_many_lines_linear():
    """Findings against suppression comments: each line with the marker read once, each
    finding a bisection."""
    from gpu_async_lsp.async_region.suppression import suppress

    def make(n):
        text = _function("".join(
            f"  gpu.wait // gpu-async-lsp: ignore[{'pre-existing-wait' if i % 2 else 'bogus'}]\n"
            f"  // gpu-async-lsp: ignore\n  gpu.wait\n" for i in range(n)) + _ops(1))
        return text, analyze(text).findings
    assert_linear(lambda arg: suppress(*arg), make, 1500)


def test_suppression_markers_in_strings_of_one_long_line_linear():
    """(At 120k markers the larger line was 13 MB, past the CPU's caches: a CI run measured
    9x for 4x the text, from memory, not from the scan.)"""
    from gpu_async_lsp.async_region.suppression import directives

    def make(n):
        return '  "x.y"() {s = [' + ", ".join(['"// gpu-async-lsp: ignore"'] * n) + "]}\n"
    assert_linear(directives, make, 30_000)


def test_sharing_a_big_batch_of_units_is_linear_in_their_number(monkeypatch):
    """The sharing of the batch of a big first open (its cut was once found by summing all
    sizes again for each unit: 0.2 s at 200k lines, 1.3 s at 500k)."""
    from gpu_async_lsp import parallel
    from gpu_async_lsp.ide import sharing

    class NoProcess:
        def __init__(self, *args):
            pass

        def __call__(self):
            return b""  # an empty stream of results

        def cancel(self):
            pass

    monkeypatch.setattr(parallel, "in_forked_process", NoProcess)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_CHARS", 0)
    one = sharing.analyze_unit("x", None, False, False)
    monkeypatch.setattr(sharing, "analyze_unit", lambda *args: one)
    options = (False, "original", False, "none")
    assert_linear(lambda units: sharing.shared_results(units, options),
                  lambda n: [("x" * 40, None, False, NO_CONTEXT)] * n, 20_000)


def test_suppression_context_of_many_units_on_one_line_linear():
    """What comments outside each unit hide there, for a module written on one line (as
    minified IR is): each unit's line was read again for each unit (80k units: 33 s)."""
    from gpu_async_lsp.async_region.suppression import Outside

    unit = "func.func @f() { return } "

    def make(n):
        return "// gpu-async-lsp: ignore\nmodule {" + unit * n + "}  // gpu-async-lsp: ignore\n"

    def run(text):
        context = Outside(text)
        at = text.index("func.func")
        while at >= 0:
            context.of(at, at + len(unit) - 1)
            at = text.find("func.func", at + 1)
    assert_linear(run, make, 5000)



def test_sharing_many_chunks_is_linear_in_their_number(monkeypatch):
    """The chunk-by-chunk sharing of a big first open of many `// -----` chunks (claims,
    the join of both processes' chunks, units claimed by the other process), with the other
    process's stream empty: this one takes every chunk."""
    from gpu_async_lsp import parallel
    from gpu_async_lsp.ide.host import Analyzer

    class NoProcess:
        def __init__(self, *args):
            pass

        def __call__(self):
            return b""

        def cancel(self):
            pass

    monkeypatch.setattr(parallel, "in_forked_process", NoProcess)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_CHARS", 0)
    chunk = "func.func @f{i}() {{\n  gpu.wait\n  return\n}}\n"
    assert_linear(lambda text: Analyzer().analyze(text, 1, encoding="utf-16"),
                  lambda n: "// -----\n".join(chunk.format(i=i % 50) for i in range(n)), 2_000)


def test_not_lowered_liveness_is_linear_in_the_ops_of_a_function():
    """Which allocs the lowering erases as dead (async_region/lowering.py's liveness): a
    chain of blocks, each passing an alloc on to the next, and nested regions."""
    from gpu_async_lsp.async_region.lowering import LLVM22_LOWERING

    def make(n):
        body = ["func.func @f(%n: index, %c: i1) {",
                "  %a0 = gpu.alloc (%n) : memref<?xf32>",
                "  cf.br ^bb1(%a0 : memref<?xf32>)"]
        for i in range(1, n):
            body += [f"^bb{i}(%x{i}: memref<?xf32>):",
                     f"  %a{i} = gpu.alloc (%n) : memref<?xf32>",
                     f"  scf.if %c {{\n    %d{i} = memref.dim %a{i}, %n : memref<?xf32>\n  }}",
                     f"  cf.br ^bb{i + 1}(%a{i} : memref<?xf32>)"]
        body += [f"^bb{n}(%x{n}: memref<?xf32>):", "  return", "}"]
        return "\n".join(body) + "\n"

    def one_block(n):  # allocs nothing uses, in one block: each is looked up, none found
        return ("func.func @f(%n: index) {\n"
                + "".join(f"  %a{i} = gpu.alloc (%n) : memref<?xf32>\n" for i in range(n))
                + "  return\n}\n")

    for shape in (make, one_block):
        doc = parse_document(shape(10))
        found = analyze(doc, lowering=LLVM22_LOWERING).findings
        assert [f.code for f in found] == ["sync-gpu-ops"]  # every alloc is dead: none left
        assert_linear(lambda text: analyze(parse_document(text), lowering=LLVM22_LOWERING),
                      shape, 1500)


# --- the brace scan written for C ------------------------------------------------------------

_LINESCAN_TWIN = as_python("gpu_async_lsp/syntax/linescan.py")
# The scan and how often it runs on one input, so that its n case takes some 20 ms: compiled,
# it reads 600k characters in about a millisecond.
_BRACE_SCANS = {
    "package": (linescan.brace_scan, 20 if linescan.COMPILED else 1),
    "python": (_LINESCAN_TWIN.brace_scan, 1),
}


@pytest.mark.parametrize("which", _BRACE_SCANS)
@pytest.mark.parametrize("shape", ["escaped-quotes", "unclosed-metadata", "comments"])
def test_brace_scan_linear(which, shape):
    """The shapes that made a plain brace scan quadratic (a string that does not close, then
    many escaped quotes: each would be read as a string to the line's end; `{-#` that nothing
    closes, on many lines), and comment lines."""
    scan, times = _BRACE_SCANS[which]
    n = 200_000 if which == "package" and linescan.COMPILED else 150_000
    make = {
        "escaped-quotes": lambda k: '"' + '\\" ' * k + "}\n",
        "unclosed-metadata": lambda k: "%v = test.op {-# : i32 }\n" * (k // 8),
        "comments": lambda k: '// "{ x\n' * (k // 3),
    }[shape]

    def run(text: str) -> None:
        for _ in range(times):
            scan(text, 0, len(text))

    assert_linear(run, make, n)
