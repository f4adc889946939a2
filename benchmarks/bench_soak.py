"""Soak benchmark: memory and behaviour of a language server over a long editing session.

    python benchmarks/bench_soak.py [--servers ours,mlir] [--lines 10000] [--edits 3000]
                                    [--documents 300] [--rounds 3] [--sample-every 100]
                                    [--max-rss-mb 4000] [--no-session] [--quick]

bench_server.py times single requests on a fresh server. A user's server lives for hours: it
sees thousands of versions of the same document and hundreds of documents come and go. What
it keeps of each (analyses, caches, frozen objects, line indexes) must not pile up, and it
must stay responsive and stop promptly when the editor quits. This script measures that, per
server, with the same client and the same edits for both (`ours` and `mlir-lsp-server-22`;
they run one after the other, each alone on the machine, since what is read here is memory):

1. Edit soak. One big document: gen_host.py makes many small functions (15-25 lines each)
   and no big one, so the document is built here from gen_host's pieces: gen_host functions
   before and after, and in the middle one function `@big` of `--function-lines` lines
   (default 80% of `--lines`) made of numbered alloc/copy/launch/copy/dealloc blocks. Then
   `--edits` keystrokes inside `@big`, each one `didChange`: at the end of a line, Enter
   (with the indent an editor adds), then `%tJ = arith.addi %n, %c1 : index` typed one
   character at a time, now and then a wrong character removed again by the next keystroke
   (a backspace); then the cursor moves on to a line further down the function (wrapping
   around: the lines typed are spread over the whole function). Most versions therefore
   have a half-typed op, i.e. a syntax error, as while typing. The change is incremental
   (range + text) for a server that asks for incremental sync, the whole text for one that
   asks for full sync (mlir-lsp-server-22), as an editor sends them. Every `--wait-every`
   keystrokes (and after the last) the client waits for the publishDiagnostics of the
   version just sent, so the server really analyses while being typed at. Every
   `--sample-every` keystrokes: VmRSS and VmHWM of the server (and its child processes, if
   any) from /proc, and the median wait of the interval. The phase stops early when VmRSS
   passes `--max-rss-mb` (reported as stopped) or after `--phase-seconds`.
2. Open/close soak, on a server process of its own (so that what the edit soak left, or the
   memory limit it may have reached, is not mixed into these figures): `--documents`
   distinct documents (gen_host texts of `--document-lines` lines, each with its own seed
   and name) are opened one by one, each waited for until its diagnostics come, all kept
   open, then all closed; `--rounds` times, the same documents. RSS right after
   `initialize`, then per round with all of them open and after closing them. The round
   stops early when VmRSS passes `--max-rss-mb`.
3. Final state against a fresh server. RSS of the edit soak's server with the big document
   open in its final text (where the soak ended), then a fresh server process of the same
   command opening that same text: both and the ratio soaked/fresh. Then the big document
   is closed too: RSS of the soaked server with nothing open against its own reading right
   after `initialize`; the same for the open/close soak's server after its last round.
4. Session (`--session`, on by default), each on a fresh server:
   a. exit latency: a `--exit-lines` document (default 200000) is opened and, without
      waiting for its diagnostics (the analysis is running), (1) `shutdown`, its response,
      then `exit`; (2) `exit` alone; (3) the client closes the server's stdin, as an editor
      that dies does. The time from that last message (or the close) until the process has
      terminated, and its exit status (LSP: 0 after shutdown, 1 without; after a closed
      stdin nothing is specified, a prompt end is what matters). A process alive after
      `--exit-wait` seconds is reported so and killed.
   b. event-loop responsiveness: with a `--action-lines` document (default 100000) open and
      analysed and a small second document open, `textDocument/codeAction` over the whole
      big document and, 50 ms later, `textDocument/hover` on the small one: the latency of
      each, and the size of the codeAction response in bytes (its Content-Length). The
      hover's latency on the idle server is printed beside it.
   c. cancellation: after a one-character edit (so the version is new, its diagnostics
      read), the same whole-document codeAction, and 50 ms later `$/cancelRequest` for it:
      did it come back as error -32800 (RequestCancelled) or as the full result, and when.

The client is bench_server.py's `LspClient` (standard library only, one reader thread per
server; this one also records the byte size of each response). Every wait has a timeout
(`--timeout`); a server that fails or times out in a phase is reported, and the run goes on
with what can still be measured. Every server started is shut down or killed at the end. The
script exits 0 whatever the figures.
"""

from __future__ import annotations

import argparse
import os
import queue
import random
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_server import (  # noqa: E402
    CLIENT_CAPABILITIES,
    LABELS,
    MLIR_CMD,
    OURS_CMD,
    BenchError,
    LspClient,
    ours_available,
)
from gen_host import KERNELS, function, generate  # noqa: E402

REQUEST_CANCELLED = -32800


# -- the documents ------------------------------------------------------------------------------

