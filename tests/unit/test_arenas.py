"""The populating arena allocator (gpu_async_lsp/arenas.py): installed by the compiled build on
Linux, by `check` and the server; objects then come on pages made when their arena is mapped
(no page fault each), and the arenas of freed objects go back to the system. The server's
memory made resident before its first document: arenas held in reserve, and glibc's heap
(server/heap.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpu_async_lsp import _compiled

ROOT = Path(__file__).resolve().parents[2]

# A fresh process: 20 times, ~2.4 MB of small objects made (a new arena or two), then whether
# the 16 pages 64 KiB past the last object (in the arena being filled, not touched yet) are
# resident (mincore); then 400k objects made and freed. Prints whether the allocator is in use,
# the resident counts, the pages the 400k objects added to the resident set and the pages
# still added after they were freed.
_PROBE = textwrap.dedent("""
    import ctypes, gc, mmap, sys
    from gpu_async_lsp import arenas
    on = arenas.populate_arenas() if sys.argv[1] == "install" else False
    gc.disable()
    libc = ctypes.CDLL(None, use_errno=True)
    page = mmap.PAGESIZE

    def resident_pages(addr, pages):
        vec = (ctypes.c_ubyte * pages)()
        start = addr & ~(page - 1)
        if libc.mincore(ctypes.c_void_p(start), ctypes.c_size_t(pages * page), vec) != 0:
            return -1  # not mapped
        return sum(v & 1 for v in vec)

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1])

    kept, seen = [], []
    for _ in range(20):
        kept.append([(i, i + 1) for i in range(30_000)])
        seen.append(resident_pages(id(kept[-1][-1]) + 64 * 1024, 16))
    before = rss()
    made = [(i, str(i), [i]) for i in range(400_000)]
    grown = rss() - before
    del made
    print(on, ",".join(map(str, seen)), grown, rss() - before)
""")


def _probe(install: bool, pure: bool = False) -> tuple[bool, list[int], int, int]:
    env = dict(os.environ)
    env.pop(_compiled.PURE_ENV, None)
    if pure:
        env[_compiled.PURE_ENV] = "1"
    proc = subprocess.run([sys.executable, "-c", _PROBE, "install" if install else "leave"],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    on, seen, grown, left = proc.stdout.split()
    return on == "True", [int(x) for x in seen.split(",")], int(grown), int(left)


def _needs_linux_build():
    if not sys.platform.startswith("linux"):
        pytest.skip("the populating allocator is Linux's (MAP_POPULATE)")
    if "gpu_async_lsp.arenas" not in _compiled._built:
        if os.environ.get("CI"):  # .ci/run installs with a C compiler: the build must be there
            pytest.fail("no compiled build of gpu_async_lsp.arenas was loaded")
        pytest.skip("this install has no compiled build (no C compiler at install time?)")


def test_arenas_are_populated_and_given_back():
    _needs_linux_build()
    on, seen, grown, left = _probe(install=True)
    assert on
    # Pages of the arena being filled that no object has touched yet are resident: mapped
    # with the arena, not one fault at a time.
    mapped = [r for r in seen if r >= 0]
    assert len(mapped) >= 10 and all(r == 16 for r in mapped), seen
    assert grown > 10_000  # pages: the 400k objects were made (~60 MB)
    # Freed objects' arenas are unmapped (the allocator's free): the resident set shrinks back.
    assert left < grown // 5, (left, grown)


def test_without_the_allocator_untouched_pages_are_not_resident():
    """What the test above would see without the allocator (the probe tells them apart)."""
    _needs_linux_build()
    on, seen, _, _ = _probe(install=False)
    assert not on
    assert sum(r == 0 for r in seen) > len(seen) // 2, seen


def test_python_build_leaves_the_allocator_alone():
    on, _, grown, _ = _probe(install=True, pure=True)
    assert not on and grown > 10_000


def test_check_and_the_server_install_it(tmp_path):
    _needs_linux_build()
    path = tmp_path / "f.mlir"
    path.write_text("func.func @f() {\n  return\n}\n")
    code = textwrap.dedent("""
        import sys
        from gpu_async_lsp import arenas, cli
        cli.main(["check", "--quiet", sys.argv[1]])
        print(arenas._installed)
    """)
    proc = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.stdout.split()[-1] == "[True]", proc.stdout + proc.stderr
    server = (ROOT / "gpu_async_lsp" / "server" / "__init__.py").read_text()
    assert "arenas.populate_arenas()" in server.split("build_server()")[0]
    # The memory of the first document is made resident once the server is set up, before it
    # serves, by a thread of its own; the heap's settings come before any thread.
    set_up, serving = server.split("server.start_io()")[0].split("regex_cache.save()")
    assert "prepare_heap()" in set_up.split("build_server()")[0]
    assert "threading.Thread(target=reserve_memory" in serving


# -- memory made resident ahead of need (the server's, before its first document) ------------

# A fresh process: the allocator installed, `reserve` arenas held (if any); then 12 MB of small
# objects made: the page faults that took (the reserve's pages are resident: none), the arenas
# held, and the resident pages given back when the reserve is dropped.
_RESERVE_PROBE = textwrap.dedent("""
    import gc, resource, sys
    from gpu_async_lsp import arenas
    gc.disable()
    on = arenas.populate_arenas()
    held = arenas.reserve_arenas(int(sys.argv[1])) if int(sys.argv[1]) else 0

    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1])

    before = faults()
    kept = [(i, i + 1) for i in range(100_000)]  # ~12 MB of tuples and ints
    made = faults() - before
    resident = rss()
    arenas.drop_reserve()
    print(on, held, made, resident - rss())
