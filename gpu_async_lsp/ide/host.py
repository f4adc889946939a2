"""IDE layer: the analysis of open documents, reusing what an edit did not touch.

A buffer is split into units (`syntax.parser.split_document`: the `// -----` chunks, their
top-level ops, and the children of modules). Each leaf unit is parsed and analysed on its own
and its results are kept by the unit's text, relative to its start; after an edit only units
whose text changed are parsed again, the others are moved to their new offsets. A 50k-line
file with a one-character edit costs a brace scan and one function's parse. Results are
kept in an `ide.cache.UnitCache`, bounded by what is open.

No pygls or lsprotocol here (the protocol layer, `server/`, turns these values into LSP).
"""

from __future__ import annotations

import bisect
import dataclasses
import gc
import weakref
from dataclasses import dataclass
from typing import NamedTuple

from gpu_async_lsp import parallel, regex_cache
from gpu_async_lsp.async_region import Finding, Related, analyze, suppression
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.rewriter import (
    LLVM22,
    ORIGINAL,
    FunctionRewrite,
    analyze_function,
    hint_anchor,
)
from gpu_async_lsp.edits import TextEdit, apply_edits
from gpu_async_lsp.gcpause import gc_paused
from gpu_async_lsp.ide.cache import UnitCache
from gpu_async_lsp.syntax import Chunk, Document, Op, undefined_aliases
from gpu_async_lsp.syntax.parser import (
    build_parser_once,
    iter_units,
    parse_unit,
    split_chunks,
)
from gpu_async_lsp.text import positions_of


class FunctionEdits:
    """A function's edits and its other rewrites (`variants`), at offsets relative to its
    unit, made on the first request for them (a code action, a fix, a code lens): the first
    diagnostics of a file need neither. Pickled (a forked share's results), it goes as None,
    and the unit rebuilds them (`_Deferred`, `UnitResult.function_edits`)."""

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
        return (type(None), ())  # none: shared_results puts the unit's _Deferred in its place


class _Deferred:
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


