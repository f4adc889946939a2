"""Analysis layer: which host GPU ops LLVM 22's `gpu-to-llvm` leaves unconverted, silently.

`mlir-opt-22 --gpu-to-llvm` converts a GPU memory op to a runtime call only in some forms and
leaves every other one in the IR as it was, with exit status 0; the failure shows up later, in
`mlir-translate` or at link time. The rules, from the patterns of
mlir/lib/Conversion/GPUCommon/GPUToLLVMConversion.cpp and each confirmed with `mlir-opt-22`
(`tests/integration/test_lowering_reference.py` compares them with it on the corpora, on
generated programs and on a matrix of forms):

- `gpu.alloc`, `gpu.memcpy`, `gpu.memset`, `gpu.dealloc` must be async with exactly one
  dependency (`isAsyncWithOneDependency`: the dependency is the stream the call runs on);
- except a `gpu.alloc host_shared`, which must be synchronous (a `host_shared` alloc with a
  token is not supported);
- the memref of `gpu.alloc` and `gpu.memset`, and the source of `gpu.memcpy`, must have the
  identity layout (`isConvertibleAndHasIdentityMaps`: `strided<[1]>` of rank 1 is one, a
  `strided<[4, 1]>` is not, as the type converter sees them);
- a `gpu.memset` value must be 16 or 32 bits wide (`mgpuMemset16`, `mgpuMemset32`);
- a memref in a `#gpu.address_space<...>` memory space is not converted at all (the pass maps
  no GPU address space);
- an alloc none of whose results is live is not left but erased, and so is every op of a
  block no branch reaches: the conversion drops dead code as MLIR's region DCE tells it
  (`_Liveness`: a value used only by dead ops, or passed only to a block argument nothing
  live uses, is dead).

An op in generic form is judged by its custom-form syntax, which it lacks (no `async`, no
dependency list): the rewrite reports it as `unsupported-form` anyway.

What the lowering reports as an error itself (a memref in an integer memory space given to
`gpu.alloc`, a `gpu.launch_func` with two dependencies) is not repeated here; nor is a
`gpu.launch_func` whose kernel module is not compiled yet (`gpu-module-to-binary` comes first
in a real pipeline), nor device code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpu_async_lsp import regex_cache
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.findings import Finding, Severity
from gpu_async_lsp.async_region.plan import NewOp, token_result, use_name
from gpu_async_lsp.op_tables import KNOWN_OPS, dead_when_unused, effect_kind, is_terminator

if TYPE_CHECKING:
    from gpu_async_lsp.syntax import Op

# The `lowering` option: which lowering the findings are about.
LLVM22_LOWERING = "llvm22"
NO_LOWERING = "none"
LOWERINGS = (LLVM22_LOWERING, NO_LOWERING)

ALLOC, MEMCPY, MEMSET, DEALLOC = "gpu.alloc", "gpu.memcpy", "gpu.memset", "gpu.dealloc"
MEMORY_OPS = frozenset({ALLOC, MEMCPY, MEMSET, DEALLOC})
_DEVICE_BODIES = frozenset({"gpu.launch", "gpu.module", "gpu.func"})

_HOST_SHARED = regex_cache.compile(r"\bhost_shared\b")
_ONE_DEPENDENCY = "it must be async with exactly one dependency"
_ONE_STREAM = "are on one stream"
_MEMSET_WIDTHS = regex_cache.compile(r"(?:[su]?i(?:16|32)|f16|bf16|f32|tf32)\Z")
_IDENTITY_MAP = regex_cache.compile(r"affine_map<\(([^)]*)\)\s*->\s*\(([^)]*)\)>\Z")
_UNIT_STRIDE = regex_cache.compile(r"strided<\[\s*(1)?\s*\](?:\s*,\s*offset\s*:\s*0\s*)?>\Z")


LOWERING_CODES = frozenset({F.NOT_LOWERED, F.STREAM_HAZARD})


def fixed_by_lowering(f: Finding) -> bool:
    """`removed_by_lowering` of a finding."""
    return removed_by_lowering(f.code, f.message)


def removed_by_lowering(code: str, message: str) -> bool:
    """Does `--fix` (with the lowering) remove a finding (its code, its message) of the text
    as written: an op
    with other than one dependency (made async, joined, or given a `gpu.wait async` first),
    two operands of one stream? (Not a layout, a width, a memory space, a host_shared alloc
    written async, a token used after its stream was destroyed.) A synchronous op in a
    function a blocker keeps from the rewrite says yes here and stays: its function's fix
    is the one offered."""
    if code == F.NOT_LOWERED:
        return message.endswith(_ONE_DEPENDENCY)
    return code == F.STREAM_HAZARD and _ONE_STREAM in message


def is_host_shared(op: Op, text: str) -> bool:
    """Is `op` a `gpu.alloc host_shared` (which LLVM 22 lowers only synchronously)?"""
    # The word looked for as a substring first (in C, no regular expression run for the
    # thousands of allocs that do not hold it).
    return (op.name == ALLOC and text.find("host_shared", op.name_end, op.end) >= 0
            and _HOST_SHARED.search(text, op.name_end, op.end) is not None)


def problem(op: Op, text: str, is_async: bool, deps: int) -> str | None:
    """Why LLVM 22's gpu-to-llvm leaves the memory op `op` unconverted when it is async or not
    with `deps` dependencies (as written, or as a rewrite leaves it), or None; whether the
    op is dead (then erased, not left) is the caller's question."""
    name = op.name
    if name not in MEMORY_OPS:
        return None
    if name == ALLOC:
        if is_host_shared(op, text):
            if is_async:
                return "a host_shared allocation must be synchronous"
        elif not is_async or deps != 1:
            return _ONE_DEPENDENCY
    elif not is_async or deps != 1:
        return _ONE_DEPENDENCY
    body = text[op.name_end:op.end]
    if "strided" not in body and "affine_map" not in body and "#" not in body \
            and "loc" not in body:
        # No layout, no memory space attribute: the common case, without reading types.
        if name != MEMSET:
            return None
        value = body[body.rfind(",") + 1:].strip()
        return None if _MEMSET_WIDTHS.match(value) else \
            f"its value must be 16 or 32 bits wide, not {value}"
    types = _types(text, op)
    if not types:
        return None
    memref = types[1] if name == MEMCPY and len(types) > 1 else types[0]
    params = _memref_params(memref)
    if params is None:
        return None
    shape, layout, space = params
    if space is not None and space.startswith("#gpu.address_space<"):
        return f"its memref's memory space {space} is not converted"
    if name == DEALLOC:
        return None
    if layout is not None and not _identity(layout, shape):
        what = "its source memref" if name == MEMCPY else "its memref"
        return f"{what} must have the identity layout, not {layout}"
    if name == MEMSET and len(types) > 1 and not _MEMSET_WIDTHS.match(types[1]):
        return f"its value must be 16 or 32 bits wide, not {types[1]}"
    return None


