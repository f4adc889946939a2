"""Test helper: seeded GPU host programs with inline `gpu.launch` ops, for the differential
tests of `--thread-launch`.

`generate_launch_program(seed)` returns one `.mlir` module like `generate_llvm22_program`'s
(same kernels, synchronous and already-async GPU ops, `gpu.launch_func`, allocations, copies,
host ops with side effects, nested `scf` regions, `async.execute`, multi-block functions,
comments, odd indentation, colliding names), where a GPU op is often an inline
`gpu.launch blocks(...) threads(...) {...}`:

- at every depth: directly in the function, in `scf.for`, `scf.if`, `scf.while`,
  `scf.execute_region` and `async.execute` bodies, in the blocks of a multi-block function;
- written on one line (header and `{`, the body below; or all of it, `{ gpu.terminator }`),
  over several lines (each clause on a line of its own, grouped at random, a comment line
  between two clauses, the op name alone on the first line), with a trailing comment;
- with `clusters(...) in (...)`, `dynamic_shared_memory_size`, `module(@m) function(@f)`,
  `workgroup(...)` and `private(...)` attributions;
- synchronous, or already `async` (`%tk = gpu.launch async [deps]`, in the functions that are
  not *clean*, below);
- kernel bodies that are empty, pure, with memory effects, of several blocks, holding
  host-looking GPU ops (`gpu.wait`, `gpu.barrier`: device code, never threaded), or another
  `gpu.launch`.

Half the functions are *clean*: no `gpu.wait`, no already-async op (tokens come from
arguments and calls), so the original rules and LLVM 22's agree on them unless they hold an
`async.execute` (whose phases only LLVM 22's rules have). The others hold waits and
already-async ops too (blocked in the original semantics, threaded in LLVM 22's).

A kernel body free of memory effects is only generated where the launch is directly in the
function's region, unless `effect_free_nested=True`: nested in a host op with regions, such a
launch makes our rewrite differ from the outlined pipeline (see
`test_differential_thread_launch.py`, EFFECT_FREE_KERNEL_NESTED). The token and the values
of an `async.execute` are taken by one later `async.execute` at most, and nothing is awaited
in an `async.execute` body (TWO_DEPENDENT_EXECUTES there).
"""

from __future__ import annotations

import random
import re

from tests.differential.program_generator import (
    DYN,
    F32,
    I32,
    INDEX,
    TOKEN,
    Scope,
    _externals,
    _kernel_module,
)
from tests.differential.program_generator_llvm22 import (
    ATOKEN,
    AVALUE,
    Llvm22FunctionGenerator,
    _token_externals,
)

WORKGROUP = "memref<8xf32, #gpu.address_space<workgroup>>"
PRIVATE = "memref<1xf32, #gpu.address_space<private>>"
# Body kinds (weights): what the kernel of a launch does.
BODIES = {"empty": 2, "pure": 2, "effects": 4, "blocks": 1, "device-gpu-ops": 1, "nested": 1}
EFFECT_FREE = {"empty", "pure"}
_EXECUTE_DEPS = re.compile(r"= async\.execute \[([^\]]*)\]")
_EXECUTE_OPERAND = re.compile(r"(%[\w#]+) as %")


