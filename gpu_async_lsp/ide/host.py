"""IDE layer: the host of open documents' analyses, reusing what an edit did not touch.

`Analyzer.analyze`, in order:

1. an edit inside one leaf unit's body that cannot move where units begin or end: that unit
   alone is analysed again and the others are moved along (`_reuse`, `changed_span`);
2. else the text is split into `// -----` chunks and, in each, into units
   (`syntax.iter_units`: top-level ops and the children of modules); each leaf unit's result
   is looked up in the cache by its text, dialect, device flag, what comments outside it hide
   and the settings (`_place`);
3. aliases used and defined nowhere, and the problems of suppression comments outside every
   unit, are found in the whole text;
4. the units not cached are analysed at once, each distinct one once (`ide.units.analyze_unit`;
   a big batch, or a big text of many chunks, is shared with a forked process:
   `ide.sharing`). Given an `EarlyPublication`, a shared batch's diagnostics are published
   as soon as both processes are done, before the other's results are loaded and joined.

A 50k-line file with a one-character edit costs a brace scan and one function's parse.
Results are kept in an `ide.cache.UnitCache`, bounded by what is open.

No pygls or lsprotocol here (the protocol layer, `server/`, turns these values into LSP).
"""

from __future__ import annotations

import bisect
import gc
from typing import Protocol

from gpu_async_lsp import regex_cache
from gpu_async_lsp.async_region import Finding, suppression
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.lowering import NO_LOWERING
from gpu_async_lsp.async_region.rewriter import ORIGINAL
from gpu_async_lsp.gcpause import gc_paused
from gpu_async_lsp.ide import sharing
from gpu_async_lsp.ide.cache import UnitCache
from gpu_async_lsp.ide.units import (
    Container,
    DocumentAnalysis,
    PlacedUnit,
    UnitResult,
    analyze_unit,
    shift_finding,
    syntax_finding,
)
from gpu_async_lsp.syntax import iter_units, split_chunks, undefined_aliases
from gpu_async_lsp.text import positions_of

# A named tuple made from a tuple in C: its class's own __new__ is Python, and a first open
# places every unit twice (its text, then its result) before and after the forked process.
_new = tuple.__new__


class EarlyPublication(Protocol):
    """The first diagnostics of a big batch shared with a forked process, published before
    that process's results are loaded and joined (the server's `_EarlyPublication`): the
    fragment of a unit's diagnostics where it lies, made (and kept on the result) in either
    process; a fragment the other process made, kept on the result rebuilt here; and the
    publication of the header findings and the fragments of every unit, in text order."""

    encoding: str

    def fragment(self, result: UnitResult, line: int, character: int) -> str: ...

    def adopt(self, result: UnitResult, line: int, character: int, text: str) -> None: ...

    def publish(self, text: str, headers: list[Finding], parts: list[str]) -> None: ...


