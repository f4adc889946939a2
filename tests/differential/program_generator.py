"""Test helper: a seeded generator of random, valid GPU host programs for the differential tests.

`generate_program(seed)` returns one `.mlir` module: a `gpu.module @kernels` with a few kernels,
some external `func.func` declarations and one to three host functions. The host functions use
`gpu.alloc` (dynamic, static, `host_shared`, with an existing `[%dep]` list), `gpu.memcpy`,
`gpu.memset`, `gpu.dealloc` and `gpu.launch_func` (on one line or split over several), pure ops
(`arith`, `index`, `math`, `affine.apply`, `memref.dim`, `memref.cast`), side-effecting ops
(`memref.load/store/alloc`, `func.call`), `scf.for` / `scf.if` / `scf.while` /
`scf.execute_region` nested two or three deep (with and without results, with pure or GPU
bodies), multi-block functions with `cf.br` / `cf.cond_br`, comments (full-line, trailing, on GPU
ops, non-ASCII), blank lines, odd indentation (spaces and tabs), `loc(...)`, and SSA names that
collide with the rewrite's fresh names (`%t0`, `%t3`, ...).

Every program is meant to parse in `mlir-opt-22` (a test checks it), to contain no op that blocks
the rewrite (no `gpu.wait`, no already-async op, no `gpu.launch`, no generic GPU op) and no
`async.execute` (the pass's phases for it are not done), so that the rewrite must equal the
reference pass on every function.

Shapes that hit known parser bugs are left out unless `parser_bug_shapes=True` (see
tests/unit/test_fixtures.py, XFAIL): a GPU op followed on its line by a region's closing `}`
(`scf.if %c { gpu.dealloc %a : memref<?xf32> }`), or by another op.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

INDEX, I1, I32, F32 = "index", "i1", "i32", "f32"
DYN, STATIC = "memref<?xf32>", "memref<8xf32>"
TOKEN = "!gpu.async.token"

# name -> parameter types (every kernel lives in `gpu.module @kernels`)
KERNELS = {
    "k_scale": (DYN, F32),
    "k_copy": (DYN, DYN),
    "k_empty": (),
    "k_mixed": (INDEX, STATIC, I32),
}
# External host functions: name -> (parameter types, result types).
EXTERNALS = {
    "ext_sink": ((INDEX,), ()),
    "ext_size": ((), (INDEX,)),
    "ext_use": ((DYN,), ()),
    "ext_token": ((), (TOKEN,)),
    "ext_scale": ((F32, INDEX), (F32,)),
}
COMMENTS = [
    "note: host code", "TODO check sizes", "größe der Puffer", "缓冲区", "déjà vu → ok",
    "%t0 = gpu.wait async (not code)", "gpu.wait [%t1]", "{ unbalanced in a comment", "🚀",
    "expected-error {{not a fixture}}",
]


@dataclass
class Scope:
    """The values visible at a point, by type (a child scope sees its parent's)."""

    parent: Scope | None = None
    values: dict[str, list[str]] = field(default_factory=dict)

    def all(self, ty: str) -> list[str]:
        own = self.values.get(ty, [])
        return (self.parent.all(ty) if self.parent else []) + own

    def add(self, ty: str, name: str) -> None:
        self.values.setdefault(ty, []).append(name)


class FunctionGenerator:
    def __init__(self, rng: random.Random, name: str, max_depth: int, parser_bug_shapes: bool):
        self.rng = rng
        self.name = name
        self.max_depth = max_depth
        self.parser_bug_shapes = parser_bug_shapes
        self.used: set[str] = set()
        self.counter = 0
        self.lines: list[str] = []
        self.base_indent = "    "
        self.gpu_ops = 0

    # -- names and lines -----------------------------------------------------------------------

    def fresh(self, stem: str) -> str:
        """A unique SSA name; sometimes one of the rewrite's own fresh names, to collide."""
        r = self.rng.random()
        self.counter += 1
        name = f"%{stem}{self.counter}"
        if r < 0.12:
            name = f"%t{self.rng.randrange(0, 8)}"
        elif r < 0.2:
            name = f"%{self.counter}"
        if name in self.used:
            name = f"%{stem}{self.counter}"
        self.used.add(name)
        return name

    def indent(self, depth: int) -> str:
        r = self.rng.random()
        if r < 0.06:
            return "\t" * (depth + 1)
        if r < 0.12:
            return " " * self.rng.randrange(0, 12)
        return self.base_indent + "  " * depth

    def emit(self, depth: int, text: str, comment_ok: bool = True) -> None:
        trailing = ""
        if comment_ok and self.rng.random() < 0.08:
            trailing = "  // " + self.rng.choice(COMMENTS)
        if self.rng.random() < 0.03:
            trailing += " " * self.rng.randrange(1, 3)  # trailing spaces survive too
        self.lines.append(self.indent(depth) + text + trailing)

    def maybe_noise(self, depth: int) -> None:
        r = self.rng.random()
        if r < 0.06:
            self.lines.append(self.indent(depth) + "// " + self.rng.choice(COMMENTS))
        elif r < 0.09:
            self.lines.append("")

    def loc(self) -> str:
        if self.rng.random() < 0.05:
            return f' loc("host.mlir":{self.rng.randrange(1, 99)}:{self.rng.randrange(1, 9)})'
        return ""

    # -- values --------------------------------------------------------------------------------

    def value(self, scope: Scope, ty: str, depth: int) -> str:
        """A visible value of type `ty`, made on the spot (a constant or alloc) if there is none."""
        choices = scope.all(ty)
        if choices and self.rng.random() < 0.85:
            return self.rng.choice(choices)
        return self.make_value(scope, ty, depth)

    def make_value(self, scope: Scope, ty: str, depth: int) -> str:
        if ty == INDEX:
            name = self.fresh("c")
            self.emit(depth, f"{name} = arith.constant {self.rng.randrange(0, 64)} : index")
        elif ty == I1:
            name = self.fresh("p")
            self.emit(depth, f"{name} = arith.constant {self.rng.choice(['true', 'false'])}")
        elif ty == I32:
            name = self.fresh("s")
            self.emit(depth, f"{name} = arith.constant {self.rng.randrange(0, 512)} : i32")
        elif ty == F32:
            name = self.fresh("f")
            self.emit(depth, f"{name} = arith.constant {self.rng.randrange(0, 9)}.5 : f32")
        elif ty in (DYN, STATIC):
            return self.gpu_alloc(scope, depth, ty)
        else:
            raise ValueError(ty)
        scope.add(ty, name)
        return name

    # -- GPU ops -------------------------------------------------------------------------------

    def deps(self, scope: Scope) -> str:
        """An existing dependency list (no `async`), sometimes: `[]`, `[%dep]`."""
        r = self.rng.random()
        tokens = scope.all(TOKEN)
        if tokens and r < 0.25:
            return "[" + ", ".join(self.rng.sample(tokens, self.rng.randint(1, len(tokens)))) + "] "
        if r < 0.3:
            return "[] "
        return ""

    def gpu_alloc(self, scope: Scope, depth: int, ty: str | None = None) -> str:
        ty = ty or self.rng.choice([DYN, DYN, STATIC])
        name = self.fresh("a")
        deps = self.deps(scope)
        shared = "host_shared " if self.rng.random() < 0.3 else ""
        sizes = self.value(scope, INDEX, depth) if ty == DYN else ""
        space = self.rng.choice([" ", " ", ""]) if not deps and not shared else ""
        self.gpu_ops += 1
        self.emit(depth, f"{name} = gpu.alloc{space}{' ' if deps or shared else ''}"
                         f"{deps}{shared}({sizes}) : {ty}{self.loc()}")
        scope.add(ty, name)
        return name

    def gpu_op(self, scope: Scope, depth: int) -> None:
        kind = self.rng.choices(["alloc", "memcpy", "memset", "dealloc", "launch"],
                                [3, 2, 2, 1, 3])[0]
        if kind == "alloc":
            self.gpu_alloc(scope, depth)
            return
        if kind == "launch":
            self.launch(scope, depth)
            return
        ty = self.rng.choice([DYN, STATIC])
        dst = self.value(scope, ty, depth)
        deps = self.deps(scope)
        self.gpu_ops += 1
        if kind == "memcpy":
            src = self.value(scope, ty, depth)
            self.emit(depth, f"gpu.memcpy {deps}{dst}, {src} : {ty}, {ty}{self.loc()}")
        elif kind == "memset":
            val = self.value(scope, F32, depth)
            self.emit(depth, f"gpu.memset {deps}{dst}, {val} : {ty}, f32{self.loc()}")
        else:
            self.emit(depth, f"gpu.dealloc {deps}{dst} : {ty}{self.loc()}")

    def launch(self, scope: Scope, depth: int, token: str | None = None) -> None:
        """A `gpu.launch_func`; with `token`, already async (`%tok = gpu.launch_func async`)."""
        kernel = self.rng.choice(list(KERNELS))
        dims = [self.value(scope, INDEX, depth) for _ in range(6)]
        args = [(self.value(scope, ty, depth), ty) for ty in KERNELS[kernel]]
        shmem = (f" dynamic_shared_memory_size {self.value(scope, I32, depth)}"
                 if self.rng.random() < 0.2 else "")
        deps = self.deps(scope)
        self.gpu_ops += 1
        head = f"gpu.launch_func {deps}@kernels::@{kernel}"
        if token is not None:
            head = f"{token} = gpu.launch_func async {deps}@kernels::@{kernel}"
        blocks = f"blocks in ({dims[0]}, {dims[1]}, {dims[2]})"
        threads = f"threads in ({dims[3]}, {dims[4]}, {dims[5]})"
        arg_list = f" args({', '.join(f'{v} : {t}' for v, t in args)})" if args else ""
        if self.rng.random() < 0.4:
            # Split over several lines, continuation lines indented their own way.
            cont = self.indent(depth) + "    "
            self.emit(depth, head, comment_ok=False)
            self.lines.append(cont + blocks)
            self.lines.append(cont + threads + shmem)
            if args and self.rng.random() < 0.5:
                self.lines.append(cont + f"args({args[0][0]} : {args[0][1]}"
                                  + ("," if len(args) > 1 else ")"))
                for i, (v, t) in enumerate(args[1:], 1):
                    self.lines.append(cont + "     " + f"{v} : {t}"
                                      + ("," if i < len(args) - 1 else ")"))
            elif args:
                self.lines.append(cont + arg_list.strip())
        else:
            self.emit(depth, f"{head} {blocks} {threads}{shmem}{arg_list}{self.loc()}")

    # -- other ops -----------------------------------------------------------------------------

    def pure_op(self, scope: Scope, depth: int) -> None:
        kind = self.rng.choice(["addi", "muli", "cmpi", "addf", "index", "math", "affine", "dim",
                                "cast", "select", "const"])
        if kind == "const":
            self.make_value(scope, self.rng.choice([INDEX, F32, I1]), depth)
            return
        if kind in ("addi", "muli"):
            a, b = self.value(scope, INDEX, depth), self.value(scope, INDEX, depth)
            name, ty, text = self.fresh("i"), INDEX, f"arith.{kind} {a}, {b} : index"
        elif kind == "cmpi":
            a, b = self.value(scope, INDEX, depth), self.value(scope, INDEX, depth)
            pred = self.rng.choice(["slt", "eq", "ult", "sge"])
            name, ty, text = self.fresh("b"), I1, f"arith.cmpi {pred}, {a}, {b} : index"
        elif kind == "addf":
            a, b = self.value(scope, F32, depth), self.value(scope, F32, depth)
            name, ty, text = self.fresh("x"), F32, f"arith.addf {a}, {b} : f32"
        elif kind == "index":
            a, b = self.value(scope, INDEX, depth), self.value(scope, INDEX, depth)
            name, ty, text = self.fresh("i"), INDEX, f"index.add {a}, {b}"
        elif kind == "math":
            a = self.value(scope, F32, depth)
            op = self.rng.choice(["sqrt", "absf", "exp"])
            name, ty, text = self.fresh("x"), F32, f"math.{op} {a} : f32"
        elif kind == "affine":
            a = self.value(scope, INDEX, depth)
            name, ty = self.fresh("i"), INDEX
            text = f"affine.apply affine_map<(d0) -> (d0 * 2 + 1)>({a})"
        elif kind == "dim":
            m = self.value(scope, DYN, depth)
            c = self.value(scope, INDEX, depth)
            name, ty, text = self.fresh("d"), INDEX, f"memref.dim {m}, {c} : {DYN}"
        elif kind == "cast":
            m = self.value(scope, STATIC, depth)
            name, ty, text = self.fresh("m"), DYN, f"memref.cast {m} : {STATIC} to {DYN}"
        else:
            p = self.value(scope, I1, depth)
            a, b = self.value(scope, INDEX, depth), self.value(scope, INDEX, depth)
            name, ty, text = self.fresh("i"), INDEX, f"arith.select {p}, {a}, {b} : index"
        self.emit(depth, f"{name} = {text}")
        scope.add(ty, name)

    def effect_op(self, scope: Scope, depth: int) -> None:
        kind = self.rng.choice(["load", "store", "call", "call", "memref_alloc", "copy"])
        if kind == "load":
            m, i = self.value(scope, DYN, depth), self.value(scope, INDEX, depth)
            name = self.fresh("v")
            self.emit(depth, f"{name} = memref.load {m}[{i}] : {DYN}")
            scope.add(F32, name)
        elif kind == "store":
            v, m, i = (self.value(scope, F32, depth), self.value(scope, STATIC, depth),
                       self.value(scope, INDEX, depth))
            self.emit(depth, f"memref.store {v}, {m}[{i}] : {STATIC}")
        elif kind == "memref_alloc":
            n = self.value(scope, INDEX, depth)
            name = self.fresh("h")
            self.emit(depth, f"{name} = memref.alloc({n}) : {DYN}")
            scope.add(DYN, name)
        elif kind == "copy":
            a, b = self.value(scope, STATIC, depth), self.value(scope, STATIC, depth)
            self.emit(depth, f"memref.copy {a}, {b} : {STATIC} to {STATIC}")
        else:
            callee = self.rng.choice(list(EXTERNALS))
            params, results = EXTERNALS[callee]
            args = ", ".join(self.value(scope, t, depth) for t in params)
            names = [self.fresh("r") for _ in results]
            lhs = f"{', '.join(names)} = " if names else ""
            sig_res = results[0] if len(results) == 1 else f"({', '.join(results)})"
            # `call` resolves to `func.call` only directly in the function's region: other
            # ops (scf.for, ...) have no default dialect for their regions.
            op = self.rng.choice(["func.call", "call"]) if depth == 0 else "func.call"
            self.emit(depth, f"{lhs}{op} @{callee}({args}) : ({', '.join(params)}) -> {sig_res}")
            for n, t in zip(names, results):
                scope.add(t, n)

    # -- regions -------------------------------------------------------------------------------

    def statements(self, scope: Scope, depth: int, count: int, gpu_bias: float) -> None:
        for _ in range(count):
            self.maybe_noise(depth)
            r = self.rng.random()
            if depth < self.max_depth and r < 0.18:
                self.region_op(scope, depth, gpu_bias)
            elif r < 0.18 + 0.42 * gpu_bias:
                self.gpu_op(scope, depth)
            elif r < 0.8:
                self.pure_op(scope, depth)
            else:
                self.effect_op(scope, depth)

    def body(self, scope: Scope, depth: int, gpu_bias: float) -> None:
        """The ops of a nested block; sometimes only pure ones (the token flows across)."""
        if self.rng.random() < 0.25:
            for _ in range(self.rng.randint(0, 3)):
                self.pure_op(scope, depth)
        else:
            self.statements(scope, depth, self.rng.randint(1, 4), gpu_bias)

    def region_op(self, scope: Scope, depth: int, gpu_bias: float) -> None:
        kind = self.rng.choices(["for", "if", "while", "execute"], [5, 5, 1, 1])[0]
        getattr(self, f"scf_{kind}")(scope, depth, gpu_bias)

    def scf_for(self, scope: Scope, depth: int, gpu_bias: float) -> None:
        lb, ub, step = (self.value(scope, INDEX, depth) for _ in range(3))
        iv = self.fresh("iv")
        inner = Scope(scope)
        inner.add(INDEX, iv)
        if self.rng.random() < 0.3:
            init = self.value(scope, INDEX, depth)
            acc, res = self.fresh("acc"), self.fresh("sum")
            self.emit(depth, f"{res} = scf.for {iv} = {lb} to {ub} step {step} "
                             f"iter_args({acc} = {init}) -> (index) {{", comment_ok=False)
            inner.add(INDEX, acc)
            self.body(inner, depth + 1, gpu_bias)
            self.emit(depth + 1, f"scf.yield {self.value(inner, INDEX, depth + 1)} : index")
            self.lines.append(self.indent(depth) + "}")
            scope.add(INDEX, res)
            return
        if not self.rng.random() < 0.15:
            self.emit(depth, f"scf.for {iv} = {lb} to {ub} step {step} {{", comment_ok=False)
            self.body(inner, depth + 1, gpu_bias)
            self.lines.append(self.indent(depth) + "}")
            return
        # A one-line region of pure ops.
        pure = self.fresh("i")
        line = (f"scf.for {iv} = {lb} to {ub} step {step} {{ "
                f"{pure} = arith.addi {iv}, {iv} : index }}")
        if self.parser_bug_shapes and self.rng.random() < 0.5:
            d = self.value(scope, DYN, depth)
            line = f"scf.for {iv} = {lb} to {ub} step {step} {{ gpu.dealloc {d} : {DYN} }}"
            self.gpu_ops += 1
        self.emit(depth, line)

    def scf_if(self, scope: Scope, depth: int, gpu_bias: float) -> None:
        cond = self.value(scope, I1, depth)
        with_results = self.rng.random() < 0.3
        if with_results:
            res = self.fresh("sel")
            self.emit(depth, f"{res} = scf.if {cond} -> (index) {{", comment_ok=False)
        else:
            self.emit(depth, f"scf.if {cond} {{", comment_ok=False)
        then = Scope(scope)
        self.body(then, depth + 1, gpu_bias)
        if with_results:
            self.emit(depth + 1, f"scf.yield {self.value(then, INDEX, depth + 1)} : index")
        if with_results or self.rng.random() < 0.5:
            self.lines.append(self.indent(depth) + "} else {")
            other = Scope(scope)
            self.body(other, depth + 1, gpu_bias)
            if with_results:
                self.emit(depth + 1, f"scf.yield {self.value(other, INDEX, depth + 1)} : index")
        self.lines.append(self.indent(depth) + "}")
        if with_results:
            scope.add(INDEX, res)

    def scf_while(self, scope: Scope, depth: int, gpu_bias: float) -> None:
        init, bound = self.value(scope, INDEX, depth), self.value(scope, INDEX, depth)
        arg, res = self.fresh("w"), self.fresh("wr")
        self.emit(depth, f"{res} = scf.while ({arg} = {init}) : (index) -> index {{",
                  comment_ok=False)
        before = Scope(scope)
        before.add(INDEX, arg)
        self.body(before, depth + 1, gpu_bias)
        cond = self.fresh("b")
        self.emit(depth + 1, f"{cond} = arith.cmpi slt, {arg}, {bound} : index")
        self.emit(depth + 1, f"scf.condition({cond}) {arg} : index")
        self.lines.append(self.indent(depth) + "} do {")
        after = Scope(scope)
        barg = self.fresh("y")
        after.add(INDEX, barg)
        self.lines.append(self.indent(depth) + f"^bb0({barg}: index):")
        self.body(after, depth + 1, gpu_bias)
        self.emit(depth + 1, f"scf.yield {self.value(after, INDEX, depth + 1)} : index")
        self.lines.append(self.indent(depth) + "}")
        scope.add(INDEX, res)

    def scf_execute(self, scope: Scope, depth: int, gpu_bias: float) -> None:
        """`scf.execute_region` with two blocks: each is handled on its own."""
        self.emit(depth, "scf.execute_region {", comment_ok=False)
        first = Scope(scope)
        self.body(first, depth + 1, gpu_bias)
        self.emit(depth + 1, "cf.br ^bb1")
        self.lines.append(self.indent(depth) + "^bb1:")
        second = Scope(scope)
        self.body(second, depth + 1, gpu_bias)
        self.emit(depth + 1, "scf.yield")
        self.lines.append(self.indent(depth) + "}")

    # -- the function --------------------------------------------------------------------------

    def function(self) -> str:
        rng = self.rng
        params = [("n", INDEX), ("flag", I1), ("buf", DYN), ("fix", STATIC), ("x", F32)]
        if rng.random() < 0.3:
            params.append(("dep", TOKEN))
        if rng.random() < 0.2:
            params.append(("t1", INDEX))  # a parameter named like a fresh token
        rng.shuffle(params)
        entry = Scope()
        for p, ty in params:
            self.used.add(f"%{p}")
            entry.add(ty, f"%{p}")
        returns_index = rng.random() < 0.3
        sig = ", ".join(f"%{p}: {ty}" for p, ty in params)
        ret = " -> index" if returns_index else ""
        head = f"  func.func @{self.name}({sig}){ret} {{"
        gpu_bias = rng.choice([0.3, 0.5, 0.8])
        if rng.random() < 0.25:
            self.blocks(entry, returns_index, gpu_bias)
        else:
            self.statements(entry, 0, rng.randint(2, 9), gpu_bias)
            self.emit(0, "return" + (f" {self.value(entry, INDEX, 0)} : index"
                                     if returns_index else ""))
        return "\n".join([head, *self.lines, "  }"])

    def blocks(self, entry: Scope, returns_index: bool, gpu_bias: float) -> None:
        """A multi-block body: forward branches only, block arguments sometimes."""
        n_blocks = self.rng.randint(2, 4)
        labels = [f"^bb{i}" for i in range(n_blocks)]
        arg_types: list[list[str]] = [[]] + [
            self.rng.choice([[], [INDEX], [DYN], [INDEX, F32]]) for _ in range(n_blocks - 1)]
        for b in range(n_blocks):
            scope = Scope(entry) if b else entry
            if b:
                args = [(self.fresh("ba"), ty) for ty in arg_types[b]]
                for name, ty in args:
                    scope.add(ty, name)
                sig = f"({', '.join(f'{n}: {t}' for n, t in args)})" if args else ""
                comment = "  // pred: somewhere" if self.rng.random() < 0.2 else ""
                self.lines.append(f"  {labels[b]}{sig}:{comment}")
            self.statements(scope, 0, self.rng.randint(1, 5), gpu_bias)
            if b == n_blocks - 1:
                self.emit(0, "return" + (f" {self.value(scope, INDEX, 0)} : index"
                                         if returns_index else ""))
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

    def successor(self, scope: Scope, label: str, types: list[str]) -> str:
        if not types:
            return label
        vals = [self.value(scope, t, 0) for t in types]
        return f"{label}({', '.join(vals)} : {', '.join(types)})"


def _kernel_module() -> list[str]:
    lines = ["  gpu.module @kernels {"]
    for name, types in KERNELS.items():
        params = ", ".join(f"%arg{i}: {t}" for i, t in enumerate(types))
        lines.append(f"    gpu.func @{name}({params}) kernel {{")
        lines.append("      gpu.return")
        lines.append("    }")
    lines.append("  }")
    return lines


def _externals() -> list[str]:
    lines = []
    for name, (params, results) in EXTERNALS.items():
        res = ""
        if results:
            res = " -> " + (results[0] if len(results) == 1 else f"({', '.join(results)})")
        lines.append(f"  func.func private @{name}({', '.join(params)}){res}")
    return lines


def generate_program(seed: int, *, parser_bug_shapes: bool = False) -> str:
    """One module of GPU host code, the same for the same seed."""
    rng = random.Random(seed)
    parts = [f"// program {seed}", "module attributes {gpu.container_module} {",
             *_kernel_module(), *_externals()]
    for k in range(rng.randint(1, 3)):
        fn = FunctionGenerator(rng, f"host{k}", max_depth=rng.choice([2, 2, 3]),
                               parser_bug_shapes=parser_bug_shapes)
        parts.append(fn.function())
    parts.append("}")
    return "\n".join(parts) + "\n"