class LaunchFunctionGenerator(Llvm22FunctionGenerator):
    """A host function with inline `gpu.launch` ops; `clean` ones hold no `gpu.wait` and no
    already-async op."""

    def __init__(self, rng: random.Random, name: str, max_depth: int, *, clean: bool,
                 async_execute: bool, launch_bias: float, effect_free_nested: bool):
        sync_bias = 1.0 if clean else rng.choice([0.3, 0.6])
        super().__init__(rng, name, max_depth, sync_bias=sync_bias, async_execute=async_execute,
                         generic_ops=False)
        self.clean = clean
        self.launch_bias = launch_bias
        self.effect_free_nested = effect_free_nested
        self.symbols = 0  # `module(@...) function(@...)` names given so far
        self.in_execute = 0  # the async.execute bodies being generated

    # -- values --------------------------------------------------------------------------------

    def make_value(self, scope: Scope, ty: str, depth: int) -> str:
        if ty == TOKEN and self.clean:
            name = self.fresh("r")
            self.emit(depth, f"{name} = func.call @ext_token() : () -> {TOKEN}")
            scope.add(TOKEN, name)
            return name
        return super().make_value(scope, ty, depth)

    def wait_op(self, scope: Scope, depth: int) -> None:
        if self.clean:
            self.pure_op(scope, depth)
        else:
            super().wait_op(scope, depth)

    # -- regions -------------------------------------------------------------------------------

    def async_execute(self, scope: Scope, depth: int, gpu_bias: float) -> None:
        """LLVM 22's `async.execute`, after which the tokens it depends on and the values it
        takes are taken by no other one, and in whose body nothing is awaited: a token of an
        `async.execute` taken twice (by two later ones, or by one and an `async.await` in its
        body) reaches its users in an order our rewrite does not follow
        (`test_differential_thread_launch.py`, TWO_DEPENDENT_EXECUTES)."""
        start = len(self.lines)
        self.in_execute += 1
        try:
            super().async_execute(scope, depth, gpu_bias)
        finally:
            self.in_execute -= 1
        head = self.lines[start]
        deps = _EXECUTE_DEPS.search(head)
        taken = set(deps.group(1).split(", ")) if deps else set()
        taken.update(_EXECUTE_OPERAND.findall(head))
        while scope is not None:
            for ty in (ATOKEN, AVALUE):
                if ty in scope.values:
                    scope.values[ty] = [v for v in scope.values[ty] if v not in taken]
            scope = scope.parent

    def token_effect_op(self, scope: Scope, depth: int) -> None:
        if not self.in_execute:
            super().token_effect_op(scope, depth)
            return
        tok = self.value(scope, TOKEN, depth)  # a host op taking a token, never an await
        if self.rng.random() < 0.5:
            self.emit(depth, f"func.call @ext_token_sink({tok}) : ({TOKEN}) -> ()")
        else:
            name = self.fresh("tp")
            n = self.value(scope, INDEX, depth)
            self.emit(depth, f"{name} = func.call @ext_token_pass({tok}, {n}) : "
                             f"({TOKEN}, {INDEX}) -> {TOKEN}")
            scope.add(TOKEN, name)

    # -- GPU ops -------------------------------------------------------------------------------

    def gpu_op(self, scope: Scope, depth: int) -> None:
        if self.rng.random() < self.launch_bias:
            self.inline_launch(scope, depth, already_async=not self.clean
                               and self.rng.random() < 0.35)
        else:
            super().gpu_op(scope, depth)

    def inline_launch(self, scope: Scope, depth: int, already_async: bool) -> None:
        """`gpu.launch [async [deps]] [clusters(...)] blocks(...) threads(...) ... {body}`."""
        rng = self.rng
        # Every host value the launch uses first: making one may emit a line.
        sizes = [self.value(scope, INDEX, depth) for _ in range(6)]
        cluster = [self.value(scope, INDEX, depth) for _ in range(3)] \
            if rng.random() < 0.25 else None
        shmem = self.value(scope, I32, depth) if rng.random() < 0.3 else None
        kind = rng.choices(list(BODIES), list(BODIES.values()))[0]
        if kind in EFFECT_FREE and depth > 0 and not self.effect_free_nested:
            kind = "effects"
        buf = self.value(scope, DYN, depth) if kind in ("effects", "blocks") else None
        x = self.value(scope, F32, depth) if kind == "effects" and rng.random() < 0.5 else None
        deps = self.deps(scope) if already_async else ""
        token = self.fresh("tk") if already_async else None

        def ids(stem: str) -> list[str]:
            return [self.fresh(f"{stem}{axis}") for axis in "xyz"]

        block_ids, thread_ids = ids("b"), ids("th")
        clauses = []
        if cluster is not None:
            cids, counts = ids("cl"), ids("nc")
            clauses.append(f"clusters({', '.join(cids)}) in "
                           f"({', '.join(f'{c} = {v}' for c, v in zip(counts, cluster))})")
        grid, block = ids("g"), ids("s")
        clauses.append(f"blocks({', '.join(block_ids)}) in "
                       f"({', '.join(f'{g} = {v}' for g, v in zip(grid, sizes[:3]))})")
        clauses.append(f"threads({', '.join(thread_ids)}) in "
                       f"({', '.join(f'{s} = {v}' for s, v in zip(block, sizes[3:]))})")
        if shmem is not None:
            clauses.append(f"dynamic_shared_memory_size {shmem}")
        if rng.random() < 0.08:
            self.symbols += 1
            clauses.append(f"module(@{self.name}_m{self.symbols}) "
                           f"function(@{self.name}_f{self.symbols})")
        attributions = []
        if rng.random() < 0.1:
            wg = self.fresh("wg")
            attributions.append(wg)
            clauses.append(f"workgroup({wg} : {WORKGROUP})")
            if rng.random() < 0.5:
                clauses.append(f"private({self.fresh('pv')} : {PRIVATE})")
        head = f"{token} = gpu.launch async {deps}".rstrip() if token else "gpu.launch"
        self.gpu_ops += 1
        body = self.kernel_body(kind, thread_ids[0], block_ids[0], grid[0], buf, x, attributions)
        inner = self.indent(depth + 1)
        if kind == "empty" and rng.random() < 0.3:
            # All of it on one line.
            self.emit(depth, f"{head} {' '.join(clauses)} {{ gpu.terminator }}{self.loc()}",
                      comment_ok=False)
            return
        if rng.random() < 0.45:
            self.emit(depth, f"{head} {' '.join(clauses)} {{")
        else:
            # Over several lines: the clauses grouped at random, continuation lines indented
            # their own way; the op name alone on the first line, sometimes.
            cont = self.indent(depth) + rng.choice(["    ", "           ", "\t", "  "])
            first = 0 if rng.random() < 0.25 else rng.randint(1, len(clauses) - 1 or 1)
            lines = [" ".join([head, *clauses[:first]])]
            rest = clauses[first:]
            while rest:
                take = rng.randint(1, len(rest))
                lines.append(cont + " ".join(rest[:take]))
                rest = rest[take:]
            lines[-1] += " {"
            if rng.random() < 0.1:
                lines[-1] += "  // kernel"
            if len(lines) > 2 and rng.random() < 0.15:
                lines.insert(rng.randrange(1, len(lines)), cont + "// " + rng.choice(
                    ["a clause below", "größe", "{ not a region"]))
            self.emit(depth, lines[0], comment_ok=False)
            self.lines.extend(lines[1:])
        for line in body:
            self.lines.append(line if line.startswith("^") else inner + line)
        self.lines.append(self.indent(depth) + "}" + self.loc())
        if token is not None:
            scope.add(TOKEN, token)

    def kernel_body(self, kind: str, tx: str, bx: str, gx: str, buf: str | None,
                    x: str | None, attributions: list[str]) -> list[str]:
        """The kernel's lines (device code: never walked by the rewrite)."""
        rng = self.rng
        lines = []
        if kind == "pure":
            for _ in range(rng.randint(1, 3)):
                r = rng.random()
                if r < 0.4:
                    op = rng.choice(["thread_id", "block_dim"])
                    lines.append(f"{self.fresh('id')} = gpu.{op} {rng.choice('xyz')}")
                else:
                    lines.append(f"{self.fresh('i')} = arith.addi {tx}, {rng.choice([bx, gx])} "
                                 ": index")
        elif kind in ("effects", "blocks"):
            v = self.fresh("v")
            lines.append(f"{v} = memref.load {buf}[{tx}] : {DYN}")
            if x is not None:
                w = self.fresh("v")
                lines.append(f"{w} = arith.addf {v}, {x} : f32")
                v = w
            if kind == "blocks":
                lines.append("cf.br ^bb1")
                lines.append("^bb1:")
            lines.append(f"memref.store {v}, {buf}[{tx}] : {DYN}")
            if rng.random() < 0.3:
                lines.append("gpu.barrier")
            if rng.random() < 0.2:
                lines.append(f'gpu.printf "v %f\\n", {v} : f32')
        elif kind == "device-gpu-ops":
            lines.append(rng.choice(["gpu.wait", f"{self.fresh('dw')} = gpu.wait async"]))
            lines.append("gpu.barrier")
        elif kind == "nested":
            inner = [self.fresh(s) for s in ("nb", "nb", "nb", "nt", "nt", "nt",
                                             "ng", "ng", "ng", "ns", "ns", "ns")]
            lines.append(f"gpu.launch blocks({', '.join(inner[:3])}) in "
                         f"({', '.join(f'{g} = {gx}' for g in inner[6:9])}) "
                         f"threads({', '.join(inner[3:6])}) in "
                         f"({', '.join(f'{s} = {tx}' for s in inner[9:])}) {{")
            lines.append("  gpu.barrier")
            lines.append("  gpu.terminator")
            lines.append("}")
        for wg in attributions:
            if rng.random() < 0.5:
                lines.append(f"{self.fresh('wv')} = memref.load {wg}[{tx}] : {WORKGROUP}")
        lines.append("gpu.terminator")
        return lines


def generate_launch_program(seed: int, *, effect_free_nested: bool = False) -> str:
    """One module of GPU host code with inline launches, the same for the same seed."""
    rng = random.Random(seed)
    parts = [f"// launch program {seed}", "module attributes {gpu.container_module} {",
             *_kernel_module(), *_externals(), *_token_externals()]
    async_execute = rng.random() < 0.4
    for k in range(rng.randint(1, 3)):
        fn = LaunchFunctionGenerator(
            rng, f"host{k}", max_depth=rng.choice([1, 2, 2, 3]), clean=rng.random() < 0.5,
            async_execute=async_execute, launch_bias=rng.choice([0.3, 0.5, 0.7]),
            effect_free_nested=effect_free_nested)
        parts.append(fn.function())
    parts.append("}")
    return "\n".join(parts) + "\n"


__all__ = ["LaunchFunctionGenerator", "generate_launch_program"]
