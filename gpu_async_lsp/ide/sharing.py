"""IDE layer: the analysis of a big text shared with a forked process.

A first open of a big file (400k characters or more) is the one analysis worth a second
process. This process takes work from the first item on, the forked one from the last back,
until they meet (`parallel.TwoEnds`: on a shared, noisy machine neither waits for the other
with half the work fixed in advance). Two shapes:

- `shared_results`: a batch of leaf units, each analysed by one of the processes;
- `share_chunks`: a text of many `// -----` chunks, shared chunk by chunk so that the split
  is shared too; a unit found by both processes is analysed by the one that claims its key
  first (`parallel.KeyClaims`: a text often holds the same unit many times).

What the forked process sends back is light: no IR (`LightResult`, `LightUnit`,
`LightChunk`), pickled one by one as it is made (`parallel.pickled_each`). Such a result
rebuilds its IR on the first request that reads it (`UnitResult.ops`). Given an encoding,
each process places its units' findings: the first publication only formats. Given an
`Early` publication too, the forked process formats its units' diagnostics as well, and
this one publishes them before it loads that process's results (at 500k lines of host code,
the loading and joining were 130 ms between the analysis and the publication).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from gpu_async_lsp import parallel
from gpu_async_lsp.async_region import Finding
from gpu_async_lsp.ide.units import (
    Container,
    DeferredEdits,
    FunctionInfo,
    PlacedUnit,
    UnitResult,
    analyze_unit,
)
from gpu_async_lsp.syntax import build_parser_once

if TYPE_CHECKING:
    from gpu_async_lsp.ide.cache import UnitCache


_new = tuple.__new__  # a named tuple made from a tuple in C (its class's __new__ is Python)


class LightResult(NamedTuple):
    """A unit's result as the forked process sends it: no IR."""

    findings: tuple[Finding, ...]
    functions: tuple[FunctionInfo, ...]  # their plans go as None (`FunctionEdits`)
    syntax_error: bool
    positions: list | None  # of the findings, in the encoding asked for (None without one)


class LightUnit(NamedTuple):
    """A leaf unit the forked process placed in one of its chunks."""

    base: int  # offset of the unit in the text
    size: int
    dialect: str | None
    device: bool
    outside: tuple  # what suppression comments outside it hide (`PlacedUnit.outside`)
    light: LightResult | None  # None: claimed by this process


class LightChunk(NamedTuple):
    """One `// -----` chunk as the forked process sends it."""

    headers: list[Finding]  # the findings of its container headers
    units: list[LightUnit]
    containers: list[Container]
    errors: bool  # does a header have a syntax error?


class PlacedChunk(NamedTuple):
    """One chunk split and analysed in this process (a unit's result may be its text for
    now: claimed by the other process)."""

    headers: list[Finding]
    units: list[PlacedUnit]
    containers: list[Container]
    errors: bool


class SharedChunks(NamedTuple):
    """What `share_chunks` gives: a whole text's header findings, units and containers."""

    headers: list[Finding]
    units: list[PlacedUnit]
    containers: list[Container]
    errors: bool  # any syntax error, in a header or a unit


class Early(NamedTuple):
    """A first publication made as soon as both processes are done (`shared_results`):
    where each unit of the batch lies first in the text ((line, column) in the publisher's
    encoding), the publisher (`ide.host.EarlyPublication`: it formats a unit's diagnostics,
    in either process), and what publishes, given this process's results and the other's
    fragments (`received`)."""

    places: list[tuple[int, int]]
    publisher: Any
    received: Callable[[list[UnitResult], list[str]], None]


# Places the units of one chunk: (chunk span, header findings out, placed units out,
# containers out, header memo) -> any syntax error in a header or a cached unit?
Place = Callable[[tuple[int, int], list, list, list, dict], bool]


def worth_sharing(units: list[tuple]) -> bool:
    """Should a batch of leaf units (text, dialect, device, outside) be shared with a second
    process now: big enough (`big_batch`), and a CPU is idle for it (`parallel.cpu_to_spare`:
    asked once per batch, it looks at the machine for a millisecond)?"""
    return big_batch(units) and parallel.cpu_to_spare()


def big_batch(units: list[tuple]) -> bool:
    """Is a batch of leaf units big enough for a second process (and may one be forked)?"""
    if len(units) < 2 or not parallel.can_fork(threaded=True):
        return False
    total = 0
    for unit in units:
        total += len(unit[0])
        if total >= parallel.MIN_PARALLEL_CHARS:
            return True
    return False