def finding(op: Op, why: str, function: str | None = None) -> Finding:
    key = (op.name, why)
    message = _MESSAGES.get(key)
    if message is None:
        message = f"'{op.name}' op is not lowered by LLVM 22's gpu-to-llvm: {why}"
        if len(_MESSAGES) < 4096:
            _MESSAGES[key] = message
    return _new(Finding, (_NOT_LOWERED, message, op.name_start, op.name_end, _WARNING, (),
                          function))


_NOT_LOWERED, _WARNING = F.NOT_LOWERED, Severity.WARNING  # read once, not per finding
_new = tuple.__new__  # a Finding made in C (its class's __new__ is Python)


# The message of each (op, reason), one string each: a first open of 50k lines of host code
# makes 10k of these findings with a handful of messages, which the forked process's pickles
# (the pickler keeps one copy of an object, not of equal strings) and the diagnostics repeat.
# Bounded: a reason may name a type or layout of the text.
_MESSAGES: dict[tuple[str, str], str] = {}


def as_written(text: str, func: Op, name: str | None = None,
               ops: list[Op] | None = None) -> list[Finding]:
    """The memory ops of the host function `func` (`name`: its `@f`) that gpu-to-llvm would
    leave, as written."""
    out = []
    liveness = None
    blocks = None
    for op in memory_ops(func) if ops is None else ops:
        g = op.gpu
        is_async = g is not None and g.async_kw is not None
        why = problem(op, text, is_async, len(g.deps) if g is not None else 0)
        if why is None:
            continue
        if blocks is None:
            blocks = _has_blocks(func)
        if not blocks and op.name == ALLOC and _used_by_an_effect(text, op, func):
            out.append(finding(op, why, name))
            continue
        if (op.name == ALLOC or blocks) and liveness is None:
            liveness = _Liveness(text, func)
        if liveness is not None and (id(op) in liveness.unreachable
                                     or (op.name == ALLOC and not liveness.any_live(op))):
            continue  # erased by the conversion: not left
        out.append(finding(op, why, name))
    return out