class Analyzer:
    """Analyses documents with the given settings; unit results are kept in `cache`, which
    analyzers of other settings may share (the settings are part of each key)."""

    def __init__(self, strict: bool = False, cache: UnitCache | None = None,
                 semantics: str = ORIGINAL, thread_launch: bool = False,
                 lowering: str = NO_LOWERING):
        self.strict = strict
        self.semantics = semantics
        self.thread_launch = thread_launch
        self.lowering = lowering
        self.cache = cache if cache is not None else UnitCache()
        # analyze_unit's settings, in its order (part of every cache key).
        self._options = (strict, semantics, thread_launch, lowering)
        self.last_allocations = 0
        # Share the analysis of many units (a big file's first open) with a forked process.
        self.share_big_batches = True

    def analyze(self, text: str, version: int | None = None,
                previous: DocumentAnalysis | None = None,
                encoding: str | None = None,
                early: EarlyPublication | None = None) -> DocumentAnalysis:
        """The analysis of `text`. Given the analysis of an earlier text of the same document,
        an edit inside one function's body re-analyses that unit only (no re-split).
        `encoding`: the one the findings will be placed in (`UnitResult.positions`); a big
        batch's units get their positions where they are analysed, in either process.
        `early` (in `encoding`): publishes a shared batch's diagnostics before the analysis
        is done (and is not called otherwise)."""
        with gc_paused():
            result = self._analyze(text, version, previous, encoding, early)
            # Objects the cycle collector tracks that this analysis added (it did not run).
            self.last_allocations = gc.get_count()[0]
        return result

    def _analyze(self, text: str, version: int | None, previous: DocumentAnalysis | None,
                 encoding: str | None = None,
                 early: EarlyPublication | None = None) -> DocumentAnalysis:
        if previous is not None and previous.text is not text and previous.options == self._options:
            quick = self._reuse(text, version, previous)
            if quick is not None:
                return quick
        # Any suppression comment at all: what those outside each unit hide there.
        marked = suppression.Outside(text) if suppression.MARKER in text else None
        chunks = split_chunks(text)
        shared = None
        if self.share_big_batches and sharing.chunks_worth_sharing(text, chunks):
            def place(span, headers, placed, containers, memo):  # a sharing.Place
                return self._place(text, span, headers, placed, containers, marked, memo)

            shared = sharing.share_chunks(text, chunks, place, self.cache, self._options,
                                          encoding)
        if shared is not None:
            headers, placed, containers, errors = shared
        else:
            headers, placed, containers = [], [], []
            memo: dict = {}  # container headers of this text, parsed once each
            errors = False
            for span in chunks:
                errors |= self._place(text, span, headers, placed, containers, marked, memo)
        # Before the units left are analysed: an early publication has every header finding.
        errors |= _undefined_aliases(text, chunks, headers)
        if marked:
            headers.extend(_problems_outside_units(text, placed))
        if shared is None:
            if early is not None and early.encoding != encoding:
                early = None
            errors |= self._fill_missing(placed, encoding, text, headers, early)
        return DocumentAnalysis(version, text, placed, headers, errors, self.strict,
                                containers, chunks, semantics=self.semantics,
                                options=self._options)

    def _fill_missing(self, placed: list[PlacedUnit], encoding: str | None, text: str = "",
                      headers: list[Finding] | None = None,
                      early: EarlyPublication | None = None) -> bool:
        """The leaf units whose results were not cached (`_place` left their text): analysed
        now, all at once, each distinct one once (a text may hold the same unit many times),
        and cached. Any syntax error? `early`: see `_early`."""
        missing: dict[tuple, list[int]] = {}
        for i, p in enumerate(placed):
            if isinstance(p.result, str):
                missing.setdefault((p.result, p.dialect, p.device, p.outside), []).append(i)
        if not missing:
            return False
        errors = False
        keys = list(missing)
        share = self.share_big_batches and sharing.worth_sharing(keys)
        shared_early = None
        if early is not None and share:
            shared_early = _early(text, placed, missing, headers or [], early)
        results = self._analyze_units(keys, encoding, shared_early, share)
        options = self._options
        self.cache.put_many([((*key, options), result) for key, result in zip(missing, results)])
        for where, result in zip(missing.values(), results):
            for i in where:
                p = placed[i]
                placed[i] = _new(PlacedUnit, (p.base, result, p.dialect, p.device, p.outside))
            errors |= result.syntax_error
        return errors

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
                    findings.append(syntax_finding(issue.message, issue.start, issue.end))
                containers.append(Container(header.name, header.symbol, header.symbol_span,
                                            unit.start, unit.end, *unit.region))
                continue
            source = text[unit.start:unit.end]
            outside = marked.of(unit.start, unit.end) if marked else suppression.NO_CONTEXT
            cached = get((source, dialect, device, outside, options))
            if cached is None:
                placed.append(_new(PlacedUnit, (unit.start, source, dialect, device, outside)))
                continue
            placed.append(_new(PlacedUnit, (unit.start, cached, dialect, device, outside)))
            errors |= cached.syntax_error
        return errors

    def _analyze_units(self, units: list[tuple], encoding: str | None = None,
                       early: sharing.Early | None = None,
                       share: bool = False) -> list[UnitResult]:
        """Results of leaf units (text, dialect, device, outside), in order. With `share` (a
        big batch, a first open, with a CPU idle: `sharing.worth_sharing`), shared with a
        forked process, whose results come back without their IR."""
        options = self._options
        shared = sharing.shared_results(units, options, encoding, early) if share else None
        if shared is None:
            return [analyze_unit(source, d, dev, *options, around)
                    for source, d, dev, around in units]
        return shared

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
        headers = [shift_finding(f, delta) if f.start >= old_end else f
                   for f in previous.header_findings]
        errors = any(u.result.syntax_error for u in placed) or any(
            f.code == F.SYNTAX for f in headers)
        containers = [c.shifted(old_end, delta) for c in previous.containers]
        chunks = [(s + delta, e + delta) if s >= old_end else (s, e + delta if e >= old_end else e)
                  for s, e in previous.chunks]
        result = DocumentAnalysis(version, text, placed, headers, errors, self.strict,
                                  containers, chunks, semantics=self.semantics,
                                options=self._options)
        _carry_memos(previous, result, k)
        return result

    def _unit(self, source: str, dialect: str | None, device: bool,
              outside: tuple) -> UnitResult:
        key = (source, dialect, device, outside, self._options)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        result = analyze_unit(source, dialect, device, *self._options, outside)
        self.cache.put(key, result)
        return result