def big_block(k: int) -> list[str]:
    """One numbered block of the big function: its own buffer, copied in, used, copied out."""
    lines = [f"    %dev{k} = gpu.alloc (%n) : memref<?xf32>",
             f"    gpu.memcpy %dev{k}, %host : memref<?xf32>, memref<?xf32>",
             "    gpu.launch_func @kernels::@scale",
             "        blocks in (%blocks, %c1, %c1) threads in (%c256, %c1, %c1)",
             f"        args(%dev{k} : memref<?xf32>, %f : f32)",
             f"    %i{k} = arith.addi %n, %c1 : index"]
    if k % 4 == 3:
        lines += [f"    scf.for %j{k} = %c0 to %n step %c256 {{",
                  f"      gpu.memset %dev{k}, %f : memref<?xf32>, f32",
                  "    }"]
    lines += [f"    gpu.memcpy %host, %dev{k} : memref<?xf32>, memref<?xf32>",
              f"    gpu.dealloc %dev{k} : memref<?xf32>"]
    return lines


def big_document(n_lines: int, function_lines: int, seed: int = 0) -> tuple[str, int, int]:
    """A host-code file of about `n_lines` lines whose middle function `@big` has about
    `function_lines` lines; returns the text and the 0-based first and last line of `@big`."""
    rng = random.Random(seed)
    out = ["module attributes {gpu.container_module} {"] + KERNELS.splitlines()
    before = max(len(out), (n_lines - function_lines) // 2)
    i = 0
    while len(out) < before:
        out += function(i, rng)
        i += 1
    first = len(out)
    out += ["  // Host step big: thousands of GPU ops in one function.",
            "  func.func @big(%host: memref<?xf32>, %n: index, %f: f32) {",
            "    %c0 = arith.constant 0 : index",
            "    %c1 = arith.constant 1 : index",
            "    %c256 = arith.constant 256 : index",
            "    %blocks = arith.ceildivui %n, %c256 : index"]
    k = 0
    while len(out) - first < function_lines - 3:
        out += big_block(k)
        k += 1
    out += ["    return", "  }", ""]
    last = len(out) - 2
    while len(out) < n_lines - 1:
        out += function(i, rng)
        i += 1
    out.append("}")
    return "\n".join(out) + "\n", first, last


def small_document(i: int, n_lines: int) -> str:
    """The i-th document of the open/close soak: a gen_host text of its own seed and name."""
    return f"// Document {i} of the open/close soak.\n" + generate(n_lines, seed=1000 + i)


class Typist:
    """Keystrokes inside the big function, applied to the client's own copy of the text.

    Each keystroke is (start line, start column, end line, end column, new text), positions
    0-based in UTF-16 units (the text is ASCII). Sites are the `%iK = arith.addi` lines; after
    one line has been typed below a site, the cursor goes `stride` sites further down.
    """

    def __init__(self, text: str, first: int, last: int, seed: int = 0):
        self.lines = text.split("\n")
        self.sites = [n for n in range(first, last + 1)
                      if self.lines[n].lstrip().startswith("%i")
                      and "= arith.addi %n, %c1" in self.lines[n]]
        if not self.sites:
            raise SystemExit("the big function has no typing site")
        self.site = 0
        self.stride = max(1, len(self.sites) // 37)   # visits most of the function
        self.rng = random.Random(seed)
        self.typed = 0
        self.plan: list[tuple[str, Any]] = []
        self.pending_backspace = False
        self.line = self.col = 0

    def _next_line(self) -> None:
        site_line = self.sites[self.site]
        j = self.typed
        self.typed += 1
        # Enter indents the new line as the editor would; the op is typed.
        self.plan = [("enter", site_line)] + [("char", c) for c in
                                              f"%t{j} = arith.addi %n, %c1 : index"]
        self.site = (self.site + self.stride) % len(self.sites)
        if self.site < self.stride:
            self.site = (self.site + 1) % len(self.sites)   # the next pass takes other sites

    def keystroke(self) -> tuple[int, int, int, int, str]:
        if self.pending_backspace:
            self.pending_backspace = False
            self.col -= 1
            edit = (self.line, self.col, self.line, self.col + 1, "")
        else:
            if not self.plan:
                self._next_line()
            kind, arg = self.plan[0]
            if kind == "char" and arg != " " and self.rng.random() < 0.06:
                # A typo: a wrong character now, a backspace with the next keystroke.
                edit = (self.line, self.col, self.line, self.col, "q")
                self.col += 1
                self.pending_backspace = True
            elif kind == "enter":
                self.plan.pop(0)
                end = len(self.lines[arg])
                edit = (arg, end, arg, end, "\n    ")
                self.line, self.col = arg + 1, 4
                # Lines below move down by one, so do the sites.
                self.sites = [s + 1 if s > arg else s for s in self.sites]
            else:
                self.plan.pop(0)
                edit = (self.line, self.col, self.line, self.col, arg)
                self.col += 1
        self.apply(edit)
        return edit

    def apply(self, edit: tuple[int, int, int, int, str]) -> None:
        l0, c0, l1, c1, new = edit
        assert l0 == l1
        ln = self.lines[l0]
        joined = ln[:c0] + new + ln[c1:]
        self.lines[l0:l0 + 1] = joined.split("\n")

    def text(self) -> str:
        return "\n".join(self.lines)


# -- the client ---------------------------------------------------------------------------------

class _CountingReader:
    """The server's stdout as the reader thread sees it; remembers the size of each body."""

    def __init__(self, raw):
        self._raw = raw
        self.last = 0

    def readline(self, *a):
        return self._raw.readline(*a)

    def read(self, n=-1):
        data = self._raw.read(n)
        self.last = len(data)
        return data

    def __getattr__(self, name):
        return getattr(self._raw, name)


class SoakClient(LspClient):
    """bench_server's client, plus requests sent without waiting and response sizes."""

    def __init__(self, name: str, cmd: list[str], timeout: float, log_dir: str):
        self.sizes: dict[int, int] = {}
        self.sync = 0
        self.baseline: tuple[float, float, int] | None = None
        super().__init__(name, cmd, timeout, log_dir)

    def _read_loop(self) -> None:
        self._counting = _CountingReader(self.proc.stdout)
        self.proc.stdout = self._counting
        super()._read_loop()

    def _route(self, msg: dict, t: float) -> None:
        if "method" not in msg and isinstance(msg.get("id"), int):
            self.sizes[msg["id"]] = self._counting.last
        super()._route(msg, t)

    def send(self, method: str, params: Any) -> tuple[int, queue.Queue, float]:
        """Send a request; (its id, where its response will arrive, the time of the write)."""
        with self._pending_lock:
            self._next_id += 1
            rid = self._next_id
            box: queue.Queue = queue.Queue(1)
            self._pending[rid] = box
        t0 = self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid, box, t0

    def receive(self, rid: int, box: queue.Queue, what: str,
                timeout: float | None = None) -> tuple[dict, float]:
        """The whole response message to a request sent with send(), and its arrival time."""
        msg, t = self._get(box, what, timeout)
        with self._pending_lock:
            self._pending.pop(rid, None)
        return msg, t

    def initialize(self, root: Path) -> None:
        result, _ = self.request("initialize", {
            "processId": os.getpid(),
            "clientInfo": {"name": "bench_soak.py", "version": "1"},
            "locale": "en",
            "rootPath": str(root),
            "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "capabilities": CLIENT_CAPABILITIES,
            "trace": "off",
        })
        caps = (result or {}).get("capabilities", {})
        sync = caps.get("textDocumentSync")
        self.sync = sync.get("change", 0) if isinstance(sync, dict) else (sync or 0)
        self.notify("initialized", {})
        if self.sync not in (1, 2):
            raise BenchError(f"{self.name}: textDocumentSync.change is {self.sync}: cannot edit")
        # A request answered means the server has handled `initialized` too.
        self.barrier()
        self.baseline = memory(self.proc.pid)

    def barrier(self) -> None:
        """A round trip: every message sent before it has been read by the server. A request
        of an unknown method: any server must answer it (with an error)."""
        rid, box, _ = self.send("$/benchSoak/barrier", None)
        self.receive(rid, box, "response to the barrier request")

    def open(self, uri: str, text: str, version: int) -> float:
        t0 = self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "mlir", "version": version, "text": text}})
        _, dt = self.wait_diagnostics(uri, version, t0)
        return dt

    def close_document(self, uri: str) -> None:
        self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})

    def finish(self) -> None:
        """shutdown + exit (bench_server's close), killing the process if that fails."""
        try:
            self.close()
        except Exception:   # noqa: BLE001 - the process must go whatever happened
            self.kill()


