"""Test helper: seeded GPU host programs for the differential tests of LLVM 22's semantics.

`generate_llvm22_program(seed)` returns one `.mlir` module like `generate_program`'s (same
kernels, the same synchronous GPU ops, pure and side-effecting host ops, nested `scf` regions,
multi-block functions, comments, odd indentation, colliding names), plus what the original pass
refused and LLVM 22's threads the token through:

- `gpu.wait` bare, `async`, with and without a dependency list (`[]`, `[%a, %b]`, the token
  that is current in the list already);
- already-async GPU ops (`%a, %t = gpu.alloc async [...]`, `%t = gpu.memcpy async ...`,
  `gpu.memset`, `gpu.dealloc`, `gpu.launch_func async` on one line or several), depending on
  tokens from function arguments, `scf.for` iter_args, `scf.if` results (`%r`, `%r#0`),
  block arguments, `func.call` results and `async.await`;
- synchronous GPU ops with a dependency list (`gpu.memcpy [%t] ...`);
- host ops that take a token (`func.call @ext_token_sink(%t)`), functions that return one;
- `async.execute` regions (with dependencies, `!async.value<!gpu.async.token>` operands and
  results) whose tokens are awaited, used by other `async.execute` ops, returned, or unused:
  the shapes of the pass's DeferWait and SingleTokenUse phases;
- now and then a GPU op in generic form (`"gpu.wait"() : () -> ()`), which our rewrite cannot
  edit in place (an `unsupported-form` blocker: the function must be left as written);
- functions with no synchronous GPU op at all (left as written by the rewrite; the pass, which
  is not idempotent, may still change them).

Every program parses in `mlir-opt-22` and the pass succeeds on it (a test checks both): no
`gpu.launch`.
"""

from __future__ import annotations

import random

from tests.differential.program_generator import (
    DYN,
    F32,
    I1,
    INDEX,
    STATIC,
    TOKEN,
    FunctionGenerator,
    Scope,
    _externals,
    _kernel_module,
)

ATOKEN = "!async.token"
AVALUE = "!async.value<!gpu.async.token>"
AINDEX = "!async.value<index>"
# Host functions that take a token (declared in every program, beside EXTERNALS).
TOKEN_EXTERNALS = {
    "ext_token_sink": ((TOKEN,), ()),
    "ext_token_pass": ((TOKEN, INDEX), (TOKEN,)),
}


