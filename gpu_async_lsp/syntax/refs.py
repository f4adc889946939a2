"""Syntax layer: the references (SSA values, symbols, successors) in a run of MLIR text.

Op bodies in custom syntax we cannot know are kept as runs of text; this reads what they refer
to when someone asks (navigation, hover), skipping comments and strings. The reference values
(`ValueRef`, `SymbolRef`) live here; `ir.py`, whose ops hold them, imports them. No lark here.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_async_lsp import regex_cache
from gpu_async_lsp.syntax.patterns import SSA_NAME, STRING, SYMBOL_REF


# The IR's small values have their __init__ written out: a dataclass's is generated Python,
# which the build does not compile (a frame per value: 2.5k results, 450 symbols at 10k lines).
@dataclass(slots=True, init=False)
class ValueRef:
    """An SSA name as written: `%x`, `%x#1` (use), `%x:2` (definition of a result group)."""

    name: str  # "%x" without "#1" / ":2"
    start: int
    end: int
    index: int | None = None  # the N of `%x#N`
    count: int = 1  # the N of `%x:N`

    def __init__(self, name: str, start: int, end: int, index: int | None = None,
                 count: int = 1):
        self.name = name
        self.start = start
        self.end = end
        self.index = index
        self.count = count


@dataclass(slots=True, init=False)
class SymbolRef:
    """A symbol reference `@a` or nested `@a::@b` as written."""

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