def memory(pid: int) -> tuple[float, float, int]:
    """VmRSS and VmHWM in MB of a process and its descendants, and how many processes."""
    rss = hwm = 0
    count = 0
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            status = Path(f"/proc/{p}/status").read_text()
        except OSError:
            continue
        count += 1
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                rss += int(line.split()[1])
            elif line.startswith("VmHWM:"):
                hwm += int(line.split()[1])
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                stack.extend(int(c) for c in
                             Path(f"/proc/{p}/task/{task}/children").read_text().split())
        except OSError:
            pass
    return rss / 1024, hwm / 1024, count


def mb(m: tuple[float, float, int] | None, which: int = 0) -> str:
    return "-" if m is None else f"{m[which]:.0f}"


# -- the phases ---------------------------------------------------------------------------------

class Soak:
    """One server through phases 1-3; what was measured, for the report."""

    def __init__(self, key: str, cmd: list[str], args, tmp: str):
        self.key, self.cmd, self.args, self.tmp = key, cmd, args, tmp
        self.label = LABELS[key]
        self.client: SoakClient | None = None      # the edit soak's server
        self.oc_client: SoakClient | None = None   # the open/close soak's server
        self.rows: list[tuple[int, float, float, float, float | None, int]] = []
        self.edit_stop: str | None = None
        self.edits_done = 0
        self.waits: list[float] = []
        self.final_text: str | None = None
        self.rounds: list[dict] = []
        self.round_stop: str | None = None
        self.final: dict[str, Any] = {}
        self.failed: str | None = None
        self.seconds: dict[str, float] = {}

    def fail(self, phase: str, e: Exception) -> None:
        self.failed = f"{phase}: {e}"
        print(f"  {self.label} failed in {phase}: {e}", file=sys.stderr, flush=True)

    def over_limit(self, c: SoakClient) -> tuple[float, float, int] | None:
        m = memory(c.proc.pid)
        return m if m[0] > self.args.max_rss_mb else None

    def edit_soak(self, uri: str, text: str, first: int, last: int) -> None:
        args = self.args
        c = self.client = SoakClient(self.key, self.cmd, args.timeout, self.tmp)
        c.initialize(Path(self.tmp))
        typist = Typist(text, first, last)
        t_start = time.perf_counter()
        c.open(uri, text, 1)
        m = memory(c.proc.pid)
        self.rows.append((0, time.perf_counter() - t_start, m[0], m[1], None, m[2]))
        interval: list[float] = []
        version = 1
        for n in range(1, args.edits + 1):
            l0, c0, l1, c1, new = typist.keystroke()
            version += 1
            if c.sync == 2:
                change = {"range": {"start": {"line": l0, "character": c0},
                                    "end": {"line": l1, "character": c1}}, "text": new}
            else:
                change = {"text": typist.text()}
            t0 = c.notify("textDocument/didChange", {
                "textDocument": {"uri": uri, "version": version}, "contentChanges": [change]})
            self.edits_done = n
            if n % args.wait_every == 0 or n == args.edits:
                _, dt = c.wait_diagnostics(uri, version, t0)
                interval.append(dt)
                self.waits.append(dt)
                over = self.over_limit(c)
                if over is not None:
                    self.edit_stop = (f"stopped after {n} edits: VmRSS {over[0]:.0f} MB passed "
                                      f"--max-rss-mb {args.max_rss_mb}")
                elif time.perf_counter() - t_start > args.phase_seconds:
                    self.edit_stop = (f"stopped after {n} edits: --phase-seconds "
                                      f"{args.phase_seconds:.0f} s used up")
            if n % args.sample_every == 0 or n == args.edits or self.edit_stop:
                if n % args.wait_every and n != args.edits:
                    # A sample between waits: read the diagnostics of this version first.
                    _, dt = c.wait_diagnostics(uri, version, t0)
                    interval.append(dt)
                    self.waits.append(dt)
                m = memory(c.proc.pid)
                self.rows.append((n, time.perf_counter() - t_start, m[0], m[1],
                                  statistics.median(interval) if interval else None, m[2]))
                interval = []
                print(f"   {self.label}: {n} edits, VmRSS {m[0]:.0f} MB", flush=True)
            if self.edit_stop:
                break
        self.final_text = typist.text()
        self.seconds["edit"] = time.perf_counter() - t_start

    def open_close_soak(self, docs: list[tuple[str, str]]) -> None:
        """On a server of its own: what the edit soak left (or the limit it reached) is not
        mixed into these figures."""
        c = self.oc_client = SoakClient(self.key + "-docs", self.cmd, self.args.timeout,
                                        self.tmp)
        c.initialize(Path(self.tmp))
        t_start = time.perf_counter()
        for r in range(1, self.args.rounds + 1):
            t_round = time.perf_counter()
            opened = 0
            for uri, text in docs:
                c.open(uri, text, r)
                opened += 1
                if opened % 50 == 0 and self.over_limit(c) is not None:
                    break
            m_open = memory(c.proc.pid)
            for uri, _ in docs[:opened]:
                c.close_document(uri)
            c.barrier()
            time.sleep(1.5)   # let the server drop what it drops once closing is over
            m_closed = memory(c.proc.pid)
            self.rounds.append({"round": r, "opened": opened, "open": m_open,
                                "closed": m_closed, "seconds": time.perf_counter() - t_round})
            print(f"   {self.label}: round {r}, {opened} documents, VmRSS open "
                  f"{m_open[0]:.0f} MB, closed {m_closed[0]:.0f} MB", flush=True)
            if m_open[0] > self.args.max_rss_mb or m_closed[0] > self.args.max_rss_mb:
                self.round_stop = (f"stopped after round {r}: VmRSS passed --max-rss-mb "
                                   f"{self.args.max_rss_mb}")
                break
        self.seconds["open/close"] = time.perf_counter() - t_start

    def final_state(self, uri: str) -> None:
        """The soaked server with the big document open, a fresh one with the same text, and
        the soaked server with nothing open."""
        c = self.client
        c.barrier()
        self.final["soaked_open"] = memory(c.proc.pid)
        fresh = SoakClient(self.key + "-fresh", self.cmd, self.args.timeout, self.tmp)
        try:
            fresh.initialize(Path(self.tmp))
            self.final["fresh_baseline"] = fresh.baseline
            self.final["fresh_open_ms"] = fresh.open(uri, self.final_text, 1) * 1000
            self.final["fresh_open"] = memory(fresh.proc.pid)
        except BenchError as e:
            self.final["fresh_failed"] = str(e)
        finally:
            fresh.finish()
        c.close_document(uri)
        c.barrier()
        time.sleep(1.5)   # let the server drop what it drops once closing is over
        self.final["soaked_closed"] = memory(c.proc.pid)
        self.final["soaked_baseline"] = c.baseline

    def run(self, uri: str, text: str, first: int, last: int,
            docs: list[tuple[str, str]]) -> None:
        print(f"-- {self.label}: edit soak ...", flush=True)
        try:
            self.edit_soak(uri, text, first, last)
        except BenchError as e:
            self.fail(f"edit soak (after {self.edits_done} edits)", e)
        if self.final_text is not None:
            print(f"-- {self.label}: final state against a fresh server ...", flush=True)
            try:
                self.final_state(uri)
            except BenchError as e:
                self.fail("final state", e)
        if self.client is not None:
            self.client.finish()
        print(f"-- {self.label}: open/close soak ...", flush=True)
        try:
            self.open_close_soak(docs)
            c = self.oc_client
            c.barrier()
            self.final["docs_closed"] = memory(c.proc.pid)
            self.final["docs_baseline"] = c.baseline
        except BenchError as e:
            self.fail("open/close soak", e)

    def finish(self) -> None:
        for c in (self.client, self.oc_client):
            if c is not None:
                c.finish()