def _early(text: str, placed: list[PlacedUnit], missing: dict[tuple, list[int]],
           headers: list[Finding], publisher: EarlyPublication) -> sharing.Early:
    """The early publication of a document whose `missing` units (key -> the indices in
    `placed` where it lies) are shared with a forked process: when both are done, the
    fragment of each unit in text order, this process's formatted here, the other's as it
    formatted them (where a unit it analysed lies a second time, its result is needed: no
    early publication, the usual one follows the join)."""
    places = positions_of(text, [p.base for p in placed], publisher.encoding)
    firsts = [where[0] for where in missing.values()]
    key_of: dict[int, int] = {}  # index in placed -> index of its key in missing
    for k, where in enumerate(missing.values()):
        for i in where:
            key_of[i] = k
    n = len(firsts)
    fragment = publisher.fragment

    def received(ours: list[UnitResult], theirs: list[str]) -> None:
        parts = []
        for i, p in enumerate(placed):
            result = p.result
            if isinstance(result, str):
                k = key_of[i]
                if k >= len(ours):  # the other process's
                    back = n - 1 - k
                    if back >= len(theirs) or firsts[k] != i:
                        return
                    if theirs[back]:
                        parts.append(theirs[back])
                    continue
                result = ours[k]
            if result.findings:
                piece = fragment(result, *places[i])
                if piece:
                    parts.append(piece)
        publisher.publish(text, headers, parts)

    return sharing.Early([places[i] for i in firsts], publisher, received)


# Per-document results that may survive an edit inside one unit (see features.symbol_table).
CARRIED_MEMOS = ("symtab",)
MAX_CARRIED_EDITS = 64


def _carry_memos(previous: DocumentAnalysis, result: DocumentAnalysis, edited_unit: int) -> None:
    """Results derived from the whole document that a change of some units may leave valid
    (ide/features.py decides): offered to the new analysis with the indices of the units
    changed since they were made (versions nobody asked about pass them on)."""
    for key in CARRIED_MEMOS:
        if key in previous.memo:
            result.memo[("carried", key)] = (previous.memo[key], frozenset({edited_unit}))
        elif ("carried", key) in previous.memo:
            value, edited = previous.memo[("carried", key)]
            if len(edited) < MAX_CARRIED_EDITS:
                result.memo[("carried", key)] = (value, edited | {edited_unit})


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


def _problems_outside_units(text: str, placed: list[PlacedUnit]) -> list[Finding]:
    """The warnings of invalid suppression comments that lie in no leaf unit (between units,
    on a container's lines): a unit reports those in its own text."""
    bases = [p.base for p in placed]
    out = []
    for d in suppression.directives(text):
        i = bisect.bisect_right(bases, d.start) - 1
        if i >= 0:  # its result, or its text while it is not analysed yet
            result = placed[i].result
            end = placed[i].base + len(result if isinstance(result, str) else result.source)
        if i < 0 or d.start >= end:
            out.extend(d.problems)
    return out


def _undefined_aliases(text: str, chunks: list[tuple[int, int]], findings: list) -> bool:
    """Add a syntax finding for each alias a chunk uses and does not define; any?"""
    undefined = undefined_aliases(text, chunks)
    findings.extend(syntax_finding(u.message, u.start, u.end) for u in undefined)
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