def rewritten_findings(text: str, func: Op, name: str | None, walker, phases,
                       ops: list[Op] | None = None) -> list[Finding]:
    """The `not-lowered` and `stream-hazard` findings of `func` as the rewrite leaves it,
    from the plan it was just rendered from (`walker`: its op plans and block plans;
    `phases`: LLVM 22's async.execute phases, or None), at offsets of the text as written."""
    blocks = walker.blocks
    # What the ops it inserts, and the operands it adds, use (a token they use is not dead),
    # and the ops whose regions get an inserted op (which has effects).
    uses = set()
    holders = set()
    for bplan in blocks:
        for item in bplan.items:
            if isinstance(item, NewOp):
                new = item
                uses.update(new.deps)
                holders.add(id(bplan.owner))
    if phases is not None:
        for plan in phases.execs.values():
            uses.update(plan.new_yielded)
            uses.update([value for value, _ in plan.new_operands])
    return [*after_rewrite(text, func, walker.plans, name, frozenset(uses), frozenset(holders),
                           ops),
            *stream_hazards_after(blocks, walker.plans, name)]


def after_rewrite(text: str, func: Op, plans: dict, name: str | None = None,
                  inserted_uses: frozenset = frozenset(),
                  inserted_in: frozenset = frozenset(),
                  ops: list[Op] | None = None) -> list[Finding]:
    """The same, as the rewrite leaves the function: `plans` (id(Op) -> OpPlan) says which
    ops it made async, which dependencies it added, which it erased; `inserted_uses`, the
    values the ops it inserts use; `inserted_in`, the ids of the ops whose regions hold them.
    The ops it inserts (`gpu.wait`, `async.await`) are always lowered."""
    out = []
    liveness = None
    blocks = None
    for op in memory_ops(func) if ops is None else ops:
        plan = plans.get(id(op))
        if plan is not None and plan.erased:
            continue
        g = op.gpu
        written_async = g is not None and g.async_kw is not None
        made_async = plan is not None and plan.token is not None
        deps = len(plan.dependencies) if plan is not None else (len(g.deps) if g else 0)
        why = problem(op, text, written_async or made_async, deps)
        if why is None:
            continue
        if blocks is None:
            blocks = _has_blocks(func)
        if (op.name == ALLOC or blocks) and liveness is None:
            liveness = _Liveness(text, func, plans, inserted_uses, inserted_in)
        if liveness is not None and (id(op) in liveness.unreachable or (
                op.name == ALLOC and not liveness.any_live(op)
                and not (made_async and plan.token in liveness.live))):
            continue  # erased by the conversion: not left
        out.append(finding(op, why, name))
    return out


_OP_OF_LINE = regex_cache.compile(r"[ \t]*(?:%[^=\n]*=[ \t]*)?([\w.]+)")


