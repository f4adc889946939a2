"""IDE layer: what the editor features (document symbols, folding, definition and references,
hover, inlay hints, code lens) find in a document's stored analysis (ide/analysis.py).
Results are plain values at absolute offsets; the protocol layer (server/) turns them into
LSP. Nothing here parses: every answer comes from the IR and the rewrite plans the
analysis kept for each unit, so a request on a 50k-line file touches only the units it needs.

No pygls or lsprotocol here.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.rewriter import (
    BLOCK_END,
    TERMINATOR,
    AsyncStep,
    FunctionRewrite,
    ThreadStep,
    WaitStep,
    is_already_async,
)
from gpu_async_lsp.edits import TextEdit, apply_edits
from gpu_async_lsp.ide.units import DocumentAnalysis, PlacedUnit
from gpu_async_lsp.op_tables import is_async_interface_op
from gpu_async_lsp.syntax import Op, head_symbol
from gpu_async_lsp.syntax import navigation as nav
from gpu_async_lsp.text import LineIndex, placed

MODULE = "module"
FUNCTION = "function"
VARIABLE = "variable"
OBJECT = "object"
_KINDS = {"builtin.module": MODULE, "gpu.module": MODULE, "llvm.module": MODULE,
          "memref.global": VARIABLE, "llvm.mlir.global": VARIABLE, "ml_program.global": VARIABLE}


def symbol_kind(op_name: str) -> str:
    if op_name in _KINDS:
        return _KINDS[op_name]
    return FUNCTION if op_name.endswith(".func") or op_name.endswith("_func") else OBJECT


# -- document symbols -------------------------------------------------------------------------

@dataclass
class SymbolNode:
    """An op that defines a symbol (or a module): `name` is `@f` (`module` for an unnamed
    module), `detail` its op name. Nested by the text: children lie inside their parent."""

    name: str
    detail: str
    kind: str
    start: int
    end: int
    selection: tuple[int, int]
    children: list[SymbolNode] = field(default_factory=list)
    origin: tuple | None = None  # (PlacedUnit, index among its symbols) for a unit's symbol



def document_symbols(a: DocumentAnalysis) -> list[SymbolNode]:
    """The outline: modules, `gpu.module`s, functions and other symbols, nested as written.
    A unit with a syntax error keeps its entry (read from its first line); only what is
    inside it is lost."""
    cached = a.memo.get("symbols")
    if cached is not None:
        return cached
    flat: list[SymbolNode] = []
    for c in a.containers:
        name = c.symbol or ("module" if c.name == "builtin.module" else c.name)
        selection = c.symbol_span or (c.start, c.start + len(c.name.split(".")[-1]))
        flat.append(SymbolNode(name, c.name, symbol_kind(c.name), c.start, c.rbrace + 1,
                               selection))
    for unit in a.units:
        flat.extend(_unit_symbols(unit))
    flat.sort(key=lambda n: (n.start, -n.end))
    roots: list[SymbolNode] = []
    stack: list[SymbolNode] = []
    for node in flat:
        while stack and not (node.start >= stack[-1].start and node.end <= stack[-1].end):
            stack.pop()
        (stack[-1].children if stack else roots).append(node)
        stack.append(node)
    a.memo["symbols"] = roots
    return roots


def _relative_symbols(result) -> tuple[list[SymbolNode], list[int]]:
    """The symbol ops of one unit at offsets relative to it, and for each the index of the
    symbol op it is nested in (-1: none in this unit). Kept with the unit."""
    cached = result.memo.get("symbols")
    if cached is None:
        nodes: list[SymbolNode] = []
        owners: list[int] = []
        index_of: dict[int, int] = {}
        for op, owner in nav.symbol_ops(list(result.ops)):
            sym = op.symbol_name
            index_of[id(op)] = len(nodes)
            owners.append(index_of[id(owner)] if owner is not None else -1)
            nodes.append(SymbolNode(sym.path[0], op.name, symbol_kind(op.name), op.start,
                                    op.end, (sym.start, sym.end)))
        head = head_symbol(result.source) if not result.ops and result.syntax_error else None
        if head is not None:  # a unit that did not parse keeps its entry in the outline
            name, start, symbol = head
            owners.append(-1)
            nodes.append(SymbolNode(symbol.path[0], name, symbol_kind(name), start,
                                    len(result.source.rstrip()), (symbol.start, symbol.end)))
        cached = result.memo["symbols"] = (nodes, owners)
    return cached


def _unit_symbols(unit: PlacedUnit) -> list[SymbolNode]:
    base = unit.base
    return [SymbolNode(n.name, n.detail, n.kind, n.start + base, n.end + base,
                       (n.selection[0] + base, n.selection[1] + base), [], (unit, i))
            for i, n in enumerate(_relative_symbols(unit.result)[0])]


Place = tuple[int, int]  # (line, column)


def symbol_places(node: SymbolNode, index: LineIndex, encoding: str,
                  bases: dict) -> tuple[Place, Place, Place, Place]:
    """Start, end, selection start and end of a symbol as (line, column). A unit's symbols
    keep theirs relative to the unit (per encoding) and are placed at its position (found
    once per unit through `bases`): an edit re-reads only what it moved."""
    if node.origin is None:
        def place(offset: int) -> Place:
            p = index.position(offset, encoding)
            return p.line, p.character
        return (place(node.start), place(node.end), place(node.selection[0]),
                place(node.selection[1]))
    unit, i = node.origin
    result = unit.result
    key = ("symbol-places", encoding)
    relative = result.memo.get(key)
    if relative is None:
        unit_index = LineIndex(result.source)

        def rel(offset: int) -> Place:
            p = unit_index.position(offset, encoding)
            return p.line, p.character
        relative = result.memo[key] = [
            (rel(n.start), rel(n.end), rel(n.selection[0]), rel(n.selection[1]))
            for n in _relative_symbols(result)[0]]
    base = bases.get(unit.base)
    if base is None:
        p = index.position(unit.base, encoding)
        base = bases[unit.base] = (p.line, p.character)
    start, end, sel_start, sel_end = relative[i]
    return placed(start, base), placed(end, base), placed(sel_start, base), placed(sel_end, base)


# -- folding ------------------------------------------------------------------------------------

REGION = "region"
CHUNK = "chunk"


def folding_ranges(a: DocumentAnalysis, index: LineIndex) -> list[tuple[int, int, str]]:
    """(first line, last line, kind) for each region that spans lines (its `}` line stays
    visible) and each `// -----` chunk of a split file. A unit keeps its folds as lines
    relative to its first: placing them is an addition."""
    cached = a.memo.get("folds")
    if cached is not None:
        return cached
    out = []

    def add(first: int, last: int, kind: str) -> None:
        if last > first:
            out.append((first, last, kind))

    for c in a.containers:
        add(index.line_of(c.lbrace), index.line_of(c.rbrace) - 1, REGION)
    for unit in a.units:
        result = unit.result
        rel = result.memo.get("folds")
        if rel is None:
            rel = []
            unit_index = None
            for top in result.ops:
                for op in top.walk():
                    for r in op.regions:
                        unit_index = unit_index or LineIndex(result.source)
                        first = unit_index.line_of(r.lbrace)
                        last = unit_index.line_of(r.rbrace) - 1
                        if last > first:
                            rel.append((first, last))
            result.memo["folds"] = rel
        if rel:
            base = index.line_of(unit.base)
            out.extend((first + base, last + base, REGION) for first, last in rel)
    if len(a.chunks) > 1:
        for s, e in a.chunks:
            add(index.line_of(s), index.line_of(max(s, e - 1)), CHUNK)
    out.sort()
    a.memo["folds"] = out
    return out


# -- definition and references -------------------------------------------------------------------

@dataclass(frozen=True)
class Span:
    start: int
    end: int


def _name_at(a: DocumentAnalysis, offset: int):
    unit = a.unit_at(offset)
    if unit is None:
        return None, None
    at = nav.name_at(list(unit.result.ops), offset - unit.base)
    return unit, at


def _absolute(ref, base: int) -> Span:
    return Span(ref.start + base, ref.end + base)


def definition(a: DocumentAnalysis, offset: int) -> list[Span]:
    """Where the SSA value, block label or symbol at `offset` is defined."""
    unit, at = _name_at(a, offset)
    if at is None:
        container = _container_symbol_at(a, offset)
        return [Span(*symbol_table(a).selection(container))] if container is not None else []
    if at.kind == nav.SYMBOL:
        found = resolve_symbol(a, at.ref.path[:at.component + 1], unit.base + at.ref.start)
        return [Span(*symbol_table(a).selection(found))] if found is not None else []
    target = nav.definition(list(unit.result.ops), at)
    return [_absolute(target, unit.base)] if target else []


def references(a: DocumentAnalysis, offset: int, include_declaration: bool = True) -> list[Span]:
    """Every place that names what `offset` names (symbols: in the whole document)."""
    unit, at = _name_at(a, offset)
    if at is None:
        target = _container_symbol_at(a, offset)
        if target is None:
            return []
    elif at.kind == nav.SYMBOL:
        target = resolve_symbol(a, at.ref.path[:at.component + 1], unit.base + at.ref.start)
        if target is None:
            return []
    else:
        ops = list(unit.result.ops)
        found = nav.references(ops, at)
        definition_at = nav.definition(ops, at)
        return [_absolute(r, unit.base) for r in found
                if include_declaration or definition_at is None
                or r.start != definition_at.start]
    return _symbol_references(a, target, include_declaration)


# A symbol of the document: ("c", container index) or ("u", unit index, index of the symbol
# op among the unit's); None stands for a chunk's top level.
SymbolId = tuple


class SymbolTable:
    """The symbols of one document version, by name, with the symbol table each belongs to
    (MLIR: the nearest enclosing op that is a symbol table: here `module`, `gpu.module`, or a
    symbol op holding nested ones). Built in one pass over units and containers, both in text
    order; per unit only its first symbol ops are looked at (kept with the unit)."""

    def __init__(self, a: DocumentAnalysis):
        # The analysis's lists, not the analysis: it keeps this table in its memo, and a
        # cycle would outlive it until a garbage collection (see server.py, gc.freeze).
        self.units = a.units
        self.containers = containers = a.containers
        self.container_parent: list[int] = []
        self.unit_parent: list[int] = []
        self.by_name: dict[str, list[SymbolId]] = {}
        stack: list[int] = []  # containers open at the current position

        def enclosing(start: int) -> int:
            while stack and containers[stack[-1]].end <= start:
                stack.pop()
            return stack[-1] if stack else -1

        ci = 0
        for ui, unit in enumerate(a.units):
            while ci < len(containers) and containers[ci].start <= unit.base:
                self.container_parent.append(enclosing(containers[ci].start))
                if containers[ci].symbol:
                    self.by_name.setdefault(containers[ci].symbol, []).append(("c", ci))
                stack.append(ci)
                ci += 1
            self.unit_parent.append(enclosing(unit.base))
            nodes, _ = _relative_symbols(unit.result)
            for ni, node in enumerate(nodes):
                self.by_name.setdefault(node.name, []).append(("u", ui, ni))
        while ci < len(containers):
            self.container_parent.append(enclosing(containers[ci].start))
            if containers[ci].symbol:
                self.by_name.setdefault(containers[ci].symbol, []).append(("c", ci))
            stack.append(ci)
            ci += 1

    def survives(self, a: DocumentAnalysis, edited) -> bool:
        """Whether this table (of an earlier version) holds for `a`, in which only the units
        `edited` (indices) changed since: their symbol names and nesting are the same."""
        if len(self.units) != len(a.units) or len(self.containers) != len(a.containers):
            return False
        for i in edited:
            before = _relative_symbols(self.units[i].result)
            after = _relative_symbols(a.units[i].result)
            if [n.name for n in before[0]] != [n.name for n in after[0]] \
                    or before[1] != after[1]:
                return False
        return True

    def parent(self, sid: SymbolId) -> SymbolId | None:
        if sid[0] == "c":
            p = self.container_parent[sid[1]]
            return ("c", p) if p >= 0 else None
        _, ui, ni = sid
        owner = _relative_symbols(self.units[ui].result)[1][ni]
        if owner >= 0:
            return ("u", ui, owner)
        p = self.unit_parent[ui]
        return ("c", p) if p >= 0 else None

    def start(self, sid: SymbolId) -> int:
        if sid[0] == "c":
            return self.containers[sid[1]].start
        unit = self.units[sid[1]]
        return unit.base + _relative_symbols(unit.result)[0][sid[2]].start

    def selection(self, sid: SymbolId) -> tuple[int, int]:
        if sid[0] == "c":
            return self.containers[sid[1]].symbol_span
        unit = self.units[sid[1]]
        s, e = _relative_symbols(unit.result)[0][sid[2]].selection
        return s + unit.base, e + unit.base

    def name(self, sid: SymbolId) -> str:
        if sid[0] == "c":
            return self.containers[sid[1]].symbol
        return _relative_symbols(self.units[sid[1]].result)[0][sid[2]].name

    def child(self, table: SymbolId | None, name: str, chunk: tuple[int, int]) -> SymbolId | None:
        """The symbol `name` defined directly in `table` (None: the chunk's top level)."""
        for sid in self.by_name.get(name, ()):
            if self.parent(sid) == table and chunk[0] <= self.start(sid) <= chunk[1]:
                return sid
        return None


def symbol_table(a: DocumentAnalysis) -> SymbolTable:
    """The document's symbol table, built once per version, or taken over from the version
    before when the edit between them left every symbol name in place (an edit inside a
    function body: the table holds indices, not offsets)."""
    table = a.memo.get("symtab")
    if table is None:
        carried = a.memo.pop(("carried", "symtab"), None)
        if carried is not None and carried[0].survives(a, carried[1]):
            table = copy.copy(carried[0])
            table.units, table.containers = a.units, a.containers
        else:
            table = SymbolTable(a)
        a.memo["symtab"] = table
    return table


def _container_symbol_at(a: DocumentAnalysis, offset: int) -> SymbolId | None:
    """The container (`gpu.module @kernels`) whose symbol name is at `offset`."""
    for i, c in enumerate(a.containers):
        if c.symbol_span and c.symbol_span[0] <= offset <= c.symbol_span[1]:
            return ("c", i)
    return None


def resolve_symbol(a: DocumentAnalysis, path: tuple[str, ...], offset: int) -> SymbolId | None:
    """The op `@a::@b` names when written at `offset`: `@a` is looked up in the symbol
    tables around the offset, innermost first (MLIR's `lookupNearestSymbolFrom`, then
    outward), and each further name inside the symbol found before it."""
    table = symbol_table(a)
    chunk = next(((s, e) for s, e in a.chunks if s <= offset <= e), (0, len(a.text)))
    around: list[SymbolId | None] = [
        ("c", i) for i, c in enumerate(a.containers) if c.lbrace < offset < c.rbrace]
    around.reverse()  # innermost first: containers nest in text order
    around.append(None)
    for scope in around:
        found = table.child(scope, path[0], chunk)
        if found is None:
            continue
        for name in path[1:]:
            found = table.child(found, name, chunk)
            if found is None:
                return None
        return found
    return None


def _symbol_references(a: DocumentAnalysis, target: SymbolId,
                       include_declaration: bool) -> list[Span]:
    table = symbol_table(a)
    found = [Span(*table.selection(target))] if include_declaration else []
    name = table.name(target)
    for unit in a.units:
        if name not in unit.result.source:
            continue
        for top in unit.result.ops:
            for op in top.walk():
                for ref in op.symbols:
                    if name not in ref.path:
                        continue
                    if op.symbol_name is not None and ref.start == op.symbol_name.start:
                        continue  # a definition, not a reference
                    at = unit.base + ref.start
                    k = ref.path.index(name)
                    if resolve_symbol(a, ref.path[:k + 1], at) == target:
                        offset = at + sum(len(p) + 2 for p in ref.path[:k])
                        found.append(Span(offset, offset + len(name)))
    found.sort(key=lambda s: s.start)
    return found


# -- the rewrite, explained ---------------------------------------------------------------------

@dataclass(frozen=True)
class Hint:
    """An inlay hint: `label` shown at `offset`, padded on the given sides. `explains`: it
    explains code that is threaded already (what an op waits on), rather than previewing the
    rewrite (the setting waitsOnHints turns those off)."""

    offset: int
    label: str
    pad_left: bool
    pad_right: bool
    tooltip: str
    explains: bool = False


def _function_of(result, op: Op) -> FunctionRewrite | None:
    for rw in result.rewrites:
        if rw.func.start <= op.start and op.end <= rw.func.end:
            return rw
    return None


def unit_hints(result) -> list[Hint]:
    """The inlay hints of one unit, at offsets relative to it (kept with the unit)."""
    cached = result.memo.get("hints")
    if cached is not None:
        return cached
    hints: list[Hint] = []
    ops = list(result.ops)
    for rw in result.rewrites:
        if rw.rewritable:
            why = f"What `Make GPU ops in {rw.name} asynchronous` would do"
            for step in rw.steps:
                if isinstance(step, AsyncStep):
                    if step.fresh_wait:
                        hints.append(Hint(step.op.start,
                                          inserted(f"{step.dependency} = gpu.wait async"),
                                          False, True, why))
                    hints.append(Hint(_head_end(step.op),
                                      f"async [{step.dependency}] → {step.token}",
                                      True, False, why))
                elif isinstance(step, ThreadStep):
                    if step.fresh_wait:
                        hints.append(Hint(step.op.start,
                                          inserted(f"{step.dependency} = gpu.wait async"),
                                          False, True, why))
                    label = _threaded(step)
                    if label:
                        hints.append(Hint(_head_end(step.op), label, True, False,
                                          why + ": LLVM 22 threads the token into this op"))
                else:
                    hints.append(Hint(step.offset, inserted(f"gpu.wait [{step.token}]"), False,
                                      True, why + ": " + _wait_reason(step)))
        else:
            for top in [rw.func]:
                for op in top.walk():
                    g = op.gpu
                    if g is None or not g.deps or g.deps_close is None:
                        continue
                    waits = ", ".join(f"{d.name}{'#' + str(d.index) if d.index is not None else ''}"
                                      f" ({_producer(ops, d)})" for d in g.deps)
                    # At the op's end, not after its `]`: the op reads on undisturbed.
                    hints.append(Hint(op.end, f"waits on {waits}", True, False,
                                      "The tokens this op waits on, and the ops that make them",
                                      explains=True))
    hints.sort(key=lambda h: h.offset)
    result.memo["hints"] = hints
    return hints


def inserted(statement: str) -> str:
    """The label of an op the rewrite would insert before the op at the hint: `+` (it is new)
    and `;` (it ends there), so that it does not read as the start of that op's statement;
    plain ASCII, which every font has."""
    return f"+ {statement};"


def _head_end(op: Op) -> int:
    """Where a hint about an op goes: its end, or for an op with a body (an inline
    gpu.launch) just before the body's `{`."""
    return op.regions[0].lbrace if op.regions else op.end


def _threaded(step: ThreadStep) -> str:
    """`+ [%t1] → %u`: the dependency LLVM 22 adds to an op with a token of its own, and the
    token that is current after it (nothing after a synchronous gpu.wait)."""
    parts = []
    if step.dependency is not None:
        parts.append(f"+ [{step.dependency}]")
    parts.append(f"→ {step.token}" if step.token is not None else "→ no token")
    return " ".join(parts) if step.dependency is not None or step.token is not None else ""


def _producer(ops: list[Op], ref) -> str:
    """What made the token `ref` names: the op whose result it is, or `argument`."""
    target = nav.value_definition(ops, ref.name, ref.start)
    if target is None:
        return "undefined"
    op = nav.op_at(ops, target.start)
    if op is not None and any(r.start == target.start for r in op.results):
        return op.name
    return "argument"


def _wait_reason(step: WaitStep) -> str:
    if step.reason == BLOCK_END:
        return "the end of the block (its terminator is implicit) must not leave GPU work pending"
    op = step.before.name
    if step.reason == TERMINATOR:
        return f"`{op}` is a terminator: GPU work must be done before the block is left"
    return f"`{op}` has side effects the host can observe: GPU work must be done first"


def inlay_hints(a: DocumentAnalysis, start: int, end: int) -> list[tuple[PlacedUnit, Hint]]:
    """The hints in [start, end], with the unit each belongs to (offsets relative to it)."""
    out = []
    for unit in a.units_between(start, end):
        for hint in unit_hints(unit.result):
            if start <= hint.offset + unit.base <= end:
                out.append((unit, hint))
    return out


def hover(a: DocumentAnalysis, offset: int, line_of) -> tuple[str, Span] | None:
    """Markdown for the op at `offset` when the rewrite has something to say about it:
    an async GPU op (what it becomes, what it waits on, who waits for its token, or why it
    stays as it is), a pre-existing `gpu.wait`, or a host op that gets a `gpu.wait` before
    it. `line_of(offset)` gives 1-based line numbers of absolute offsets."""
    unit = a.unit_at(offset)
    if unit is None:
        return None
    result = unit.result
    ops = list(result.ops)
    op = nav.op_at(ops, offset - unit.base)
    if op is None or offset - unit.base > op.name_end and op.regions:
        return None
    base = unit.base
    rw = _function_of(result, op)
    if rw is None:
        text = _outside_host_function(op)
    else:
        text = _in_host_function(result, rw, op, ops, lambda rel: line_of(rel + base))
    return None if text is None else (text, Span(op.name_start + base, op.name_end + base))


def _outside_host_function(op: Op) -> str | None:
    if op.name.startswith("gpu.") and (is_async_interface_op(op.name) or op.name == "gpu.launch"):
        return (f"**{op.name}**\n\nNot in a host `func.func`: the async rewrite leaves it "
                "as it is.")
    return None


def _in_host_function(result, rw: FunctionRewrite, op: Op, ops: list, line) -> str | None:
    """The hover of an op of a host function: a blocker, a threaded op, an op the rewrite
    makes async or puts a wait before (`line(relative offset)`: its 1-based line)."""
    parts = [f"**{op.name}** in `{rw.name}`"]
    blocker = next((b for b in rw.blockers if b.start == op.name_start), None)
    if blocker is not None:
        parts.append(_blocker_text(blocker.code, op, ops))
        if rw.sync_ops:
            n = len(rw.sync_ops)
            parts.append(f"It blocks the rewrite of `{rw.name}`: its {n} synchronous GPU "
                         f"op{'s' if n != 1 else ''} stay synchronous.")
        return "\n\n".join(parts)
    threaded = next((s for s in rw.steps if isinstance(s, ThreadStep) and s.op is op), None)
    if threaded is not None and rw.rewritable:
        return "\n\n".join(parts + [_threaded_text(rw, threaded, line)])
    step = next((s for s in rw.steps if isinstance(s, AsyncStep) and s.op is op), None)
    waits_before = [s for s in rw.steps if isinstance(s, WaitStep) and s.before is op]
    if step is None and not waits_before:
        if is_async_interface_op(op.name) and is_already_async(op):
            return "\n\n".join(parts + [_blocker_text(F.ALREADY_ASYNC, op, ops)])
        return None
    if not rw.rewritable:
        first = rw.blockers[0]
        parts.append(f"Stays synchronous: the rewrite of `{rw.name}` is blocked by "
                     f"{_plain(first.message)} (line {line(first.start)}).")
        return "\n\n".join(parts)
    if step is not None:
        parts.extend(_async_step_parts(result, rw, op, step, line))
    for wait in waits_before:
        parts.append(f"A `gpu.wait [{wait.token}]` is inserted before it: {_wait_reason(wait)}.")
    return "\n\n".join(parts)


def _async_step_parts(result, rw: FunctionRewrite, op: Op, step: AsyncStep, line) -> list[str]:
    """What the rewrite makes of an op it makes async, what it waits on and who waits on it."""
    if step.fresh_wait:
        bullets = [f"- waits on `{step.dependency}`, from a `gpu.wait async` inserted "
                   "before it (no GPU work is pending at this point)"]
    else:
        producer = next(s for s in rw.steps
                        if isinstance(s, AsyncStep) and s.token == step.dependency)
        bullets = [f"- waits on `{step.dependency}`, the token of "
                   f"`{producer.op.name}` (line {line(producer.op.start)})"]
    bullets.append(f"- produces `{step.token}`")
    bullets.append("- " + _consumer(rw, step.token, line))
    return ["The async rewrite makes it:\n\n```mlir\n" + _rewritten(result.source, rw, op)
            + "\n```", "\n".join(bullets)]


def _threaded_text(rw: FunctionRewrite, step: ThreadStep, line) -> str:
    """Hover of an op LLVM 22 threads the token into (a pre-existing wait, an async op)."""
    what = "this `gpu.wait`" if step.op.name == "gpu.wait" else "this op, already async,"
    if step.dependency is None:
        first = (f"LLVM 22's rewrite keeps {what} as it is: no GPU work is pending before it"
                 if not step.fresh_wait else "")
    elif step.fresh_wait:
        first = (f"LLVM 22's rewrite makes {what} also wait on `{step.dependency}`, from a "
                 "`gpu.wait async` inserted before it")
    else:
        producer = next((s for s in rw.steps if isinstance(s, (AsyncStep, ThreadStep))
                         and s.token == step.dependency), None)
        made = f" of `{producer.op.name}` (line {line(producer.op.start)})" if producer else ""
        first = f"LLVM 22's rewrite makes {what} also wait on `{step.dependency}`, the token{made}"
    if step.token is None:
        after = "The host waits here: no token is current after it."
    else:
        after = f"Its token `{step.token}` becomes current: {_consumer(rw, step.token, line)}."
    return (first + ".\n\n" if first else "") + after


def _consumer(rw: FunctionRewrite, token: str, line) -> str:
    for s in rw.steps:
        if isinstance(s, (AsyncStep, ThreadStep)) and s.dependency == token:
            return f"`{token}` is awaited by `{s.op.name}` (line {line(s.op.start)})"
        if isinstance(s, WaitStep) and s.token == token:
            if s.before is None:
                return (f"the host waits for `{token}` at the end of the block "
                        f"(line {line(s.offset)}): its terminator is implicit")
            why = "is a terminator" if s.reason == TERMINATOR else "has side effects"
            return (f"the host waits for `{token}` (`gpu.wait [{token}]`) before "
                    f"`{s.before.name}` (line {line(s.before.start)}), which {why}")
    return f"nothing waits for `{token}`"


def _rewritten(source: str, rw: FunctionRewrite, op: Op) -> str:
    """The op's text as the rewrite leaves it (with a `gpu.wait async` put before it)."""
    end = op.regions[0].lbrace + 1 if op.regions else op.end  # a launch's body is not shown
    edits = [TextEdit(e.start - op.start, e.end - op.start, e.new_text) for e in rw.edits
             if op.start <= e.start and e.end <= end]
    text = apply_edits(source[op.start:end], edits)
    return "\n".join(line.strip() for line in text.splitlines())


def _plain(message: str) -> str:
    """`'gpu.wait' op unexpected pre-existing gpu.wait` -> `unexpected pre-existing gpu.wait`."""
    m = re.match(r"'([\w.$]+)' op (.*)", message)
    if m is None:
        return message
    rest = m.group(2)
    return rest if m.group(1) in rest else f"`{m.group(1)}` that {rest}"


def _blocker_text(code: str, op: Op, ops: list[Op]) -> str:
    """The registry's hover text of the code, and what is particular to this op."""
    text = F.RULE[code].hover
    if code == F.ALREADY_ASYNC and op.gpu is not None and op.gpu.deps:
        text += " It waits on " + ", ".join(f"`{d.name}` ({_producer(ops, d)})"
                                            for d in op.gpu.deps) + "."
    elif code == F.UNSUPPORTED_FORM and op.generic:
        text += " It is written in generic form: write it in its custom form."
    return text


# -- code lens ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Lens:
    """A code lens: on the function's name, `title`; it applies the rewrite of `function`
    (the `nth` function of that name: split files repeat names) or, if `blocker`, reveals
    the op that blocks it."""

    start: Place
    end: Place
    title: str
    function: str
    nth: int
    blocker: bool
    variant: str | None = None  # applies another rewrite past the blockers (FunctionInfo)


def code_lenses(a: DocumentAnalysis, index: LineIndex, encoding: str) -> list[tuple]:
    """For each unit with lenses: (the unit, what their places depend on (its position, the
    `nth` of its functions), its lenses), in text order. One lens per host function the
    rewrite can change (`3 GPU ops run synchronously · Make asynchronous`) or would change
    but cannot (the first blocker and its line)."""
    out = []
    seen: dict[str, int] = {}
    for unit in a.units:
        functions = unit.result.functions
        if not functions:
            continue
        nths = []
        for fn in functions:
            nths.append(seen.get(fn.name, 0))
            seen[fn.name] = nths[-1] + 1
        relative = _unit_lenses(unit.result, a.strict, encoding)
        if not relative:
            continue
        p = index.position(unit.base, encoding)
        base = (p.line, p.character)
        lenses = [Lens(placed(start, base), placed(end, base),
                       title if blocker is None else f"{title} (line {base[0] + blocker + 1})",
                       functions[i].name, nths[i], blocker is not None, variant)
                  for i, start, end, title, blocker, variant in relative]
        out.append((unit, (base, tuple(nths)), lenses))
    return out


VARIANT_LENSES = {"llvm22": "Thread the token through it as LLVM 22 does",
                  "llvm22-serializing": "Thread the token through it as LLVM 22 does "
                                        "(serializes its separate streams)",
                  "sync-only": "Make its synchronous ops asynchronous, streams kept apart",
                  "launch": "Make asynchronous, gpu.launch included"}


def _unit_lenses(result, strict: bool, encoding: str) -> list[tuple]:
    """The lenses of one unit, kept with it: (index of the function in the unit, start and
    end of its name as (line, column) relative to the unit, title without the blocker's line,
    line of the blocker relative to the unit or None, the other rewrite it applies or None).
    Placing them costs one position per unit, not one per lens. A blocked function that
    another rewrite gets past (LLVM 22's, or with gpu.launch threaded) gets a lens for it."""
    key = ("lenses", encoding)
    cached = result.memo.get(key)
    if cached is None:
        cached = []
        index = None
        for i, fn in enumerate(result.functions):
            if fn.rewritable:
                n = fn.sync_ops
                title = (f"{n} GPU op{'s' if n != 1 else ''} run{'s' if n == 1 else ''} "
                         "synchronously · Make asynchronous")
            elif fn.first_blocker and (fn.sync_ops or strict):
                title = f"async rewrite blocked: {_plain(fn.first_blocker)}"
            else:
                continue
            index = index or LineIndex(result.source)
            s = index.position(fn.anchor[0], encoding)
            e = index.position(fn.anchor[1], encoding)
            blocker = None if fn.rewritable else index.line_of(fn.blocker_span[0])
            place = (i, (s.line, s.character), (e.line, e.character))
            cached.append((*place, title, blocker, None))
            for variant, _ in fn.variants:
                if variant in VARIANT_LENSES:  # not the lowering's: a quick fix of findings
                    cached.append((*place, VARIANT_LENSES[variant], None, variant))
        result.memo[key] = cached
    return cached
