"""async_region/lowering.py: the `not-lowered` rules on their own, the option through `check`,
and the findings after --fix. Whether the rules are LLVM 22's is
tests/integration/test_lowering_reference.py's question (mlir-opt-22 as the oracle)."""

from __future__ import annotations

import pytest

from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.lowering import LLVM22_LOWERING, NO_LOWERING
from gpu_async_lsp.cli import main
from gpu_async_lsp.ide.host import Analyzer


def _not_lowered(text: str, lowering: str = LLVM22_LOWERING) -> list[str]:
    return [f.message.split(": ", 1)[1] for f in analyze(text, lowering=lowering).findings
            if f.code == F.NOT_LOWERED]


def _function(body: str, args: str = "%m: memref<16xf32>, %v: f32, %n: index, "
              "%a: !gpu.async.token, %b: !gpu.async.token") -> str:
    return f"func.func private @use(memref<16xf32>)\nfunc.func @f({args}) {{\n{body}  return\n}}\n"


@pytest.mark.parametrize("line, why", [
    ("gpu.memcpy %m, %m : memref<16xf32>, memref<16xf32>",
     "it must be async with exactly one dependency"),
    ("%t = gpu.memcpy async %m, %m : memref<16xf32>, memref<16xf32>",
     "it must be async with exactly one dependency"),
    ("%t = gpu.memset async [%a, %b] %m, %v : memref<16xf32>, f32",
     "it must be async with exactly one dependency"),
    ("%t = gpu.dealloc async [%a] %m : memref<16xf32>", None),
    ("%t = gpu.memset async [%a] %m, %v : memref<16xf32>, f32", None),
    ("%t = gpu.memset async [%a] %m, %v : memref<16xf32>, f32 loc(\"x.mlir\":3:4)", None),
])
def test_memory_op_rules(line, why):
    found = _not_lowered(_function(f"  {line}\n"))
    assert found == ([why] if why else [])


def test_an_alloc_is_judged_only_if_something_live_uses_it():
    """MLIR erases an alloc nothing live uses: no op is left to report."""
    dead = "  %r = gpu.alloc () : memref<16xf32>\n  %x = memref.load %r[%n] : memref<16xf32>\n"
    assert _not_lowered(_function(dead)) == []
    used = "  %r = gpu.alloc () : memref<16xf32>\n  func.call @use(%r) : (memref<16xf32>) -> ()\n"
    assert _not_lowered(_function(used)) == ["it must be async with exactly one dependency"]
    # Used only by a branch to a block whose argument nothing uses: dead too.
    branch = ("  %r = gpu.alloc () : memref<16xf32>\n  cf.br ^bb1(%r : memref<16xf32>)\n"
              "^bb1(%x: memref<16xf32>):\n")
    assert _not_lowered(_function(branch)) == []
    # An op in a block no branch reaches is erased with it, whatever it does.
    unreachable = ("  cf.br ^bb2\n^bb1:\n  gpu.memcpy %m, %m : memref<16xf32>, memref<16xf32>\n"
                   "  cf.br ^bb2\n^bb2:\n")
    assert _not_lowered(_function(unreachable)) == []


@pytest.mark.parametrize("memref, why", [
    ("memref<16xf32, strided<[2]>>", "its memref must have the identity layout, not strided<[2]>"),
    ("memref<16xf32, strided<[1]>>", None),
    ("memref<16xf32, strided<[1], offset: 0>>", None),
    ("memref<16xf32, affine_map<(d0) -> (d0)>>", None),
    ("memref<4x4xf32, strided<[4, 1]>>",
     "its memref must have the identity layout, not strided<[4, 1]>"),
    ("memref<16xf32, #gpu.address_space<global>>",
     "its memref's memory space #gpu.address_space<global> is not converted"),
    ("memref<16xf32, 1>", None),
    ("memref<16xf32, #layout>", None),  # an alias: what it is cannot be told here
])
def test_memset_layouts(memref, why):
    body = f"  %t = gpu.memset async [%a] %x, %v : {memref}, f32\n"
    found = _not_lowered(_function(body, f"%x: {memref}, %v: f32, %a: !gpu.async.token"))
    assert found == ([why] if why else [])


@pytest.mark.parametrize("element, lowered", [
    ("f32", True), ("i32", True), ("f16", True), ("bf16", True), ("i16", True),
    ("i8", False), ("f64", False), ("i64", False), ("i1", False), ("index", False)])
def test_memset_value_width(element, lowered):
    body = f"  %t = gpu.memset async [%a] %x, %v : memref<16x{element}>, {element}\n"
    found = _not_lowered(_function(body, f"%x: memref<16x{element}>, %v: {element}, "
                                         "%a: !gpu.async.token"))
    assert found == ([] if lowered else [f"its value must be 16 or 32 bits wide, not {element}"])


def test_lowering_none_reports_nothing_and_the_server_follows_its_setting():
    text = _function("  gpu.memcpy %m, %m : memref<16xf32>, memref<16xf32>\n")
    assert _not_lowered(text, NO_LOWERING) == []
    codes = {f.code for f in Analyzer(lowering=LLVM22_LOWERING).analyze(text, 1).findings}
    assert F.NOT_LOWERED in codes
    assert F.NOT_LOWERED not in {f.code for f in Analyzer().analyze(text, 1).findings}