def _used_by_an_effect(text: str, op: Op, func: Op) -> bool:
    """A quick yes to "is a result of `op` live": one is used, within the next
    `_NEAR` characters, on a line whose op has effects that keep it (not a read, an
    allocation or a branch): such an op is live wherever a function without labelled blocks
    holds it. No: ask `_Liveness` (a bounded look per op: the whole function per op was
    quadratic in its allocs)."""
    limit = min(func.end, op.end + _NEAR)
    for r in op.results:
        k = text.find(r.name, op.end, limit)
        while k >= 0:
            after = k + len(r.name)
            if after < len(text) and text[after] in _NAME_CHARS:
                k = text.find(r.name, after, limit)
                continue
            line = text.rfind("\n", 0, k) + 1
            m = _OP_OF_LINE.match(text, line, k)
            if m is not None:
                used_by = m.group(1)
                if used_by in KNOWN_OPS and effect_kind(used_by) == "effects" \
                        and not dead_when_unused(used_by) and not is_terminator(used_by):
                    return True
            k = text.find(r.name, after, limit)
    return False


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.-")
_NEAR = 2048  # characters after an alloc where `_used_by_an_effect` looks for a use


def _has_blocks(func: Op) -> bool:
    """Does the function have a labelled block (which branches may leave unreachable)?"""
    return func.src.find("^", func.start, func.end) >= 0


def memory_ops(func: Op) -> list[Op]:
    """The GPU memory ops of a host function, at any depth of its regions (not in device
    code: a `gpu.launch` body), in text order."""
    out = []
    work = []
    # Loops, not a comprehension: the build reads each op, region and block as the
    # extension type it is (lowering.pxd), its fields as C fields.
    for region in reversed(func.regions):
        for block in reversed(region.blocks):
            work.extend(reversed(block.ops))
    while work:
        op = work.pop()
        name = op.name
        if name in MEMORY_OPS:
            out.append(op)
        if op.regions and name not in _DEVICE_BODIES:
            for region in reversed(op.regions):
                for block in reversed(region.blocks):
                    work.extend(reversed(block.ops))
    return out


_SUCCESSOR_ARGS = regex_cache.compile(r"(\^[\w$.\-]+)\s*\(")


