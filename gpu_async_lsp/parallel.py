"""Execution: the analysis of one big buffer, split over several processes.

The units of a buffer (`syntax.lexer.split_units`) are parsed and analyzed independently, so a
50k-line file can be shared among the cores: its leaf units are cut into contiguous blocks,
which the processes claim as they go (container headers are parsed by every block of their
chunk; their findings are merged), and a forked process returns only findings and planned
edits, never IR. Used by `check` (`Claims`) and by the server (`TwoEnds`, `in_forked_process`);
imports no protocol code.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import signal
import sys
import threading
import time

from gpu_async_lsp import arenas
from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.findings import Finding, Severity
from gpu_async_lsp.async_region.lowering import NO_LOWERING
from gpu_async_lsp.async_region.rewriter import ORIGINAL
from gpu_async_lsp.edits import SortedEdits
from gpu_async_lsp.syntax import (
    LeafShare,
    leaf_counts,
    leaf_unit_sizes,
    parse_document,
    split_chunks,
    split_document,
    undefined_aliases,
)

# Below this size a second process costs more than it saves.
MIN_PARALLEL_CHARS = 400_000
# A big buffer's leaf units are cut into blocks of about equal size (this many per process),
# which the processes claim as they go (`Claims`): on a shared, noisy machine none waits long
# for another, as with shares fixed in advance (a 50k-line check waited up to 100 ms). The
# last block a process takes is what the other may wait for at the end: with 8 per process
# the two ended 16-56 ms apart at 50k lines, with 32 per process 0-11 ms, for no more work.
BLOCKS_PER_PROCESS = 32

ShareResult = tuple[list[Finding], SortedEdits, set[tuple[int, int]], bool]


def _analyze_share(text: str, lo: int, hi: int | None, strict: bool, rules: tuple,
                   layout=None, counts=None) -> ShareResult:
    """Findings, edits (sorted), rewritten-function anchors and whether a syntax error was
    found, of the leaf units [lo, hi) of `text` (all of them: 0, None). `rules`: the pass's
    semantics, whether to thread inline launches, whether the edits will be applied (then
    applied here too, as the part's piece: see SortedEdits)."""
    semantics, thread_launch, lowering, fix = rules
    analysis = analyze(parse_document(text, LeafShare(lo, hi, counts), layout), strict=strict,
                       semantics=semantics, thread_launch=thread_launch, lowering=lowering,
                       fixing=fix)
    return (analysis.findings, SortedEdits.of(analysis.edits(), text if fix else None),
            analysis.rewritten_anchors(), analysis.has_syntax_errors)


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
                      thread_launch: bool = False, fix: bool = False,
                      lowering: str = NO_LOWERING) -> ShareResult:
    """Findings, edits, rewritten-function anchors and whether any syntax error was found
    (`_analyzed_in_shares`, and the aliases each chunk uses and does not define, looked for
    once in the whole text). With `fix` and a `lowering`, the not-lowered findings of the
    functions the rewrite changes are those of the rewritten text (at offsets of `text`)."""
    # Looked for while a forked process ends its last block (else before the join).
    aliases: list = []
    findings, edits, anchors, errors = _analyzed_in_shares(
        text, strict, jobs, semantics, thread_launch, fix, lowering,
        idle=lambda: aliases.extend(undefined_aliases(text, split_chunks(text))))
    undefined = aliases
    if undefined:
        findings = sorted([*findings, *(Finding(F.SYNTAX, u.message, u.start, u.end,
                                                Severity.ERROR) for u in undefined)],
                          key=lambda f: (f.start, f.end, f.code))
        errors = True
    return findings, edits, anchors, errors


