"""IDE layer: the values of an analysis, and the analysis of one unit.

A leaf unit (a top-level op, a child of a module) is analysed as its own text
(`analyze_unit`): its `UnitResult` holds its IR, findings and the rewrite's plan of its
functions at offsets relative to the unit's start, so that an edit elsewhere only moves it.
A `DocumentAnalysis` is one version of a document: its units where they lie (`PlacedUnit`),
its containers and the findings of their headers; what a request wants at absolute offsets
(`findings`, `functions`, `fixes`) is shifted from the units on demand.

No pygls or lsprotocol here (the protocol layer, `server/`, turns these values into LSP).
"""

from __future__ import annotations

import bisect
import dataclasses
import weakref
from dataclasses import dataclass
from typing import NamedTuple

from gpu_async_lsp.async_region import Finding, Related, analyze, suppression
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.lowering import LOWERING_CODES, NO_LOWERING, fixed_by_lowering
from gpu_async_lsp.async_region.rewriter import (
    LLVM22,
    ORIGINAL,
    SYNC_ONLY,
    FunctionRewrite,
    analyze_function,
    hint_anchor,
)
from gpu_async_lsp.edits import TextEdit, apply_edits
from gpu_async_lsp.syntax import Chunk, Document, Op, parse_unit
from gpu_async_lsp.text import positions_of


class FunctionEdits:
    """A function's edits and its other rewrites (`variants`), at offsets relative to its
    unit, made on the first request for them (a code action, a fix, a code lens): the first
    diagnostics of a file need neither. Pickled (a forked share's results), it goes as None,
    and the unit rebuilds them (`DeferredEdits`, `UnitResult.function_edits`)."""

    __slots__ = ("_source", "_rewrite", "_edits", "_variants")

    def __init__(self, source: str, rewrite: FunctionRewrite):
        self._source, self._rewrite = source, rewrite
        self._edits: tuple[TextEdit, ...] | None = None
        self._variants: tuple | None = None

    def edits(self) -> tuple[TextEdit, ...]:
        if self._edits is None:
            rw = self._rewrite
            self._edits = tuple(rw.edits) if rw.rewritable else ()
        return self._edits

    def variants(self) -> tuple:
        if self._variants is None:
            self._variants = _variants(self._source, self._rewrite)
        return self._variants

    def __reduce__(self):
        return (type(None), ())  # none: ide.sharing puts the unit's DeferredEdits in its place


class DeferredEdits:
    """The edits of a function analysed in another process: its unit rebuilds them (held
    weakly: the unit holds this; without the unit, from the unit's text and settings)."""

    __slots__ = ("unit", "index", "source", "rebuild")

    def __init__(self, unit: UnitResult, index: int):
        self.unit = weakref.ref(unit)
        self.index = index
        self.source = unit.source
        self.rebuild = unit._rebuild

    def _plan(self) -> FunctionEdits:
        unit = self.unit()
        if unit is None:
            unit = analyze_unit(self.source, *self.rebuild)
            return unit.functions[self.index].plan
        return unit.function_edits(self.index)

    def edits(self) -> tuple[TextEdit, ...]:
        return self._plan().edits()

    def variants(self) -> tuple:
        return self._plan().variants()


