"""The server's incremental analysis equals a fresh one after any edit."""

from __future__ import annotations

import random

import pytest

from benchmarks.gen_host import generate
from gpu_async_lsp import parallel
from gpu_async_lsp.async_region.suppression import NO_CONTEXT
from gpu_async_lsp.ide.host import Analyzer, changed_span
from gpu_async_lsp.syntax import split_chunks

# Tests of the shared path: it is taken whatever else the machine runs (conftest.py).
pytestmark = pytest.mark.usefixtures("second_process_always")


def _snapshot(a):
    from gpu_async_lsp.ide import features
    from gpu_async_lsp.text import LineIndex

    def symbols(nodes):
        return [(n.name, n.detail, n.start, n.end, n.selection, symbols(n.children))
                for n in nodes]

    hints = [(u.base + h.offset, h.label) for u, h in features.inlay_hints(a, 0, len(a.text))]
    # Symbol resolution (its table is carried from version to version when it can be).
    definitions = [(i, features.definition(a, i + 1)) for i in range(len(a.text))
                   if a.text[i] == "@"]
    return ([(f.code, f.start, f.end, f.message, f.related) for f in a.findings],
            [(fn.name, fn.start, fn.end, fn.anchor, fn.rewritable, fn.edits) for fn in a.functions],
            a.has_syntax_errors, a.containers, a.chunks, symbols(features.document_symbols(a)),
            features.folding_ranges(a, LineIndex(a.text)), hints, definitions)


def test_server_analysis_changed_span_finds_the_differing_region():
    assert changed_span("abcdef", "abXdef") == (2, 3, 3)
    assert changed_span("abc", "abc") == (3, 3, 3)
    assert changed_span("aaa", "aaaa") == (3, 3, 4)
    assert changed_span("", "x") == (0, 0, 1)


@pytest.mark.parametrize("seed", range(6))
def test_server_analysis_incremental_equals_fresh_after_random_edits(seed):
    rng = random.Random(seed)
    text = generate(400, seed=seed)
    incremental = Analyzer()
    previous = incremental.analyze(text, 0)
    for version in range(1, 40):
        pos = rng.randrange(len(text))
        kind = rng.random()
        if kind < 0.4:
            text = text[:pos] + rng.choice([" ", "x", "\n", "%t0 ", "gpu.wait\n  "]) + text[pos:]
        elif kind < 0.7:
            text = text[:pos] + text[pos + rng.randint(1, 3):]
        else:  # edits that move unit boundaries: a full split must follow
            text = text[:pos] + rng.choice(["{", "}", "\"", "// -----\n", "/"]) + text[pos:]
        previous = incremental.analyze(text, version, previous)
        fresh = Analyzer().analyze(text, version)
        assert _snapshot(previous) == _snapshot(fresh), (seed, version)


def test_server_analysis_symbol_table_carried_over_unasked_versions_stays_right():
    """Versions whose symbols nobody asked for pass the table on (edits in two different
    function bodies), and it still resolves as a fresh analysis does."""
    from gpu_async_lsp.ide import features

    text = ("module {\n  func.func @a() {\n    return\n  }\n"
            "  func.func @b() {\n    \"test.op\"() : () -> ()\n    return\n  }\n"
            "  func.func @c() {\n    func.call @a() : () -> ()\n    return\n  }\n}\n")
    analyzer = Analyzer()
    a = analyzer.analyze(text, 0)
    use = text.index("@a()", text.index("func.call"))
    assert features.definition(a, use + 1)[0].start == text.index("@a")
    for version, (old, new) in enumerate([("return\n  }\n  func.func @b", "return \n  }\n  func.func @b"),
                                          ("\"test.op\"() :", "\"test.op\"()  :")], 1):
        text = text.replace(old, new, 1)
        a = analyzer.analyze(text, version, a)  # nobody asks about these versions
    use = text.index("@a()", text.index("func.call"))
    fresh = Analyzer().analyze(text, 9)
    assert features.definition(a, use + 1) == features.definition(fresh, use + 1)
    assert features.definition(a, use + 1)[0].start == text.index("@a")