def _analyzed_in_shares(text: str, strict: bool, jobs: int, semantics: str, thread_launch: bool,
                        fix: bool, lowering: str = NO_LOWERING, idle=None) -> ShareResult:
    """Findings, edits, rewritten-function anchors and whether any syntax error was found.

    A big buffer's blocks of leaf units are analysed by `jobs` processes (this one and forked
    ones), each from its own block on, taking the blocks no other has claimed (`Claims`); the
    results are joined in text order (the edits of each block sorted in its process).
    `idle()`, if given, is called once: in this process, when no block is left to claim and
    the others still end theirs (a block of a 50k-line fix is ~3 ms: the wait was 4-8 ms)."""
    rules = (semantics, thread_launch, lowering, fix)  # the rules, as the workers take them
    if jobs < 2 or len(text) < MIN_PARALLEL_CHARS or not can_fork():
        return _done(_analyze_share(text, 0, None, strict, rules), idle)
    layout = split_document(text)
    sizes = leaf_unit_sizes(layout)
    blocks = _shares(sizes, min(BLOCKS_PER_PROCESS * jobs, max(1, len(sizes))))
    processes = min(jobs, len(blocks))
    if processes < 2:
        return _done(_analyze_share(text, 0, None, strict, rules, layout), idle)
    counts = leaf_counts(layout)
    args = (text, blocks, strict, rules, layout, counts)
    # Loaded here for the results this process will load, so that the forked ones have it (it
    # was 2 of the 6-7 ms from a fork to a forked process's first block).
    import pickle  # noqa: F401
    claims = Claims(len(blocks))
    done: dict[int, tuple] = {}
    children = []
    outboxes: list[Outbox] = []
    try:
        try:
            for p in range(1, processes):
                outbox = Outbox(OUTBOX_PER_CHAR * len(text))
                outboxes.append(outbox)
                children.append((in_forked_process(_claimed_blocks_pickled, *args, claims,
                                                   p * len(blocks) // processes, outbox),
                                 outbox))
        except OSError:  # no more processes to be had: the others take their blocks
            pass
        try:
            done.update(_claimed_blocks(*args, claims, 0))
            if idle is not None:
                idle()
        except BaseException:
            for child, _ in children:
                child.cancel()
            raise
        for child, outbox in children:
            try:
                results = child()
            except RuntimeError:  # the process died (out of memory, killed): see below
                continue
            for i, where in results.items():
                if i not in done:
                    done[i] = outbox.load(where)
    finally:
        claims.close()
        for outbox in outboxes:
            outbox.close()
    findings: dict[tuple, Finding] = {}
    edits = SortedEdits()
    anchors: set[tuple[int, int]] = set()
    errors = False
    for i, block in enumerate(blocks):
        packed = done.get(i)
        f, e, a, err = (packed if packed is not None  # else its process died
                        else _analyze_share(text, *block, strict, rules, layout, counts))
        for finding in f:  # container headers are parsed (and reported) by every block
            findings.setdefault((finding.code, finding.start, finding.end, finding.message), finding)
        edits.extend(e)
        anchors |= a
        errors = errors or err
    ordered = sorted(findings.values(), key=lambda f: (f.start, f.end, f.code))
    return ordered, edits, anchors, errors


def _done(result: ShareResult, idle) -> ShareResult:
    if idle is not None:
        idle()
    return result


def _claimed_blocks(text: str, blocks: list, strict: bool, rules: tuple, layout, counts,
                    claims: Claims, start: int) -> dict[int, tuple]:
    """The results of the blocks this process claims, walking them from `start` around."""
    return {i: _analyze_share(text, *blocks[i], strict, rules, layout, counts)
            for i in claims.walk(start)}


def _claimed_blocks_pickled(text: str, blocks: list, strict: bool, rules: tuple, layout,
                            counts, claims: Claims, start: int, outbox: Outbox) -> dict:
    """_claimed_blocks in a forked process: each block's result pickled as soon as it is
    made, while the other process still analyses, not all at the end (20 ms at 50k lines,
    which the other process waited for), and left in `outbox` (what is returned through the
    pipe is where each lies). Its parent gone (killed: it does not die with it, `_detach`),
    it claims no further block."""
    import pickle

    parent = os.getppid()
    out = {}
    for i in claims.walk(start):
        out[i] = outbox.put(pickle.dumps(_analyze_share(text, *blocks[i], strict, rules, layout,
                                                        counts), pickle.HIGHEST_PROTOCOL))
        if os.getppid() != parent:
            break
    return out


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one: a
    container's cpuset, `taskset`), else all of them. A second process on a one-CPU mask only
    shares that CPU: it costs its fork and its results' transfer and saves nothing."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # no affinity masks (macOS, Windows)
        return os.cpu_count() or 1


# Decides what cpu_to_spare would: "always" (a big buffer is always shared: the tests of the
# shared analysis), "never"; unset or anything else: as the machine is now.
SECOND_PROCESS_ENV = "GPU_ASYNC_LSP_SECOND_PROCESS"


def cpu_to_spare() -> bool:
    """Would a second process have a CPU of its own now: this process may use two CPUs or
    more (`usable_cpus`), and one CPU at least runs nothing (Linux's count of the tasks
    running at this moment, this one among them; where there is none, it is taken to be
    so). With every CPU busy (an editor laying out the big file just opened on the other),
    a second process shares a CPU with this one, and its fork, copied pages and results are
    all cost: a 50k-line first open beside a busy CPU took 226 ms with it, 166 without."""
    forced = os.environ.get(SECOND_PROCESS_ENV)
    if forced in ("always", "never"):
        return forced == "always"
    if usable_cpus() < 2:
        return False
    running = running_tasks()
    return running is None or running < (os.cpu_count() or 1)


def running_tasks(samples: int = 5, interval: float = 0.0002) -> int | None:
    """How many tasks (threads) of the whole system run or are ready to run, the caller among
    them (/proc/loadavg's fourth field): the fewest of a few looks over a millisecond (a look
    often finds a task that only passes: a client's thread back from writing the didOpen);
    None where it cannot be read."""
    fewest = None
    for k in range(samples):
        if k:
            time.sleep(interval)
        try:
            with open("/proc/loadavg", "rb") as f:
                running = int(f.read().split()[3].split(b"/")[0])
        except (OSError, ValueError, IndexError):
            return None
        if fewest is None or running < fewest:
            fewest = running
    return fewest


def can_fork(threaded: bool = False) -> bool:
    """Whether this process may fork workers; `threaded`: from a process with other threads
    (the language server), which only Linux makes safe for a child that runs Python alone
    (macOS's system libraries may not survive such a fork)."""
    if threaded and not sys.platform.startswith("linux"):
        return False
    return hasattr(os, "fork")  # not multiprocessing's start methods: its import is 9 ms


_HELD: list = []  # in a forked child: objects its exit frees, not reference counting


def hold_until_exit(*objects) -> None:
    """In a process forked by in_forked_process: keep `objects` referenced until it exits
    (which frees nothing one by one); elsewhere nothing. A function run there that drops
    a big structure before returning (a pickler's memo of half a 50k-line file's results:
    7-10 ms) would make the other process wait that long for its result."""
    if _HELD:
        _HELD.extend(objects)


def in_forked_process(fn, *args):
    """Run `fn(*args)` in a forked process; returns a function that waits for its (pickled)
    result and returns it, or raises RuntimeError if the process failed (and has `cancel()`).

    A bare os.fork, not multiprocessing: its child start-up closes sys.stdin, whose lock the
    language server's reader thread holds while it waits for input, and would hang there. The
    child touches nothing but `fn` and its end of a pipe."""
    read_fd, write_fd = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child
        status = 1
        try:
            _detach(parent, write_fd)
            # The parent's reserve of arenas is the parent's: pages shared until written,
            # which this process would copy and the parent fault on again.
            arenas.drop_reserve()
            _HELD.append(fn)  # hold_until_exit holds in this process
            import pickle  # here: a run that forks no worker needs none of it

            # `result` stays referenced until the exit: freeing its objects one by one (7 ms
            # for half of a 50k-line file's results) would only delay the write.
            result = fn(*args)
            data = pickle.dumps(result, pickle.HIGHEST_PROTOCOL)
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
    the server exits), and die with the parent (Linux: PR_SET_PDEATHSIG) where the parent
    looked prctl up before (`prepare_forks`: the server). `check`'s process does not: ctypes'
    import was 3 of the 6-7 ms from its fork to its first block, which the other process
    worked alone; it looks for its parent between blocks instead (`_claimed_blocks_pickled`)."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 16)
    prctl = _PRCTL[0] if _PRCTL else None
    if prctl is not None:
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent is gone already
        os._exit(1)