@dataclass(frozen=True, init=False)
class FunctionInfo:
    """What the code actions need of one host function, at absolute offsets (`delta` from
    the unit's offsets, which its `plan` has)."""

    name: str  # `@f`
    start: int
    end: int
    anchor: tuple[int, int]  # where its sync-gpu-ops hint is
    sync_ops: int
    rewritable: bool
    first_blocker: str | None
    plan: FunctionEdits | DeferredEdits = dataclasses.field(repr=False, compare=False)
    blocker_span: tuple[int, int] | None = None  # where the first blocker is
    blocker_spans: tuple[tuple[int, int], ...] = ()  # every blocker, in text order
    blocker_codes: tuple[str, ...] = ()  # of each blocker
    delta: int = 0  # from the unit's offsets to these

    def __init__(self, name: str, start: int, end: int, anchor: tuple[int, int], sync_ops: int,
                 rewritable: bool, first_blocker: str | None,
                 plan: FunctionEdits | DeferredEdits,
                 blocker_span: tuple[int, int] | None = None,
                 blocker_spans: tuple[tuple[int, int], ...] = (),
                 blocker_codes: tuple[str, ...] = (), delta: int = 0):
        # Into the instance's dict, as Finding's (one per host function of a first open; the
        # generated frozen __init__ sets each of the 12 fields through object.__setattr__).
        d = self.__dict__
        d["name"] = name
        d["start"] = start
        d["end"] = end
        d["anchor"] = anchor
        d["sync_ops"] = sync_ops
        d["rewritable"] = rewritable
        d["first_blocker"] = first_blocker
        d["plan"] = plan
        d["blocker_span"] = blocker_span
        d["blocker_spans"] = blocker_spans
        d["blocker_codes"] = blocker_codes
        d["delta"] = delta

    def __reduce__(self):  # as Finding's: the fields as __init__'s arguments
        return (FunctionInfo, (self.name, self.start, self.end, self.anchor, self.sync_ops,
                               self.rewritable, self.first_blocker, self.plan,
                               self.blocker_span, self.blocker_spans, self.blocker_codes,
                               self.delta))

    @property
    def edits(self) -> tuple[TextEdit, ...]:
        """The rewrite's edits (empty unless rewritable)."""
        return _shifted(self.plan.edits(), self.delta)

    @property
    def variants(self) -> tuple[tuple[str, tuple[TextEdit, ...]], ...]:
        """Other rewrites of a blocked function that get past its blockers (the quick fixes of
        those blockers): (variant, its edits), variants as in VARIANT_BLOCKERS. Empty for a
        function nothing blocks, without asking its plan (for a unit analysed in another
        process, that would parse the unit again: the first code lenses of a big file did so
        for half of its functions)."""
        if not self.blocker_codes:
            return ()
        return tuple((name, _shifted(edits, self.delta)) for name, edits in self.plan.variants())

    def variant_edits(self, variant: str) -> tuple[TextEdit, ...] | None:
        if variant == LOWERING_VARIANT:
            return self.lowering_edits() or None
        return next((edits for name, edits in self.variants if name == variant), None)

    def lowering_edits(self) -> tuple[TextEdit, ...]:
        """With the lowering, the edits that make the async ops of a function the rewrite
        leaves alone lower as written (empty for any other function)."""
        if self.rewritable:
            return ()
        return next((_shifted(edits, self.delta) for name, edits in self.plan.variants()
                     if name == LOWERING_VARIANT), ())


def _shifted(edits: tuple[TextEdit, ...], delta: int) -> tuple[TextEdit, ...]:
    if not delta:
        return edits
    return tuple(TextEdit(e.start + delta, e.end + delta, e.new_text) for e in edits)