def test_server_analysis_results_need_no_cycle_collector():
    """What the server keeps per document (IR, plans, findings, the features' memos) has no
    reference cycles: dropped, it is freed at once, so the server may freeze big analyses
    out of the collector's sight (gc.freeze) without leaking them."""
    import gc

    from gpu_async_lsp.ide import features
    from gpu_async_lsp.text import LineIndex

    text = generate(300, seed=3)
    Analyzer().analyze(text, 0)  # warm: the parser and its caches are built once
    gc.collect()
    gc.disable()
    try:
        analyzer = Analyzer()
        a = analyzer.analyze(text, 1)
        index = LineIndex(text)
        features.document_symbols(a)
        features.folding_ranges(a, index)
        features.inlay_hints(a, 0, len(text))
        features.code_lenses(a, index, "utf-16")
        at = text.index("@kernels::")
        features.definition(a, at + 2)
        features.references(a, at + 2)
        features.hover(a, text.index("gpu.memcpy") + 1, lambda o: index.line_of(o) + 1)
        at = text.index("gpu.alloc", len(text) // 2)
        b = analyzer.analyze(text[:at] + " " + text[at:], 2, a)  # the incremental path
        features.definition(b, at + 2)
        del a, b, analyzer
        assert gc.collect() == 0
    finally:
        gc.enable()


def _features_snapshot(a):
    """What the editor features answer from the analysis (hover needs the IR too)."""
    from gpu_async_lsp.ide import features
    from gpu_async_lsp.text import LineIndex

    lines = LineIndex(a.text)
    # Hover on a GPU op of every 97th unit: the unit's IR is read (and rebuilt if lazy).
    hovers = []
    for u in a.units[::97]:
        at = u.result.source.find("gpu.memcpy")
        if at >= 0:
            hovers.append(features.hover(a, u.base + at + 1, lambda o: lines.line_of(o) + 1))
    return _snapshot_small(a), hovers


def _snapshot_small(a):
    from gpu_async_lsp.ide import features

    hints = [(u.base + h.offset, h.label) for u, h in features.inlay_hints(a, 0, len(a.text))]
    return ([(f.code, f.start, f.end, f.message, f.related) for f in a.findings],
            [(fn.name, fn.start, fn.end, fn.anchor, fn.rewritable, fn.edits) for fn in a.functions],
            a.has_syntax_errors, hints, [(u.base, u.dialect, u.device) for u in a.units])


def test_server_analysis_shared_with_a_process_equals_one_process():
    """A big first analysis is shared with a forked process, whose units come back without
    IR and build it on first use: every answer is the same as from one process."""
    from gpu_async_lsp.ide import sharing

    text = generate(12000) + "\nfunc.func @broken() {\n  %x = arith.addi (\n}\n"
    assert len(text) > 400_000
    shared = Analyzer()
    a = shared.analyze(text, 1)
    lazy = [u for u in a.units if u.result._rebuild is not None]
    assert lazy  # the last units came from the other process (how many: who was faster)
    single = Analyzer()
    single.share_big_batches = False
    b = single.analyze(text, 1)
    assert not any(u.result._rebuild for u in b.units)
    assert _features_snapshot(a) == _features_snapshot(b)
    assert a.has_syntax_errors
    # Hover built the IR of those units; inlay hints of the whole text built every unit's.
    assert all(u.result._rebuild is None for u in a.units)
    assert sharing.shared_results([("x", None, False, NO_CONTEXT)],
                                   (False, "original", False, "none")) is None


def _never_forks(fn, *args):
    raise AssertionError("a process was forked")


@pytest.mark.parametrize(("cpus", "running", "spare"), [
    (1, 1, False),  # one CPU to use: a second process would only share it
    (2, 1, True),  # only this task runs: the other CPU is idle
    (2, 2, False),  # another task runs (an editor busy on the other CPU)
    (2, None, True),  # no count of running tasks: as before, shared
])
def test_server_analysis_second_process_only_with_a_cpu_to_spare(monkeypatch, cpus, running,
                                                                 spare):
    """Unforced, a big first open is shared only where a second process gets a CPU of its own
    (the CPUs this process may use, the tasks running now on a machine of two); else this
    process analyses it all, with the same results, and forks nothing."""
    monkeypatch.delenv(parallel.SECOND_PROCESS_ENV)
    monkeypatch.setattr(parallel, "usable_cpus", lambda: cpus)
    monkeypatch.setattr(parallel, "running_tasks", lambda: running)
    monkeypatch.setattr(parallel.os, "cpu_count", lambda: 2)
    assert parallel.cpu_to_spare() is spare
    for forced in ("always", "never"):
        monkeypatch.setenv(parallel.SECOND_PROCESS_ENV, forced)
        assert parallel.cpu_to_spare() is (forced == "always")
    monkeypatch.delenv(parallel.SECOND_PROCESS_ENV)
    if not spare:
        monkeypatch.setattr(parallel, "in_forked_process", _never_forks)
        text = generate(12000)
        a = Analyzer().analyze(text, 1)
        assert not any(u.result._rebuild for u in a.units)
        single = Analyzer()
        single.share_big_batches = False
        assert _snapshot_small(a) == _snapshot_small(single.analyze(text, 1))


def test_server_analysis_usable_cpus_are_the_affinity_mask():
    """The CPUs a process may use are its affinity mask where the platform has one."""
    import os

    expected = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)
    assert parallel.usable_cpus() == expected
    running = parallel.running_tasks()
    assert running is None or running >= 1  # this test's own task runs


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
def test_server_analysis_places_findings_where_each_unit_is_analysed(encoding):
    """Given the encoding, both processes of a shared first analysis place their units'
    findings (non-ASCII text in the units, a blocker after some on its line): the same
    positions as a unit computes on its own, and the findings' other fields unchanged."""
    text = (generate(12000).replace("%c1 = arith.constant 1 : index",
                                    "%c1 = arith.constant 1 : index // Hôst 𝄞")
            .replace("%c256 = arith.constant 256 : index",
                     '%c256 = arith.constant {n = "é𝄞"} 256 : index gpu.wait'))
    shared = Analyzer().analyze(text, 1, encoding=encoding)
    lazy = [u for u in shared.units if u.result._rebuild is not None]
    assert lazy and len(lazy) < len(shared.units)  # both processes took units
    single = Analyzer()
    single.share_big_batches = False
    alone = single.analyze(text, 1)
    for u, v in zip(shared.units, alone.units, strict=True):
        assert encoding in u.result._positions or not u.result.findings
        assert u.result.positions(encoding) == v.result.positions(encoding)
    assert _snapshot_small(shared) == _snapshot_small(alone)


