"""Analysis layer: whether an op may have side effects, as LLVM 22's pass asks it
(`!isMemoryEffectFree(op)` in AsyncRegionRewriter.cpp), from the op tables.

Used by the ThreadTokenCallback walk (rewriter.py) and the async.execute phases (execute.py).
Must not import lark, pygls or lsprotocol.
"""

from __future__ import annotations

from gpu_async_lsp.op_tables import effect_kind
from gpu_async_lsp.syntax import Op


def has_side_effects(op: Op, memo: dict[int, bool] | None = None) -> bool:
    """`!isMemoryEffectFree(op)`: RecursiveMemoryEffects ops have the effects of what they
    hold. With a `memo` (id(op) -> answer) kept for a function, each nested op is looked at
    once whatever the nesting depth (a walk of the whole subtree per op was quadratic in it);
    computed bottom-up without recursion."""
    memo = {} if memo is None else memo
    stack = [(op, False)]
    while stack:
        current, children_done = stack.pop()
        key = id(current)
        if key in memo:
            continue
        if current.name == "gpu.launch":
            memo[key] = True  # threaded, it stands for the gpu.launch_func outlining makes
            continue
        kind = effect_kind(current.name)
        if kind != "recursive":
            memo[key] = kind == "effects"
            continue
        inner = [o for region in current.regions for block in region.blocks for o in block.ops]
        if children_done:
            memo[key] = any(memo[id(o)] for o in inner)
            continue
        stack.append((current, True))
        stack.extend((o, False) for o in inner if id(o) not in memo)
    return memo[id(op)]