# -- the session measurements -------------------------------------------------------------------

def exit_latency(key: str, cmd: list[str], args, tmp: str, uri: str, text: str,
                 how: str) -> dict[str, Any]:
    """Open `text`, then end the server `how` (shutdown+exit, exit, stdin closed) at once."""
    out: dict[str, Any] = {"how": how}
    c = SoakClient(f"{key}-exit-{how.split()[0]}", cmd, args.timeout, tmp)
    try:
        c.initialize(Path(tmp))
        t_open = c.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "mlir", "version": 1, "text": text}})
        if how == "shutdown+exit":
            rid, box, t0 = c.send("shutdown", None)
            msg, t1 = c.receive(rid, box, "response to shutdown")
            out["shutdown_ms"] = (t1 - t0) * 1000
            if "error" in msg:
                out["shutdown_error"] = msg["error"]
            t_end = c.notify("exit", None)
        elif how == "exit":
            t_end = c.notify("exit", None)
        else:
            t_end = time.perf_counter()
            c.proc.stdin.close()
        try:
            status = c.proc.wait(timeout=args.exit_wait)
            out["exit_ms"] = (time.perf_counter() - t_end) * 1000
            out["status"] = status
        except subprocess.TimeoutExpired:
            out["status"] = f"still running after {args.exit_wait:.0f} s (killed)"
        # Did the analysis finish before the end? (diagnostics published, their time)
        c.eof.wait(2)
        published = None
        while True:
            try:
                params, t = c.diagnostics.get_nowait()
            except queue.Empty:
                break
            if params.get("uri") == uri and published is None:
                published = t
        out["diagnostics"] = ("none published" if published is None else
                              f"published {(published - t_open):.1f} s after didOpen")
    except BenchError as e:
        out["failed"] = str(e)
    finally:
        c.kill()
    return out