class _Liveness:
    """Which SSA values of a function the conversion keeps, as MLIR's dead-code removal
    decides it (`wouldOpBeTriviallyDead`, region DCE's liveness, unreachable blocks erased):

    - an op is live when its parent is (or it is the function's own) and it is a terminator,
      or could not be trivially dead (effects other than reads and allocations of its own
      results, `op_tables.dead_when_unused`, nested effects for an op with
      RecursiveMemoryEffects), or one of its results is live;
    - a value is live when a live op uses it, except that a branch's successor operand is
      live only when the block argument it feeds is;
    - the ops of a block its region's entry does not reach are erased.

    A worklist: each value and op is marked once; an op waiting for its parent is released
    when the parent becomes live."""

    def __init__(self, text: str, func: Op, plans: dict | None = None,
                 extra: frozenset = frozenset(), holders: frozenset = frozenset()):
        """`plans`, `extra` and `holders`: the function as a rewrite leaves it (id(Op) ->
        OpPlan: the token an op gets, the dependencies put in front; the values the ops it
        inserts use, live as those ops are; the ids of the ops whose regions hold them,
        which cannot be dead)."""
        self.text = text
        self.plans = plans or {}
        self.defining: dict[str, Op | None] = {}  # value -> its op (None: a block argument)
        self.feeds: dict[str, list[str]] = {}  # block argument -> successor operands
        self.live: set[str] = set()
        self.unreachable: set[int] = set()  # ids of the ops of blocks no branch reaches
        self.parent: dict[int, Op | None] = {}  # id(op) -> the op whose region holds it
        self.live_ops: set[int] = set()
        self.waiting: dict[int, list[Op]] = {}  # id(parent) -> ops live once it is
        ops: list[Op] = []
        work = [(func, None, None, True)]
        while work:
            op, parent, labels, reached = work.pop()
            if op is not func:
                if not reached:  # erased with its block, whatever it does
                    self.unreachable.add(id(op))
                else:
                    self.parent[id(op)] = parent
                    ops.append(op)
                    for r in op.results:
                        self.defining[r.name] = op
                    if labels and op.successors:
                        self._successor_operands(op, labels)
            for region in op.regions:
                by_label = {b.label.name: b for b in region.blocks if b.label is not None}
                reachable = _reachable(region.blocks, by_label) if by_label else None
                for block in region.blocks:
                    for a in block.args:
                        self.defining[a.name] = None
                    inner_reached = reached and (reachable is None or id(block) in reachable)
                    inside = None if op is func else op
                    work.extend((inner, inside, by_label, inner_reached) for inner in block.ops)
        for op in ops:
            plan = self.plans.get(id(op))
            if plan is not None and plan.token is not None:
                self.defining[plan.token] = op
        dead = _dead_if_unused(ops, self.parent, holders)
        self._mark([op for op in ops if is_terminator(op.name) or id(op) not in dead], extra)

    def _successor_operands(self, op: Op, labels: dict) -> None:
        text = self.text
        for m in _SUCCESSOR_ARGS.finditer(text, op.name_end, op.end):
            block = labels.get(m.group(1))
            close = text.find(")", m.end(), op.end)
            if block is None or close < 0:
                continue
            names = [u.name for u in op.uses if m.end() <= u.start < close]
            for arg, name in zip(block.args, names):
                self.feeds.setdefault(arg.name, []).append(name)

    def _mark(self, wanted: list[Op], extra: frozenset) -> None:
        text = self.text
        self._values(list(extra), wanted)
        while wanted:
            op = wanted.pop()
            if id(op) in self.live_ops:
                continue
            parent = self.parent.get(id(op))
            if parent is not None and id(parent) not in self.live_ops:
                self.waiting.setdefault(id(parent), []).append(op)
                continue
            self.live_ops.add(id(op))
            wanted.extend(self.waiting.pop(id(op), ()))
            spans = [(m.end(), text.find(")", m.end(), op.end))
                     for m in _SUCCESSOR_ARGS.finditer(text, op.name_end, op.end)] \
                if op.successors else []
            values = [u.name for u in op.uses if not any(s <= u.start < e for s, e in spans)]
            plan = self.plans.get(id(op))
            if plan is not None:
                values.extend(plan.front)
            self._values(values, wanted)

    def _values(self, values: list[str], wanted: list[Op]) -> None:
        """Mark `values` live, and what that makes live: their ops, what feeds them."""
        while values:
            name = values.pop()
            if name in self.live:
                continue
            self.live.add(name)
            owner = self.defining.get(name)
            if owner is not None:
                wanted.append(owner)
            else:  # a block argument: what the branches to it pass is live too
                values.extend(self.feeds.get(name, ()))

    def any_live(self, op: Op) -> bool:
        return any(r.name in self.live for r in op.results)


def _dead_if_unused(ops: list[Op], parent: dict[int, Op | None],
                    holders: frozenset = frozenset()) -> set[int]:
    """The ids of the ops `wouldOpBeTriviallyDead` holds for: no effects, or only reads and
    allocations of their own results, and (RecursiveMemoryEffects) the same of every op
    nested in them, terminators aside. `ops` lists each op before those it holds: walked
    backwards, what an op holds is decided before it (no recursion)."""
    dead: set[int] = set()
    blocked: set[int] = set(holders)  # ops holding an op that could not be dead
    for op in reversed(ops):
        kind = effect_kind(op.name)
        own = kind != "effects" or dead_when_unused(op.name)
        if own and op.name != "gpu.launch" and (kind != "recursive" or id(op) not in blocked):
            dead.add(id(op))
        elif not is_terminator(op.name):
            up = parent.get(id(op))
            if up is not None:
                blocked.add(id(up))
        if id(op) in blocked:  # what holds it holds what it holds
            up = parent.get(id(op))
            if up is not None:
                blocked.add(id(up))
    return dead