class _Dead:
    def __call__(self):
        raise RuntimeError("a worker process failed: killed")

    def cancel(self):
        pass


def _dies(fn, *args):
    return _Dead()


def _no_fork(fn, *args):
    raise BlockingIOError(11, "Resource temporarily unavailable")


@pytest.mark.parametrize("fork", [_dies, _no_fork], ids=["process dies", "no process"])
def test_server_analysis_falls_back_when_the_process_fails(monkeypatch, fork):
    """The other process died, or none could be forked: this one analyses the batch."""
    from gpu_async_lsp import parallel

    monkeypatch.setattr(parallel, "in_forked_process", fork)
    text = generate(12000)
    a = Analyzer().analyze(text, 1)
    single = Analyzer()
    single.share_big_batches = False
    assert _snapshot_small(a) == _snapshot_small(single.analyze(text, 1))
    assert not any(u.result._rebuild for u in a.units)


def test_server_analysis_analyses_each_distinct_unit_once(monkeypatch):
    """A text that holds the same function many times (an IR dump of repeated passes, a test
    file of copies) costs one analysis of it, as a cache hit would."""
    from gpu_async_lsp.ide import host

    calls = []
    real = host.analyze_unit
    monkeypatch.setattr(host, "analyze_unit",
                        lambda source, *a: calls.append(source) or real(source, *a))
    one = "func.func @f(%n: index) {\n  %a = gpu.alloc (%n) : memref<?xf32>\n  return\n}\n"
    other = one.replace("@f", "@g")
    a = Analyzer().analyze((one + other) * 50, 1)
    assert len(a.units) == 100 and len(calls) == 2
    assert len(a.findings) == 100


