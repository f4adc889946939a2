"""IDE layer: the cache of unit results, bounded by what is open.

A unit's result (its IR, findings and rewrite plans) is kept by the unit's text and the
settings it was analysed with. Two kinds of entry:

- **live**: every result that some document analysis still holds (the units of the open
  documents' current versions). They are held weakly: alive exactly as long as an analysis
  holds them, so they cost nothing beyond what is open, and a structural edit that re-splits
  a document finds all its untouched units here.
- **recent**: the results used most recently, held strongly up to `budget` bytes (estimated
  from the unit's text), least recently used first out. They serve an undo, a document
  reopened, or an edit that oscillates; a closed document or a superseded version is let go
  once newer results push it out.

So what the cache keeps is what is open plus at most `budget`, whatever the session did
before. An estimate, not a measurement: a unit's result takes about 20 bytes of Python heap
per character of its text (IR objects, spans, plans; measured with tracemalloc on generated
host code), and what request handlers derive from it later (hints, lens text) about as much
again.

Thread-safe (the server's analysis worker fills it, tests read its statistics).
No pygls or lsprotocol here.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass

BYTES_PER_CHAR = 40
ENTRY_OVERHEAD = 2048
DEFAULT_BUDGET = 64 << 20
SWEEP_FLOOR = 4096  # live references kept before the first sweep of dead ones


def estimated_cost(source: str) -> int:
    """Bytes a unit result of `source` is taken to hold (see the module docstring)."""
    return ENTRY_OVERHEAD + BYTES_PER_CHAR * len(source)


@dataclass(frozen=True)
class CacheStatistics:
    live: int  # results alive (held by an analysis or among the recent)
    recent: int  # results held for reuse
    recent_bytes: int  # their estimated cost
    budget: int
    hits: int
    misses: int
    evictions: int

    def as_json(self) -> dict:
        return dict(self.__dict__)


class UnitCache:
    """Unit results by key: the live ones weakly, the most recently used up to `budget`."""

    def __init__(self, budget: int = DEFAULT_BUDGET):
        self.budget = budget
        # key -> weakref.ref of the result: a plain dict of plain references (a first open
        # puts thousands; WeakValueDictionary made a Python-level KeyedRef for each, 1 us).
        # Dead ones are swept when it has doubled since the last sweep: it stays within
        # twice what is alive (and SWEEP_FLOOR).
        self._live: dict = {}
        self._sweep_at = SWEEP_FLOOR
        self._recent: OrderedDict = OrderedDict()  # key -> (result, cost)
        self._recent_bytes = 0
        self._lock = threading.Lock()
        self.hits = self.misses = self.evictions = 0

    def get(self, key):
        with self._lock:
            if not self._recent and not self._live:  # nothing kept (a first open)
                self.misses += 1
                return None
            ref = self._live.get(key)
            result = ref() if ref is not None else None
            entry = self._recent.get(key)
            if entry is not None:
                self._recent.move_to_end(key)
                result = entry[0]
            if result is None:
                self.misses += 1
                return None
            self.hits += 1
            if entry is None:
                self._remember(key, result)
            return result

    def put(self, key, result) -> None:
        self.put_many([(key, result)])

    def put_many(self, entries: list[tuple]) -> None:
        """put() each (key, result), under one lock (a first open puts thousands)."""
        with self._lock:
            live, recent, remember, ref = self._live, self._recent, self._remember, weakref.ref
            for key, result in entries:
                live[key] = ref(result)
                if key not in recent:
                    remember(key, result)
            if len(live) > self._sweep_at:
                self._sweep()

    def _sweep(self) -> None:
        """Drop the references of results no longer alive."""
        self._live = {k: r for k, r in self._live.items() if r() is not None}
        self._sweep_at = max(SWEEP_FLOOR, 2 * len(self._live))

    def _remember(self, key, result) -> None:
        cost = estimated_cost(key[0])
        self._recent[key] = (result, cost)
        self._recent_bytes += cost
        while self._recent_bytes > self.budget:  # a unit bigger than the budget is only live
            _, (_, old_cost) = self._recent.popitem(last=False)
            self._recent_bytes -= old_cost
            self.evictions += 1

    def after_fork(self) -> None:
        """In a process forked from one whose other threads may have held the lock at the
        fork (they do not run here): a lock of this process's own."""
        self._lock = threading.Lock()

    def clear_recent(self) -> None:
        """Let go of everything no analysis holds (the live entries stay)."""
        with self._lock:
            self._recent.clear()
            self._recent_bytes = 0

    def statistics(self) -> CacheStatistics:
        with self._lock:
            self._sweep()
            return CacheStatistics(len(self._live), len(self._recent), self._recent_bytes,
                                   self.budget, self.hits, self.misses, self.evictions)
