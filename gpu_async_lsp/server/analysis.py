"""Protocol layer: the analysis of open documents, reusing what an edit did not touch.

A buffer is split into units (`syntax.parser.split_document`: the `// -----` chunks, their
top-level ops, and the children of modules). Each leaf unit is parsed and analysed on its own
and its results are kept by the unit's text, relative to its start; after an edit only units
whose text changed are parsed again, the others are moved to their new offsets. A 50k-line
file with a one-character edit costs a brace scan and one function's parse.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass

from gpu_async_lsp.async_region import Finding, Related, analyze
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.rewriter import FunctionRewrite, hint_anchor
from gpu_async_lsp.edits import TextEdit
from gpu_async_lsp.text import LineIndex
from gpu_async_lsp.op_tables import DEFAULT_DIALECT
from gpu_async_lsp.syntax import Chunk, Document, Op
from gpu_async_lsp.syntax.lexer import CONTAINER_NAME_RE, Unit, tokenize_lines
from gpu_async_lsp.syntax.parser import (
    OP_WORDS,
    TOP_LEVEL_DIALECT,
    parse_container_header,
    parse_unit_tokens,
    split_document,
)

DEVICE_CONTAINERS = ("gpu.module",)


@dataclass(frozen=True)
class FunctionInfo:
    """What the code actions need of one host function, at absolute offsets."""

    name: str  # `@f`
    start: int
    end: int
    anchor: tuple[int, int]  # where its sync-gpu-ops hint is
    sync_ops: int
    rewritable: bool
    first_blocker: str | None
    edits: tuple[TextEdit, ...]


class UnitResult:
    """Findings and functions of one unit, at offsets relative to the unit's start, and their
    positions relative to the unit's first line (computed once per encoding)."""

    __slots__ = ("source", "findings", "functions", "syntax_error", "_positions")

    def __init__(self, source: str, findings: tuple[Finding, ...],
                 functions: tuple[FunctionInfo, ...], syntax_error: bool):
        self.source = source
        self.findings = findings
        self.functions = functions
        self.syntax_error = syntax_error
        self._positions: dict[str, list] = {}

    def positions(self, encoding: str) -> list:
        """Per finding: ((line, col), (line, col), [related ((line, col), (line, col))]),
        lines counted from the unit's first line, columns from its start on that line."""
        cached = self._positions.get(encoding)
        if cached is None:
            index = LineIndex(self.source)

            def pos(offset: int) -> tuple[int, int]:
                p = index.position(offset, encoding)
                return p.line, p.character

            cached = [(pos(f.start), pos(f.end), [(pos(r.start), pos(r.end)) for r in f.related])
                      for f in self.findings]
            self._positions[encoding] = cached
        return cached


@dataclass(frozen=True)
class PlacedUnit:
    base: int  # offset of the unit in the document
    result: UnitResult


@dataclass
class DocumentAnalysis:
    """The analysis of one document version: units placed at their offsets, plus the findings
    of container headers (absolute)."""

    version: int | None
    text: str
    units: list[PlacedUnit]
    header_findings: list[Finding]
    has_syntax_errors: bool

    @property
    def findings(self) -> list[Finding]:
        """Every finding at absolute offsets, in text order."""
        out = list(self.header_findings)
        for u in self.units:
            out.extend(_shift_finding(f, u.base) for f in u.result.findings)
        out.sort(key=lambda f: (f.start, f.end, f.code))
        return out

    @property
    def functions(self) -> list[FunctionInfo]:
        """Every host function at absolute offsets."""
        return [_shift_function(fn, u.base) for u in self.units for fn in u.result.functions]

    def functions_between(self, start: int, end: int) -> list[FunctionInfo]:
        """The host functions that overlap [start, end], at absolute offsets."""
        return [_shift_function(fn, u.base) for u in self.units for fn in u.result.functions
                if fn.start + u.base <= end and fn.end + u.base >= start]


