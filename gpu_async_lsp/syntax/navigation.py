"""Syntax layer: what a name in the IR refers to (SSA values, block labels, symbols in one
piece of IR), for go to definition, references, hover and the rewrite's previews.

Scoping follows MLIR's parser (mlir/lib/AsmParser/Parser.cpp, `OperationParser`): a value is
visible in the region that defines it and in the regions nested in it; names are unique among
what is visible (redefinition is an error), so the innermost region that defines a name is the
one. Arguments of a region written in its op's custom header (`func.func @f(%arg0: ...)`,
`scf.for %i = ...`, `iter_args(%acc = %init)`) are not told apart from operands by the IR: a
header name that no enclosing region defines is the definition of a region argument, and the
outermost such header is its owner (an inner header naming it again is a use). Block labels
are scoped to their region. No lark, pygls or lsprotocol here; offsets are the IR's own.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from gpu_async_lsp.syntax.ir import Block, Op, Region, SymbolRef, ValueRef

VALUE = "value"
BLOCK = "block"
SYMBOL = "symbol"


@dataclass(frozen=True, slots=True)
class NameAt:
    """The name under a cursor: its kind, the reference as written, the op it is written in
    (None for a block label or argument), and for a symbol the component under the cursor."""

    kind: str
    ref: ValueRef | SymbolRef
    op: Op | None
    component: int = 0  # index into SymbolRef.path


def _contains(start: int, end: int, offset: int) -> bool:
    return start <= offset <= end


def _op_in(ops: list[Op], offset: int) -> Op | None:
    """The op of `ops` (in text order) whose text holds `offset`."""
    i = bisect.bisect_right(ops, offset, key=lambda o: o.start) - 1
    if i >= 0 and ops[i].start <= offset <= ops[i].end:
        return ops[i]
    return None


def _region_at(op: Op, offset: int) -> Region | None:
    for region in op.regions:
        if region.lbrace < offset <= region.rbrace:
            return region
    return None


def chain_at(ops: list[Op], offset: int) -> list[tuple[Op, Region | None]]:
    """The ops whose text holds `offset`, outermost first, each with the region of it that
    holds the offset (None: the offset is in the op's own text, outside its regions)."""
    chain: list[tuple[Op, Region | None]] = []
    current = ops
    while True:
        op = _op_in(current, offset)
        if op is None:
            return chain
        region = _region_at(op, offset)
        chain.append((op, region))
        if region is None:
            return chain
        block = _block_in(region, offset)
        if block is None:
            return chain
        current = block.ops


def _block_in(region: Region, offset: int) -> Block | None:
    """The last block of `region` that starts at or before `offset` (blocks are in text
    order)."""
    i = bisect.bisect_right(region.blocks, offset, key=lambda b: b.start) - 1
    return region.blocks[i] if i >= 0 else None


def name_at(ops: list[Op], offset: int) -> NameAt | None:
    """The SSA value, block label or symbol written at `offset` (a cursor just after a name
    counts as on it, as editors place it)."""
    chain = chain_at(ops, offset)
    if not chain:
        return None
    op, region = chain[-1]
    if region is not None:
        block = _block_in(region, offset)
        if block is not None:
            refs = ([block.label] if block.label else []) + block.args
            for ref in refs:
                if _contains(ref.start, ref.end, offset):
                    return NameAt(BLOCK if ref is block.label else VALUE, ref, None)
        return None
    for ref in op.results:
        if _contains(ref.start, ref.end, offset):
            return NameAt(VALUE, ref, op)
    for ref in op.uses:
        if _contains(ref.start, ref.end, offset):
            return NameAt(VALUE, ref, op)
    for ref in op.successors:
        if _contains(ref.start, ref.end, offset):
            return NameAt(BLOCK, ref, op)
    for ref in op.symbols:
        if _contains(ref.start, ref.end, offset):
            return NameAt(SYMBOL, ref, op, _component(ref, offset))
    return None


def _component(ref: SymbolRef, offset: int) -> int:
    """Which `@name` of `@a::@b` holds `offset`."""
    position = ref.start
    for i, part in enumerate(ref.path):
        position += len(part)
        if offset <= position:
            return i
        position += 2  # `::`
    return len(ref.path) - 1


def _defined_in(region: Region, name: str) -> ValueRef | None:
    """The value `name` as defined in `region` itself (block arguments, results of its ops;
    not what nested regions define)."""
    for block in region.blocks:
        for arg in block.args:
            if arg.name == name:
                return arg
        for op in block.ops:
            for result in op.results:
                if result.name == name:
                    return result
    return None


def _header_occurrence(op: Op, name: str) -> ValueRef | None:
    if not op.regions:
        return None
    for ref in op.uses:
        if ref.name == name:
            return ref
    return None


def _memoized(memo: dict | None, key, compute, *args):
    """compute(*args), or what it gave for `key` before when `memo` is a dict."""
    if memo is None:
        return compute(*args)
    if key not in memo:
        memo[key] = compute(*args)
    return memo[key]


def value_definition(ops: list[Op], name: str, offset: int,
                     memo: dict | None = None) -> ValueRef | None:
    """Where the SSA value `name` seen at `offset` is defined (see the module docstring).

    `memo` (a dict kept over calls for one `ops`) keeps what is found in each region and
    header, so that resolving every use of a name reads each region once, not once a use."""
    chain = chain_at(ops, offset)
    header = None
    for op, region in reversed(chain):
        if region is not None:
            found = _memoized(memo, ("region", id(region), name), _defined_in, region, name)
            if found is not None:
                return found
            occurrence = _memoized(memo, ("header", id(op), name), _header_occurrence, op,
                                   name)
            if occurrence is not None:
                header = occurrence
    top = _memoized(memo, ("top", name), _top_level_result, ops, name)
    if top is not None:
        return top
    if header is not None:
        return header
    if chain:
        op, region = chain[-1]
        if region is None:  # the cursor is on a header: this occurrence defines it
            return _header_occurrence(op, name)
    return None


def _top_level_result(ops: list[Op], name: str) -> ValueRef | None:
    """The result `name` of an op of the unit's own top level."""
    for op in ops:
        for result in op.results:
            if result.name == name:
                return result
    return None


def block_definition(ops: list[Op], name: str, offset: int,
                     memo: dict | None = None) -> ValueRef | None:
    """The block labelled `name` in the region that holds `offset` (`memo` as for
    `value_definition`)."""
    for _, region in reversed(chain_at(ops, offset)):
        if region is not None:
            return _memoized(memo, ("label", id(region), name), _label_in, region, name)
    return None


def _label_in(region: Region, name: str) -> ValueRef | None:
    for block in region.blocks:
        if block.label is not None and block.label.name == name:
            return block.label
    return None


def definition(ops: list[Op], at: NameAt) -> ValueRef | None:
    """The definition of a value or block label under the cursor (symbols are resolved
    across units by the caller)."""
    if at.kind == VALUE:
        return value_definition(ops, at.ref.name, at.ref.start)
    if at.kind == BLOCK:
        return block_definition(ops, at.ref.name, at.ref.start)
    return None


def _all_value_refs(ops: list[Op]):
    stack = list(reversed(ops))
    while stack:
        op = stack.pop()
        yield from op.results
        yield from op.uses
        for region in reversed(op.regions):
            for block in reversed(region.blocks):
                yield from block.args
                stack.extend(reversed(block.ops))


def _all_block_refs(ops: list[Op]):
    stack = list(reversed(ops))
    while stack:
        op = stack.pop()
        yield from op.successors
        for region in reversed(op.regions):
            for block in reversed(region.blocks):
                if block.label is not None:
                    yield block.label
                stack.extend(reversed(block.ops))


def references(ops: list[Op], at: NameAt) -> list[ValueRef]:
    """Every place (definition included) that names what `at` names, in text order. For a
    use of one result of a group (`%x#1`) only that result's uses; from the definition of the
    group, all of them."""
    target = definition(ops, at)
    if target is None:
        return []
    if at.kind == VALUE:
        candidates = _all_value_refs(ops)
        resolve = value_definition
    else:
        candidates = _all_block_refs(ops)
        resolve = block_definition
    # References read from text are made afresh on each read: compare places, not objects.
    def is_target(ref) -> bool:
        return ref is not None and ref.start == target.start

    index = at.ref.index if at.kind == VALUE and not is_target(at.ref) else None
    found = []
    memo: dict = {}
    for ref in candidates:
        if ref.name != target.name:
            continue
        if index is not None and not is_target(ref) and (ref.index or 0) != index:
            continue
        if is_target(ref) or is_target(resolve(ops, ref.name, ref.start, memo)):
            found.append(ref)
    found.sort(key=lambda r: r.start)
    return found


def symbol_ops(ops: list[Op]):
    """(op, the nearest enclosing op that also defines a symbol, or None) for every op in
    `ops` that defines a symbol (`func.func @f`, `gpu.func @k`, ...), in program order."""
    stack = [(op, None) for op in reversed(ops)]
    while stack:
        op, owner = stack.pop()
        inner_owner = owner
        if op.symbol_name is not None:
            yield op, owner
            inner_owner = op
        for region in reversed(op.regions):
            for block in reversed(region.blocks):
                stack.extend((child, inner_owner) for child in reversed(block.ops))


def op_at(ops: list[Op], offset: int) -> Op | None:
    """The innermost op whose own text (not its regions) holds `offset`; in a region, the
    op that owns it."""
    chain = chain_at(ops, offset)
    return chain[-1][0] if chain else None
