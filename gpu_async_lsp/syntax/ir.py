"""Syntax layer: the IR the parser builds. Plain objects with offsets into the document text.

Only structure that MLIR text always has is recorded (ops, results, operand uses, regions,
blocks, symbols); GPU ops additionally carry the pieces of their custom assembly that the
async rewrite edits (`GpuSyntax`). No lark, pygls or lsprotocol here.
"""

from __future__ import annotations

from gpu_async_lsp.syntax import refs
from gpu_async_lsp.syntax.refs import IRValue, SymbolRef, ValueRef, shown

# The IR's classes are plain classes with slots, their methods written out (`__slots__` are
# their fields, in order: the IR dumps of the tests read them); the compiled build makes each
# an extension type with C fields (ir.pxd, refs.pxd). Those compared by value (GpuSyntax,
# Alias, SyntaxIssue, ValueRef, SymbolRef: refs.IRValue) are unhashable, the others compared
# by identity, as the dataclasses they were.


class GpuSyntax(IRValue):
    """The parts of a GPU op's custom form (`custom<AsyncDependencies>` and what follows it).
    Made empty and filled in (one per GPU op)."""

    __slots__ = ("async_kw", "deps_open", "deps_close", "deps")

    async_kw: tuple[int, int] | None  # span of the `async` keyword
    deps_open: int | None  # offset of `[` of the dependency list
    deps_close: int | None  # offset just after `]`
    deps: list[ValueRef] | tuple  # a list once there is one

    def __init__(self):
        self.async_kw = None
        self.deps_open = None
        self.deps_close = None
        self.deps = ()


# Op's fields, in order (`Op.__slots__`; the IR dumps of the tests read them).
OP_FIELDS = ("name", "name_start", "name_end", "start", "end", "generic", "results",
             "results_end", "explicit_uses", "explicit_symbols", "spans", "src", "symbol_name",
             "regions", "gpu", "result_types")


class Op:
    """One operation. `name` is fully qualified (`func.return` for `return` in a func.func).
    Its sequences start as the empty tuple, shared, and the parser sets a list where there is
    something (a tuple for `spans`, never grown once made: one object, not a list's two):
    most ops have no region, no symbol and no use read token by token, and five empty lists
    per op were 7 MB of a 50k-line file's first analysis (6% of its time, most of it
    faulting memory in). A plain class with slots, compared by identity, not a dataclass:
    the compiled build makes it an extension type with C fields (ir.pxd), as a first open
    of 50k lines makes 31k ops and setting 16 slots through the type was most of their
    cost (a dataclass's class is rebuilt at import, which an extension type cannot be)."""

    __slots__ = OP_FIELDS

    name: str
    name_start: int
    name_end: int
    start: int  # first byte: first result, or the op name
    end: int  # just after the last token of the op (regions included); 0 until known
    generic: bool  # written as `"dialect.op"(...)`
    results: list[ValueRef] | tuple
    results_end: int | None  # just after the last result (before ` =`)
    # References read token by token (GPU ops), and the runs of text merged into BODY tokens,
    # whose references are read from `src` only when asked for (most never are).
    explicit_uses: list[ValueRef] | tuple
    explicit_symbols: list[SymbolRef] | tuple
    spans: tuple[tuple[int, int], ...]
    src: str
    symbol_name: SymbolRef | None  # `@f` of `func.func @f`, `gpu.module @m`, ...
    regions: list[Region] | tuple
    gpu: GpuSyntax | None
    result_types: list[str] | None  # generic form: types after `->`, as written

    def __init__(self, name: str, name_start: int, name_end: int, start: int, end: int = 0):
        self.name = name
        self.name_start = name_start
        self.name_end = name_end
        self.start = start
        self.end = end
        self.generic = False
        self.results = ()
        self.results_end = None
        self.explicit_uses = ()
        self.explicit_symbols = ()
        self.spans = ()
        self.src = ""
        self.symbol_name = None
        self.regions = ()
        self.gpu = None
        self.result_types = None

    def __repr__(self) -> str:
        return f"Op({self.name!r}, start={self.start}, end={self.end})"

    def _references(self, explicit: list, read) -> list:
        """References read token by token plus those `read` finds in the merged text runs,
        in text order."""
        found = list(explicit)
        for start, end in self.spans:
            found.extend(read(self.src, start, end))
        return sorted(found, key=lambda v: v.start)

    @property
    def uses(self) -> list[ValueRef]:
        """SSA operands written in the op outside its regions (`%x`, `%x#1`), in text order."""
        return self._references(self.explicit_uses, refs.values_in)

    @property
    def symbols(self) -> list[SymbolRef]:
        """Symbol references written in the op outside its regions (`@f`, `@m::@k`)."""
        return self._references(self.explicit_symbols, refs.symbols_in)

    @property
    def successors(self) -> list[ValueRef]:
        """Successor blocks (`^bb1`) the op names."""
        return [v for start, end in self.spans for v in refs.carets_in(self.src, start, end)]

    def walk(self):
        """This op and every op nested in its regions, in program order (no recursion: a
        file may nest regions thousands deep)."""
        stack = [self]
        while stack:
            op = stack.pop()
            yield op
            for region in reversed(op.regions):
                for block in reversed(region.blocks):
                    stack.extend(reversed(block.ops))


