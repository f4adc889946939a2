"""Protocol layer: the server process's heap over a working day.

Three moves, all about CPython's cycle collector and allocators, not about LSP:

- **Memory made resident before the first document.** Fresh memory costs a page fault per
  page on first touch (~2 us a page here): a first open of 10k lines of host code filled 5
  fresh arenas of objects and mapped its big blocks (the publication, its bytes) anew each
  time, ~1,500 faults, 3 ms of its 27. So glibc keeps one heap for all threads and big blocks
  in it (`prepare_heap`, at the start), and once the server is set up a thread of its own
  maps a reserve of arenas (arenas.py) and makes some of that heap resident
  (`reserve_heap`) while the client and the server greet each other. Bounded: 24 MiB of
  arenas and 8 MiB of heap, given back once no document is open.

- **Freeze after a big analysis.** The IR of a big file is millions of objects; kept in the
  collector's sight, every collection that later allocations trigger would traverse them (at
  50k lines publishing diagnostics took 260 ms instead of 60). `gc.freeze()` moves everything
  alive out of its sight. What the analysis keeps has no reference cycles
  (tests/unit/test_server_analysis.py), so when a document or the cache lets it go, reference
  counting frees it, frozen or not.
- **Release after closing, and after bursts of big edits.** Objects *with* cycles that were
  alive at a freeze (the asyncio task of the analysis that just ended, its futures) become
  garbage that no collection sees: about 16 KB a freeze, which typing in a big function does
  at every keystroke. So once documents have been closed, or after `RELEASE_AFTER_FREEZES`
  freezes when the server is idle, everything is unfrozen, collected, frozen again, and glibc
  is asked to give freed memory back to the system (`malloc_trim`): Python's own arenas go
  back only when wholly empty, but big strings (document texts) live in the C heap, whose top
  is returned only on request.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging

log = logging.getLogger("gpu_async_lsp.server")

# Tracked objects an analysis added (a ~1.5k-line file's first open) from which it is frozen.
# Not frozen, they are all traversed by the collection that the first allocation after the
# pause triggers, before the diagnostics are sent: ~0.1 us each (at 50k, at 48k objects of
# a first open of 50k lines of real IR: 4.5 ms of its 115 ms). A freeze costs nothing then;
# its price is the garbage it hides (~16 KB), which the release after
# RELEASE_AFTER_FREEZES freezes collects. Keystrokes allocate far fewer and are not frozen.
FREEZE_AFTER_ALLOCATIONS = 10_000
RELEASE_AFTER_FREEZES = 20  # a release (a full collection) is worth 20 freezes' garbage


def _glibc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim, libc.mallopt  # noqa: B018 (glibc's, or not glibc)
    except (OSError, AttributeError):
        return None
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    return libc


_LIBC = _glibc()
_TRIM = _LIBC.malloc_trim if _LIBC is not None else None

# glibc's mallopt parameters.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8
# Blocks under this size come from the heap: a document's text, a publication (~600 KB at 10k
# lines of host code, 3 MB at 50k) and their UTF-8 bytes were each a mapping of their own,
# its pages faulted anew every time (~2 us a page on this project's machines).
HEAP_BLOCKS_UNDER = 32 << 20
# Made resident at the start, kept through frees until a release trims the heap.
HEAP_RESERVE = 8 << 20


def prepare_heap() -> bool:
    """Before the server starts threads (glibc; elsewhere nothing): one malloc arena for all
    of them (the GIL serializes them anyway; an arena per thread would fault in pages of its
    own), big blocks from that heap, and freed memory kept in it (up to twice the biggest
    block) until `Heap.release` trims it. Whether it applies."""
    if _LIBC is None:
        return False
    _LIBC.mallopt(_M_ARENA_MAX, 1)
    _LIBC.mallopt(_M_MMAP_THRESHOLD, HEAP_BLOCKS_UNDER)
    _LIBC.mallopt(_M_TRIM_THRESHOLD, 2 * HEAP_BLOCKS_UNDER)
    return True


def reserve_heap(size: int = HEAP_RESERVE) -> None:
    """Make `size` bytes of the heap resident now (allocated, written, freed: kept, as
    `prepare_heap` set it), so that a first publication does not fault them in. ctypes
    calls run without the GIL: a thread of its own does this while the server starts."""
    if _LIBC is None:
        return
    block = _LIBC.malloc(size)
    if block:
        ctypes.memset(block, 0, size)
        _LIBC.free(block)


def freeze_if_big(allocations: int) -> None:
    """Freeze what an analysis allocated before the collector can see it, if it is a lot (the
    analysis thread does this while the collector is still paused; Heap.settle counts it)."""
    if allocations >= FREEZE_AFTER_ALLOCATIONS:
        gc.freeze()


class Heap:
    def __init__(self):
        self.frozen = False  # something was ever frozen
        self.freezes = 0  # since the last release

    def settle(self, allocations: int) -> None:
        """After an analysis that added `allocations` tracked objects."""
        if allocations >= FREEZE_AFTER_ALLOCATIONS:
            gc.freeze()
            self.frozen = True
            self.freezes += 1

    @property
    def release_due(self) -> bool:
        """A release is worth it when the server is idle next."""
        return self.freezes >= RELEASE_AFTER_FREEZES

    @property
    def release_overdue(self) -> bool:
        """Typing without a pause: release now, not when idle (bounds the frozen garbage)."""
        return self.freezes >= 10 * RELEASE_AFTER_FREEZES

    def release(self) -> None:
        """Collect everything (frozen objects included), then freeze what is left and hand
        freed memory back to the system."""
        if self.frozen:
            gc.unfreeze()
        collected = gc.collect()
        if self.frozen:
            gc.freeze()
        self.freezes = 0
        if _TRIM is not None:
            _TRIM(0)
        log.info("heap released: %d unreachable objects collected", collected)