class UnitResult:
    """Findings and functions of one unit, at offsets relative to the unit's start, and their
    positions relative to the unit's first line (computed once per encoding). The unit's IR
    (`ops`) and the rewrite's plan of its functions (`rewrites`) stay for navigation, hover,
    inlay hints and code lens, which answer from them without parsing again."""

    __slots__ = ("source", "findings", "functions", "syntax_error", "_ops", "_rewrites",
                 "_rebuild", "_plans", "_positions", "_fixes", "fragment", "memo", "__weakref__")

    def __init__(self, source: str, findings: tuple[Finding, ...],
                 functions: tuple[FunctionInfo, ...], syntax_error: bool,
                 ops: tuple[Op, ...] = (), rewrites: tuple[FunctionRewrite, ...] = (),
                 rebuild: tuple | None = None):
        self.source = source
        self.findings = findings
        self.functions = functions
        self.syntax_error = syntax_error
        self._ops = ops
        self._rewrites = rewrites
        # A result computed in another process (`ide.sharing`) has no IR: `rebuild` holds
        # the arguments of analyze_unit that build it again, on the first request that reads
        # it (parsing one unit: a fraction of a millisecond for a function).
        self._rebuild = rebuild
        self._plans: tuple = ()
        self._positions: dict[str, list] = {}
        self._fixes: list[TextEdit] | None = None
        self.fragment: tuple | None = None  # (key, JSON text) of the last publication
        self.memo: dict = {}  # what request handlers derive from this unit, by their key

    @property
    def ops(self) -> tuple[Op, ...]:
        """The unit's IR: its top-level ops."""
        if self._rebuild is not None:
            self._materialize()
        return self._ops

    @property
    def rewrites(self) -> tuple[FunctionRewrite, ...]:
        """The rewrite's plan of each function of the unit."""
        if self._rebuild is not None:
            self._materialize()
        return self._rewrites

    def _materialize(self) -> None:
        built = analyze_unit(self.source, *self._rebuild)
        self._ops, self._rewrites = built._ops, built._rewrites
        self._plans = tuple(fn.plan for fn in built.functions)
        self._rebuild = None  # last: a reader in another thread sees the IR or rebuilds it

    def function_edits(self, index: int) -> FunctionEdits:
        """The edits of the unit's `index`th function, for a result computed in another
        process (its functions' plans came as None)."""
        if self._rebuild is not None:
            self._materialize()
        return self._plans[index]

    def fixes(self) -> list[TextEdit]:
        """One edit per function `--fix` changes (rewritten, or made to lower): the span from
        its first to its last planned edit, rewritten (the file-wide action sends these, not
        every insertion)."""
        if self._fixes is None:
            fixes = []
            for fn in self.functions:
                edits = fn.edits if fn.rewritable else fn.lowering_edits()
                if not edits:
                    continue
                start = min(e.start for e in edits)
                end = max(e.end for e in edits)
                moved = [TextEdit(e.start - start, e.end - start, e.new_text) for e in edits]
                fixes.append(TextEdit(start, end, apply_edits(self.source[start:end], moved)))
            self._fixes = fixes
        return self._fixes

    def known_positions(self, encoding: str) -> list | None:
        """The positions of the findings in `encoding` if made already, else None."""
        return self._positions.get(encoding)

    def set_positions(self, encoding: str, positions: list) -> None:
        """The positions of the findings in `encoding`, made by another process."""
        self._positions[encoding] = positions

    def positions(self, encoding: str) -> list:
        """Per finding: ((line, col), (line, col), related [((line, col), (line, col))] or ()),
        lines counted from the unit's first line, columns from its start on that line."""
        cached = self._positions.get(encoding)
        if cached is None:
            offsets = []
            for f in self.findings:
                offsets.append(f.start)
                offsets.append(f.end)
                for r in f.related:
                    offsets.append(r.start)
                    offsets.append(r.end)
            at = positions_of(self.source, offsets, encoding)
            cached = []
            k = 0
            for f in self.findings:  # by index: most findings have no related information
                n = len(f.related)
                if n:
                    cached.append((at[k], at[k + 1],
                                   [(at[j], at[j + 1]) for j in range(k + 2, k + 2 + 2 * n, 2)]))
                else:
                    cached.append((at[k], at[k + 1], _NO_RELATED))
                k += 2 + 2 * n
            self._positions[encoding] = cached
        return cached


_NO_RELATED: tuple = ()  # the related positions of a finding without related information


@dataclass(frozen=True)
class Container:
    """A container op (`module`, `gpu.module`) whose children are units, at absolute offsets;
    `symbol` is None for an unnamed module or a header with a syntax error."""

    name: str
    symbol: str | None  # `@kernels`
    symbol_span: tuple[int, int] | None
    start: int
    end: int
    lbrace: int
    rbrace: int

    def shifted(self, edit_end: int, delta: int) -> Container:
        """This container after an edit that ended at `edit_end` (inside one of its units,
        or after or before it) changed the length of the text by `delta`."""
        if not delta or self.end < edit_end:
            return self
        if self.start >= edit_end:
            span = self.symbol_span
            return dataclasses.replace(
                self, start=self.start + delta, end=self.end + delta, lbrace=self.lbrace + delta,
                rbrace=self.rbrace + delta,
                symbol_span=(span[0] + delta, span[1] + delta) if span else None)
        return dataclasses.replace(self, end=self.end + delta, rbrace=self.rbrace + delta)


class PlacedUnit(NamedTuple):
    """A leaf unit's result where it lies in a document (a tuple: a first open makes one per
    unit twice, and a frozen dataclass's construction cost 3 ms of a 50k-line file's)."""

    base: int  # offset of the unit in the document
    result: UnitResult
    dialect: str | None  # the default dialect around it
    device: bool  # inside a gpu.module
    # What suppression comments outside the unit hide on its first and last line.
    outside: tuple = suppression.NO_CONTEXT

    @property
    def end(self) -> int:
        return self.base + len(self.result.source)


