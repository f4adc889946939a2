"""Protocol layer: the server process's heap over a working day.

Two moves, both about CPython's cycle collector and allocator, not about LSP:

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


def _malloc_trim():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc.malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


_TRIM = _malloc_trim()


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