""")


def _reserve_probe(count: int, pure: bool = False) -> tuple[bool, int, int, int]:
    env = dict(os.environ)
    env.pop(_compiled.PURE_ENV, None)
    if pure:
        env[_compiled.PURE_ENV] = "1"
    proc = subprocess.run([sys.executable, "-c", _RESERVE_PROBE, str(count)],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    on, held, made, given_back = proc.stdout.split()
    return on == "True", int(held), int(made), int(given_back)


def test_reserved_arenas_are_used_before_new_ones_and_given_back():
    _needs_linux_build()
    _, held, made_with, given_back = _reserve_probe(32)
    _, none, made_without, _ = _reserve_probe(0)
    assert held == 32 and none == 0
    # ~12 MB of objects: ~3,000 pages populated as their arenas are mapped, without a
    # reserve; from the reserve's arenas, whose pages were made before, next to none.
    assert made_without > 2000, made_without
    assert made_with < made_without // 5, (made_with, made_without)
    # Dropped: the arenas left in the reserve (~20 MiB) are unmapped.
    assert given_back > 10 * 256, given_back


def test_python_build_reserves_nothing():
    on, held, _, _ = _reserve_probe(32, pure=True)
    assert not on and held == 0


# A process forked from the server's start: the reserve made by a thread of its own while
# this one runs Python and never lets go of the GIL (a switch interval of 100 s, a loop of
# 2 s); then how many pages are resident that were not. The arenas and the heap are made
# in one stretch without the GIL: all of them; taking the GIL back after each few arenas,
# the thread would have stopped after the first few.
_RESERVE_BESIDE_PYTHON_PROBE = textwrap.dedent("""
    import sys, threading, time
    from gpu_async_lsp import arenas
    from gpu_async_lsp.server import heap
    assert arenas.populate_arenas() and heap.prepare_heap()

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1])

    before = rss()
    sys.setswitchinterval(100)
    threading.Thread(target=arenas.reserve_arenas, args=(24, 8 << 20), daemon=True).start()
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        pass
    print(rss() - before)
""")


def test_the_reserve_is_made_while_python_runs_beside_it():
    _needs_linux_build()
    if heap_module()._LIBC is None:
        pytest.skip("glibc's mallopt")
    proc = subprocess.run([sys.executable, "-c", _RESERVE_BESIDE_PYTHON_PROBE],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    pages = int(proc.stdout)
    assert pages > (24 + 6) * 256, pages  # 24 arenas of 1 MiB and most of 8 MiB of heap


_HEAP_PROBE = textwrap.dedent("""
    import resource, sys
    from gpu_async_lsp import arenas
    from gpu_async_lsp.server import heap
    if sys.argv[1] == "reserve":
        assert heap.prepare_heap()
        heap.reserve_heap(8 << 20)
    elif sys.argv[1] == "with-arenas":  # the compiled build's way: arenas.pxd
        assert heap.prepare_heap()
        assert arenas.reserve_arenas(1, 8 << 20) == 1

    def faults():
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    before = faults()
    for _ in range(3):  # a publication's string and its bytes, three times: ~1,000 pages each
        text = "x" * (4 << 20)
        data = text.encode()
        del text, data
    print(faults() - before)
""")


def test_the_server_heap_keeps_big_blocks_resident():
    """glibc: after `prepare_heap` and `reserve_heap`, blocks of a few MB come from memory
    made resident before (no page fault each), not from mappings of their own."""
    if not sys.platform.startswith("linux") or heap_module()._LIBC is None:
        pytest.skip("glibc's mallopt")

    def faults(mode: str) -> int:
        proc = subprocess.run([sys.executable, "-c", _HEAP_PROBE, mode], capture_output=True,
                              text=True, cwd=ROOT, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return int(proc.stdout)

    plain, reserved = faults("plain"), faults("reserve")
    assert plain > 4000, plain  # 3 x 8 MB mapped and faulted anew
    assert reserved < plain // 10, (reserved, plain)
    if "gpu_async_lsp.arenas" in _compiled._built and sys.platform.startswith("linux"):
        with_arenas = faults("with-arenas")
        assert with_arenas < plain // 10, (with_arenas, plain)


def heap_module():
    from gpu_async_lsp.server import heap

    return heap