@dataclass
class DocumentAnalysis:
    """The analysis of one document version: units placed at their offsets, plus the findings
    of container headers (absolute)."""

    version: int | None
    text: str
    units: list[PlacedUnit]
    header_findings: list[Finding]
    has_syntax_errors: bool
    strict: bool = False
    containers: list[Container] = dataclasses.field(default_factory=list)
    chunks: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    memo: dict = dataclasses.field(default_factory=dict)  # per-version request results
    semantics: str = ORIGINAL
    options: tuple = ()  # the analyzer's settings (strict, semantics, thread_launch, lowering)

    def unit_at(self, offset: int) -> PlacedUnit | None:
        """The unit whose text holds `offset` (its end included)."""
        i = bisect.bisect_right(self.units, offset, key=lambda u: u.base) - 1
        if i >= 0 and offset <= self.units[i].end:
            return self.units[i]
        return None

    def units_between(self, start: int, end: int) -> list[PlacedUnit]:
        """The units that overlap [start, end]."""
        i = max(bisect.bisect_right(self.units, start, key=lambda u: u.base) - 1, 0)
        out = []
        for unit in self.units[i:]:
            if unit.base > end:
                break
            if unit.end >= start:
                out.append(unit)
        return out

    @property
    def findings(self) -> list[Finding]:
        """Every finding at absolute offsets, in text order."""
        out = list(self.header_findings)
        for u in self.units:
            out.extend(shift_finding(f, u.base) for f in u.result.findings)
        out.sort(key=lambda f: (f.start, f.end, f.code))
        return out

    @property
    def functions(self) -> list[FunctionInfo]:
        """Every host function at absolute offsets."""
        return [_shift_function(fn, u.base) for u in self.units for fn in u.result.functions]

    def fixes(self) -> list[TextEdit]:
        """Every rewritable function's rewrite as one edit each, at absolute offsets."""
        return [TextEdit(e.start + u.base, e.end + u.base, e.new_text)
                for u in self.units for e in u.result.fixes()]

    @property
    def any_rewritable(self) -> bool:
        """Is there anything for the file-wide fix: a function to rewrite, or a finding of the
        lowering that `--fix` removes (`fixed_by_lowering`)?"""
        return any(fn.rewritable for u in self.units for fn in u.result.functions) or any(
            f.code in LOWERING_CODES and fixed_by_lowering(f)
            for u in self.units for f in u.result.findings)

    def functions_named(self, name: str) -> list[FunctionInfo]:
        """The host functions called `name` (`@f`; split files repeat names), in text order,
        at absolute offsets."""
        return [_shift_function(fn, u.base) for u in self.units
                for fn in u.result.functions if fn.name == name]

    def functions_between(self, start: int, end: int) -> list[FunctionInfo]:
        """The host functions that overlap [start, end], at absolute offsets."""
        return [_shift_function(fn, u.base) for u in self.units for fn in u.result.functions
                if fn.start + u.base <= end and fn.end + u.base >= start]


def shift_finding(f: Finding, delta: int) -> Finding:
    if not delta:
        return f
    return f._replace(
        start=f.start + delta, end=f.end + delta,
        related=tuple(Related(r.start + delta, r.end + delta, r.message) for r in f.related))


def _shift_function(fn: FunctionInfo, delta: int) -> FunctionInfo:
    if not delta:
        return fn
    span = fn.blocker_span
    return dataclasses.replace(
        fn, start=fn.start + delta, end=fn.end + delta,
        anchor=(fn.anchor[0] + delta, fn.anchor[1] + delta),
        blocker_span=(span[0] + delta, span[1] + delta) if span else None,
        blocker_spans=tuple((s + delta, e + delta) for s, e in fn.blocker_spans),
        delta=fn.delta + delta)


