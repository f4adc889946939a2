"""A memory policy for the processes this package runs (`check`, the server): the object
allocator's arenas mapped with their pages made at once.

A first analysis makes tens of megabytes of small objects (the IR, findings, tokens), which
CPython's allocator carves from arenas it maps from the system 1 MiB at a time. Each fresh
page of those is a page fault on first touch: at 50k lines of host code ~11k faults, about a
tenth of the analysis's time on this project's machines. The compiled build (arenas.pxd)
installs an arena allocator that maps each arena with MAP_POPULATE (Linux): the kernel makes
its 256 pages in one call. Each arena is then resident as soon as it is mapped, which the
allocator's way of filling arenas in turn (the fullest first) makes cost at most the unused
rest of the arena being filled. Arenas mapped before are unmapped as the default allocator
does (munmap), so the change may happen at any time.

A process that has time before its first big analysis (the server, between its start and the
first document) maps arenas ahead of need (`reserve_arenas`): the kernel makes their pages
then, on another CPU, not while a document waits for its diagnostics (a first open of 10k
lines of host code filled 5 fresh arenas, 50k lines 22: ~0.5 ms each on this project's
machines). The allocator hands those out first and keeps the arenas of freed objects, up to
the reserve's size, for the next analysis; `drop_reserve` gives them back (a forked process
at its start, the server once no document is open).

The pure-Python build, and any platform but Linux, leaves the allocator as it is.
"""

from __future__ import annotations

try:
    import cython

    COMPILED = cython.compiled
except ImportError:  # no Cython: Python
    COMPILED = False

_installed: list[bool] = []


def populate_arenas() -> bool:
    """Install the populating arena allocator in this process (once); whether it is in use."""
    if not _installed:
        # _populate_arenas: C, declared in arenas.pxd (never reached as Python).
        _installed.append(bool(COMPILED and _populate_arenas()))  # noqa: F821
    return _installed[0]


# The server's reserve: the arenas of a first open of ~50k lines of host code (24 MiB).
RESERVE_ARENAS = 24


def reserve_arenas(count: int = RESERVE_ARENAS, heap_bytes: int = 0) -> int:
    """Map arenas now, up to `count` held in reserve (their pages made: resident from now on),
    and keep freed arenas up to that many; with `heap_bytes`, make that much of the C heap
    resident too (allocated, each page written, freed: kept where the heap keeps freed
    memory, as the server's `heap.prepare_heap` sets it). How many arenas are held (0 without
    the allocator: then nothing is done). All of it runs without the GIL, which is taken
    back once, at the end: a thread of its own does this while the process goes on (taken
    back after each few arenas, beside a thread running Python, each wait was up to the
    interpreter's switch interval: 8-12 ms of the kernel's work took 40-50)."""
    if not populate_arenas():
        return 0
    return _reserve_arenas(count, heap_bytes)  # noqa: F821 (C, arenas.pxd)


def drop_reserve() -> None:
    """Unmap the arenas held in reserve and keep none that are freed from now on."""
    if _installed and _installed[0]:
        _drop_reserve()  # noqa: F821 (C, arenas.pxd)