_PRCTL: list = []  # prctl, once looked up (None where there is none)


def prepare_forks() -> None:
    """Look up what a forked child sets itself up with, in a process that forks many times
    and can spare the time before (the language server): ctypes' import took 2 of the 3 ms
    from a fork to the child's first work. Without it a child does not die with its parent
    (`_detach`)."""
    _prctl()


def _prctl():
    if not _PRCTL:
        _PRCTL.append(_find_prctl())
    return _PRCTL[0]


def _find_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes  # by the server only (`prepare_forks`): 3 ms of every start of `check`

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None




# An outbox's size, per character of the text (virtual: only the pages written are memory).
# What a process sends of a block of a fix is ~1.5 bytes per character of it (its rewritten
# text, its edits, its findings); a block that does not fit goes through the pipe.
OUTBOX_PER_CHAR = 4


class Outbox:
    """Bytes that a process forked after this is made leaves for the one that forked it, in
    shared memory: written as they are made, while the other process still works, and read
    in place. Through the pipe, half a 50k-line fix's results (1.9 MB) took 6 ms after the
    forked process's last block: pickled again whole (1.4 ms), then written and read through
    the pipe's buffer (3-4 ms), then loaded."""

    def __init__(self, size: int):
        self._map = mmap.mmap(-1, max(1, size))  # anonymous and shared: the fork shares it
        self._at = 0  # in the process that writes

    def put(self, data: bytes):
        """In the forked process: (offset, length) of `data` left here, or `data` itself
        where it does not fit."""
        at, n = self._at, len(data)
        if at + n > len(self._map):
            return data
        self._map[at:at + n] = data
        self._at = at + n
        return at, n

    def load(self, where):
        """In the process that forked: the object pickled in what `put` returned."""
        import pickle

        if isinstance(where, bytes):
            return pickle.loads(where)
        at, n = where
        with memoryview(self._map) as whole, whole[at:at + n] as data:
            return pickle.loads(data)

    def close(self) -> None:
        self._map.close()