class Block:
    __slots__ = ("label", "args", "ops", "start", "end")

    label: ValueRef | None  # `^bb0`, None for an unlabeled entry block
    args: list[ValueRef]
    ops: list[Op]
    start: int
    end: int

    def __init__(self, label: ValueRef | None, args: list[ValueRef] | None = None,
                 ops: list[Op] | None = None, start: int = 0, end: int = 0):
        self.label = label
        self.args = [] if args is None else args
        self.ops = [] if ops is None else ops
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return shown(self)


class Region:
    __slots__ = ("lbrace", "rbrace", "blocks")

    lbrace: int  # offset of `{`
    rbrace: int  # offset of `}`
    blocks: list[Block]

    def __init__(self, lbrace: int, rbrace: int, blocks: list[Block] | None = None):
        self.lbrace = lbrace
        self.rbrace = rbrace
        self.blocks = [] if blocks is None else blocks

    def __repr__(self) -> str:
        return shown(self)


class Alias(IRValue):
    """`#name = ...` or `!name = ...` at the top level."""

    __slots__ = ("name", "start", "end")

    name: str
    start: int
    end: int

    def __init__(self, name: str, start: int, end: int):
        self.name = name
        self.start = start
        self.end = end


class SyntaxIssue(IRValue):
    """A parse error at the offending token."""

    __slots__ = ("message", "start", "end")

    message: str
    start: int
    end: int

    def __init__(self, message: str, start: int, end: int):
        self.message = message
        self.start = start
        self.end = end


class Chunk:
    """One `// -----` chunk (the whole text when there is no split marker)."""

    __slots__ = ("start", "end", "ops", "aliases", "errors")

    start: int
    end: int
    ops: list[Op]  # top-level ops, in order
    aliases: list[Alias]
    errors: list[SyntaxIssue]

    def __init__(self, start: int, end: int, ops: list[Op] | None = None,
                 aliases: list[Alias] | None = None, errors: list[SyntaxIssue] | None = None):
        self.start = start
        self.end = end
        self.ops = [] if ops is None else ops
        self.aliases = [] if aliases is None else aliases
        self.errors = [] if errors is None else errors

    def __repr__(self) -> str:
        return shown(self)


class Document:
    __slots__ = ("text", "chunks")

    text: str
    chunks: list[Chunk]

    def __init__(self, text: str, chunks: list[Chunk]):
        self.text = text
        self.chunks = chunks

    def __repr__(self) -> str:
        return shown(self)

    @property
    def errors(self) -> list[SyntaxIssue]:
        return [e for c in self.chunks for e in c.errors]

    def walk(self):
        for chunk in self.chunks:
            for op in chunk.ops:
                yield from op.walk()