HOST_SHARED = ("func.func @f(%n: index) {\n"
               "  %s = gpu.alloc host_shared (%n) : memref<?xf32>\n"
               "  %d = gpu.alloc (%n) : memref<?xf32>\n"
               "  gpu.memcpy %d, %s : memref<?xf32>, memref<?xf32>\n"
               "  return\n}\n")


def test_check_reports_as_written_and_after_fix_as_the_rewrite_leaves_it(tmp_path, capsys):
    f = tmp_path / "a.mlir"
    f.write_text(HOST_SHARED)
    assert main(["check", str(f)]) == 0
    out = capsys.readouterr().out
    # The alloc and the memcpy as written; the host_shared alloc is synchronous: lowered.
    assert [line.split(": ")[0].rsplit(":", 2)[1] for line in out.splitlines()
            if "[not-lowered]" in line] == ["3", "4"]
    assert main(["check", "--fix", str(f)]) == 0
    out = capsys.readouterr().out
    # The rewrite leaves the host_shared alloc synchronous (LLVM 22 lowers it only so) and
    # makes the others async with one dependency: nothing left unlowered.
    assert "[not-lowered]" not in out
    assert "  %s = gpu.alloc host_shared (%n) : memref<?xf32>\n" in f.read_text()
    f.write_text(HOST_SHARED)
    assert main(["check", "--lowering", "none", "--fix", str(f)]) == 0
    capsys.readouterr()
    # Without the lowering, exactly the pass: the host_shared alloc made async too.
    assert "gpu.alloc async [%t0] host_shared" in f.read_text()
    f.write_text(HOST_SHARED)
    assert main(["check", "--lowering", "none", str(f)]) == 0
    assert "[not-lowered]" not in capsys.readouterr().out


def test_check_reads_lowering_from_the_configuration(tmp_path, capsys):
    (tmp_path / "gpu-async-lsp.toml").write_text('lowering = "none"\n')
    f = tmp_path / "a.mlir"
    f.write_text(HOST_SHARED)
    assert main(["check", str(f)]) == 0
    assert "[not-lowered]" not in capsys.readouterr().out
    assert main(["check", "--lowering", "llvm22", str(f)]) == 0
    assert "[not-lowered]" in capsys.readouterr().out


THREADED_WAIT = ("func.func @f(%n: index) {\n"
                 "  %t1 = gpu.wait async\n"
                 "  %a = gpu.alloc (%n) : memref<?xf32>\n"
                 "  gpu.wait [%t1]\n"
                 "  func.call @use(%a) : (memref<?xf32>) -> ()\n"
                 "  return\n}\n"
                 "func.func private @use(memref<?xf32>)\n")


def test_the_fix_of_llvm22_threading_destroys_no_stream_twice(tmp_path, capsys):
    """LLVM 22's pass threads the chain into a pre-existing `gpu.wait [%t1]`: the wait gets
    the alloc's token too, which (the alloc made async on %t1) is on %t1's stream: the
    program the issue saw crash. With the lowering, the wait keeps one token per stream, the
    last (`gpu.wait [%t0]`: the reduced wait that ran on the H200); without it
    (`--lowering none`), the pass's text, which `check` then reports."""
    f = tmp_path / "a.mlir"
    f.write_text(THREADED_WAIT)
    assert main(["check", "--semantics", "llvm22", "--select", "stream-hazard", str(f)]) == 0
    assert "[stream-hazard]" not in capsys.readouterr().out  # as written: one token
    main(["check", "--fix", "--semantics", "llvm22", str(f)])
    assert "[stream-hazard]" not in capsys.readouterr().out
    fixed = f.read_text()
    assert "  %a, %t0 = gpu.alloc async [%t1] (%n) : memref<?xf32>\n  gpu.wait [%t0]\n" in fixed
    main(["check", "--semantics", "llvm22", str(f)])
    assert "[stream-hazard]" not in capsys.readouterr().out
    f.write_text(THREADED_WAIT)
    main(["check", "--fix", "--semantics", "llvm22", "--lowering", "none", str(f)])
    capsys.readouterr()
    assert "  gpu.wait [%t0, %t1]\n" in f.read_text()  # %t0: the alloc's, on %t1's stream
    main(["check", "--semantics", "llvm22", "--select", "stream-hazard", str(f)])
    again = [line for line in capsys.readouterr().out.splitlines() if "[stream-hazard]" in line]
    assert len(again) == 1 and "are on one stream, which it would synchronize and destroy twice" in again[0]


@pytest.mark.parametrize("semantics", ["original", "llvm22", "sync-only"])
def test_a_function_without_a_gpu_wait_has_no_stream_hazard(semantics):
    """The analysis looks for stream hazards only in functions whose walk met a `gpu.wait`
    (`FunctionRewrite.has_wait`): without one no stream is ever destroyed. Checked against
    the full look (`stream_hazards`) on generated programs of both profiles, and the two
    kinds of function are both there."""
    from gpu_async_lsp.async_region.lowering import stream_hazards
    from tests.differential.program_generator import generate_program
    from tests.differential.program_generator_llvm22 import generate_llvm22_program

    kinds = set()
    for seed in range(150):
        for generate in (generate_program, generate_llvm22_program):
            a = analyze(generate(seed), semantics=semantics, lowering=LLVM22_LOWERING)
            for rw in a.functions:
                kinds.add(rw.has_wait)
                if not rw.has_wait:
                    assert stream_hazards(rw.func, rw.name) == [], (seed, rw.name)
    assert kinds == {True, False}