class Claims:
    """Items 0..n-1 shared by processes forked after this is made: each walks them from its own
    start, around, and takes every item no other has claimed (a byte in shared memory, set
    before the item is taken). Every item is taken, each by one process but for two that read
    its byte at the same moment: both then take it, which costs only work, as the results of
    an item are all the same."""

    def __init__(self, n: int):
        self.n = n
        self._map = mmap.mmap(-1, max(1, n))  # anonymous and shared: the fork shares it

    def walk(self, start: int):
        claimed, n = self._map, self.n
        for k in range(n):
            i = (start + k) % n
            if not claimed[i]:
                claimed[i] = 1
                yield i

    def close(self) -> None:
        self._map.close()


def from_both_ends(n: int, front, back, *args):
    """Items 0..n-1 shared by this process and a forked one: this one makes `front(i)` for
    the items it takes from the first on, the other runs `back(*args, ends)`, which takes
    them from the last back (`TwoEnds.back`) and returns their results (as a stream of
    pickles, `pickled_each`, which the caller unpickles when it needs them). This process's
    results in order and what `back` returned (None if the process died: the caller does
    the rest), or None if no process can be had."""
    ends = TwoEnds(n)
    try:
        try:
            receive = in_forked_process(back, *args, ends)
        except OSError:  # no process to be had (out of memory, process limit)
            return None
        try:
            ours = [front(i) for i in ends.front()]
        except BaseException:
            receive.cancel()
            raise
        try:
            theirs = receive()
        except RuntimeError:  # the process died (out of memory, killed)
            theirs = None
    finally:
        ends.close()
    return ours, theirs


def pickled_each(items) -> bytes:
    """In a forked process: each of `items` pickled as it is made, into one stream with one
    memo (the pickling was 5 ms after the last of half a 50k-line file's units, while the
    other process waited), held with everything it refers to until the process exits."""
    import io
    import pickle

    stream = io.BytesIO()
    pickler = pickle.Pickler(stream, pickle.HIGHEST_PROTOCOL)
    hold_until_exit(pickler)
    for item in items:
        pickler.dump(item)
    return stream.getvalue()


def unpickled(data: bytes) -> list:
    """The items of a stream of pickles (`pickled_each`), in order."""
    import io
    import pickle

    stream = io.BytesIO(data)
    load = pickle.Unpickler(stream).load  # its memo, as the pickler's, spans the stream
    out = []
    while stream.tell() < len(data):
        out.append(load())
    return out


class KeyClaims:
    """Keys (hashed alike in this process and those forked after this is made) claimed by one
    of several processes, so that work found by both under the same key is done by one: a
    byte per slot of a table in shared memory, set to the claiming process's number. Keys
    that share a slot, and two processes reading one at the same moment, make a claim wrong
    either way: both do the work, or neither does (the caller then does it when it joins
    the results): only the work is ever lost, never a result."""

    def __init__(self, slots: int):
        self.slots = max(1, slots)
        self._map = mmap.mmap(-1, self.slots)  # anonymous and shared: the fork shares it

    def claim(self, key, me: int) -> bool:
        """Should process `me` (1-255) do `key`'s work: no process had claimed it, or `me` did?"""
        i = hash(key) % self.slots
        owner = self._map[i]
        if owner == 0:
            self._map[i] = me
            return True
        return owner == me

    def close(self) -> None:
        self._map.close()


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
            import pickle

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
