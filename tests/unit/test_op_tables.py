"""Op tables: every entry against LLVM 22's ODS records, a sample against the real pass.

The record checks need mlir-tblgen-22 and libmlir-22-dev, the pass checks mlir-opt-22.
Without them these tests skip on a developer's machine and fail under CI (``CI`` set).
"""

from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from gpu_async_lsp.op_tables import (
    DEFAULT_DIALECT,
    KNOWN_OPS,
    NO_EFFECT_OPS,
    RECURSIVE_EFFECT_OPS,
    effect_kind,
    is_async_interface_op,
    is_terminator,
)
from tests.mlir_tools import require, require_tool

ROOT = Path(__file__).resolve().parents[2]


def _load_generator():
    path = ROOT / "tools" / "gen_op_tables.py"
    spec = importlib.util.spec_from_file_location("gen_op_tables", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


gen = _load_generator()


@pytest.fixture(scope="module")
def ods_ops():
    require(gen.tblgen() is not None, "mlir-tblgen-22", "libmlir-22-dev")
    return gen.load_ops()


# --- the tables against the ODS records -------------------------------------------------


@pytest.mark.parametrize("name", sorted(KNOWN_OPS))
def test_op_tables_entry_matches_ods_records(name, ods_ops):
    facts = ods_ops.get(name)
    assert facts is not None, f"{name} is not an op of LLVM 22"
    assert is_terminator(name) == ("::mlir::OpTrait::IsTerminator" in facts.traits)
    assert is_async_interface_op(name) == ("::mlir::gpu::AsyncOpInterface::Trait" in facts.traits)
    # isMemoryEffectFree: own effects (or hand-written ones) first, then the recursive trait,
    # then the interface; no interface and no recursive trait means effects.
    if facts.hand_written_effects or facts.own_effects:
        expected = "effects"
    elif facts.recursive_effects:
        expected = "recursive"
    elif facts.has_effect_interface:
        expected = "none"
    else:
        expected = "effects"
    assert effect_kind(name) == expected
    assert DEFAULT_DIALECT.get(name) == facts.default_dialect


def test_known_ops_all_ods_ops_are_known(ods_ops):
    assert KNOWN_OPS == set(ods_ops)


def test_known_ops_generated_op_classes_are_known(ods_ops):
    # Independent of the record parser: the op names mlir-tblgen wrote into the .h.inc files.
    names = set()
    for dialect, files in gen.DIALECT_FILES.items():
        for td_file in files:
            header = gen.MLIR_INCLUDE / td_file.replace(".td", ".h.inc")
            text = header.read_text()
            found = re.findall(r'getOperationName\(\) \{\s*return [:\w]+\("([^"]+)"\)', text)
            names |= {n for n in found if n.startswith(dialect + ".")}
    assert KNOWN_OPS == names


def test_op_tables_checked_in_module_is_regenerated(ods_ops):
    text = (ROOT / "gpu_async_lsp" / "op_tables.py").read_text()
    version = re.search(r"from LLVM (\S+)", text).group(1)
    assert text == gen.render(ods_ops, version), "run python tools/gen_op_tables.py"


def test_op_tables_sets_disjoint_effect_kinds():
    assert not NO_EFFECT_OPS & RECURSIVE_EFFECT_OPS
    assert NO_EFFECT_OPS | RECURSIVE_EFFECT_OPS <= KNOWN_OPS


def test_op_tables_unknown_op_has_effects():
    assert effect_kind("foo.bar") == "effects"
    assert not is_terminator("foo.bar")
    assert not is_async_interface_op("foo.bar")


def test_op_tables_module_imports_only_future():
    # the source (op_tables.__file__ is its compiled build where the install has one)
    import gpu_async_lsp

    tree = ast.parse((Path(gpu_async_lsp.__file__).parent / "op_tables.py").read_text())
    imports = [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert [getattr(n, "module", None) for n in imports] == ["__future__"]


# --- a sample against the real pass -----------------------------------------------------

_FUNC = """\
func.func private @callee()
func.func @f(%m: memref<16xf32>, %m2: memref<16xf32>, %f: f32, %i: index, %b: i1,
             %t: tensor<4xf32>, %p: !llvm.ptr, %tok: !async.token) {
  gpu.memset %m, %f : memref<16xf32>, f32
  {op}
  gpu.memset %m, %f : memref<16xf32>, f32
  return
}
"""

_STORE = "memref.store %f, %m[%i] : memref<16xf32>"
_FOR = "scf.for %k = %i to %i step %i"
_SUBVIEW = "memref.subview %m[0] [4] [1] : memref<16xf32> to memref<4xf32, strided<[1]>>"
_GENERATE = "tensor.generate {\n  ^bb0(%k: index):\n    tensor.yield %f : f32\n  } : tensor<4xf32>"
_BROADCAST = "%v = vector.broadcast %f : f32 to vector<4xf32>\n  "

# (case id, op text, the names of every op nested in the op). The case id starts with
# the op's name.
SAMPLE = [
    ("arith.addi", "%r = arith.addi %i, %i : index", []),
    ("arith.constant", "%r = arith.constant 1 : i32", []),
    ("arith.divsi", "%r = arith.divsi %i, %i : index", []),
    ("arith.addf", "%r = arith.addf %f, %f : f32", []),
    ("math.exp", "%r = math.exp %f : f32", []),
    ("math.sqrt", "%r = math.sqrt %f : f32", []),
    ("index.add", "%r = index.add %i, %i", []),
    ("index.constant", "%r = index.constant 4", []),
    ("affine.apply", "%r = affine.apply affine_map<(d0) -> (d0 + 1)>(%i)", []),
    ("affine.load", "%r = affine.load %m[%i] : memref<16xf32>", []),
    ("affine.store", "affine.store %f, %m[%i] : memref<16xf32>", []),
    ("affine.for", "affine.for %k = 0 to 4 {\n  }", ["affine.yield"]),
    ("memref.dim", "%r = memref.dim %m, %i : memref<16xf32>", []),
    ("memref.cast", "%r = memref.cast %m : memref<16xf32> to memref<?xf32>", []),
    ("memref.subview", "%r = " + _SUBVIEW, []),
    ("memref.load", "%r = memref.load %m[%i] : memref<16xf32>", []),
    ("memref.store", _STORE, []),
    ("memref.alloc", "%r = memref.alloc() : memref<4xf32>", []),
    ("memref.alloca", "%r = memref.alloca() : memref<4xf32>", []),
    ("memref.dealloc", "memref.dealloc %m2 : memref<16xf32>", []),
    ("memref.copy", "memref.copy %m, %m2 : memref<16xf32> to memref<16xf32>", []),
    ("memref.atomic_rmw", "%r = memref.atomic_rmw addf %f, %m[%i] : (f32, memref<16xf32>) -> f32", []),
    ("memref.alloca_scope", "memref.alloca_scope {\n  }", ["memref.alloca_scope.return"]),
    ("vector.broadcast", "%r = vector.broadcast %f : f32 to vector<4xf32>", []),
    ("vector.load", "%r = vector.load %m[%i] : memref<16xf32>, vector<4xf32>", []),
    ("vector.store", _BROADCAST + "vector.store %v, %m[%i] : memref<16xf32>, vector<4xf32>", []),
    ("vector.transfer_read", "%r = vector.transfer_read %m[%i], %f : memref<16xf32>, vector<4xf32>", []),
    ("vector.print", "vector.print %f : f32", []),
    ("tensor.empty", "%r = tensor.empty() : tensor<4xf32>", []),
    ("tensor.extract", "%r = tensor.extract %t[%i] : tensor<4xf32>", []),
    ("tensor.generate", "%r = " + _GENERATE, ["tensor.yield"]),
    ("llvm.mlir.constant", "%r = llvm.mlir.constant(1 : i32) : i32", []),
    ("llvm.load", "%r = llvm.load %p : !llvm.ptr -> f32", []),
    ("builtin.unrealized_conversion_cast", "%r = builtin.unrealized_conversion_cast %i : index to i64", []),
    ("func.call", "func.call @callee() : () -> ()", []),
    ("cf.assert", 'cf.assert %b, "msg"', []),
    ("gpu.printf", 'gpu.printf "x"', []),
    ("gpu.thread_id", "%r = gpu.thread_id x", []),
    ("gpu.barrier", "gpu.barrier", []),
    ("async.await", "async.await %tok : !async.token", []),
    ("async.execute-pure", "%a = async.execute {\n    async.yield\n  }", ["async.yield"]),
    ("async.execute-store", f"%a = async.execute {{\n    {_STORE}\n    async.yield\n  }}",
     ["memref.store", "async.yield"]),
    ("scf.for-pure", f"{_FOR} {{\n    %x = arith.addi %k, %k : index\n  }}", ["arith.addi", "scf.yield"]),
    ("scf.for-store", f"{_FOR} {{\n    {_STORE}\n  }}", ["memref.store", "scf.yield"]),
    ("scf.for-call", f"{_FOR} {{\n    func.call @callee() : () -> ()\n  }}", ["func.call", "scf.yield"]),
    ("scf.for-if-store", f"{_FOR} {{\n    scf.if %b {{\n      {_STORE}\n    }}\n  }}",
     ["scf.if", "memref.store", "scf.yield", "scf.yield"]),
    ("scf.if-pure", "scf.if %b {\n    %x = math.exp %f : f32\n  }", ["math.exp", "scf.yield"]),
    ("scf.if-store-in-else", f"scf.if %b {{\n  }} else {{\n    {_STORE}\n  }}",
     ["scf.yield", "memref.store", "scf.yield"]),
    ("scf.execute_region-store", f"scf.execute_region {{\n    {_STORE}\n    scf.yield\n  }}",
     ["memref.store", "scf.yield"]),
    ("scf.parallel-pure", "scf.parallel (%k) = (%i) to (%i) step (%i) {\n    scf.reduce\n  }", ["scf.reduce"]),
    ("scf.while-pure", "scf.while : () -> () {\n    scf.condition(%b)\n  } do {\n    scf.yield\n  }",
     ["scf.condition", "scf.yield"]),
    ("unregistered", '"foo.bar"() : () -> ()', []),
]

# Ops whose getEffects is hand-written C++: the tables say "effects" whatever the operands,
# the pass asks the op. On tensors these have no effect, so the pass inserts no gpu.wait.
CONSERVATIVE = [
    ("vector.transfer_read", "%r = vector.transfer_read %t[%i], %f : tensor<4xf32>, vector<4xf32>"),
    ("linalg.fill", "%r = linalg.fill ins(%f : f32) outs(%t : tensor<4xf32>) -> tensor<4xf32>"),
]


def _op_name(case: str) -> str:
    return "foo.bar" if case == "unregistered" else case.split("-")[0]


def _may_have_effects(name: str, nested: list[str]) -> bool:
    """``!isMemoryEffectFree`` from the tables; ``nested`` is every op inside, flattened."""
    kind = effect_kind(name)
    if kind == "recursive":
        return any(effect_kind(n) == "effects" for n in nested)
    return kind == "effects"


def _waits_before_op(op_text: str) -> bool:
    """Run the pass on the op between two synchronous gpu.memsets; True if it put a
    ``gpu.wait [...]`` before the op (then the second memset needs a new ``gpu.wait async``)."""
    result = subprocess.run(
        [require_tool("mlir-opt-22"), "--allow-unregistered-dialect",
         "--pass-pipeline=builtin.module(func.func(gpu-async-region))"],
        input=_FUNC.replace("{op}", op_text),
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    fresh_tokens = result.stdout.count("gpu.wait async\n")
    assert fresh_tokens in (1, 2), result.stdout
    return fresh_tokens == 2


@pytest.mark.mlir_opt
@pytest.mark.parametrize(("case", "op_text", "nested"), SAMPLE, ids=[c for c, _, _ in SAMPLE])
def test_effect_kind_op_between_sync_gpu_ops_matches_pass_wait(case, op_text, nested):
    name = _op_name(case)
    assert name in KNOWN_OPS or case == "unregistered"
    assert _waits_before_op(op_text) == _may_have_effects(name, nested)


@pytest.mark.mlir_opt
@pytest.mark.parametrize(("name", "op_text"), CONSERVATIVE, ids=[n for n, _ in CONSERVATIVE])
def test_effect_kind_hand_written_effects_on_tensor_is_conservative(name, op_text):
    assert effect_kind(name) == "effects"
    assert not _waits_before_op(op_text)


def test_effect_kind_sample_covers_every_covered_dialect():
    dialects = {_op_name(case).split(".")[0] for case, _, _ in SAMPLE}
    assert {"builtin", "func", "arith", "math", "index", "affine", "memref", "scf", "vector",
            "tensor", "llvm", "gpu", "async", "cf"} <= dialects


# --- default dialects against the real parser -------------------------------------------

# Each op of DEFAULT_DIALECT with a bare op name in its region, and the name it resolves to.
BARE_NAME_OK = {
    "builtin.module": ("module {\n  module {\n  }\n}", "builtin.module"),
    "func.func": ("func.func @f() {\n  return\n}", "func.return"),
    "async.func": ("async.func @f() -> !async.token {\n  return\n}", "async.return"),
}

# Regions whose op sets no default dialect (or one without the op): the bare name fails.
BARE_NAME_REJECTED = [
    ("gpu.func", "gpu.module @g {\n  gpu.func @k() kernel {\n    return\n  }\n}"),
    ("gpu.module", "gpu.module @g {\n  func @k() {\n  }\n}"),
    ("gpu.launch", "func.func @f(%c: index) {\n  gpu.launch blocks(%a, %b, %d) in (%e = %c, %g = %c,"
     " %h = %c) threads(%i, %j, %k) in (%l = %c, %m = %c, %n = %c) {\n    terminator\n  }\n"
     "  return\n}"),
    ("scf.for", "func.func @f(%c: index) {\n  scf.for %i = %c to %c step %c {\n    yield\n  }\n"
     "  return\n}"),
    ("async.execute", "func.func @f() {\n  %t = async.execute {\n    yield\n  }\n  return\n}"),
    ("func.func-module", "func.func @f() {\n  module {\n  }\n  return\n}"),
]


def _parse_generic(text: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [require_tool("mlir-opt-22"), "--mlir-print-op-generic"], input=text, capture_output=True, text=True
    )


def test_default_dialect_probes_cover_table():
    assert set(BARE_NAME_OK) == set(DEFAULT_DIALECT)


@pytest.mark.mlir_opt
@pytest.mark.parametrize("op", sorted(BARE_NAME_OK))
def test_default_dialect_bare_name_in_region_resolves_to_dialect(op):
    text, resolved = BARE_NAME_OK[op]
    result = _parse_generic(text)
    assert result.returncode == 0, result.stderr
    assert f'"{resolved}"' in result.stdout
    assert resolved.startswith(DEFAULT_DIALECT[op] + ".")


@pytest.mark.mlir_opt
@pytest.mark.parametrize(("op", "text"), BARE_NAME_REJECTED, ids=[o for o, _ in BARE_NAME_REJECTED])
def test_default_dialect_other_region_bare_name_is_rejected(op, text):
    result = _parse_generic(text)
    assert result.returncode != 0
    assert "custom op" in result.stderr and "tried '" in result.stderr
    if op in DEFAULT_DIALECT:
        assert f"tried '{DEFAULT_DIALECT[op]}." in result.stderr  # no fallback to builtin