def whole_range(text: str) -> dict:
    lines = text.split("\n")
    return {"start": {"line": 0, "character": 0},
            "end": {"line": len(lines) - 1, "character": len(lines[-1])}}


def hover_site(text: str) -> dict:
    """The position of the name of the first `gpu.memcpy` in a document."""
    for n, ln in enumerate(text.split("\n")):
        if ln.lstrip().startswith("gpu.memcpy"):
            return {"line": n, "character": ln.index("gpu.memcpy") + 4}
    raise SystemExit("gen_host.generate produced no gpu.memcpy")


def describe(msg: dict, size: int) -> str:
    if "error" in msg:
        e = msg["error"] if isinstance(msg["error"], dict) else {}
        return f"error {e.get('code')} ({str(e.get('message', ''))[:60]})"
    result = msg.get("result")
    what = (f"{len(result)} actions" if isinstance(result, list)
            else "null" if result is None else type(result).__name__)
    return f"result: {what}, {size} bytes"


def responsiveness(key: str, cmd: list[str], args, tmp: str) -> dict[str, Any]:
    """Measurements 4b and 4c on one fresh server."""
    out: dict[str, Any] = {}
    root = Path(tmp)
    big = generate(args.action_lines)
    small = generate(200, seed=7)
    big_uri = (root / f"action{args.action_lines}.mlir").as_uri()
    small_uri = (root / "small.mlir").as_uri()
    action_params = {"textDocument": {"uri": big_uri}, "range": whole_range(big),
                     "context": {"diagnostics": [], "triggerKind": 1}}
    hover_params = {"textDocument": {"uri": small_uri}, "position": hover_site(small)}
    c = SoakClient(f"{key}-session", cmd, args.timeout, tmp)
    try:
        c.initialize(root)
        out["open_ms"] = c.open(big_uri, big, 1) * 1000
        c.open(small_uri, small, 1)
        hovers = []
        for _ in range(3):
            _, dt = c.request("textDocument/hover", hover_params)
            hovers.append(dt)
        out["hover_idle_ms"] = statistics.median(hovers) * 1000

        # b. codeAction over the whole document, hover 50 ms later.
        rid_a, box_a, t_a = c.send("textDocument/codeAction", action_params)
        time.sleep(0.05)
        rid_h, box_h, t_h = c.send("textDocument/hover", hover_params)
        msg_h, t_h1 = c.receive(rid_h, box_h, "response to hover")
        msg_a, t_a1 = c.receive(rid_a, box_a, "response to the whole-document codeAction")
        out["action_ms"] = (t_a1 - t_a) * 1000
        out["hover_ms"] = (t_h1 - t_h) * 1000
        out["hover_first"] = t_h1 < t_a1
        out["action_pending"] = t_a1 > t_h     # was the codeAction still unanswered then?
        out["action_bytes"] = c.sizes.get(rid_a)
        out["action_answer"] = describe(msg_a, c.sizes.get(rid_a, 0))
        out["hover_answer"] = "error" if "error" in msg_h else (
            "null" if msg_h.get("result") is None else "hover")

        # c. the same on a new version, cancelled 50 ms after it was sent.
        lines = big.split("\n")
        n = next(i for i in range(len(lines) // 2, len(lines))
                 if "arith.ceildivui %n," in lines[i])
        col = lines[n].index("%n,") + 3
        lines[n] = lines[n][:col] + " " + lines[n][col:]
        if c.sync == 2:
            change = {"range": {"start": {"line": n, "character": col},
                                "end": {"line": n, "character": col}}, "text": " "}
        else:
            change = {"text": "\n".join(lines)}
        t0 = c.notify("textDocument/didChange", {
            "textDocument": {"uri": big_uri, "version": 2}, "contentChanges": [change]})
        c.wait_diagnostics(big_uri, 2, t0)
        rid_c, box_c, t_c = c.send("textDocument/codeAction", action_params)
        time.sleep(0.05)
        t_cancel = c.notify("$/cancelRequest", {"id": rid_c})
        msg_c, t_c1 = c.receive(rid_c, box_c, "response to the cancelled codeAction")
        out["cancel_sent_ms"] = (t_cancel - t_c) * 1000
        out["cancel_ms"] = (t_c1 - t_c) * 1000
        err = msg_c.get("error")
        out["cancelled"] = isinstance(err, dict) and err.get("code") == REQUEST_CANCELLED
        out["cancel_answer"] = describe(msg_c, c.sizes.get(rid_c, 0))
    except BenchError as e:
        out["failed"] = str(e)
    finally:
        c.finish()
    return out


# -- the report ---------------------------------------------------------------------------------

def print_edit_table(s: Soak, wait_every: int) -> None:
    print(f"\n{s.label}")
    if not s.rows:
        print(f"   not measured: {s.failed}")
        return
    print(f"{'edits':>7} {'VmRSS MB':>9} {'VmHWM MB':>9} {'time s':>8} "
          f"{'median wait ms':>15}")
    for n, t, rss, hwm, wait, procs in s.rows:
        print(f"{n:>7} {rss:>9.0f} {hwm:>9.0f} {t:>8.1f} "
              f"{'-' if wait is None else format(wait * 1000, '.0f'):>15}"
              + (f"   ({procs} processes)" if procs > 1 else ""))
    first, last = s.rows[0], s.rows[-1]
    if last[0] > 0:
        per = (last[2] - first[2]) / last[0]
        print(f"   VmRSS grew {last[2] - first[2]:.0f} MB over {last[0]} edits "
              f"({per * 1024:.0f} KB per edit, {per * wait_every * 1024:.0f} KB per analysed "
              f"version); waits: median {statistics.median(s.waits) * 1000:.0f} ms, "
              f"max {max(s.waits) * 1000:.0f} ms")
    print("   " + (s.edit_stop or f"completed: {last[0]} edits")
          + (f"; FAILED: {s.failed}" if s.failed and "edit soak" in s.failed else ""))


def print_rounds(s: Soak) -> None:
    print(f"\n{s.label}")
    if not s.rounds:
        print(f"   not measured: {s.failed}")
        return
    print(f"{'round':>7} {'opened':>7} {'VmRSS open MB':>14} {'VmRSS closed MB':>16} "
          f"{'VmHWM MB':>9} {'time s':>8}")
    base = s.final.get("docs_baseline") or (s.oc_client.baseline if s.oc_client else None)
    if base is not None:
        print(f"{'init':>7} {0:>7} {'-':>14} {base[0]:>16.0f} {base[1]:>9.0f} {'-':>8}"
              "   (right after initialize)")
    for r in s.rounds:
        print(f"{r['round']:>7} {r['opened']:>7} {r['open'][0]:>14.0f} {r['closed'][0]:>16.0f} "
              f"{r['closed'][1]:>9.0f} {r['seconds']:>8.1f}")
    if s.round_stop:
        print("   " + s.round_stop)
    if s.failed and "open/close" in s.failed:
        print(f"   FAILED: {s.failed}")


def print_final(s: Soak) -> None:
    f = s.final
    print(f"\n{s.label}")
    if "soaked_open" not in f:
        print(f"   edit soak: not measured: {s.failed}")
    else:
        print_final_edit(f)
    if "docs_closed" in f:
        dc, db = f["docs_closed"], f["docs_baseline"]
        print(f"   open/close soak's server, everything closed: VmRSS {dc[0]:.0f} MB, right "
              f"after initialize {db[0]:.0f} MB; closed/initialize {dc[0] / db[0]:.2f} "
              f"({dc[0] - db[0]:+.0f} MB)")


def print_final_edit(f: dict) -> None:
    so, fo = f["soaked_open"], f.get("fresh_open")
    ratio = f"{so[0] / fo[0]:.2f}" if fo else "-"
    print(f"   edit soak's server, big document open in its final text: soaked VmRSS "
          f"{so[0]:.0f} MB (VmHWM {so[1]:.0f}), fresh server {mb(fo)} MB (VmHWM {mb(fo, 1)}, "
          f"after initialize {mb(f.get('fresh_baseline'))}); soaked/fresh {ratio}")
    if "fresh_failed" in f:
        print(f"   fresh server FAILED: {f['fresh_failed']}")
    sc, sb = f["soaked_closed"], f["soaked_baseline"]
    print(f"   edit soak's server, then everything closed: VmRSS {sc[0]:.0f} MB, right after "
          f"initialize {sb[0]:.0f} MB; closed/initialize {sc[0] / sb[0]:.2f} "
          f"({sc[0] - sb[0]:+.0f} MB)")


def print_session(key: str, exits: list[dict], resp: dict) -> None:
    print(f"\n{LABELS[key]}")
    print("   a. exit latency, a document being analysed (LSP: exit status 0 after shutdown, "
          "1 without)")
    for e in exits:
        if "failed" in e:
            print(f"      {e['how']:<16} FAILED: {e['failed']}")
            continue
        extra = ""
        if "shutdown_ms" in e:
            extra = f"; shutdown answered in {e['shutdown_ms']:.0f} ms" + (
                f" with error {e['shutdown_error']}" if "shutdown_error" in e else "")
        took = f"{e['exit_ms']:.0f} ms" if "exit_ms" in e else "-"
        print(f"      {e['how']:<14} terminated {took:>9} after it, exit status "
              f"{e.get('status')}{extra}; diagnostics: {e['diagnostics']}")
    if "failed" in resp and "action_ms" not in resp:
        print(f"   b/c. FAILED: {resp['failed']}")
        return
    print(f"   (document opened and analysed in {resp['open_ms']:.0f} ms; hover on the idle "
          f"server {resp['hover_idle_ms']:.1f} ms)")
    print(f"   b. whole-document codeAction {resp['action_ms']:.1f} ms ({resp['action_answer']}); "
          f"hover sent 50 ms after it: {resp['hover_ms']:.1f} ms "
          f"({resp['hover_answer']}, "
          + ((f"answered {'before' if resp['hover_first'] else 'after'} the codeAction)")
             if resp["action_pending"] else "the codeAction was answered before it was sent)"))
    if "cancel_ms" in resp:
        verdict = "cancelled (-32800)" if resp["cancelled"] else "NOT cancelled"
        print(f"   c. codeAction, $/cancelRequest {resp['cancel_sent_ms']:.0f} ms after it: "
              f"{verdict}, answer after {resp['cancel_ms']:.1f} ms: {resp['cancel_answer']}"
              + (" (answered before the cancel was sent)"
                 if resp["cancel_ms"] < resp["cancel_sent_ms"] else ""))
    if "failed" in resp:
        print(f"   FAILED: {resp['failed']}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--servers", default="ours,mlir", help="which of ours,mlir to run")
    ap.add_argument("--ours-cmd", default=shlex.join(OURS_CMD),
                    help="command line of our server (default: %(default)s)")
    ap.add_argument("--mlir-cmd", default=shlex.join(MLIR_CMD),
                    help="command line of the reference server (default: %(default)s)")
    ap.add_argument("--lines", type=int, default=10000, help="lines of the big document")
    ap.add_argument("--function-lines", type=int, default=0,
                    help="lines of its middle function @big (default: 80%% of --lines)")
    ap.add_argument("--edits", type=int, default=3000, help="keystrokes of the edit soak")
    ap.add_argument("--wait-every", type=int, default=1,
                    help="wait for the diagnostics of every K-th version (default: %(default)s)")
    ap.add_argument("--sample-every", type=int, default=100,
                    help="read the memory every N keystrokes (default: %(default)s)")
    ap.add_argument("--documents", type=int, default=300,
                    help="documents of the open/close soak (default: %(default)s)")
    ap.add_argument("--document-lines", type=int, default=300,
                    help="lines of each of them (default: %(default)s)")
    ap.add_argument("--rounds", type=int, default=3, help="open/close rounds (default: 3)")
    ap.add_argument("--max-rss-mb", type=float, default=4000,
                    help="a phase stops when the server's VmRSS passes this (default: 4000)")
    ap.add_argument("--phase-seconds", type=float, default=360,
                    help="the edit soak stops after this long (default: %(default)s)")
    ap.add_argument("--session", action=argparse.BooleanOptionalAction, default=True,
                    help="measure exit latency, responsiveness and cancellation (default: on)")
    ap.add_argument("--exit-lines", type=int, default=200000,
                    help="document being analysed while the server is told to exit")
    ap.add_argument("--exit-wait", type=float, default=60,
                    help="seconds to wait for a server to terminate (default: %(default)s)")
    ap.add_argument("--action-lines", type=int, default=100000,
                    help="document of the whole-document codeAction (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds any single wait may take")
    ap.add_argument("--quick", action="store_true",
                    help="a small run (under a minute): 2000 lines, 300 edits, 40 documents, "
                         "2 rounds, exit at 20000 lines, codeAction at 10000")
    args = ap.parse_args()
    if args.quick:
        args.lines, args.edits, args.documents, args.rounds = 2000, 300, 40, 2
        args.sample_every, args.exit_lines, args.action_lines = 50, 20000, 10000
        args.function_lines = 0
    if not args.function_lines:
        args.function_lines = args.lines * 4 // 5
    wanted = [k.strip() for k in args.servers.split(",") if k.strip()]
    if not wanted or any(k not in LABELS for k in wanted):
        ap.error(f"--servers takes ours and/or mlir (got {args.servers!r})")
    if min(args.edits, args.wait_every, args.sample_every, args.rounds) < 1 \
            or args.documents < 0 or args.function_lines >= args.lines:
        ap.error("--edits, --wait-every, --sample-every, --rounds must be at least 1, "
                 "--function-lines less than --lines")

    servers: dict[str, list[str]] = {}
    if "ours" in wanted:
        cmd = shlex.split(args.ours_cmd)
        why = ours_available(cmd)
        if why:
            print(f"Our language server cannot be started: {why}.", file=sys.stderr)
        else:
            servers["ours"] = cmd
    if "mlir" in wanted:
        cmd = shlex.split(args.mlir_cmd)
        if shutil.which(cmd[0]) is None:
            print(f"{cmd[0]} not found (apt-get install mlir-22-tools).", file=sys.stderr)
        else:
            servers["mlir"] = cmd
    if not servers:
        print("No server to measure.", file=sys.stderr)
        return 0

    t_run = time.perf_counter()
    text, first, last = big_document(args.lines, args.function_lines)
    n_lines = text.count("\n")
    docs_text = [small_document(i, args.document_lines) for i in range(args.documents)]
    for k in servers:
        print(f"{LABELS[k]}: {shlex.join(servers[k])}")
    print(f"edit soak: a {n_lines}-line document built from gen_host.py's functions around one "
          f"function @big of {last - first + 1} lines (lines {first + 1}-{last + 1}; gen_host "
          f"makes no big function); {args.edits} keystrokes in @big, diagnostics awaited every "
          f"{args.wait_every}, memory every {args.sample_every}; limit VmRSS "
          f"{args.max_rss_mb:.0f} MB or {args.phase_seconds:.0f} s")
    print(f"open/close soak: {args.documents} documents of {args.document_lines} lines, "
          f"{args.rounds} rounds; timeout {args.timeout:.0f} s per wait"
          + (f"; session: exit at {args.exit_lines} lines, codeAction at {args.action_lines}"
             if args.session else ""), flush=True)

    soaks: dict[str, Soak] = {}
    exits: dict[str, list[dict]] = {}
    resp: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench_soak.") as tmp:
        root = Path(tmp)
        uri = (root / f"soak{args.lines}.mlir").as_uri()
        docs = [((root / f"doc{i:03d}.mlir").as_uri(), t) for i, t in enumerate(docs_text)]
        for key, cmd in servers.items():
            s = soaks[key] = Soak(key, cmd, args, tmp)
            try:
                s.run(uri, text, first, last, docs)
            finally:
                s.finish()
        if args.session:
            exit_text = generate(args.exit_lines)
            exit_uri = (root / f"exit{args.exit_lines}.mlir").as_uri()
            for key, cmd in servers.items():
                print(f"-- {LABELS[key]}: session ...", flush=True)
                t = time.perf_counter()
                exits[key] = [exit_latency(key, cmd, args, tmp, exit_uri, exit_text, how)
                              for how in ("shutdown+exit", "exit", "stdin closed")]
                resp[key] = responsiveness(key, cmd, args, tmp)
                soaks[key].seconds["session"] = time.perf_counter() - t

    print(f"\n1. Edit soak: {args.edits} keystrokes in @big ({last - first + 1} lines) of a "
          f"{n_lines}-line document; memory every {args.sample_every} keystrokes; wait = "
          f"didChange -> its publishDiagnostics, every {args.wait_every}")
    for s in soaks.values():
        print_edit_table(s, args.wait_every)
    print(f"\n2. Open/close soak: {args.documents} documents of {args.document_lines} lines "
          "opened (each analysed), then all closed, per round, on a server of their own")
    for s in soaks.values():
        print_rounds(s)
    print("\n3. Final state: the soaked servers against a fresh one with the same text open, "
          "and against their own reading right after initialize")
    for s in soaks.values():
        print_final(s)
    if args.session:
        print(f"\n4. Session: exit with a {args.exit_lines}-line document being analysed; a "
              f"{args.action_lines}-line document for codeAction, hover and cancellation")
        for key in servers:
            print_session(key, exits.get(key, []), resp.get(key, {"failed": "not run"}))
    print("\nTime per phase (s): " + "; ".join(
        f"{s.label}: " + ", ".join(f"{p} {v:.0f}" for p, v in s.seconds.items())
        for s in soaks.values()))
    print(f"Whole run: {time.perf_counter() - t_run:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
