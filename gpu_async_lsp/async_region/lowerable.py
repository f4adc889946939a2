"""Analysis layer: a function's plan made to lower with LLVM 22's gpu-to-llvm.

The lowering turns each `!gpu.async.token` into a stream (lowering.py, "streams"): it converts
an async memory op only with exactly one dependency, a `gpu.launch_func` with at most one, and
a synchronous `gpu.wait` synchronizes and destroys the stream of each operand. On the plan of
the rewrite (`--lowering llvm22`), or on the function as written (`plain_plan`: what `--fix`
and the quick fixes do to a function the rewrite leaves alone), three edits make the ops lower:

- an async op with two or more dependencies gets them joined through one
  `%j = gpu.wait async [%a, %b]` inserted before it, and depends on `%j` only (the lowering
  makes `%j` a new stream that waits for an event of each);
- an async memory op without a dependency gets a `%w = gpu.wait async` before it, and
  depends on `%w` (not a `host_shared` alloc: that one lowers only synchronously);
- a synchronous `gpu.wait` keeps one operand per stream, the one defined last in the block
  (on one stream it covers the others): naming two tokens of one stream destroys it twice;
  so does an async op's list (two tokens of one stream are one dependency there);
- where the rewrite's chain would go into an op that starts a stream of its own (a
  `gpu.wait async`, or an op that would have two dependencies) and the chain's stream is the
  rewrite's own (no text names a token of it), the chain ends before the op, with a
  `gpu.wait` of it: threaded in, its stream would never be destroyed (the lowering's
  `gpu.wait async` makes a new stream and leaves its operands' alive);

A `gpu.wait async` with one dependency is no stream of its own here: the canonicalization
that pipelines run before gpu-to-llvm (`-gpu-lower-to-nvvm-pipeline`) folds it into its
dependency. So there is no way to make the host wait for a stream the text names without
destroying it: where LLVM 22's threading makes the rewrite synchronize such a stream and the
text uses it afterwards, `stream-hazard` says so after `--fix` (`--semantics sync-only` never
threads into the text's chains).

What the rewrite itself does differently with the lowering (a `host_shared` alloc stays
synchronous; the chain ends before an op that starts a stream of its own) is in the walk
(rewriter.py); the phases of LLVM 22's async.execute may still give an op two dependencies:
joined here like any other.
"""

from __future__ import annotations

from gpu_async_lsp.async_region.lowering import ALLOC, MEMORY_OPS, WAIT, is_host_shared
from gpu_async_lsp.async_region.plan import (
    BlockPlan,
    NewOp,
    OpPlan,
    Renderer,
    token_result,
    use_name,
)
from gpu_async_lsp.syntax import Op

LAUNCH_FUNC = "gpu.launch_func"
_DEVICE_BODIES = frozenset({"gpu.launch", "gpu.module", "gpu.func"})


class PlainPlan:
    """The plan of a function the rewrite leaves as written: its blocks, each op as it is,
    and what `make_lowerable` changes (the same shape as the walker's: `blocks`, `plans`)."""

    def __init__(self, text: str, func: Op, names):
        self.text = text
        self.names = names
        self.plans: dict[int, OpPlan] = {}
        self.blocks: list[BlockPlan] = []
        work = [(func, region, block) for region in func.regions for block in region.blocks]
        while work:
            owner, region, block = work.pop()
            self.blocks.append(BlockPlan(block, region.rbrace, owner, list(block.ops)))
            for op in block.ops:
                if op.regions and op.name not in _DEVICE_BODIES:
                    work.extend((op, r, b) for r in op.regions for b in r.blocks)

    def render(self, phases=None) -> list:
        renderer = Renderer(self.text)
        for bplan in self.blocks:
            renderer.block(bplan, self.plans)
        return renderer.edits


def plain_plan(text: str, func: Op, names) -> PlainPlan | None:
    """The lowering's edits to `func` as written, as a plan (None: it needs none)."""
    plan = PlainPlan(text, func, names)
    return plan if make_lowerable(text, plan.blocks, plan.plans, names) else None


def make_lowerable(text: str, blocks: list[BlockPlan], plans: dict[int, OpPlan], names) -> bool:
    """Edit the plan (`blocks`, `plans`: id(Op) -> OpPlan) so that every async op it leaves
    lowers (see the module's docstring); `names` gives fresh token names. Whether it changed
    anything."""
    # The tokens the rewrite makes (no text names them): a stream made from one of them can
    # be destroyed where the chain leaves it.
    made = {p.token for p in plans.values() if p.token is not None}
    made.update(item.result for b in blocks for item in b.items
                if isinstance(item, NewOp) and item.result is not None)
    changed = False
    streams = _BlockStreams(made)  # a token of an enclosing block keeps its stream inside
    for bplan in blocks:
        fix = _BlockFix(text, plans, names, made, streams)
        for item in bplan.items:
            fix.item(item)
        bplan.items = fix.items
        changed |= fix.changed
    return changed