def shared_results(units: list[tuple], options: tuple, encoding: str | None = None,
                   early: Early | None = None) -> list[UnitResult] | None:
    """The results of a big batch of leaf units (text, dialect, device, outside), in order,
    analysed by this process from the first unit on and by a forked one from the last back;
    None when the batch is too small to be worth a process (or no process can be had).
    With `early` (and `encoding`, its publisher's), `early.received` is called once both
    are done, before the other's results are loaded, with the fragments it formatted.
    Whether a CPU is idle for the other process is the caller's to ask (`worth_sharing`)."""
    if not big_batch(units):
        return None
    build_parser_once()  # before the fork, so that the child does not build it again
    shared = parallel.from_both_ends(len(units), _front(units, options, encoding, early),
                                     _light_results, units, options, encoding, early)
    if shared is None:  # no process to be had (out of memory, process limit): this one
        return None
    ours, theirs = shared
    fragments: list[str] = []
    if theirs is not None and early is not None:
        fragments, theirs = theirs
        early.received(ours, fragments)
    light = parallel.unpickled(theirs) if theirs is not None else []
    # The other process took units from the last one back: light[k] is units[-1 - k]. Both
    # may have taken the unit where they met: this process's result is kept.
    out = ours
    for i in range(len(ours), len(units)):
        k = len(units) - 1 - i
        if k >= len(light):
            out.append(analyze_unit(*_arguments(units[i], options)))
            continue
        source, d, dev, around = units[i]
        result = _from_light(source, light[k], d, dev, options, around, encoding)
        if early is not None and result.findings:  # the fragment it published: kept
            early.publisher.adopt(result, *early.places[i], fragments[k])
        out.append(result)
    return out


def _unit_work(units: list[tuple], options: tuple, encoding: str | None,
               early: Early | None):
    """Unit i's work in either process: its result, its findings placed in `encoding`; and,
    with `early`, the fragment of its diagnostics ("" without; each process makes its own as
    it goes: after both were done, this process made its half for 100 of 1,400 ms at 500k
    lines, the other idle)."""
    def work(i: int) -> tuple[UnitResult, str]:
        result = _placed(analyze_unit(*_arguments(units[i], options)), encoding)
        if early is None or not result.findings:
            return result, ""
        return result, early.publisher.fragment(result, *early.places[i])

    return work


def _front(units: list[tuple], options: tuple, encoding: str | None, early: Early | None):
    """This process's work on unit i (`_unit_work`): its result."""
    work = _unit_work(units, options, encoding, early)
    return lambda i: work(i)[0]


def _light_results(units: list[tuple], options: tuple, encoding: str | None,
                   early: Early | None, ends) -> bytes | tuple[list[str], bytes]:
    """In the forked process: the light result of each unit it takes, from the last one back
    (`TwoEnds.back`), pickled one by one as they are made; with `early`, with the fragment
    of each, which the other process reads without loading them."""
    work = _unit_work(units, options, encoding, early)
    fragments: list[str] = []

    def each():
        for i in ends.back():
            result, piece = work(i)
            fragments.append(piece)
            yield _light(result, encoding)

    stream = parallel.pickled_each(each())
    return stream if early is None else (fragments, stream)


def chunks_worth_sharing(text: str, chunks: list[tuple[int, int]]) -> bool:
    """Is `text` big enough for a second process, in chunks small enough to share evenly
    (none over a sixteenth of it: else its units are shared, shared_results)?"""
    if len(text) < parallel.MIN_PARALLEL_CHARS or len(chunks) < 16:
        return False
    most = len(text) // 16
    return (all(e - s <= most for s, e in chunks) and parallel.can_fork(threaded=True)
            and parallel.cpu_to_spare())


class _ChunkWork:
    """What one process needs to split and analyse chunks: the host's placing of a chunk's
    units (`place`: the cache and the container walk), the header memo and the results made
    here so far, by key (a text may hold the same unit many times)."""

    __slots__ = ("text", "chunks", "place", "options", "encoding", "claims", "memo", "done")

    def __init__(self, text: str, chunks: list[tuple[int, int]], place: Place,
                 options: tuple, encoding: str | None, claims: parallel.KeyClaims):
        self.text, self.chunks, self.place = text, chunks, place
        self.options, self.encoding, self.claims = options, encoding, claims
        self.memo: dict = {}
        self.done: dict[tuple, UnitResult] = {}

    def chunk(self, i: int, me: int) -> PlacedChunk:
        """Chunk `i` split and its units placed. A unit not cached is analysed here if this
        process (`me`) claims its key first; else its result is its text for now (the other
        process analyses it)."""
        headers: list[Finding] = []
        placed: list[PlacedUnit] = []
        containers: list[Container] = []
        errors = self.place(self.chunks[i], headers, placed, containers, self.memo)
        done = self.done
        for k, p in enumerate(placed):
            if isinstance(p.result, str):
                key = (p.result, p.dialect, p.device, p.outside)
                result = done.get(key)
                if result is None and self.claims.claim(key, me):
                    result = done[key] = _placed(
                        analyze_unit(*_arguments(key, self.options)), self.encoding)
                if result is not None:
                    placed[k] = _new(PlacedUnit, (p.base, result, p.dialect, p.device,
                                                  p.outside))
        return PlacedChunk(headers, placed, containers, errors)

    def light_chunks(self, cache: UnitCache, ends) -> bytes:
        """In the forked process: the chunks it takes from the last one back, each pickled
        as it is made; a distinct result's light form is made once (the pickler's memo sends
        a repeated one as a reference)."""
        # What another thread of the server held at the fork stays held here: the cache
        # (consistent: the fork was made under the GIL) is read under a lock of its own.
        cache.after_fork()
        light: dict[int, LightResult] = {}  # id of a result -> its light form

        def chunk(i: int) -> LightChunk:
            headers, placed, containers, errors = self.chunk(i, 2)
            units = []
            for p in placed:
                r = p.result
                if isinstance(r, str):  # claimed by the other process
                    units.append(LightUnit(p.base, len(r), p.dialect, p.device, p.outside, None))
                    continue
                form = light.get(id(r))
                if form is None:
                    form = light[id(r)] = _light(r, self.encoding)
                units.append(LightUnit(p.base, len(r.source), p.dialect, p.device, p.outside,
                                       form))
            return LightChunk(headers, units, containers, errors)

        return parallel.pickled_each(chunk(i) for i in ends.back())