def _shift_finding(f: Finding, delta: int) -> Finding:
    if not delta:
        return f
    return dataclasses.replace(
        f, start=f.start + delta, end=f.end + delta,
        related=tuple(Related(r.start + delta, r.end + delta, r.message) for r in f.related))


def _shift_function(fn: FunctionInfo, delta: int) -> FunctionInfo:
    if not delta:
        return fn
    return dataclasses.replace(
        fn, start=fn.start + delta, end=fn.end + delta,
        anchor=(fn.anchor[0] + delta, fn.anchor[1] + delta),
        edits=tuple(TextEdit(e.start + delta, e.end + delta, e.new_text) for e in fn.edits))


def _function_info(fn: FunctionRewrite, anchor: tuple[int, int]) -> FunctionInfo:
    return FunctionInfo(fn.name, fn.func.start, fn.func.end, anchor, len(fn.sync_ops),
                        fn.rewritable, fn.blockers[0].message if fn.blockers else None,
                        tuple(fn.edits) if fn.rewritable else ())


class Analyzer:
    """Analyses documents with a cache of unit results (one per server: settings included)."""

    MAX_CACHED_UNITS = 200_000

    def __init__(self, strict: bool = False):
        self.strict = strict
        self._cache: dict[tuple, UnitResult] = {}
        self._lock = threading.Lock()

    def analyze(self, text: str, version: int | None = None) -> DocumentAnalysis:
        headers: list[Finding] = []
        placed: list[PlacedUnit] = []
        errors = False
        for start, end, units in split_document(text):
            errors |= self._units(text, units, TOP_LEVEL_DIALECT, False, headers, placed)
        return DocumentAnalysis(version, text, placed, headers, errors)

    def _units(self, text: str, units: list[Unit], dialect: str | None, device: bool,
               findings: list, placed: list) -> bool:
        errors = False
        for unit in units:
            if unit.region is not None:
                op, issue = parse_container_header(text, unit, dialect)
                if issue is not None:
                    errors = True
                    findings.append(_syntax_finding(issue.message, issue.start, issue.end))
                name = op.name if op is not None else CONTAINER_NAME_RE.match(text, unit.start).group()
                name = "builtin.module" if name == "module" else name
                inner = DEFAULT_DIALECT.get(name) if op is not None else dialect
                errors |= self._units(text, unit.children, inner,
                                      device or name in DEVICE_CONTAINERS, findings, placed)
                continue
            result = self._unit(text, unit, dialect, device)
            placed.append(PlacedUnit(unit.start, result))
            errors |= result.syntax_error
        return errors

    def _unit(self, text: str, unit: Unit, dialect: str | None, device: bool) -> UnitResult:
        source = text[unit.start:unit.end]
        key = (source, dialect, device)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        result = analyze_unit(source, dialect, device, self.strict)
        with self._lock:
            if len(self._cache) >= self.MAX_CACHED_UNITS:
                self._cache.clear()
            self._cache[key] = result
        return result


def analyze_unit(source: str, dialect: str | None, device: bool, strict: bool) -> UnitResult:
    """Findings and functions of one leaf unit, given as its own text (offsets relative)."""
    items, issue = parse_unit_tokens(source, tokenize_lines(source, 0, len(source), OP_WORDS),
                                     dialect, len(source))
    chunk = Chunk(0, len(source), [x for x in items if isinstance(x, Op)])
    if issue is not None:
        chunk.errors.append(issue)
    if device:
        chunk.ops = []  # device code: only its syntax matters here
    analysis = analyze(Document(source, [chunk]), strict=strict)
    functions = tuple(_function_info(fn, hint_anchor(fn.func)) for fn in analysis.functions)
    return UnitResult(source, tuple(analysis.findings), functions, issue is not None)


def _syntax_finding(message: str, start: int, end: int) -> Finding:
    return Finding(F.SYNTAX, message, start, end, F.Severity.ERROR)
