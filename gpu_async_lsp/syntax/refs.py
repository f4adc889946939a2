"""Syntax layer: the references (SSA values, symbols, successors) in a run of MLIR text.

Op bodies in custom syntax we cannot know are kept as runs of text; this reads what they refer
to when someone asks (navigation, hover), skipping comments and strings. The reference values
(`ValueRef`, `SymbolRef`) live here; `ir.py`, whose ops hold them, imports them. No lark here.
"""

from __future__ import annotations

from gpu_async_lsp import regex_cache
from gpu_async_lsp.syntax.patterns import SSA_NAME, STRING, SYMBOL_REF

# The IR's small values are plain classes with slots and their methods written out, as Op
# (ir.py): the compiled build makes each an extension type with C fields (refs.pxd), made and
# filled in C (a dataclass's slots were each set through its type: 2.5k results, 450 symbols
# at 10k lines); and no dataclass is made at import (`check` starts without `dataclasses`
# and `inspect`: ~16 ms with the classes it made).


def same_fields(a, b) -> bool:
    """`a == b` for the IR's values: of one class, every field (`__slots__`) equal."""
    if type(a) is not type(b):
        return NotImplemented
    for name in type(a).__slots__:
        if getattr(a, name) != getattr(b, name):
            return False
    return True


def shown(x) -> str:
    """The IR value's repr, as its dataclass showed it: `Name(field=value, ...)`."""
    fields = ", ".join([f"{name}={getattr(x, name)!r}" for name in type(x).__slots__])
    return f"{type(x).__name__}({fields})"


class IRValue:
    """The base of the IR's values that are compared by their fields (`same_fields`),
    unhashable, as the dataclasses they were, and shown with their fields (`shown`)."""

    __slots__ = ()

    def __eq__(self, other):
        return same_fields(self, other)

    __hash__ = None

    def __repr__(self) -> str:
        return shown(self)


class ValueRef(IRValue):
    """An SSA name as written: `%x`, `%x#1` (use), `%x:2` (definition of a result group)."""

    __slots__ = ("name", "start", "end", "index", "count")

    name: str  # "%x" without "#1" / ":2"
    start: int
    end: int
    index: int | None  # the N of `%x#N`
    count: int  # the N of `%x:N`

    def __init__(self, name: str, start: int, end: int, index: int | None = None,
                 count: int = 1):
        self.name = name
        self.start = start
        self.end = end
        self.index = index
        self.count = count


class SymbolRef(IRValue):
    """A symbol reference `@a` or nested `@a::@b` as written."""

    __slots__ = ("path", "start", "end")

    path: tuple[str, ...]  # ("@a", "@b")
    start: int
    end: int

    def __init__(self, path: tuple[str, ...], start: int, end: int):
        self.path = path
        self.start = start
        self.end = end


_SKIP = rf"//[^\n]*|{STRING}"
_VALUE_RE = regex_cache.compile(rf"{_SKIP}|({SSA_NAME})(?:#(\d+))?")
_SYMBOL_RE = regex_cache.compile(rf"//[^\n]*|(?<!@){STRING}|({SYMBOL_REF})")
_CARET_RE = regex_cache.compile(rf"{_SKIP}|(\^[\w$.\-]+)")


def values_in(text: str, start: int, end: int):
    for m in _VALUE_RE.finditer(text, start, end):
        if m.group(1):
            idx = m.group(2)
            yield ValueRef(m.group(1), m.start(), m.end(), int(idx) if idx else None)


def symbols_in(text: str, start: int, end: int):
    for m in _SYMBOL_RE.finditer(text, start, end):
        if m.group(1):
            yield SymbolRef(tuple(m.group(1).split("::")), m.start(), m.end())


def carets_in(text: str, start: int, end: int):
    for m in _CARET_RE.finditer(text, start, end):
        if m.group(1):
            yield ValueRef(m.group(1), m.start(), m.end())