class Llvm22FunctionGenerator(FunctionGenerator):
    """A host function for LLVM 22's rules; `sync_bias` 0 gives one without synchronous GPU
    ops (only waits and already-async ones)."""

    def __init__(self, rng: random.Random, name: str, max_depth: int, *, sync_bias: float,
                 async_execute: bool, generic_ops: bool):
        super().__init__(rng, name, max_depth, parser_bug_shapes=False)
        self.sync_bias = sync_bias
        self.with_async_execute = async_execute
        self.generic_ops = generic_ops

    # -- values --------------------------------------------------------------------------------

    def make_value(self, scope: Scope, ty: str, depth: int) -> str:
        if ty == TOKEN:
            name = self.fresh("w")
            self.emit(depth, f"{name} = gpu.wait async")
            scope.add(TOKEN, name)
            return name
        return super().make_value(scope, ty, depth)

    def token_list(self, scope: Scope) -> list[str]:
        """Some visible tokens, the latest first now and then (often the current one)."""
        tokens = scope.all(TOKEN)
        if not tokens:
            return []
        picked = self.rng.sample(tokens, self.rng.randint(1, min(3, len(tokens))))
        if self.rng.random() < 0.4 and tokens[-1] not in picked:
            picked.insert(self.rng.randrange(0, len(picked) + 1), tokens[-1])
        return picked

    def deps(self, scope: Scope) -> str:
        """A dependency list as written before the op's operands: none, `[]` or `[%a, ...]`."""
        r = self.rng.random()
        tokens = self.token_list(scope)
        if tokens and r < 0.45:
            return "[" + ", ".join(tokens) + "] "
        if r < 0.52:
            return "[] "
        return ""

    # -- GPU ops -------------------------------------------------------------------------------

    def gpu_op(self, scope: Scope, depth: int) -> None:
        if self.rng.random() < self.sync_bias:
            super().gpu_op(scope, depth)
        else:
            self.async_gpu_op(scope, depth)

    def async_gpu_op(self, scope: Scope, depth: int) -> None:
        """A GPU op that is async already: its token (last result) becomes the current one."""
        kind = self.rng.choices(["alloc", "memcpy", "memset", "dealloc", "launch"],
                                [3, 2, 2, 1, 3])[0]
        token = self.fresh("tk")
        if kind == "launch":
            self.launch(scope, depth, token=token)
        elif kind == "alloc":
            ty = self.rng.choice([DYN, STATIC])
            sizes = self.value(scope, INDEX, depth) if ty == DYN else ""
            deps = self.deps(scope)
            name = self.fresh("a")
            shared = "host_shared " if self.rng.random() < 0.2 else ""
            self.emit(depth, f"{name}, {token} = gpu.alloc async {deps}{shared}({sizes}) : {ty}"
                             f"{self.loc()}")
            scope.add(ty, name)
        else:
            ty = self.rng.choice([DYN, STATIC])
            dst = self.value(scope, ty, depth)
            if kind == "memcpy":
                src = self.value(scope, ty, depth)
                operands, types = f"{dst}, {src}", f"{ty}, {ty}"
            elif kind == "memset":
                operands, types = f"{dst}, {self.value(scope, F32, depth)}", f"{ty}, f32"
            else:
                operands, types = dst, ty
            deps = self.deps(scope)
            self.emit(depth, f"{token} = gpu.{kind} async {deps}{operands} : {types}{self.loc()}")
        scope.add(TOKEN, token)

    def wait_op(self, scope: Scope, depth: int) -> None:
        """A pre-existing `gpu.wait`: bare, async, with a dependency list or not."""
        deps = self.deps(scope).rstrip()
        if self.rng.random() < 0.5:
            name = self.fresh("w")
            self.emit(depth, f"{name} = gpu.wait async{' ' if deps else ''}{deps}")
            scope.add(TOKEN, name)
        else:
            self.emit(depth, f"gpu.wait{' ' if deps else ''}{deps}")

    def generic_op(self, scope: Scope, depth: int) -> None:
        """A GPU op in generic form: the pass rewrites it, our rewrite cannot in place."""
        r = self.rng.random()
        if r < 0.4:
            self.emit(depth, '"gpu.wait"() : () -> ()')
        elif r < 0.7:
            name = self.fresh("w")
            self.emit(depth, f'{name} = "gpu.wait"() : () -> {TOKEN}')
            scope.add(TOKEN, name)
        else:
            m = self.value(scope, DYN, depth)
            self.emit(depth, f'"gpu.dealloc"({m}) : ({DYN}) -> ()')

    # -- host ops ------------------------------------------------------------------------------

    def token_effect_op(self, scope: Scope, depth: int) -> None:
        """A host op with side effects that takes a token, or an `async.await`."""
        awaitable = scope.all(ATOKEN) + scope.all(AVALUE) + scope.all(AINDEX)
        if awaitable and self.rng.random() < 0.6:
            v = self.rng.choice(awaitable)
            if v in scope.all(ATOKEN):
                self.emit(depth, f"async.await {v} : {ATOKEN}")
            elif v in scope.all(AVALUE):
                name = self.fresh("g")
                self.emit(depth, f"{name} = async.await {v} : {AVALUE}")
                scope.add(TOKEN, name)
            else:
                name = self.fresh("ix")
                self.emit(depth, f"{name} = async.await {v} : {AINDEX}")
                scope.add(INDEX, name)
            return
        tok = self.value(scope, TOKEN, depth)
        if self.rng.random() < 0.5:
            self.emit(depth, f"func.call @ext_token_sink({tok}) : ({TOKEN}) -> ()")
        else:
            name = self.fresh("tp")
            n = self.value(scope, INDEX, depth)
            self.emit(depth, f"{name} = func.call @ext_token_pass({tok}, {n}) : "
                             f"({TOKEN}, {INDEX}) -> {TOKEN}")
            scope.add(TOKEN, name)

    # -- regions -------------------------------------------------------------------------------

    def statements(self, scope: Scope, depth: int, count: int, gpu_bias: float) -> None:
        for _ in range(count):
            self.maybe_noise(depth)
            r = self.rng.random()
            if depth < self.max_depth and r < 0.16:
                self.region_op(scope, depth, gpu_bias)
            elif r < 0.16 + 0.4 * gpu_bias:
                self.gpu_op(scope, depth)
            elif r < 0.62:
                self.wait_op(scope, depth)
            elif self.generic_ops and r < 0.65:
                self.generic_op(scope, depth)
            elif r < 0.8:
                self.pure_op(scope, depth)
            elif r < 0.88:
                self.token_effect_op(scope, depth)
            else:
                self.effect_op(scope, depth)

    def region_op(self, scope: Scope, depth: int, gpu_bias: float) -> None:
        kinds = ["for", "if", "while", "execute", "for_token", "if_token"]
        weights = [3, 3, 1, 1, 3, 3]
        if self.with_async_execute:
            kinds.append("async_execute")
            weights.append(5)
        kind = self.rng.choices(kinds, weights)[0]
        getattr(self, f"scf_{kind}" if kind != "async_execute" else kind)(scope, depth, gpu_bias)

    def scf_for_token(self, scope: Scope, depth: int, gpu_bias: float) -> None:
        """`scf.for` carrying a token (and an index, sometimes) through its iterations."""
        lb, ub, step = (self.value(scope, INDEX, depth) for _ in range(3))
        init = self.value(scope, TOKEN, depth)
        iv, acc, res = self.fresh("iv"), self.fresh("tacc"), self.fresh("tr")
        inner = Scope(scope)
        inner.add(INDEX, iv)
        inner.add(TOKEN, acc)
        with_index = self.rng.random() < 0.4
        if with_index:
            k, kinit = self.fresh("k"), self.value(scope, INDEX, depth)
            inner.add(INDEX, k)
            self.emit(depth, f"{res}:2 = scf.for {iv} = {lb} to {ub} step {step} "
                             f"iter_args({acc} = {init}, {k} = {kinit}) -> ({TOKEN}, index) {{",
                      comment_ok=False)
        else:
            self.emit(depth, f"{res} = scf.for {iv} = {lb} to {ub} step {step} "
                             f"iter_args({acc} = {init}) -> ({TOKEN}) {{", comment_ok=False)
        self.body(inner, depth + 1, gpu_bias)
        out = self.value(inner, TOKEN, depth + 1)
        if with_index:
            self.emit(depth + 1, f"scf.yield {out}, {self.value(inner, INDEX, depth + 1)} : "
                                 f"{TOKEN}, index")
        else:
            self.emit(depth + 1, f"scf.yield {out} : {TOKEN}")
        self.lines.append(self.indent(depth) + "}")
        if with_index:
            scope.add(TOKEN, f"{res}#0")
            scope.add(INDEX, f"{res}#1")
        else:
            scope.add(TOKEN, res)

    def scf_if_token(self, scope: Scope, depth: int, gpu_bias: float) -> None:
        """`scf.if` whose branches yield a token."""
        cond = self.value(scope, I1, depth)
        res = self.fresh("tif")
        self.emit(depth, f"{res} = scf.if {cond} -> ({TOKEN}) {{", comment_ok=False)
        for branch in range(2):
            if branch:
                self.lines.append(self.indent(depth) + "} else {")
            inner = Scope(scope)
            self.body(inner, depth + 1, gpu_bias)
            self.emit(depth + 1, f"scf.yield {self.value(inner, TOKEN, depth + 1)} : {TOKEN}")
        self.lines.append(self.indent(depth) + "}")
        scope.add(TOKEN, res)

    def async_execute(self, scope: Scope, depth: int, gpu_bias: float) -> None:
        """`async.execute [deps] (operands) -> results { ... async.yield ... }`."""
        rng = self.rng
        deps = scope.all(ATOKEN)
        deps = rng.sample(deps, rng.randint(1, min(2, len(deps)))) if deps and rng.random() < 0.6 \
            else []
        inner = Scope(scope)
        operands = []
        values = scope.all(AVALUE)
        if values and rng.random() < 0.5:
            for v in rng.sample(values, rng.randint(1, min(2, len(values)))):
                arg = self.fresh("xa")
                operands.append(f"{v} as {arg}: {AVALUE}")
                inner.add(TOKEN, arg)
        results = rng.choices([[], [TOKEN], [INDEX], [INDEX, TOKEN]], [4, 3, 1, 1])[0]
        tok = self.fresh("at")
        lhs = tok
        names = []
        if results:
            val = self.fresh("av")
            lhs += f", {val}" + (f":{len(results)}" if len(results) > 1 else "")
            names = [val] if len(results) == 1 else [f"{val}#{i}" for i in range(len(results))]
        head = f"{lhs} = async.execute"
        if deps:
            head += f" [{', '.join(deps)}]"
        if operands:
            head += f" ({', '.join(operands)})"
        if results:
            wrapped = [f"!async.value<{t}>" for t in results]
            head += " -> " + (wrapped[0] if len(wrapped) == 1 else f"({', '.join(wrapped)})")
        self.emit(depth, head + " {", comment_ok=False)
        self.statements(inner, depth + 1, rng.randint(1, 4), max(gpu_bias, 0.5))
        if rng.random() < 0.2:
            self.effect_op(inner, depth + 1)  # a side effect after the GPU work
        yielded = [self.value(inner, t, depth + 1) for t in results]
        self.emit(depth + 1, "async.yield" + (
            f" {', '.join(yielded)} : {', '.join(results)}" if results else ""))
        self.lines.append(self.indent(depth) + "}")
        scope.add(ATOKEN, tok)
        for name, t in zip(names, results):
            scope.add(AVALUE if t == TOKEN else AINDEX, name)
        # Its token awaited or handed on at once, often (DeferWait looks at those users).
        r = rng.random()
        if r < 0.35:
            self.emit(depth, f"async.await {tok} : {ATOKEN}")
        elif r < 0.5 and TOKEN in results:
            name = self.fresh("g")
            self.emit(depth, f"{name} = async.await {names[results.index(TOKEN)]} : {AVALUE}")
            scope.add(TOKEN, name)

    # -- the function --------------------------------------------------------------------------

    def function(self) -> str:
        rng = self.rng
        params = [("n", INDEX), ("flag", I1), ("buf", DYN), ("fix", STATIC), ("x", F32)]
        if rng.random() < 0.6:
            params.append(("dep", TOKEN))
        if rng.random() < 0.2:
            params.append(("dep2", TOKEN))
        if rng.random() < 0.2:
            params.append(("t1", INDEX))  # a parameter named like a fresh token
        rng.shuffle(params)
        entry = Scope()
        for p, ty in params:
            self.used.add(f"%{p}")
            entry.add(ty, f"%{p}")
        returns = rng.choices([None, INDEX, TOKEN], [6, 2, 2])[0]
        sig = ", ".join(f"%{p}: {ty}" for p, ty in params)
        head = f"  func.func @{self.name}({sig}){f' -> {returns}' if returns else ''} {{"
        gpu_bias = rng.choice([0.3, 0.5, 0.8])
        if rng.random() < 0.25:
            self.blocks(entry, returns, gpu_bias)
        else:
            self.statements(entry, 0, rng.randint(2, 9), gpu_bias)
            self.ret(entry, returns)
        return "\n".join([head, *self.lines, "  }"])

    def ret(self, scope: Scope, returns: str | None) -> None:
        self.emit(0, "return" + (f" {self.value(scope, returns, 0)} : {returns}"
                                 if returns else ""))

    def blocks(self, entry: Scope, returns: str | None, gpu_bias: float) -> None:
        """A multi-block body: forward branches only, block arguments (tokens too) sometimes."""
        n_blocks = self.rng.randint(2, 4)
        labels = [f"^bb{i}" for i in range(n_blocks)]
        arg_types: list[list[str]] = [[]] + [
            self.rng.choice([[], [INDEX], [TOKEN], [INDEX, TOKEN], [TOKEN, DYN]])
            for _ in range(n_blocks - 1)]
        for b in range(n_blocks):
            scope = Scope(entry) if b else entry
            if b:
                args = [(self.fresh("ba"), ty) for ty in arg_types[b]]
                for name, ty in args:
                    scope.add(ty, name)
                sig = f"({', '.join(f'{n}: {t}' for n, t in args)})" if args else ""
                self.lines.append(f"  {labels[b]}{sig}:")
            self.statements(scope, 0, self.rng.randint(1, 5), gpu_bias)
            if b == n_blocks - 1:
                self.ret(scope, returns)
                continue
            succ = self.rng.randrange(b + 1, n_blocks)
            if self.rng.random() < 0.5:
                self.emit(0, f"cf.br {self.successor(scope, labels[succ], arg_types[succ])}")
            else:
                other = self.rng.randrange(b + 1, n_blocks)
                cond = self.value(scope, I1, 0)
                self.emit(0, f"cf.cond_br {cond}, "
                             f"{self.successor(scope, labels[succ], arg_types[succ])}, "
                             f"{self.successor(scope, labels[other], arg_types[other])}")


def _token_externals() -> list[str]:
    lines = []
    for name, (params, results) in TOKEN_EXTERNALS.items():
        res = f" -> {results[0]}" if results else ""
        lines.append(f"  func.func private @{name}({', '.join(params)}){res}")
    return lines


def generate_llvm22_program(seed: int) -> str:
    """One module of GPU host code for LLVM 22's rules, the same for the same seed."""
    rng = random.Random(seed)
    parts = [f"// llvm22 program {seed}", "module attributes {gpu.container_module} {",
             *_kernel_module(), *_externals(), *_token_externals()]
    async_execute = rng.random() < 0.35
    generic_ops = rng.random() < 0.1
    for k in range(rng.randint(1, 3)):
        sync_bias = rng.choices([0.0, 0.3, 0.6], [1, 3, 3])[0]
        fn = Llvm22FunctionGenerator(rng, f"host{k}", max_depth=rng.choice([2, 2, 3]),
                                     sync_bias=sync_bias, async_execute=async_execute,
                                     generic_ops=generic_ops)
        parts.append(fn.function())
    parts.append("}")
    return "\n".join(parts) + "\n"


__all__ = ["TOKEN_EXTERNALS", "generate_llvm22_program"]