def _reachable(blocks: list, by_label: dict) -> set[int]:
    """The ids of the blocks of a region its entry block reaches through branches (MLIR
    erases the others with their ops)."""
    seen = {id(blocks[0])}
    stack = [blocks[0]]
    while stack:
        block = stack.pop()
        for op in block.ops:
            for succ in op.successors:
                target = by_label.get(succ.name)
                if target is not None and id(target) not in seen:
                    seen.add(id(target))
                    stack.append(target)
    return seen


_TRAILING_LOC = regex_cache.compile(r"(?<![\w$.%#!@^\"-])loc\s*\(")  # `loc` ⏎ `(` is one too


def _types(text: str, op: Op) -> list[str]:
    """The types after the op's last top-level `:`, split at top-level commas (its own
    `loc(...)`, if it has one, left out)."""
    depth = 0
    colon = -1
    end = op.end
    m = _TRAILING_LOC.search(text, op.name_end, end)
    if m is not None:
        end = m.start()
    for k in range(op.name_end, end):
        c = text[k]
        if c in "<([{":
            depth += 1
        elif c in ">)]}" and text[k - 1] != "-":  # not the `->` of an affine map
            depth -= 1
        elif c == ":" and depth == 0:
            colon = k
    if colon < 0:
        return []
    return _split(text[colon + 1:end])


def _split(s: str) -> list[str]:
    out, depth, start = [], 0, 0
    for k, c in enumerate(s):
        if c in "<([{":
            depth += 1
        elif c in ">)]}" and (k == 0 or s[k - 1] != "-"):  # not the `->` of an affine map
            depth -= 1
        elif c == "," and depth == 0:
            out.append(s[start:k].strip())
            start = k + 1
    out.append(s[start:].strip())
    return [t for t in out if t]


def _memref_params(memref: str) -> tuple[list[str], str | None, str | None] | None:
    """(shape, layout, memory space) of a `memref<...>` type, or None (not a memref, or a
    parameter whose kind cannot be told: an alias, `#map`)."""
    if not (memref.startswith("memref<") and memref.endswith(">")):
        return None
    params = _split(memref[len("memref<"):-1])
    if not params:
        return None
    shape = _split_dims(params[0])
    rest = params[1:]
    if len(rest) == 2:
        return shape, rest[0], rest[1]
    if not rest:
        return shape, None, None
    only = rest[0]
    if only.startswith(("strided<", "affine_map<")):
        return shape, only, None
    if only[:1].isdigit() or only.startswith("#gpu.address_space<"):
        return shape, None, only
    return None


def _split_dims(shape_and_element: str) -> list[str]:
    """The dimensions of `4x?x8xf32` (the element type last, not returned)."""
    dims = []
    k = 0
    s = shape_and_element
    while True:
        x = s.find("x", k)
        if x < 0 or not (s[k:x].isdigit() or s[k:x] == "?"):
            return dims
        dims.append(s[k:x])
        k = x + 1


def _identity(layout: str, shape: list[str]) -> bool:
    """Does the layout map each index to itself (MLIR then drops it from the type)?"""
    m = _IDENTITY_MAP.match(layout)
    if m is not None:
        return [d.strip() for d in m.group(1).split(",")] == [
            d.strip() for d in m.group(2).split(",")]
    m = _UNIT_STRIDE.match(layout)
    if m is not None:
        return len(shape) == (1 if m.group(1) else 0)
    return False


# -- streams: what the lowered code does with each token -----------------------------------


def stream_hazards(func: Op, name: str | None = None) -> list[Finding]:
    """Where the code LLVM 22's gpu-to-llvm makes of `func` would synchronize and destroy a
    stream (or event) twice, or use one a `gpu.wait` destroyed. The lowering turns a token
    into a stream: `gpu.wait async` creates one, an async op with one dependency runs on its
    dependency's stream and its token *is* that stream; a synchronous `gpu.wait [..]`
    synchronizes and destroys the stream (or event) of each operand. So two operands of one
    wait that share a stream, or a token used after a wait destroyed its stream (in the same
    block, in text order), is a double destroy or a use after destroy at run time. A token of
    anything else (an argument, an `async.await`) is a stream of its own."""
    streams = _Streams(name)
    for block in _blocks(func):
        streams.new_block()
        for op in block.ops:
            g = op.gpu
            if g is not None and op.name in _STREAM_OPS:
                streams.op(op, op.name, [use_name(d) for d in g.deps],
                           token_result(op) if g.async_kw is not None else None)
    return streams.found


