"""Syntax layer: the op tree of a parse, and its comparison with MLIR's own.

An op tree is `(name, regions)`, each region a tuple of blocks, each block a tuple of op trees:
what a parse says about the structure of a text, without positions. MLIR's structure of the
same text comes from `mlir-opt --mlir-print-op-generic` (every op in generic form, read back
with this parser, which reads generic form exactly). Two differences are not differences:

- custom form elides terminators without operands (`scf.yield`, `gpu.terminator`, ...) that the
  generic print shows (in dialects the op tables do not cover, ops named `yield`, `terminator`
  or `end` are taken for terminators), and a region of an op without blocks (`({})` of a declaration in generic
  form) is no region in custom form;
- the custom form of linalg's named ops (`linalg.matmul ins(...) outs(...)`) builds their
  region: it is in the generic print only (op_tables.IMPLICIT_REGION_OPS); so does the short
  form of `linalg.map`/`linalg.reduce` (`{ arith.addf }`, prelex.SHORT_FORM_OPS);
- the implicit top-level `builtin.module` that MLIR wraps around a text without one.

Used by the corpus tests and by `tools/corpus_check.py`. No lark, pygls or lsprotocol here.
"""

from __future__ import annotations

from gpu_async_lsp.op_tables import IMPLICIT_REGION_OPS, KNOWN_OPS, TERMINATOR_OPS
from gpu_async_lsp.syntax.ir import Document, Op
from gpu_async_lsp.syntax.prelex import SHORT_FORM_OPS

Tree = tuple  # (name, regions); regions: tuple[tuple[tuple[Tree, ...], ...], ...]


def op_tree(op: Op) -> Tree:
    """The tree of one op. Regions without blocks are left out (see the module docstring)."""
    # An explicit stack: regions may nest thousands deep.
    def shell(o: Op) -> list:
        return [o.name, [[[] for _ in r.blocks] for r in o.regions if r.blocks]]

    root = shell(op)
    stack = [(op, root)]
    while stack:
        o, node = stack.pop()
        regions = [r for r in o.regions if r.blocks]
        for region, blocks in zip(regions, node[1]):
            for block, ops in zip(region.blocks, blocks):
                for child in block.ops:
                    c = shell(child)
                    ops.append(c)
                    stack.append((child, c))
    return _freeze(root)


def _freeze(node: list) -> Tree:
    """Lists to tuples, bottom up, without recursion."""
    out: dict[int, Tree] = {}
    order = []
    stack = [node]
    while stack:
        n = stack.pop()
        order.append(n)
        for blocks in n[1]:
            for ops in blocks:
                stack.extend(ops)
    for n in reversed(order):
        out[id(n)] = (n[0], tuple(tuple(tuple(out[id(c)] for c in ops) for ops in blocks)
                                  for blocks in n[1]))
    return out[id(node)]


def document_trees(doc: Document) -> list[list[Tree]]:
    """The top-level op trees of each chunk."""
    return [[op_tree(op) for op in chunk.ops] for chunk in doc.chunks]


def _strip_terminators(ref: Tree, ours: Tree) -> Tree:
    """`ref` without the trailing terminators that `ours` lacks (elided in custom form)."""
    name, ref_regions = ref
    our_regions = ours[1]
    if not our_regions and (name in IMPLICIT_REGION_OPS or name in SHORT_FORM_OPS):
        return (name, ())
    regions = []
    for ri, rblocks in enumerate(ref_regions):
        oblocks = our_regions[ri] if ri < len(our_regions) else ()
        blocks = []
        for bi, rops in enumerate(rblocks):
            oops = oblocks[bi] if bi < len(oblocks) else ()
            rops = list(rops)
            if (rops and len(rops) == len(oops) + 1 and _terminator(rops[-1][0])
                    and not rops[-1][1]):
                rops.pop()
            blocks.append(tuple(_strip_terminators(r, o) for r, o in zip(rops, oops))
                          + tuple(rops[len(oops):]))
        regions.append(tuple(blocks))
    return (name, tuple(regions))


# The terminators of dialects the op tables do not cover (`transform.yield`), by their names.
_TERMINATOR_NAMES = frozenset({"yield", "terminator", "end"})


def _terminator(name: str) -> bool:
    if name in KNOWN_OPS:
        return name in TERMINATOR_OPS
    return name.rpartition(".")[2] in _TERMINATOR_NAMES


def _without_empty_regions(tree: Tree) -> Tree:
    """`{\n}` is a region whose one block holds only an elided terminator: the same as none."""
    name, regions = tree
    kept = tuple(tuple(tuple(_without_empty_regions(o) for o in b) for b in r)
                 for r in regions if any(len(b) for b in r))
    return (name, kept)


def reference_ops(reference: Tree, ours: list[Tree]) -> list[Tree]:
    """The top-level ops of MLIR's tree (one implicit or explicit `builtin.module`) that
    correspond to `ours`: the module itself when the text has exactly one module, else its
    children."""
    if len(ours) == 1 and ours[0][0] == "builtin.module":
        return [reference]
    return list(reference[1][0][0]) if reference[1] and reference[1][0] else []


def first_difference(ours: list[Tree], reference: Tree) -> str | None:
    """None when `ours` (a chunk's top-level trees) has MLIR's structure `reference` (the one
    module of its generic print); else where they first differ, as a path of op names."""
    refs = reference_ops(reference, ours)
    if len(refs) != len(ours):
        return (f"top level: {len(ours)} ops, LLVM has {len(refs)} "
                f"({_names(ours)} vs {_names(refs)})")
    for i, (ref, our) in enumerate(zip(refs, ours)):
        ref = _without_empty_regions(_strip_terminators(ref, our))
        our = _without_empty_regions(our)
        if ref != our:
            return _locate(our, ref, f"#{i} ")
    return None


def _names(trees) -> str:
    names = [t[0] for t in trees[:4]]
    return "[" + ", ".join(names) + (", ..." if len(trees) > 4 else "") + "]"


def _locate(our: Tree, ref: Tree, path: str) -> str:
    """Descend while the two agree; describe the first op where they do not."""
    while True:
        if our[0] != ref[0]:
            return f"{path}{our[0]}: LLVM has {ref[0]} here"
        path += our[0]
        if len(our[1]) != len(ref[1]):
            return f"{path}: {len(our[1])} regions, LLVM has {len(ref[1])}"
        for ri, (oblocks, rblocks) in enumerate(zip(our[1], ref[1])):
            if oblocks == rblocks:
                continue
            if len(oblocks) != len(rblocks):
                return f"{path} region {ri}: {len(oblocks)} blocks, LLVM has {len(rblocks)}"
            for bi, (oops, rops) in enumerate(zip(oblocks, rblocks)):
                if oops == rops:
                    continue
                for o, r in zip(oops, rops):
                    if o != r:
                        our, ref = o, r
                        path = f"{path} / "
                        break
                else:
                    return (f"{path} region {ri} block {bi}: {len(oops)} ops, LLVM has "
                            f"{len(rops)} ({_names(oops[len(rops):] or rops[len(oops):])} "
                            "left over)")
                break
            break
        else:
            return f"{path}: differs"