def share_chunks(text: str, chunks: list[tuple[int, int]], place: Place, cache: UnitCache,
                 options: tuple, encoding: str | None) -> SharedChunks | None:
    """The analysis of a big text of many chunks, shared with a forked process: this one
    splits and analyses chunks from the first on, the other from the last back, until they
    meet (a fifth of a first open of 50k lines of real IR is the split). None if no process
    can be had. The results made are put in `cache`."""
    build_parser_once()  # before the fork, so that the child does not build it again
    claims = parallel.KeyClaims(len(text) // 8)  # a unit per ~700 characters: 1% clash
    work = _ChunkWork(text, chunks, place, options, encoding, claims)
    try:
        shared = parallel.from_both_ends(len(chunks), lambda i: work.chunk(i, 1),
                                         work.light_chunks, cache)
    finally:
        claims.close()
    if shared is None:  # no process to be had: the caller analyses it all here
        return None
    ours, theirs = shared
    theirs = parallel.unpickled(theirs) if theirs is not None else []
    built, by_key = _built_results(text, theirs, options, encoding)
    done = work.done

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
            chunk = theirs[k]
            for u in chunk.units:
                result = (built[id(u.light)] if u.light is not None else
                          result_of((text[u.base:u.base + u.size], u.dialect, u.device,
                                     u.outside)))
                placed.append(_new(PlacedUnit, (u.base, result, u.dialect, u.device,
                                                u.outside)))
        else:  # this process's chunk, or one the other did not take (it died)
            chunk = ours[i] if i < len(ours) else work.chunk(i, 1)
            for p in chunk.units:
                if isinstance(p.result, str):  # claimed by the other process
                    p = PlacedUnit(p.base, result_of((p.result, p.dialect, p.device,
                                                      p.outside)),
                                   p.dialect, p.device, p.outside)
                placed.append(p)
        headers.extend(chunk.headers)
        containers.extend(chunk.containers)
        errors |= chunk.errors
    errors = errors or any(p.result.syntax_error for p in placed)
    cache.put_many([((*key, options), result) for key, result in done.items()])
    cache.put_many([((*key, options), result) for key, result in by_key.items()])
    return SharedChunks(headers, placed, containers, errors)


def _built_results(text: str, theirs: list[LightChunk], options: tuple,
                   encoding: str | None) -> tuple[dict, dict]:
    """The other process's results: by id of their light form, and by unit key."""
    built: dict[int, UnitResult] = {}
    by_key: dict[tuple, UnitResult] = {}
    for chunk in theirs:
        for u in chunk.units:
            if u.light is not None and id(u.light) not in built:
                source = text[u.base:u.base + u.size]
                result = built[id(u.light)] = _from_light(source, u.light, u.dialect, u.device,
                                                          options, u.outside, encoding)
                by_key.setdefault((source, u.dialect, u.device, u.outside), result)
    return built, by_key


def _light(result: UnitResult, encoding: str | None) -> LightResult:
    return LightResult(result.findings, result.functions, result.syntax_error,
                       result.known_positions(encoding) if encoding is not None else None)


def _from_light(source: str, light: LightResult, dialect: str | None, device: bool,
                options: tuple, outside: tuple, encoding: str | None) -> UnitResult:
    """The UnitResult of a unit analysed in another process: its IR is rebuilt on first use."""
    result = UnitResult(source, light.findings, light.functions, light.syntax_error,
                        rebuild=(dialect, device, *options, outside))
    for j, fn in enumerate(light.functions):  # unpickled here, not yet shared: set in place
        object.__setattr__(fn, "plan", DeferredEdits(result, j))
    if light.positions is not None:
        result.set_positions(encoding, light.positions)
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