class _BlockFix:
    """`make_lowerable` on one block, item by item, with the stream of each token."""

    __slots__ = ("text", "plans", "names", "made", "streams", "items", "changed")

    def __init__(self, text: str, plans: dict[int, OpPlan], names, made: set[str],
                 streams: _BlockStreams):
        self.text, self.plans, self.names, self.made = text, plans, names, made
        self.streams = streams
        self.items: list = []
        self.changed = False

    def item(self, item) -> None:
        if isinstance(item, NewOp):
            self.new_op(item)
            self.items.append(item)
            return
        op, g = item, item.gpu
        plan = self.plans.get(id(op))
        if g is None or (op.name not in MEMORY_OPS and op.name not in (WAIT, LAUNCH_FUNC)) \
                or (plan is not None and plan.erased):
            self.items.append(op)
            return
        deps = plan.dependencies if plan is not None else [use_name(d) for d in g.deps]
        made_async = plan is not None and plan.token is not None
        is_async = g.async_kw is not None or made_async
        if op.name == WAIT and not is_async:
            new_deps = self.streams.one_per_stream(deps)
        elif is_async and not (op.name == ALLOC and is_host_shared(op, self.text)):
            new_deps = self.async_deps(op, deps, plan)
        else:
            new_deps = deps
        if new_deps != deps:
            _only(self.plans, op, new_deps)
            self.changed = True
        if is_async:
            self.streams.define(plan.token if made_async else token_result(op), new_deps, op.name)
        self.items.append(op)

    def new_op(self, item: NewOp) -> None:
        if item.kind != WAIT:
            return
        if item.result is not None:
            self.streams.define(item.result, item.deps, WAIT)
            return
        kept = self.streams.one_per_stream(item.deps)
        self.changed |= kept != item.deps
        item.deps = kept

    def async_deps(self, op: Op, deps: list[str], plan: OpPlan | None) -> list[str]:
        """The dependencies an async op lowers with: one per stream; the chain the rewrite
        added ended before the op where the op starts a stream of its own (a `gpu.wait async`,
        an op with two dependencies) and the chain's stream is the rewrite's own; the rest
        joined by one `gpu.wait async`, or a `gpu.wait async` for a memory op with none."""
        deps = self.streams.one_per_stream(deps)
        if plan is not None and (op.name == WAIT or len(deps) >= 2):
            ours = [d for d in plan.front if d in deps and self.streams.ours(d)]
            if ours:
                self.end_chain(ours)
                deps = [d for d in deps if d not in ours]
        if op.name == WAIT:
            return deps
        if len(deps) >= 2 or (not deps and op.name in MEMORY_OPS):
            new = NewOp(WAIT, deps, self.names.fresh())
            self.insert(new)
            self.made.add(new.result)
            self.streams.define(new.result, new.deps, WAIT)
            deps = [new.result]
        return deps

    def end_chain(self, tokens: list[str]) -> None:
        """A `gpu.wait` of the chain's `tokens` before the op; a `gpu.wait async` the rewrite
        put right before the op for it alone is dropped instead (it orders nothing)."""
        last = self.items[-1] if self.items else None
        if (len(tokens) == 1 and isinstance(last, NewOp) and last.kind == WAIT
                and last.result == tokens[0] and not last.deps):
            self.items.pop()
            self.changed = True
            return
        self.insert(NewOp(WAIT, list(tokens)))

    def insert(self, new: NewOp) -> None:
        self.items.append(new)
        self.changed = True


def _only(plans: dict[int, OpPlan], op: Op, deps: list[str]) -> None:
    plan = plans.get(id(op))
    if plan is None:
        plan = plans[id(op)] = OpPlan(op)
    plan.only = list(deps)


class _BlockStreams:
    """The stream of each token defined so far in a function, and the order of definition (the
    lowering's model: `gpu.wait async` starts a stream, an op with one dependency runs on its
    stream; a token from elsewhere is a stream of its own)."""

    __slots__ = ("made", "root", "order", "named")

    def __init__(self, made: set[str]):
        self.made = made  # the tokens the rewrite makes
        self.root: dict[str, str] = {}
        self.order: dict[str, int] = {}
        self.named: set[str] = set()  # streams that a token the text names is on

    def stream(self, token: str) -> str:
        return self.root.get(token, token)

    def ours(self, token: str) -> bool:
        """Is `token` on a stream the rewrite made, which no token of the text is on (so
        that destroying it leaves nothing the text uses dangling)?"""
        stream = self.stream(token)
        return stream in self.made and stream not in self.named

    def define(self, token: str | None, deps: list[str], name: str) -> None:
        if token is None:
            return
        # One dependency: its stream (a `gpu.wait async [%t]` is folded into `%t` by the
        # canonicalization pipelines run before gpu-to-llvm).
        root = self.root[token] = self.root.get(deps[0], deps[0]) if len(deps) == 1 else token
        self.order[token] = len(self.order)
        if token not in self.made:
            self.named.add(root)

    def one_per_stream(self, deps: list[str]) -> list[str]:
        """`deps` with one token per stream: the one defined last, in the place of the first
        token of its stream."""
        last: dict[str, str] = {}
        for d in deps:
            stream = self.root.get(d, d)
            if stream not in last or self.order.get(d, -1) > self.order.get(last[stream], -1):
                last[stream] = d
        kept, seen = [], set()
        for d in deps:
            stream = self.root.get(d, d)
            if stream not in seen:
                seen.add(stream)
                kept.append(last[stream])
        return kept
