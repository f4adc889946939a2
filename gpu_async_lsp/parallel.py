"""Execution: the analysis of one big buffer, split over several processes.

The units of a buffer (`syntax.lexer.split_units`) are parsed and analyzed independently, so a
50k-line file can be shared among the cores: each forked process parses a contiguous share of
the leaf units (container headers are parsed by all; their findings are merged) and returns
only findings and planned edits, never IR. Used by `check`; imports no protocol code.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import pickle
import signal
import sys
import threading

from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.async_region.findings import Finding
from gpu_async_lsp.async_region.rewriter import ORIGINAL
from gpu_async_lsp.edits import TextEdit
from gpu_async_lsp.syntax.parser import (
    LeafShare,
    build_parser_once,
    leaf_unit_sizes,
    parse_document,
    split_document,
)

# Below this size a second process costs more than it saves.
MIN_PARALLEL_CHARS = 400_000

ShareResult = tuple[list[Finding], list[TextEdit], set[tuple[int, int]], bool]


def _analyze_share(text: str, lo: int, hi: int | None, strict: bool, rules: tuple,
                   layout=None) -> ShareResult:
    semantics, thread_launch = rules
    analysis = analyze(parse_document(text, LeafShare(lo, hi), layout), strict=strict,
                       semantics=semantics, thread_launch=thread_launch)
    return (analysis.findings, analysis.edits(), analysis.rewritten_anchors(),
            analysis.has_syntax_errors)


def _shares(sizes: list[int], n: int) -> list[tuple[int, int | None]]:
    """n contiguous ranges of leaf units of about equal size."""
    total = sum(sizes)
    bounds = [0]
    acc = 0
    for i, size in enumerate(sizes):
        acc += size
        if len(bounds) < n and acc >= total * len(bounds) / n:
            bounds.append(i + 1)
    bounds.append(None)
    return [(bounds[k], bounds[k + 1]) for k in range(len(bounds) - 1)]


def analyze_in_shares(text: str, strict: bool, jobs: int, semantics: str = ORIGINAL,
                      thread_launch: bool = False) -> ShareResult:
    """Findings, edits, rewritten-function anchors and whether any syntax error was found."""
    semantics = (semantics, thread_launch)  # the rules, as the workers take them
    if jobs < 2 or len(text) < MIN_PARALLEL_CHARS or not can_fork():
        return _analyze_share(text, 0, None, strict, semantics)
    layout = split_document(text)
    sizes = leaf_unit_sizes(layout)
    shares = _shares(sizes, min(jobs, max(1, len(sizes))))
    if len(shares) < 2:
        return _analyze_share(text, 0, None, strict, semantics, layout)
    # The parser is not built before the fork: most big files of host code never need Lark
    # (parser._plain_parse), and a share that does builds it in parallel with the other.
    import multiprocessing  # here: its import is 9 ms of every start of the command

    ctx = multiprocessing.get_context("fork")
    children = []
    for lo, hi in shares[1:]:
        reader, writer = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_child, args=(writer, text, lo, hi, strict, semantics, layout),
                           daemon=True)
        proc.start()
        writer.close()
        children.append((proc, reader))
    results = [_analyze_share(text, *shares[0], strict, semantics, layout)]
    for proc, reader in children:
        try:
            results.append(_unpacked(pickle.loads(reader.recv_bytes())))
        except (EOFError, OSError, pickle.PickleError) as e:
            raise RuntimeError(f"a worker process failed: {e}") from e
        finally:
            reader.close()
            proc.join()
    findings: dict[tuple, Finding] = {}
    edits: list[TextEdit] = []
    anchors: set[tuple[int, int]] = set()
    errors = False
    for f, e, a, err in results:
        for finding in f:  # container headers are parsed (and reported) by every share
            findings.setdefault((finding.code, finding.start, finding.end, finding.message), finding)
        edits.extend(e)
        anchors |= a
        errors = errors or err
    ordered = sorted(findings.values(), key=lambda f: (f.start, f.end, f.code))
    return ordered, edits, anchors, errors


def _packed(result: ShareResult) -> tuple:
    """A share's result for the pipe: its edits as one flat list of offsets and texts (a 50k-
    line file's 20k edits pickled as objects took 65 ms to write and 60 ms to read, one after
    the other at the end of the analysis; flat, 10 ms each)."""
    findings, edits, anchors, errors = result
    flat = [x for e in edits for x in (e.start, e.end, e.new_text)]
    return findings, flat, anchors, errors


def _unpacked(packed: tuple) -> ShareResult:
    findings, flat, anchors, errors = packed
    it = iter(flat)
    return findings, [TextEdit(s, e, t) for s, e, t in zip(it, it, it)], anchors, errors


def can_fork(threaded: bool = False) -> bool:
    """Whether this process may fork workers; `threaded`: from a process with other threads
    (the language server), which only Linux makes safe for a child that runs Python alone
    (macOS's system libraries may not survive such a fork)."""
    if threaded and not sys.platform.startswith("linux"):
        return False
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def in_forked_process(fn, *args):
    """Run `fn(*args)` in a forked process; returns a function that waits for its (pickled)
    result and returns it, or raises RuntimeError if the process failed (and has `cancel()`).

    A bare os.fork, not multiprocessing: its child start-up closes sys.stdin, whose lock the
    language server's reader thread holds while it waits for input, and would hang there. The
    child touches nothing but `fn` and its end of a pipe."""
    build_parser_once()  # before the fork, so that the child does not build it again
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child
        status = 1
        try:
            _detach(parent, write_fd)
            data = pickle.dumps(fn(*args))
            with os.fdopen(write_fd, "wb") as out:
                out.write(data)
            status = 0
        finally:
            os._exit(status)  # no heap teardown, no atexit handlers, no stream flushes
    os.close(write_fd)
    return _Forked(pid, read_fd)


def _detach(parent: int, keep: int) -> None:
    """In a forked child: hold no file of the parent's but `keep` (the client of a language
    server reads its stdout to the end: a child holding it would keep that pipe open after
    the server exits), and die with the parent (Linux: PR_SET_PDEATHSIG)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 16)
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent is gone already
        os._exit(1)


def _prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


class TwoEnds:
    """Items 0..n-1 shared by two processes (one forked from the other after this is made)
    that take them from both ends until they meet: `front()` yields 0, 1, ... in one,
    `back()` n-1, n-2, ... in the other. Each claims an item in shared memory before it
    takes it and stops at the first item the other has claimed, so no item is left out and
    at most the one where they meet is taken by both (each reads the other's claim before
    writing its own). An 8-byte aligned store is atomic on every platform fork is used on."""

    def __init__(self, n: int):
        self.n = n
        self._map = mmap.mmap(-1, 16)  # anonymous and shared: the fork shares it
        self._at = memoryview(self._map).cast("q")  # [front's next item, back's items taken]

    def front(self):
        at, n = self._at, self.n
        i = 0
        while i < n - at[1]:
            at[0] = i + 1
            yield i
            i += 1

    def back(self):
        at, n = self._at, self.n
        k = 0
        while n - 1 - k >= at[0]:
            at[1] = k + 1
            yield n - 1 - k
            k += 1

    def close(self) -> None:
        self._at.release()
        self._map.close()


class _Forked:
    """A forked process computing one result: `result()` waits for it, `cancel()` stops it
    (a caller that fails before it asks must not leave the process blocked on its pipe)."""

    def __init__(self, pid: int, read_fd: int):
        self.pid = pid
        self.read_fd = read_fd

    def __call__(self):
        try:
            with os.fdopen(self.read_fd, "rb") as pipe:
                data = pipe.read()
        except OSError as e:
            self._reap()
            raise RuntimeError(f"a worker process failed: {e}") from e
        # The child closed its end after writing it all; its exit (the kernel tears down a
        # copy of this process's big address space: 10-30 ms) is waited for by a thread.
        try:
            result = pickle.loads(data)
        except Exception as e:  # cut short: the process died while writing
            status = self._reap()
            raise RuntimeError(f"a worker process failed (wait status {status}): {e}") from e
        threading.Thread(target=self._reap, daemon=True).start()
        return result

    def _reap(self) -> int | None:
        try:
            return os.waitpid(self.pid, 0)[1]
        except ChildProcessError:
            return None

    def cancel(self) -> None:
        with contextlib.suppress(OSError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.close(self.read_fd)
        with contextlib.suppress(OSError):
            os.waitpid(self.pid, 0)


def _child(writer, text: str, lo: int, hi: int | None, strict: bool, semantics: tuple,
           layout) -> None:
    try:
        writer.send_bytes(pickle.dumps(_packed(
            _analyze_share(text, lo, hi, strict, semantics, layout))))
    finally:
        writer.close()
        os._exit(0)  # skip the heap teardown (see cli.entry)
