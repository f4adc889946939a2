"""Why `mlir-opt-22`'s plain pipeline is not the reference for LLVM's own `Dialect/GPU/ops.mlir`
(docs/ARCHITECTURE.md, "Where the reference pipeline stops short").

That file holds `module attributes {gpu.container_module} { ... }` and more top-level ops after
it, so MLIR wraps everything in an implicit module and the container module is *nested*.
`builtin.module(func.func(gpu-async-region))` runs the pass on the functions of the top-level
module only, and `gpu-kernel-outlining` outlines the launches of the functions of the module it
runs on only: on the file as a whole both leave `@foo`, `@alloc`, `@no_args` and
`@launch_with_module_func_attr` as written. The product rewrites host functions at any depth
of nested modules (what a user running `--fix` on the file wants); a pipeline that reaches the
nested module does to them what the product does: the corpus tests compare with one
(tests/differential/mlir_reference.py, PASS_PIPELINE; the outlining reference likewise).
"""

from __future__ import annotations

import pytest

from gpu_async_lsp.async_region import analyze, fix_text
from gpu_async_lsp.async_region.rewriter import LLVM22
from tests.corpora import CORPORA, require_corpus
from tests.differential.function_compare import host_function_texts
from tests.mlir_tools import mlir_opt

pytestmark = pytest.mark.mlir_opt

OPS = "upstream/mlir/test/Dialect/GPU/ops.mlir"
FLAGS = ("-allow-unregistered-dialect",)
TOP_LEVEL = "--pass-pipeline=builtin.module(func.func(gpu-async-region))"
NESTED = ("--pass-pipeline=builtin.module(func.func(gpu-async-region),"
          "builtin.module(func.func(gpu-async-region)))")


@pytest.fixture(scope="module")
def ops_text() -> str:
    require_corpus("corpus")
    return (CORPORA["corpus"][0] / OPS).read_text(encoding="utf-8")


def test_ops_mlir_functions_lie_in_a_nested_module(ops_text):
    """The top-level pipeline leaves the file as it reads it: the pass never visits them."""
    printed = mlir_opt(ops_text, *FLAGS, check=True).stdout
    assert mlir_opt(ops_text, *FLAGS, TOP_LEVEL, check=True).stdout == printed
    assert printed.startswith("#map = affine_map") or printed.lstrip().startswith("module {")
    assert "\n  module attributes {gpu.container_module} {" in printed
    # ... while the product rewrites the nested host functions that hold synchronous GPU ops.
    rewritten = {fn.name for fn in analyze(ops_text, semantics=LLVM22).functions
                 if fn.rewritable}
    assert {"@foo", "@alloc"} <= rewritten


def test_ops_mlir_nested_pipeline_fails_on_the_launches(ops_text):
    """Reaching the nested module, the pass fails on its inline `gpu.launch`es (as the product's
    `launch-not-outlined` says); without them it rewrites @foo and @alloc as the product does
    (tests/integration/test_corpus_llvm22.py compares every function so)."""
    proc = mlir_opt(ops_text, *FLAGS, NESTED)
    assert proc.returncode != 0
    assert "'gpu.launch' op replace with gpu.launch_func first" in proc.stderr
    blocked = {fn.name for fn in analyze(ops_text, semantics=LLVM22).functions
               if any(b.code == "launch-not-outlined" for b in fn.blockers)}
    assert {"@no_args", "@launch_with_module_func_attr"} <= blocked


def test_ops_mlir_top_level_outlining_leaves_nested_launches(ops_text):
    """`gpu-kernel-outlining` on the top-level module leaves the nested module's launches; on
    the nested module it outlines them all (so --thread-launch is compared with that)."""
    top = mlir_opt(ops_text, *FLAGS, "--pass-pipeline=builtin.module(gpu-kernel-outlining)",
                   check=True).stdout
    nested = mlir_opt(ops_text, *FLAGS,
                      "--pass-pipeline=builtin.module(builtin.module(gpu-kernel-outlining))",
                      check=True).stdout
    functions = dict(host_function_texts(top))
    assert "gpu.launch blocks" in functions["@no_args"]
    assert "gpu.launch blocks" not in nested and "gpu.launch async" not in nested
    # With --thread-launch the product threads those launches in place.
    fixed = fix_text(ops_text, semantics=LLVM22, thread_launch=True)
    assert "gpu.launch async [" in dict(host_function_texts(fixed))["@no_args"]
