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