def stream_hazards_after(blocks: list, plans: dict, name: str | None = None) -> list[Finding]:
    """The same, in the function as the rewrite leaves it: `blocks`, its block plans (the ops
    of the text and those it inserts, in order), `plans` (id(Op) -> OpPlan). A hazard at a
    wait the rewrite inserts has no place in the text as written: not reported (the pass's
    own waits name one token each)."""
    streams = _Streams(name)
    for bplan in blocks:
        streams.new_block()
        for item in bplan.items:
            if isinstance(item, NewOp):  # an op the rewrite inserts
                new = item
                if new.kind == WAIT:
                    streams.op(None, WAIT, list(new.deps), new.result)
                continue
            op = item
            plan = plans.get(id(op))
            g = op.gpu
            if g is None or op.name not in _STREAM_OPS or (plan is not None and plan.erased):
                continue
            deps = plan.dependencies if plan is not None else [use_name(d) for d in g.deps]
            is_async = g.async_kw is not None or (plan is not None and plan.token is not None)
            token = (plan.token if plan is not None and plan.token else token_result(op)) \
                if is_async else None
            streams.op(op, op.name, deps, token)
    return streams.found


class _Streams:
    """The streams of a function's tokens, op by op (`stream_hazards`)."""

    __slots__ = ("function", "root", "destroyed", "found")

    def __init__(self, function: str | None):
        self.function = function
        self.root: dict[str, str] = {}  # token -> the token that made its stream
        self.destroyed: dict[str, str] = {}  # stream -> the token its destroying wait named
        self.found: list[Finding] = []

    def new_block(self) -> None:
        self.destroyed = {}

    def op(self, op: Op | None, name: str, deps: list[str], token: str | None) -> None:
        """An op (None: one the rewrite inserts, not reported) with its dependencies and, if
        async, its token."""
        root, destroyed = self.root, self.destroyed
        streams = [root.get(d, d) for d in deps]
        for k in range(len(deps)):
            if streams[k] in destroyed:
                self._report(op, f"{deps[k]} is on a stream that a gpu.wait destroyed before "
                                 f"(at {destroyed[streams[k]]})")
                break
        if name == WAIT and token is None:
            seen: dict[str, str] = {}
            for k in range(len(deps)):
                if streams[k] in seen:
                    self._report(op, f"{seen[streams[k]]} and {deps[k]} {_ONE_STREAM}, which "
                                     "it would synchronize and destroy twice")
                    break
                seen[streams[k]] = deps[k]
            for k in range(len(deps)):
                destroyed.setdefault(streams[k], deps[k])
        elif token is not None:
            # One dependency: its stream (a `gpu.wait async [%t]` too: canonicalization, which
            # `-gpu-lower-to-nvvm-pipeline` runs before gpu-to-llvm, folds it into `%t`).
            self.root[token] = streams[0] if len(streams) == 1 else token

    def _report(self, op: Op | None, why: str) -> None:
        if op is not None:
            self.found.append(Finding(F.STREAM_HAZARD, f"'{op.name}' op lowered by LLVM 22: "
                                      f"{why}", op.name_start, op.name_end, Severity.WARNING,
                                      function=self.function))


WAIT = "gpu.wait"
# The ops whose lowering passes streams along (GPU async ops the lowering converts).
_STREAM_OPS = frozenset({WAIT, "gpu.launch_func", *MEMORY_OPS})


def _blocks(func: Op):
    """Every block of the function, at any depth (not in device code)."""
    work = [block for region in func.regions for block in region.blocks]
    while work:
        block = work.pop()
        yield block
        for op in block.ops:
            if op.regions and op.name not in _DEVICE_BODIES:
                work.extend(b for region in op.regions for b in region.blocks)