# The other rewrites of a blocked function, and the blockers each gets past: LLVM 22's
# (it threads through pre-existing waits and async ops where the original pass refuses),
# and the one that threads an inline gpu.launch too.
LLVM22_VARIANT = "llvm22"
# LLVM 22's rewrite where it would make a stream the function starts on its own (a
# `gpu.wait async` with no dependencies) wait for another chain: offered with the sync-only
# rewrite, which keeps the streams apart.
LLVM22_SERIALIZING_VARIANT = "llvm22-serializing"
SYNC_ONLY_VARIANT = "sync-only"
LAUNCH_VARIANT = "launch"
# With the lowering, what makes the async ops of a function the rewrite leaves alone lower
# as written (lowerable.plain_plan: `--fix` does it too); no blocker to get past.
LOWERING_VARIANT = "lowering"
VARIANT_BLOCKERS = {
    LLVM22_VARIANT: frozenset({F.PRE_EXISTING_WAIT, F.ALREADY_ASYNC, F.ASYNC_OP_WITH_REGIONS}),
    LLVM22_SERIALIZING_VARIANT: frozenset({F.PRE_EXISTING_WAIT, F.ALREADY_ASYNC,
                                           F.ASYNC_OP_WITH_REGIONS}),
    SYNC_ONLY_VARIANT: frozenset({F.PRE_EXISTING_WAIT, F.ALREADY_ASYNC}),
    LOWERING_VARIANT: frozenset(),
    LAUNCH_VARIANT: frozenset({F.LAUNCH_NOT_OUTLINED}),
}


def _variants(source: str, fn: FunctionRewrite) -> tuple:
    out = []
    if fn.as_written_plan(source) is not None:
        out.append((LOWERING_VARIANT, tuple(fn.fix_edits(source))))
    codes = {b.code for b in fn.blockers}
    if not codes:
        return tuple(out)
    if fn.semantics == ORIGINAL and codes <= VARIANT_BLOCKERS[LLVM22_VARIANT]:
        other = analyze_function(source, fn.func, LLVM22, fn.thread_launch,
                                 lowering=fn.lowering)
        if other.rewritable and not other.serializes:
            out.append((LLVM22_VARIANT, tuple(other.edits)))
        elif other.rewritable:
            out.append((LLVM22_SERIALIZING_VARIANT, tuple(other.edits)))
            if codes <= VARIANT_BLOCKERS[SYNC_ONLY_VARIANT]:
                apart = analyze_function(source, fn.func, SYNC_ONLY, fn.thread_launch,
                                         lowering=fn.lowering)
                if apart.rewritable:
                    out.append((SYNC_ONLY_VARIANT, tuple(apart.edits)))
    if not fn.thread_launch and codes <= VARIANT_BLOCKERS[LAUNCH_VARIANT]:
        other = analyze_function(source, fn.func, fn.semantics, True, lowering=fn.lowering)
        if other.rewritable:
            out.append((LAUNCH_VARIANT, tuple(other.edits)))
    return tuple(out)


def _function_info(source: str, fn: FunctionRewrite, anchor: tuple[int, int]) -> FunctionInfo:
    first = fn.blockers[0] if fn.blockers else None
    return FunctionInfo(fn.name, fn.func.start, fn.func.end, anchor, len(fn.sync_ops),
                        fn.rewritable, first.message if first else None,
                        FunctionEdits(source, fn),
                        (first.start, first.end) if first else None,
                        tuple((b.start, b.end) for b in fn.blockers),
                        tuple(b.code for b in fn.blockers))


def analyze_unit(source: str, dialect: str | None, device: bool, strict: bool,
                 semantics: str = ORIGINAL, thread_launch: bool = False,
                 lowering: str = NO_LOWERING,
                 outside: tuple = suppression.NO_CONTEXT) -> UnitResult:
    """Findings and functions of one leaf unit, given as its own text (offsets relative).
    Its findings are those that suppression comments leave: its own, and `outside` it
    (`suppression.outside`: a unit's result is a function of its text and of that)."""
    items, issue = parse_unit(source, dialect)
    # Lists, not generators, here and in the analysis a unit runs: the build makes each
    # generator an object and a frame to resume (a first open runs this for every function).
    ops = tuple([x for x in items if isinstance(x, Op)])
    chunk = Chunk(0, len(source), [] if device else list(ops))  # device code: syntax only
    if issue is not None:
        chunk.errors.append(issue)
    # Steps and edits are walked when first asked for (a code action, a hint, a lens).
    analysis = analyze(Document(source, [chunk]), strict=strict, semantics=semantics,
                       thread_launch=thread_launch, plan=False, lowering=lowering)
    functions = tuple([_function_info(source, fn, hint_anchor(fn.func))
                       for fn in analysis.functions])
    findings = tuple(suppression.suppress(source, analysis.findings, outside))
    return UnitResult(source, findings, functions, issue is not None, ops,
                      tuple(analysis.functions))


def syntax_finding(message: str, start: int, end: int) -> Finding:
    return Finding(F.SYNTAX, message, start, end, F.Severity.ERROR)