def test_server_analysis_stops_the_process_when_its_own_share_fails(monkeypatch):
    """An analysis that fails in the server's share (a bug: an internal-error finding) must
    not leave the forked process blocked on a pipe nobody reads."""
    import os

    from gpu_async_lsp import parallel
    from gpu_async_lsp.ide import host, sharing

    started = []
    real_fork = parallel.in_forked_process

    def spy(fn, *args):
        forked = real_fork(fn, *args)
        started.append(forked.pid)
        return forked

    monkeypatch.setattr(parallel, "in_forked_process", spy)
    monkeypatch.setattr(host, "analyze_unit", lambda *a: 1 / 0)
    monkeypatch.setattr(sharing, "analyze_unit", lambda *a: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        Analyzer().analyze(generate(12000), 1)
    (pid,) = started
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no such child any more


def _child_files():
    import os
    return os.readlink("/proc/self/fd/1"), sorted(int(fd) for fd in os.listdir("/proc/self/fd"))


def test_forked_share_holds_none_of_the_servers_files():
    """The client of a server reads its stdout to the end: a forked child holding that pipe
    kept it open after the server exited (3.8 s of its share in CI)."""
    import os

    from gpu_async_lsp import parallel

    kept_r, kept_w = os.pipe()  # stands for the server's stdout pipe, inherited by a fork
    try:
        stdout, fds = parallel.in_forked_process(_child_files)()
    finally:
        os.close(kept_r)
        os.close(kept_w)
    assert stdout == os.devnull
    assert kept_r not in fds and kept_w not in fds
    assert len([fd for fd in fds if fd > 2]) <= 2  # its result pipe (and listdir's own)


class _Freed:
    """Records in a pipe when it is freed."""

    def __init__(self, fd: int):
        self.fd = fd

    def __del__(self):
        import os

        os.write(self.fd, b"freed")


def _hold(fd: int) -> str:
    from gpu_async_lsp import parallel

    parallel.hold_until_exit(_Freed(fd))
    return "returned"


def test_forked_process_holds_what_it_is_told_to_until_its_exit():
    """In a forked process, hold_until_exit keeps objects referenced up to the exit, which
    frees nothing (the pickled results' memo of a big share: 7-10 ms of freeing the other
    process waited for); in this process it holds nothing."""
    import gc
    import os

    from gpu_async_lsp import parallel

    r, w = os.pipe()
    try:
        assert parallel.in_forked_process(_hold, w)() == "returned"
        os.set_blocking(r, False)
        with pytest.raises(BlockingIOError):
            os.read(r, 16)  # the child exited without freeing the object it held
        assert _hold(w) == "returned"  # here: not held, freed at once
        gc.collect()
        assert os.read(r, 16) == b"freed"
        assert parallel._HELD == []
    finally:
        os.close(r)
        os.close(w)


def test_server_analysis_llvm22_results_need_no_cycle_collector():
    """The plans kept to render a function's edits on first request (LLVM 22's async.execute
    phases included) hold no reference cycle either."""
    import gc
    from pathlib import Path

    from gpu_async_lsp.async_region.rewriter import LLVM22

    text = (Path(__file__).parents[1] / "fixtures" / "llvm22_async_execute.mlir").read_text()
    Analyzer(semantics=LLVM22).analyze(text, 0)
    gc.collect()
    gc.disable()
    try:
        a = Analyzer(semantics=LLVM22).analyze(text, 1)
        assert any(fn.rewritable for fn in a.functions)
        kept = [fn for fn in a.functions if fn.rewritable]  # not rendered yet
        del a
        assert gc.collect() == 0
        assert all(fn.edits for fn in kept)
        del kept
        assert gc.collect() == 0
    finally:
        gc.enable()


_BLOCKED = """func.func @blocked{i}(%n: index) {{
  %a = gpu.alloc (%n) : memref<?xf32>
  gpu.wait
  gpu.dealloc %a : memref<?xf32>
  return
}}
"""


def test_server_analysis_edits_and_variants_made_on_request_equal_eager_ones():
    """Edits and other rewrites (quick fixes past blockers) are rendered on first request,
    in this process or, for a share analysed in another one, by rebuilding the unit; either
    way they equal a one-process analysis's, also once the analysis and its cache are gone."""
    import gc
    import threading

    text = generate(9000) + "".join(_BLOCKED.format(i=i) for i in range(1500))
    assert len(text) > 400_000
    shared = Analyzer().analyze(text, 1)
    assert any(u.result._rebuild is not None for u in shared.units)
    single = Analyzer()
    single.share_big_batches = False
    one = single.analyze(text, 1)

    def plans(a):
        return [(fn.name, fn.rewritable, fn.edits, fn.variants) for fn in a.functions]

    blocked = [fn for fn in shared.functions if fn.name == "@blocked1499"]
    assert blocked and blocked[0].variant_edits("llvm22")
    # Two threads asking for the same edits at once render them once, alike.
    fns = [fn for fn in one.functions if fn.rewritable][-200:]
    seen: list = []
    threads = [threading.Thread(target=lambda: seen.append([fn.edits for fn in fns]))
               for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen[0] == seen[1] and all(seen[0])
    assert plans(shared) == plans(one)
    kept = blocked[0]
    expected = kept.variant_edits("llvm22")
    del shared
    gc.collect()
    assert kept.plan.unit() is None  # deferred, and its unit is gone
    assert kept.variant_edits("llvm22") == expected  # its unit rebuilt it from its text


def _take_back(ends, delay: float, slow_start: float) -> list[int]:
    import time
    time.sleep(slow_start)
    taken = []
    for i in ends.back():
        taken.append(i)
        time.sleep(delay)
    return taken


@pytest.mark.parametrize("front_delay,back_delay,slow_start", [
    (0.0005, 0.0005, 0.0), (0.002, 0.0002, 0.0), (0.0002, 0.002, 0.0), (0.0, 0.0, 0.0),
    (0.0002, 0.0, 0.05)])
def test_two_processes_take_every_item_from_both_ends(front_delay, back_delay, slow_start):
    """The forked process takes items from the end, this one from the start: together they
    take all of them, each a contiguous run, at most the one where they meet twice; the
    faster one takes more."""
    import time

    from gpu_async_lsp import parallel

    n = 300
    ends = parallel.TwoEnds(n)
    receive = parallel.in_forked_process(_take_back, ends, back_delay, slow_start)
    front = []
    for i in ends.front():
        front.append(i)
        time.sleep(front_delay)
    back = receive()
    ends.close()
    assert front == list(range(len(front)))
    assert back == list(range(n - 1, n - 1 - len(back), -1))
    assert set(front) | set(back) == set(range(n))
    assert len(set(front) & set(back)) <= 1
    if slow_start or back_delay > 4 * front_delay:
        assert len(front) > len(back)
    elif front_delay > 4 * back_delay:
        assert len(back) > len(front)


def test_check_share_crosses_the_pipe_unchanged():
    """`check`'s workers send their edits as flat lists and, for --fix, applied: what arrives
    is what was found."""
    import pickle

    from gpu_async_lsp import parallel

    text = generate(300) + "".join(_BLOCKED.format(i=i) for i in range(3))
    result = parallel._analyze_share(text, 0, None, False, ("original", False, "none", True))
    assert len(result[1]) and result[0]
    assert pickle.loads(pickle.dumps(result)) == result
    assert pickle.loads(pickle.dumps(result))[1].apply(text) == result[1].apply(text)
    # And the command's two-process analysis equals the one-process one.
    big = generate(12000)
    assert parallel.analyze_in_shares(big, False, 2) == parallel.analyze_in_shares(big, False, 1)


def _chunked_text() -> str:
    """Many `// -----` chunks: host code, blocked functions, a module header with an error,
    chunks of no leaf unit (an empty module, a bare `}`), device code."""
    parts = []
    for i in range(200):
        parts.append(generate(50, seed=i))
        parts.append(_BLOCKED.format(i=i))
        if i % 7 == 0:
            parts.append("module {\n}\n")
        if i % 11 == 0:
            parts.append("module @m attributes {x = } {\n  func.func @f() {\n    return\n  }\n}\n")
            parts.append(f"module @e{i} attributes {{x = }} {{\n}}\n")  # no leaf unit
        if i % 13 == 0:
            parts.append("}\n")
        if i % 5 == 0:
            parts.append("gpu.module @k {\n  gpu.func @g() kernel {\n    gpu.return\n  }\n}\n")
    return "\n// -----\n".join(parts)


@pytest.mark.parametrize("fork", [True, False])
def test_check_blocks_taken_from_both_ends_equal_one_process(monkeypatch, fork):
    """`check`'s two processes take blocks of leaf units from both ends; chunks that hold none
    of a block are skipped whole, and a chunk of no leaf unit is parsed by one block: the
    joined result is the one-process result. Without a second process (fork fails) this one
    takes every block."""
    from gpu_async_lsp import parallel

    text = _chunked_text()
    assert len(text) > parallel.MIN_PARALLEL_CHARS
    one = parallel.analyze_in_shares(text, False, 1)
    if not fork:
        def no_fork(*args):
            raise OSError("no process")

        monkeypatch.setattr(parallel, "in_forked_process", no_fork)
    two = parallel.analyze_in_shares(text, False, 2)
    assert two == one
    assert one[0] and len(one[1]) and one[2] and one[3]  # findings, edits, anchors, errors
    # With --fix, each block's edits come applied: glued, the text one process makes.
    fixed = parallel.analyze_in_shares(text, False, 2, fix=True)
    assert fixed == one
    assert fixed[1].apply(text) == one[1].apply(text)
    assert all(part.piece is not None for part in fixed[1].parts)
    moved, want = fixed[1].mover(), one[1].mover()
    assert [moved(f.start) for f in one[0]] == [want(f.start) for f in one[0]]


def test_check_blocks_of_a_dead_process_are_analysed_here(monkeypatch):
    """A forked process claimed blocks and died (killed, out of memory) before it sent them:
    this one analyses them after its own."""
    from gpu_async_lsp import parallel

    claimed = []

    def dies_after_claiming(fn, *args):
        k = next(k for k, a in enumerate(args) if isinstance(a, parallel.Claims))
        claims, start = args[k], args[k + 1]
        walk = claims.walk(start)
        claimed.extend(next(walk) for _ in range(3))
        return _Dead()

    monkeypatch.setattr(parallel, "in_forked_process", dies_after_claiming)
    text = _chunked_text()
    assert parallel.analyze_in_shares(text, False, 2) == parallel.analyze_in_shares(text, False, 1)
    assert len(claimed) == 3


def test_outbox_gives_back_what_a_forked_process_put_and_the_pipe_what_did_not_fit():
    import pickle

    from gpu_async_lsp.parallel import Outbox, in_forked_process

    outbox = Outbox(4096)

    def put_some(box):
        return [box.put(pickle.dumps(("small", k))) for k in range(3)] + [
            box.put(pickle.dumps("x" * 10_000))]

    try:
        where = in_forked_process(put_some, outbox)()
        assert [type(w) for w in where] == [tuple, tuple, tuple, bytes]
        assert [outbox.load(w) for w in where] == [("small", 0), ("small", 1), ("small", 2),
                                                  "x" * 10_000]
    finally:
        outbox.close()


def test_a_forked_check_process_claims_no_block_once_its_parent_is_gone(monkeypatch):
    """check's forked process does not die with its parent (no prctl looked up for it): it
    stops claiming blocks once its parent is gone."""
    from gpu_async_lsp import parallel

    text = _chunked_text()
    layout = parallel.split_document(text)
    blocks = parallel._shares(parallel.leaf_unit_sizes(layout), 8)
    claims = parallel.Claims(len(blocks))
    outbox = parallel.Outbox(4 * len(text))
    parents = iter([100, 100, 1])  # at the start, after the first block, after the second
    monkeypatch.setattr(parallel.os, "getppid", lambda: next(parents))
    try:
        done = parallel._claimed_blocks_pickled(text, blocks, False, ("original", False, "none",
                                                False), layout, parallel.leaf_counts(layout),
                                                claims, 0, outbox)
        assert sorted(done) == [0, 1]
    finally:
        claims.close()
        outbox.close()


def test_check_blocks_through_the_pipe_alone_equal_one_process(monkeypatch):
    """With no room in the outbox, every block's results come through the pipe."""
    from gpu_async_lsp import parallel

    monkeypatch.setattr(parallel, "OUTBOX_PER_CHAR", 0)
    text = _chunked_text()
    assert parallel.analyze_in_shares(text, False, 2) == parallel.analyze_in_shares(text, False, 1)


def test_check_blocks_shared_by_three_processes_equal_one_process():
    from gpu_async_lsp import parallel

    text = _chunked_text()
    assert parallel.analyze_in_shares(text, False, 3) == parallel.analyze_in_shares(text, False, 1)


def test_claims_take_every_item_once_from_any_starts():
    """Processes walking the items from their own starts take each item once (no process
    runs between the claims here, so none is taken twice)."""
    from gpu_async_lsp.parallel import Claims

    for n, starts in [(1, [0]), (7, [0, 3]), (16, [0, 5, 10]), (5, [0, 0])]:
        claims = Claims(n)
        walks = [claims.walk(s) for s in starts]
        taken: list[int] = []
        live = list(walks)
        while live:  # interleaved, one item each in turn
            for w in list(live):
                item = next(w, None)
                if item is None:
                    live.remove(w)
                else:
                    taken.append(item)
        claims.close()
        assert sorted(taken) == list(range(n)), (n, starts)


def test_container_headers_repeated_in_chunks_parse_once(monkeypatch):
    """`// -----` chunks repeat their module headers: each distinct header is parsed once per
    analysis, and every container still has its own name, symbol and spans; a header in
    error is reported wherever it is."""
    from gpu_async_lsp.syntax import parser

    calls = []
    real = parser._parse_header
    monkeypatch.setattr(parser, "_parse_header",
                        lambda text, unit, d: calls.append(unit.start) or real(text, unit, d))
    chunk = ("module attributes {gpu.container_module} {\n  gpu.module @kernels {\n"
             "    gpu.func @k() kernel { gpu.return }\n  }\n"
             "  func.func @f{i}(%n: index) {{\n    %a = gpu.alloc (%n) : memref<?xf32>\n"
             "    return\n  }}\n}}\n")
    bad = "module @x : ) {\n  func.func @g() {\n    return\n  }\n}\n"
    text = "// -----\n".join([chunk.replace("{i}", str(i)).replace("{{", "{").replace("}}", "}")
                              for i in range(30)] + [bad, bad])
    a = Analyzer().analyze(text, 1)
    assert len(calls) == 2 + 2  # module and gpu.module once; the bad header at each place
    named = [c for c in a.containers if c.symbol]
    assert [c.symbol for c in named] == ["@kernels"] * 30
    for c in a.containers:
        if c.symbol_span:
            assert text[c.symbol_span[0]:c.symbol_span[1]] == c.symbol
        assert text[c.lbrace] == "{" and text[c.rbrace] == "}"
        assert text.startswith(("module", "gpu.module"), c.start)
    errors = [f for f in a.header_findings if f.code == "syntax"]
    assert len(errors) == 2 and errors[0].start != errors[1].start
    assert len([f for f in a.findings if f.code == "sync-gpu-ops"]) == 30


def test_code_lenses_of_unblocked_functions_rebuild_no_unit():
    """Lenses ask each function for its other rewrites; a function nothing blocks has none,
    and a unit analysed in the other process is not parsed again to say so."""
    from gpu_async_lsp.ide import features
    from gpu_async_lsp.text import LineIndex

    text = generate(12000) + "".join(_BLOCKED.format(i=i) for i in range(3))
    a = Analyzer().analyze(text, 1)
    lazy = [u for u in a.units if u.result._rebuild is not None]
    assert lazy
    lenses = features.code_lenses(a, LineIndex(text), "utf-16")
    assert len(lenses) >= len(a.functions) // 2
    blocked = {u.base for u in a.units if any(fn.blocker_codes for fn in u.result.functions)}
    assert blocked
    assert all(u.result._rebuild is not None for u in lazy if u.base not in blocked)


def test_a_mid_size_first_analysis_leaves_the_collector_nothing_to_traverse():
    """An analysis of some 10k objects or more is frozen before the collector resumes: not
    frozen, all of them were traversed by the collection the next allocation triggered,
    before the diagnostics went out (4.5 ms of a 115 ms first open of 50k lines of real IR,
    whose 48k objects were under the former 50k threshold)."""
    import gc

    from gpu_async_lsp.server.documents import DocState
    from gpu_async_lsp.server.heap import FREEZE_AFTER_ALLOCATIONS
    from gpu_async_lsp.server.server import GpuAsyncServer

    text = generate(3500)
    state = DocState("file:///mid.mlir")
    frozen = gc.get_freeze_count()
    try:
        result, _, publication, allocations, _ = GpuAsyncServer._prepare(
            Analyzer(), state, text, 1, "utf-16", {})
        assert FREEZE_AFTER_ALLOCATIONS <= allocations < 5 * FREEZE_AFTER_ALLOCATIONS
        assert gc.get_freeze_count() - frozen >= allocations // 2  # what it made is frozen
        assert gc.get_count()[0] < FREEZE_AFTER_ALLOCATIONS // 10
        assert '"diagnostics":[' in publication and result.units
    finally:
        gc.unfreeze()


def test_the_highlighting_warm_up_gives_way_to_another_analysis():
    """The semantic tokens made while nothing else is to do stop at the next unit when
    `stop` says another analysis waits (a document opened meanwhile, this one reopened:
    they waited behind the warm-up of a whole big file); without it, every unit is made."""
    from gpu_async_lsp.server.documents import DocState
    from gpu_async_lsp.server.server import GpuAsyncServer

    text = generate(300)
    state = DocState("file:///warm.mlir")
    result = Analyzer().analyze(text, 1)
    state.analysis = result
    key = ("semantic-tokens", "utf-16")
    asked = []

    def stop_after_three() -> bool:
        asked.append(1)
        return len(asked) > 3

    GpuAsyncServer._warm_semantic_tokens(state, result, "utf-16", stop_after_three)
    made = [key in u.result.memo for u in result.units]
    assert len(result.units) > 10 and made == [True] * 3 + [False] * (len(made) - 3)
    GpuAsyncServer._warm_semantic_tokens(state, result, "utf-16")
    assert all(key in u.result.memo for u in result.units)


def _split_input_text(chunks: int = 400) -> str:
    """A big text of many `// -----` chunks, as a -split-input-file test is: host functions
    that repeat from chunk to chunk, device code, a unit with a syntax error, a module whose
    header has one, suppression comments outside units, a generic op (Lark's), non-ASCII."""
    host = ("module {{\n  // 𝄞 step {i}\n  func.func @f{n}(%h: memref<?xf32>, %n: index) {{\n"
            "    %d = gpu.alloc (%n) : memref<?xf32>\n"
            "    gpu.memcpy %d, %h : memref<?xf32>, memref<?xf32>\n"
            "    gpu.dealloc %d : memref<?xf32>\n    return\n  }}\n}}\n")
    shapes = [
        host,
        "// gpu-async-lsp: ignore[sync-gpu-ops]\n" + host,
        "gpu.module @k{n} {{\n  gpu.func @g(%a: f32) kernel {{\n    gpu.return\n  }}\n}}\n",
        "func.func @bad{n}() {{\n  %x = arith.addi (\n}}\n",
        "gpu.module @m{n} ) {{\n  gpu.func @g() kernel {{\n    gpu.return\n  }}\n}}\n",
        '"test.op"() ({{\n  "test.inner"() : () -> ()\n}}) {{n = {n} : i32}} : () -> ()\n',
        "func.func @w{n}(%n: index) {{\n  gpu.wait // gpu-async-lsp: ignore\n  gpu.wait\n"
        "  %d = gpu.alloc (%n) : memref<?xf32>\n  return\n}}\n",
    ]
    out = []
    for i in range(chunks):
        body = shapes[i % len(shapes)].format(i=i, n=i % 23)
        out.append(body * 6)  # a few units a chunk
    return "// -----\n".join(out)


def _chunk_snapshot(a, encoding: str = "utf-16"):
    from gpu_async_lsp.ide import features

    hints = [(u.base + h.offset, h.label) for u, h in features.inlay_hints(a, 0, len(a.text))]
    return ([(f.code, f.start, f.end, f.message, f.related, f.severity) for f in a.findings],
            [(fn.name, fn.start, fn.end, fn.anchor, fn.rewritable, fn.edits, fn.variants)
             for fn in a.functions],
            a.has_syntax_errors, a.header_findings, a.containers, a.chunks, hints,
            [(u.base, u.dialect, u.device, u.outside, u.result.source,
              u.result.positions(encoding)) for u in a.units])


def test_many_chunks_are_split_and_analysed_by_two_processes_as_by_one():
    """A big text of many chunks is shared chunk by chunk (the split too), a unit found in
    both processes' chunks analysed by one of them: every answer is the one process's."""
    from gpu_async_lsp import parallel
    from gpu_async_lsp.ide import sharing

    text = _split_input_text(900)
    chunks = split_chunks(text)
    assert len(text) > parallel.MIN_PARALLEL_CHARS and sharing.chunks_worth_sharing(text, chunks)
    shared = Analyzer().analyze(text, 1, encoding="utf-16")
    lazy = [u for u in shared.units if u.result._rebuild is not None]
    assert lazy and len(lazy) < len(shared.units)  # both processes took chunks
    # A unit's text repeated in the other process's chunks came from that process once.
    assert len({id(u.result) for u in lazy}) < len(lazy)
    single = Analyzer()
    single.share_big_batches = False
    alone = single.analyze(text, 1, encoding="utf-16")
    assert _chunk_snapshot(shared) == _chunk_snapshot(alone)
    assert shared.has_syntax_errors and shared.header_findings
    codes = {f.code for f in shared.findings}
    assert {"sync-gpu-ops", "pre-existing-wait", "syntax"} <= codes


def test_many_chunks_whatever_the_claims_clash(monkeypatch):
    """Keys that share a claim slot: a unit both or neither process analysed (the joining
    one then does it): the same answers."""
    from gpu_async_lsp import parallel
    from gpu_async_lsp.ide import sharing

    monkeypatch.setattr(parallel, "MIN_PARALLEL_CHARS", 100_000)
    text = _split_input_text(200)
    assert sharing.chunks_worth_sharing(text, split_chunks(text))

    class Clashing(parallel.KeyClaims):
        def __init__(self, slots):
            super().__init__(3)

    single = Analyzer()
    single.share_big_batches = False
    alone = _chunk_snapshot(single.analyze(text, 1))
    real = parallel.KeyClaims
    try:
        parallel.KeyClaims = Clashing
        assert _chunk_snapshot(Analyzer().analyze(text, 1)) == alone
    finally:
        parallel.KeyClaims = real


@pytest.mark.parametrize("fork", [_dies, _no_fork], ids=["process dies", "no process"])
def test_many_chunks_fall_back_when_the_process_fails(monkeypatch, fork):
    from gpu_async_lsp import parallel
    from gpu_async_lsp.ide import sharing

    monkeypatch.setattr(parallel, "in_forked_process", fork)
    monkeypatch.setattr(parallel, "MIN_PARALLEL_CHARS", 100_000)
    text = _split_input_text(200)
    assert sharing.chunks_worth_sharing(text, split_chunks(text))
    single = Analyzer()
    single.share_big_batches = False
    a = Analyzer().analyze(text, 1)
    assert _chunk_snapshot(a) == _chunk_snapshot(single.analyze(text, 1))
    assert not any(u.result._rebuild for u in a.units)


def test_key_claims_give_each_key_to_the_first_claimer():
    from gpu_async_lsp import parallel

    claims = parallel.KeyClaims(1 << 12)
    try:
        assert claims.claim(("a", None), 1) and claims.claim(("a", None), 1)
        assert not claims.claim(("a", None), 2)
        assert claims.claim(("b", None), 2) and not claims.claim(("b", None), 1)
    finally:
        claims.close()


def test_many_chunks_of_every_shape_shared_as_by_one(monkeypatch):
    """Chunks of no leaf unit (an empty module, a bare `}`), modules whose header has an
    error, device code: the chunk-shared analysis equals the one-process one."""
    from gpu_async_lsp import parallel
    from gpu_async_lsp.ide import sharing

    monkeypatch.setattr(parallel, "MIN_PARALLEL_CHARS", 100_000)
    text = _chunked_text()
    assert sharing.chunks_worth_sharing(text, split_chunks(text))
    shared = Analyzer().analyze(text, 1, encoding="utf-8")
    assert any(u.result._rebuild is not None for u in shared.units)
    single = Analyzer()
    single.share_big_batches = False
    assert _chunk_snapshot(shared, "utf-8") == _chunk_snapshot(single.analyze(text, 1), "utf-8")


@pytest.mark.parametrize("seed", range(4))
def test_many_chunks_with_random_damage_shared_as_by_one(monkeypatch, seed):
    """Chunks of every shape, each damaged at random (a brace, a quote, a slash, a marker,
    metadata that does not close, non-ASCII, CRLF): split and analysed chunk by chunk in two
    processes, every answer is the one process's."""
    from gpu_async_lsp import parallel
    from gpu_async_lsp.ide import sharing

    monkeypatch.setattr(parallel, "MIN_PARALLEL_CHARS", 50_000)
    rng = random.Random(seed)
    chunks = _split_input_text(120).split("// -----\n")
    for k in range(len(chunks)):
        if rng.random() < 0.3:
            c = chunks[k]
            pos = rng.randrange(len(c))
            chunks[k] = c[:pos] + rng.choice(
                ["{", "}", '"', "/", "\n", "é𝄞", "\r\n", "{-# x", "// -----\n", "%"]) + c[pos:]
    text = "// -----\n".join(chunks)
    assert sharing.chunks_worth_sharing(text, split_chunks(text))
    single = Analyzer()
    single.share_big_batches = False
    for encoding in ("utf-16", "utf-8"):
        shared = Analyzer().analyze(text, 1, encoding=encoding)
        alone = single.analyze(text, 1, encoding=encoding)
        assert _chunk_snapshot(shared, encoding) == _chunk_snapshot(alone, encoding), seed
