"""LLVM 22's SingleTokenUse on every way of using an `async.execute`'s tokens 2-4 times, against
`mlir-opt-22`'s pass.

SingleTokenUse gives each extra use of a `!async.value<!gpu.async.token>` result a copy of
its own, and LLVM 22 moves one use only (it changes uses while iterating over them): which
user keeps the original and which gets a copy follows MLIR's use-list order, which parsing,
cloning an execute (DeferWait) and growing an execute's operand storage each change
(gpu_async_lsp/async_region/execute.py). Here every sequence of 2-4 users of one execute's
token and value, each an `async.execute` taking the value as an operand (its body synchronous,
or using the value's token directly) or an `async.await` of it, with and without the token as
a dependency, is rewritten with `--semantics llvm22` and compared with the pass (both
reprinted): 234 programs, three invocations of mlir-opt-22.
"""

from __future__ import annotations

import difflib
import itertools

import pytest

from gpu_async_lsp.async_region import fix_text
from gpu_async_lsp.async_region.rewriter import LLVM22
from tests.differential.mlir_reference import reference, reprint

pytestmark = pytest.mark.mlir_opt

HEAD = """\
func.func @f(%n: index) {
  %a, %v = async.execute -> !async.value<!gpu.async.token> {
    %t0 = gpu.wait async
    %m, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>
    async.yield %t1 : !gpu.async.token
  }
"""
TAIL = """\
  %q = gpu.alloc (%n) : memref<?xf32>
  return
}
"""


def _user(kind: str, k: int, deps: str) -> str:
    if kind == "await":
        return (f"  %w{k} = async.await %v : !async.value<!gpu.async.token>\n"
                f"  %m{k}, %e{k} = gpu.alloc async [%w{k}] (%n) : memref<?xf32>\n")
    alloc = f"%m{k}, %e{k} = gpu.alloc async [%x{k}]" if kind == "direct" else f"%m{k} = gpu.alloc"
    return (f"  %b{k} = async.execute {deps}(%v as %x{k}: !async.value<!gpu.async.token>) {{\n"
            f"    {alloc} (%n) : memref<?xf32>\n    async.yield\n  }}\n")


def _programs() -> list[tuple[str, str]]:
    out = []
    for with_deps in (False, True):
        for count in (2, 3, 4):
            for users in itertools.product(("execute", "await", "direct"), repeat=count):
                text = HEAD + "".join(_user(u, k, "[%a] " if with_deps else "")
                                      for k, u in enumerate(users)) + TAIL
                name = ("deps " if with_deps else "") + ", ".join(users)
                out.append((name, text))
    return out


PROGRAMS = _programs()


def test_execute_users_equal_the_pass():
    texts = [t for _, t in PROGRAMS]
    refs = reference(texts)
    ours = reprint([fix_text(t, semantics=LLVM22) for t in texts])
    compared, failures = 0, []
    for (name, _), ref, our in zip(PROGRAMS, refs, ours):
        assert ref.ok, f"{name}: the pass failed:\n{ref.stderr}"
        compared += 1
        if our.output != ref.output:
            diff = "".join(difflib.unified_diff(ref.output.splitlines(True),
                                                our.output.splitlines(True), "pass", "ours"))
            failures.append(f"{name}:\n{diff}")
    assert compared == 234
    assert not failures, f"{len(failures)} of {compared}:\n" + "\n".join(failures[:3])