@dataclass(frozen=True)
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
    plan: FunctionEdits | _Deferred = dataclasses.field(repr=False, compare=False)
    blocker_span: tuple[int, int] | None = None  # where the first blocker is
    blocker_spans: tuple[tuple[int, int], ...] = ()  # every blocker, in text order
    blocker_codes: tuple[str, ...] = ()  # of each blocker
    delta: int = 0  # from the unit's offsets to these

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
        return next((edits for name, edits in self.variants if name == variant), None)


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
        # A result computed in another process (`shared_results`) has no IR: `rebuild` holds
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
        """One edit per rewritable function: the span from its first to its last planned edit,
        rewritten (the file-wide action sends these, not every insertion)."""
        if self._fixes is None:
            fixes = []
            for fn in self.functions:
                if not fn.rewritable or not fn.edits:
                    continue
                start = min(e.start for e in fn.edits)
                end = max(e.end for e in fn.edits)
                moved = [TextEdit(e.start - start, e.end - start, e.new_text) for e in fn.edits]
                fixes.append(TextEdit(start, end, apply_edits(self.source[start:end], moved)))
            self._fixes = fixes
        return self._fixes

    def positions(self, encoding: str) -> list:
        """Per finding: ((line, col), (line, col), [related ((line, col), (line, col))]),
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
            at = iter(positions_of(self.source, offsets, encoding))
            cached = []
            for f in self.findings:
                start, end = next(at), next(at)
                cached.append((start, end, [(next(at), next(at)) for _ in f.related]))
            self._positions[encoding] = cached
        return cached


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
    options: tuple = ()  # the analyzer's settings (strict, semantics, thread_launch)

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
            out.extend(_shift_finding(f, u.base) for f in u.result.findings)
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
        return any(fn.rewritable for u in self.units for fn in u.result.functions)

    def functions_named(self, name: str) -> list[FunctionInfo]:
        """The host functions called `name` (`@f`; split files repeat names), in text order,
        at absolute offsets."""
        return [_shift_function(fn, u.base) for u in self.units
                for fn in u.result.functions if fn.name == name]

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
LAUNCH_VARIANT = "launch"
VARIANT_BLOCKERS = {
    LLVM22_VARIANT: frozenset({F.PRE_EXISTING_WAIT, F.ALREADY_ASYNC, F.ASYNC_OP_WITH_REGIONS}),
    LAUNCH_VARIANT: frozenset({F.LAUNCH_NOT_OUTLINED}),
}


def _variants(source: str, fn: FunctionRewrite) -> tuple:
    codes = {b.code for b in fn.blockers}
    if not codes:
        return ()
    out = []
    if fn.semantics == ORIGINAL and codes <= VARIANT_BLOCKERS[LLVM22_VARIANT]:
        other = analyze_function(source, fn.func, LLVM22, fn.thread_launch)
        if other.rewritable:
            out.append((LLVM22_VARIANT, tuple(other.edits)))
    if not fn.thread_launch and codes <= VARIANT_BLOCKERS[LAUNCH_VARIANT]:
        other = analyze_function(source, fn.func, fn.semantics, True)
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


class Analyzer:
    """Analyses documents with the given settings; unit results are kept in `cache`, which
    analyzers of other settings may share (the settings are part of each key)."""

    def __init__(self, strict: bool = False, cache: UnitCache | None = None,
                 semantics: str = ORIGINAL, thread_launch: bool = False):
        self.strict = strict
        self.semantics = semantics
        self.thread_launch = thread_launch
        self.cache = cache if cache is not None else UnitCache()
        self._options = (strict, semantics, thread_launch)
        self.last_allocations = 0
        # Share the analysis of many units (a big file's first open) with a forked process.
        self.share_big_batches = True

    def analyze(self, text: str, version: int | None = None,
                previous: DocumentAnalysis | None = None,
                encoding: str | None = None) -> DocumentAnalysis:
        """The analysis of `text`. Given the analysis of an earlier text of the same document,
        an edit inside one function's body re-analyses that unit only (no re-split).
        `encoding`: the one the findings will be placed in (`UnitResult.positions`); a big
        batch's units get their positions where they are analysed, in either process."""
        with gc_paused():
            result = self._analyze(text, version, previous, encoding)
            # Objects the cycle collector tracks that this analysis added (it did not run).
            self.last_allocations = gc.get_count()[0]
        return result

    def _analyze(self, text: str, version: int | None, previous: DocumentAnalysis | None,
                 encoding: str | None = None) -> DocumentAnalysis:
        if previous is not None and previous.text is not text and previous.options == self._options:
            quick = self._reuse(text, version, previous)
            if quick is not None:
                return quick
        headers: list[Finding] = []
        placed: list[PlacedUnit] = []
        containers: list[Container] = []
        errors = False
        # Any suppression comment at all: what those outside each unit hide there.
        marked = suppression.Outside(text) if suppression.MARKER in text else None
        chunks = split_chunks(text)
        shared = (self._chunks_shared(text, chunks, marked, encoding)
                  if self.share_big_batches and _chunks_worth_sharing(text, chunks) else None)
        if shared is not None:
            headers, placed, containers, errors = shared
            errors |= _undefined_aliases(text, chunks, headers)
            if marked:
                headers.extend(_problems_outside_units(text, placed))
            return DocumentAnalysis(version, text, placed, headers, errors, self.strict,
                                    containers, chunks, semantics=self.semantics,
                                    options=self._options)
        parsed_headers: dict = {}  # container headers of this text, parsed once each
        for span in chunks:
            errors |= self._place(text, span, headers, placed, containers, marked,
                                  parsed_headers)
        # The leaf units whose results were not cached: analysed now, all at once, each
        # distinct one once (a text may hold the same unit many times).
        missing: dict[tuple, list[int]] = {}
        for i, p in enumerate(placed):
            if isinstance(p.result, str):
                missing.setdefault((p.result, p.dialect, p.device, p.outside), []).append(i)
        if missing:
            results = self._analyze_units(list(missing), encoding)
            options = self._options
            self.cache.put_many([((*key, options), result) for key, result in zip(missing, results)])
            for where, result in zip(missing.values(), results):
                for i in where:
                    p = placed[i]
                    placed[i] = PlacedUnit(p.base, result, p.dialect, p.device, p.outside)
                errors |= result.syntax_error
        errors |= _undefined_aliases(text, chunks, headers)
        if marked:
            headers.extend(_problems_outside_units(text, placed))
        return DocumentAnalysis(version, text, placed, headers, errors, self.strict,
                                containers, chunks, semantics=self.semantics,
                                options=self._options)

    def _place(self, text: str, span: tuple[int, int], findings: list, placed: list,
               containers: list, marked: suppression.Outside | None, memo: dict) -> bool:
        """The units of the chunk text[span]: containers and their header findings, leaf
        units placed with their cached results, or their texts for now (analysed with the
        others missing, `_analyze`). Any syntax error? `memo`: container headers of this
        text, parsed once each."""
        errors = False
        get = self.cache.get
        options = self._options
        for unit, dialect, device, header, _ in iter_units(text, *span, memo=memo):
            if header is not None:
                issue = header.issue
                if issue is not None:
                    errors = True
                    findings.append(_syntax_finding(issue.message, issue.start, issue.end))
                containers.append(Container(header.name, header.symbol, header.symbol_span,
                                            unit.start, unit.end, *unit.region))
                continue
            source = text[unit.start:unit.end]
            outside = marked.of(unit.start, unit.end) if marked else suppression.NO_CONTEXT
            cached = get((source, dialect, device, outside, options))
            if cached is None:
                placed.append(PlacedUnit(unit.start, source, dialect, device, outside))
                continue
            placed.append(PlacedUnit(unit.start, cached, dialect, device, outside))
            errors |= cached.syntax_error
        return errors

    def _analyze_units(self, units: list[tuple], encoding: str | None = None) -> list[UnitResult]:
        """Results of leaf units (text, dialect, device, outside), in order. A big batch (a
        first open) is shared with a forked process, whose results come back without their
        IR."""
        options = (self.strict, self.semantics, self.thread_launch)
        shared = shared_results(units, options, encoding) if self.share_big_batches else None
        if shared is None:
            return [analyze_unit(source, d, dev, *options, around)
                    for source, d, dev, around in units]
        return shared

    def _chunk(self, text: str, span: tuple[int, int], marked, parsed: dict, done: dict,
               encoding: str | None, claims: parallel.KeyClaims, me: int) -> tuple:
        """One `// -----` chunk split and analysed: its header findings, placed units,
        containers and whether its headers have syntax errors. A unit is analysed here if
        this process (`me`) claims its key first; else its result is its key's text for now
        (the other process analyses it). `done`: the results made here so far, by key (a
        text may hold the same unit many times)."""
        headers: list[Finding] = []
        placed: list[PlacedUnit] = []
        containers: list[Container] = []
        errors = self._place(text, span, headers, placed, containers, marked, parsed)
        for i, p in enumerate(placed):
            if isinstance(p.result, str):
                key = (p.result, p.dialect, p.device, p.outside)
                result = done.get(key)
                if result is None and claims.claim(key, me):
                    result = done[key] = _placed(
                        analyze_unit(*_arguments(key, self._options)), encoding)
                if result is not None:
                    placed[i] = PlacedUnit(p.base, result, p.dialect, p.device, p.outside)
        return headers, placed, containers, errors

    def _chunks_shared(self, text: str, chunks: list[tuple[int, int]], marked,
                       encoding: str | None) -> tuple | None:
        """The analysis of a big text of many chunks, shared with a forked process: this
        one splits and analyses chunks from the first on, the other from the last back,
        until they meet (`parallel.TwoEnds`), so that the split is shared too (a fifth of a
        first open of 50k lines of real IR, when one process made it). A unit found by both
        is analysed by the one that claims its key first (`parallel.KeyClaims`: a text
        often holds the same unit many times). The other process's units come back without
        IR, as in shared_results. None if no process can be had."""
        build_parser_once()  # before the fork, so that the child does not build it again
        claims = parallel.KeyClaims(len(text) // 8)  # a unit per ~700 characters: 1% clash
        parsed: dict = {}
        done: dict = {}
        try:
            shared = parallel.from_both_ends(
                len(chunks),
                lambda i: self._chunk(text, chunks[i], marked, parsed, done, encoding, claims, 1),
                self._light_chunks, text, chunks, marked, encoding, claims)
        finally:
            claims.close()
        if shared is None:  # no process to be had: the caller analyses it all here
            return None
        ours, theirs = shared
        # The other process's results, by key and by light form.
        options = self._options
        built: dict[int, UnitResult] = {}  # id of a light form -> its UnitResult
        by_key: dict[tuple, UnitResult] = {}
        for _, units, _, _ in theirs:
            for base, size, dialect, device, outside, light in units:
                if light is not None and id(light) not in built:
                    source = text[base:base + size]
                    result = built[id(light)] = _from_light(source, light, dialect, device,
                                                            options, outside, encoding)
                    by_key.setdefault((source, dialect, device, outside), result)

        def result_of(key: tuple) -> UnitResult:
            """A unit claimed by the other process (or by neither: a clash of claims)."""
            result = by_key.get(key) or done.get(key)
            if result is None:
                result = done[key] = _placed(analyze_unit(*_arguments(key, options)), encoding)
            return result

        # theirs[k] is chunk len(chunks) - 1 - k; where both took a chunk, ours is kept.
        headers: list[Finding] = []
        placed: list[PlacedUnit] = []
        containers: list[Container] = []
        errors = False
        for i in range(len(chunks)):
            k = len(chunks) - 1 - i
            if i >= len(ours) and k < len(theirs):
                h, units, c, e = theirs[k]
                for base, size, dialect, device, outside, light in units:
                    result = (built[id(light)] if light is not None else
                              result_of((text[base:base + size], dialect, device, outside)))
                    placed.append(PlacedUnit(base, result, dialect, device, outside))
            else:  # this process's chunk, or one the other did not take (it died)
                h, units, c, e = ours[i] if i < len(ours) else self._chunk(
                    text, chunks[i], marked, parsed, done, encoding, claims, 1)
                for p in units:
                    if isinstance(p.result, str):  # claimed by the other process
                        p = PlacedUnit(p.base, result_of((p.result, p.dialect, p.device,
                                                          p.outside)),
                                       p.dialect, p.device, p.outside)
                    placed.append(p)
            headers.extend(h)
            containers.extend(c)
            errors |= e
        errors = errors or any(p.result.syntax_error for p in placed)
        self.cache.put_many([((*key, options), result) for key, result in done.items()])
        self.cache.put_many([((*key, options), result) for key, result in by_key.items()])
        return headers, placed, containers, errors

    def _light_chunks(self, text: str, chunks: list[tuple[int, int]], marked,
                      encoding: str | None, claims: parallel.KeyClaims, ends) -> bytes:
        """In the forked process: the chunks it takes from the last one back, each pickled
        as it is made (`parallel.pickled_each`): header findings, containers, syntax errors
        of the headers and each unit as (offset, length, dialect, device, outside, light
        result): (findings, functions, syntax error, positions), once per distinct unit (the
        pickler's memo sends a repeated one as a reference), None for a unit the other
        process claimed."""
        # What another thread of the server held at the fork stays held here: the cache
        # (consistent: the fork was made under the GIL) is read under a lock of its own.
        self.cache.after_fork()
        parsed: dict = {}
        done: dict = {}
        light: dict[int, tuple] = {}  # id of a result -> its light form, made once

        def chunk(i: int) -> tuple:
            headers, placed, containers, errors = self._chunk(
                text, chunks[i], marked, parsed, done, encoding, claims, 2)
            units = []
            for p in placed:
                r = p.result
                if isinstance(r, str):  # claimed by the other process
                    units.append((p.base, len(r), p.dialect, p.device, p.outside, None))
                    continue
                form = light.get(id(r))
                if form is None:
                    form = light[id(r)] = (r.findings, r.functions, r.syntax_error,
                                           r._positions.get(encoding) if encoding else None)
                units.append((p.base, len(r.source), p.dialect, p.device, p.outside, form))
            return headers, units, containers, errors

        return parallel.pickled_each(chunk(i) for i in ends.back())

    def _reuse(self, text: str, version, previous: DocumentAnalysis) -> DocumentAnalysis | None:
        """The analysis after an edit that stays inside the body of one leaf unit and cannot
        change where units begin or end (no braces, quotes or slashes typed or removed), or
        None when a full split is needed."""
        old = previous.text
        start, old_end, new_end = changed_span(old, text)
        if not previous.units:
            return None
        bases = [u.base for u in previous.units]
        k = bisect.bisect_right(bases, start) - 1
        if k < 0:
            return None
        unit = previous.units[k]
        source = unit.result.source
        body_open = source.find("{")
        body_close = source.rfind("}")
        if body_open < 0 or not (unit.base + body_open < start and old_end <= unit.base + body_close):
            return None
        if _STRUCTURAL.search(old, start, old_end) or _STRUCTURAL.search(text, start, new_end):
            return None
        if _touches_alias(old, start, old_end) or _touches_alias(text, start, new_end):
            return None  # which aliases are used may change: the chunk is looked at again
        # A comment or string on the edited lines can change extent with the edit.
        line_begin = text.rfind("\n", 0, start) + 1
        line_end = text.find("\n", new_end)
        if _CONTEXT.search(text, line_begin, len(text) if line_end < 0 else line_end):
            return None
        delta = new_end - old_end
        new_source = text[unit.base:unit.end + delta]
        placed = previous.units[:k]
        # The lines around the unit are as they were: so is what comments there hide in it.
        placed.append(PlacedUnit(unit.base, self._unit(new_source, unit.dialect, unit.device,
                                                       unit.outside),
                                 unit.dialect, unit.device, unit.outside))
        placed.extend(PlacedUnit(u.base + delta, u.result, u.dialect, u.device, u.outside)
                      for u in previous.units[k + 1:])
        headers = [_shift_finding(f, delta) if f.start >= old_end else f
                   for f in previous.header_findings]
        errors = any(u.result.syntax_error for u in placed) or any(
            f.code == F.SYNTAX for f in headers)
        containers = [c.shifted(old_end, delta) for c in previous.containers]
        chunks = [(s + delta, e + delta) if s >= old_end else (s, e + delta if e >= old_end else e)
                  for s, e in previous.chunks]
        result = DocumentAnalysis(version, text, placed, headers, errors, self.strict,
                                  containers, chunks, semantics=self.semantics,
                                options=self._options)
        # Results derived from the whole document that a change of some units may leave valid
        # (server/features.py decides): offered to the new analysis with the indices of the
        # units changed since they were made (versions nobody asked about pass them on).
        for key in CARRIED_MEMOS:
            if key in previous.memo:
                result.memo[("carried", key)] = (previous.memo[key], frozenset({k}))
            elif ("carried", key) in previous.memo:
                value, edited = previous.memo[("carried", key)]
                if len(edited) < MAX_CARRIED_EDITS:
                    result.memo[("carried", key)] = (value, edited | {k})
        return result

    def _unit(self, source: str, dialect: str | None, device: bool,
              outside: tuple) -> UnitResult:
        key = (source, dialect, device, outside, self._options)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        result = analyze_unit(source, dialect, device, self.strict, self.semantics,
                              self.thread_launch, outside)
        self.cache.put(key, result)
        return result


# Per-document results that may survive an edit inside one unit (see features.symbol_table).
CARRIED_MEMOS = ("symtab",)
MAX_CARRIED_EDITS = 64


# What an edit may not touch for the unit layout to stay: braces, quotes (strings hold braces),
# slashes (comments and `// -----` markers).
_STRUCTURAL = regex_cache.compile(r'[{}"/\\\n\r]')
_CONTEXT = regex_cache.compile(r'["/\\]')


def changed_span(old: str, new: str) -> tuple[int, int, int]:
    """(start, end in old, end in new) of the region where two texts differ: the common
    prefix and suffix are found by bisection on slice comparisons (memcmp speed)."""
    n = min(len(old), len(new))
    lo, hi = 0, n  # the common prefix length is in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[lo:mid] == new[lo:mid]:
            lo = mid
        else:
            hi = mid - 1
    prefix = lo
    lo, hi = 0, n - prefix
    lo_old, lo_new = len(old), len(new)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if old[lo_old - mid:lo_old - lo] == new[lo_new - mid:lo_new - lo]:
            lo = mid
        else:
            hi = mid - 1
    return prefix, len(old) - lo, len(new) - lo


def analyze_unit(source: str, dialect: str | None, device: bool, strict: bool,
                 semantics: str = ORIGINAL, thread_launch: bool = False,
                 outside: tuple = suppression.NO_CONTEXT) -> UnitResult:
    """Findings and functions of one leaf unit, given as its own text (offsets relative).
    Its findings are those that suppression comments leave: its own, and `outside` it
    (`suppression.outside`: a unit's result is a function of its text and of that)."""
    items, issue = parse_unit(source, dialect)
    ops = tuple(x for x in items if isinstance(x, Op))
    chunk = Chunk(0, len(source), [] if device else list(ops))  # device code: syntax only
    if issue is not None:
        chunk.errors.append(issue)
    # Steps and edits are walked when first asked for (a code action, a hint, a lens).
    analysis = analyze(Document(source, [chunk]), strict=strict, semantics=semantics,
                       thread_launch=thread_launch, plan=False)
    functions = tuple(_function_info(source, fn, hint_anchor(fn.func))
                      for fn in analysis.functions)
    findings = tuple(suppression.suppress(source, analysis.findings, outside))
    return UnitResult(source, findings, functions, issue is not None, ops,
                      tuple(analysis.functions))


def shared_results(units: list[tuple], options: tuple,
                   encoding: str | None = None) -> list[UnitResult] | None:
    """The results of a big batch of leaf units, analysed by this process from the first
    unit on and by a forked one from the last unit back, until they meet (`parallel.TwoEnds`:
    on a shared, noisy machine neither waits for the other with half the batch fixed in
    advance); None when the batch is too small to be worth a process (or fork is not
    available). The other process's results have no IR (`UnitResult.ops` rebuilds it on
    first use), so that little crosses the pipe. Given `encoding`, each process places the
    findings of its units (`UnitResult.positions`): the first publication only formats."""
    if len(units) < 2 or not parallel.can_fork(threaded=True):
        return None
    total = 0
    for unit in units:
        total += len(unit[0])
        if total >= parallel.MIN_PARALLEL_CHARS:
            break
    else:
        return None
    build_parser_once()  # before the fork, so that the child does not build it again
    shared = parallel.from_both_ends(
        len(units), lambda i: _placed(analyze_unit(*_arguments(units[i], options)), encoding),
        _light_results, units, options, encoding)
    if shared is None:  # no process to be had (out of memory, process limit): this one
        return None
    ours, light = shared
    # The other process took units from the last one back: light[k] is units[-1 - k]. Both
    # may have taken the unit where they met: this process's result is kept.
    out = ours
    for i in range(len(ours), len(units)):
        k = len(units) - 1 - i
        if k >= len(light):
            out.append(analyze_unit(*_arguments(units[i], options)))
            continue
        source, d, dev, around = units[i]
        out.append(_from_light(source, light[k], d, dev, options, around, encoding))
    return out


def _chunks_worth_sharing(text: str, chunks: list[tuple[int, int]]) -> bool:
    """Is `text` big enough for a second process, in chunks small enough to share evenly
    (none over a sixteenth of it: else its units are shared, shared_results)?"""
    if len(text) < parallel.MIN_PARALLEL_CHARS or len(chunks) < 16:
        return False
    most = len(text) // 16
    return all(e - s <= most for s, e in chunks) and parallel.can_fork(threaded=True)


def _from_light(source: str, light: tuple, dialect: str | None, device: bool, options: tuple,
                outside: tuple, encoding: str | None) -> UnitResult:
    """The UnitResult of a unit analysed in another process, from its light form (findings,
    functions, syntax error, positions in `encoding`): its IR is rebuilt on first use."""
    findings, functions, error, positions = light
    result = UnitResult(source, findings, functions, error,
                        rebuild=(dialect, device, *options, outside))
    for j, fn in enumerate(functions):  # unpickled here, not yet shared: set in place
        object.__setattr__(fn, "plan", _Deferred(result, j))
    if positions is not None:
        result._positions[encoding] = positions
    return result


def _placed(result: UnitResult, encoding: str | None) -> UnitResult:
    """`result` with the positions of its findings in `encoding` made (if given)."""
    if encoding is not None and result.findings:
        result.positions(encoding)
    return result


def _arguments(unit: tuple, options: tuple) -> tuple:
    """analyze_unit's arguments for a leaf unit (text, dialect, device, outside)."""
    source, dialect, device, outside = unit
    return (source, dialect, device, *options, outside)


def _light_results(units: list[tuple], options: tuple, encoding: str | None, ends) -> bytes:
    """In the forked process: findings, functions, syntax errors and the findings' positions
    in `encoding` (None without one) of each unit it takes, from the last one back
    (`TwoEnds.back`), no IR; pickled one by one as they are made (`parallel.pickled_each`)."""
    def light(i: int) -> tuple:
        r = _placed(analyze_unit(*_arguments(units[i], options)), encoding)
        return (r.findings, r.functions, r.syntax_error,
                r._positions.get(encoding) if encoding is not None else None)

    return parallel.pickled_each(light(i) for i in ends.back())


def _problems_outside_units(text: str, placed: list[PlacedUnit]) -> list[Finding]:
    """The warnings of invalid suppression comments that lie in no leaf unit (between units,
    on a container's lines): a unit reports those in its own text."""
    bases = [p.base for p in placed]
    out = []
    for d in suppression.directives(text):
        i = bisect.bisect_right(bases, d.start) - 1
        if i < 0 or d.start >= placed[i].end:
            out.extend(d.problems)
    return out


def _undefined_aliases(text: str, chunks: list[tuple[int, int]], findings: list) -> bool:
    """Add a syntax finding for each alias a chunk uses and does not define; any?"""
    undefined = undefined_aliases(text, chunks)
    findings.extend(_syntax_finding(u.message, u.start, u.end) for u in undefined)
    return bool(undefined)


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.")


def _touches_alias(text: str, start: int, end: int) -> bool:
    """Does text[start:end] hold a `#`/`!`, or lie in a name that one starts (`#map`)?"""
    if "#" in text[start:end] or "!" in text[start:end]:
        return True
    k = start
    while k > 0 and text[k - 1] in _NAME_CHARS:
        k -= 1
    return k > 0 and text[k - 1] in "#!"


def _syntax_finding(message: str, start: int, end: int) -> Finding:
    return Finding(F.SYNTAX, message, start, end, F.Severity.ERROR)
