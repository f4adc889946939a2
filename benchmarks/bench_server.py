"""Benchmark: our language server against `mlir-lsp-server-22` over real stdio pipes, same run.

    python benchmarks/bench_server.py [--sizes 1000,10000,50000] [--repeat 5]
                                      [--servers ours,mlir] [--ours-cmd CMD] [--timeout 120]

What is measured, per server and per generated host-code file (benchmarks/gen_host.py, opened as
`file:///tmp/.../host<N>.mlir`, language id `mlir`):

1. open: `didOpen` -> the first `textDocument/publishDiagnostics` for that URI (of the opened
   version, when the server puts a version in the notification);
2. edit: a one-character `didChange` inside one function in the middle of the file (a blank
   inserted between two operands of an op, removed again by the next edit, so the document
   oscillates) -> the `publishDiagnostics` of that version. The change event is incremental
   (range + text) when the server asks for incremental sync and the whole text when it asks for
   full sync, as an editor does: sending and reading the whole text is part of what a user of a
   full-sync server waits for. Each repeat edits another function, so an insertion never
   produces a text the server has seen before; the deletion restores the opened text (a server
   caching parses by text may answer that one from its cache: medians of insertions and
   deletions are printed separately for that reason);
3. code action: `textDocument/codeAction` on the range of a GPU op in the middle of the file,
   `context.diagnostics` empty -> its response;
4. memory: the server's peak resident set (VmHWM in /proc, summed over its child processes if
   it has any), read just before `shutdown`, with the document of that size still open.

Why: issue 3's targets are ratios to `mlir-lsp-server-22`, the MLIR project's server that
users compare us with (an edit at 50k lines in at most 0.25x its time, at 10k lines in at most
0.5x; under 400 MB with a 50k-line document open). The machines are shared and noisy, so both
servers run in the same process tree at the same time, their samples alternate (ABBA order),
and what to read is the ratio ours/theirs; medians and minimums are in milliseconds. A time is
taken from just before the message is written to the server's stdin to the moment the
answering message has been read whole from its stdout (before the client decodes its JSON).

The client is the standard library only (subprocess pipes, `Content-Length` framing, one reader
thread per server routing responses by id and notifications by method), identical for both
servers, with a realistic client capability set (VS Code-like: utf-16 positions, versioned
diagnostics, code action literals with data and disabled support, document changes in
workspace edits). Every wait has a timeout; a server that fails or times out is reported and
killed, and the other one goes on. The script exits 0 whether or not the targets are met.
If our server is not installed yet, it says so and measures `mlir-lsp-server-22` alone.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_host import generate  # noqa: E402

OURS_CMD = [sys.executable, "-m", "gpu_async_lsp", "serve"]
MLIR_CMD = ["mlir-lsp-server-22"]
LABELS = {"ours": "ours", "mlir": "mlir-lsp-server-22"}

# Targets of issue 3: edit ratio per size, memory of ours with a 50k-line document open.
EDIT_TARGETS = {50000: 0.25, 10000: 0.5}
MEMORY_TARGET_MB = 400
MEMORY_TARGET_LINES = 50000

CLIENT_CAPABILITIES: dict[str, Any] = {
    "general": {"positionEncodings": ["utf-16"]},
    "textDocument": {
        "synchronization": {"dynamicRegistration": False, "willSave": False,
                            "willSaveWaitUntil": False, "didSave": True},
        "publishDiagnostics": {"relatedInformation": True, "versionSupport": True,
                               "tagSupport": {"valueSet": [1, 2]},
                               "codeDescriptionSupport": True, "dataSupport": True},
        "codeAction": {
            "dynamicRegistration": False,
            "isPreferredSupport": True,
            "disabledSupport": True,
            "dataSupport": True,
            "resolveSupport": {"properties": ["edit"]},
            "honorsChangeAnnotations": False,
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                "", "quickfix", "refactor", "refactor.extract", "refactor.inline",
                "refactor.rewrite", "source", "source.organizeImports"]}},
        },
        "hover": {"dynamicRegistration": False, "contentFormat": ["markdown", "plaintext"]},
        "documentSymbol": {"dynamicRegistration": False,
                           "hierarchicalDocumentSymbolSupport": True},
    },
    "workspace": {
        "applyEdit": True,
        "workspaceEdit": {"documentChanges": True,
                          "resourceOperations": ["create", "rename", "delete"],
                          "failureHandling": "textOnlyTransactional",
                          "normalizesLineEndings": True},
        "didChangeConfiguration": {"dynamicRegistration": False},
        "configuration": True,
        "workspaceFolders": True,
    },
    "window": {"workDoneProgress": False, "showMessage": {}},
}


class BenchError(Exception):
    """A server failed, died or timed out; the message says which and how."""


class WaitTimeout(BenchError):
    """A wait ran out of time."""


# -- the client -------------------------------------------------------------------------------

class LspClient:
    """A language server subprocess spoken to over stdio with JSON-RPC framing."""

    def __init__(self, name: str, cmd: list[str], timeout: float, log_dir: str):
        self.name = name
        self.timeout = timeout
        self.stderr_path = os.path.join(log_dir, f"{name}.stderr")
        self._stderr = open(self.stderr_path, "wb")
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._stderr, bufsize=1 << 20)
        except OSError as e:
            self._stderr.close()
            raise BenchError(f"cannot start {shlex.join(cmd)}: {e}") from None
        self._write_lock = threading.Lock()
        self._next_id = 0
        self._pending: dict[int, queue.Queue] = {}
        self._pending_lock = threading.Lock()
        self.diagnostics: queue.Queue = queue.Queue()
        self.messages: list[str] = []     # window/showMessage and error-level logMessage
        self.server_requests: list[str] = []
        self.eof = threading.Event()
        self._reader = threading.Thread(target=self._read_loop, name=f"{name}-reader",
                                        daemon=True)
        self._reader.start()

    # writing

    def _write(self, msg: dict) -> float:
        """Frame and write one message; return the time just before the write."""
        body = json.dumps(msg, separators=(",", ":")).encode()
        data = b"Content-Length: %d\r\n\r\n" % len(body) + body
        with self._write_lock:
            t0 = time.perf_counter()
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, OSError, ValueError):
                raise BenchError(f"{self.name}: its stdin is closed ({self.exit_note()})") from None
        return t0

    def notify(self, method: str, params: Any) -> float:
        return self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any) -> tuple[Any, float]:
        """Send a request and wait for its response: (result, seconds from write to read)."""
        with self._pending_lock:
            self._next_id += 1
            rid = self._next_id
            box: queue.Queue = queue.Queue(1)
            self._pending[rid] = box
        t0 = self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        msg, t1 = self._get(box, f"response to {method}")
        with self._pending_lock:
            self._pending.pop(rid, None)
        if "error" in msg:
            raise BenchError(f"{self.name}: {method} answered with an error: {msg['error']}")
        return msg.get("result"), t1 - t0

    # reading

    def _read_loop(self) -> None:
        out = self.proc.stdout
        try:
            while True:
                length = None
                while True:
                    line = out.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        break
                    key, _, value = line.partition(b":")
                    if key.strip().lower() == b"content-length":
                        length = int(value.strip())
                if length is None:
                    continue
                body = out.read(length)
                t = time.perf_counter()
                if len(body) < length:
                    return
                self._route(json.loads(body), t)
        except (OSError, ValueError) as e:
            self.messages.append(f"reader stopped: {e}")
        finally:
            self.eof.set()

    def _route(self, msg: dict, t: float) -> None:
        method = msg.get("method")
        if method is None:                       # a response
            with self._pending_lock:
                box = self._pending.get(msg.get("id"))
            if box is not None:
                box.put((msg, t))
        elif "id" in msg:                        # a request from the server
            self.server_requests.append(method)
            result: Any = None
            if method == "workspace/configuration":
                # A client with no settings for the server: every section is empty.
                result = [{} for _ in msg.get("params", {}).get("items", [])]
            try:
                self._write({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            except BenchError:
                pass
        elif method == "textDocument/publishDiagnostics":
            self.diagnostics.put((msg["params"], t))
        elif method == "window/showMessage" or (
                method == "window/logMessage" and msg.get("params", {}).get("type") == 1):
            self.messages.append(str(msg.get("params", {}).get("message", ""))[:300])

    def _get(self, box: queue.Queue, what: str, timeout: float | None = None):
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeout(f"{self.name}: no {what} within "
                                    f"{self.timeout if timeout is None else timeout:.0f} s")
            try:
                return box.get(timeout=min(remaining, 0.5))
            except queue.Empty:
                if self.eof.is_set() and box.empty():
                    raise BenchError(f"{self.name}: the server closed its output while "
                                     f"waiting for {what} ({self.exit_note()})") from None

    def wait_diagnostics(self, uri: str, version: int | None, t0: float,
                         timeout: float | None = None) -> tuple[dict, float]:
        """The next publishDiagnostics for `uri` of `version` (any if the server sends none)."""
        while True:
            params, t = self._get(self.diagnostics, f"publishDiagnostics for version {version}",
                                  timeout)
            if params.get("uri") != uri:
                continue
            v = params.get("version")
            if version is None or v is None or v == version:
                return params, t - t0

    def drain_diagnostics(self) -> None:
        while True:
            try:
                self.diagnostics.get_nowait()
            except queue.Empty:
                return

    # the end

    def exit_note(self) -> str:
        code = self.proc.poll()
        tail = ""
        try:
            self._stderr.flush()
            tail = Path(self.stderr_path).read_text(errors="replace").strip()[-600:]
        except OSError:
            pass
        state = "still running" if code is None else f"exit status {code}"
        return state + (f"; stderr: {tail}" if tail else "")

    def peak_rss_mb(self) -> tuple[float, int]:
        """VmHWM of the server and its descendants in MB, and how many processes that is."""
        total_kb, count = 0, 0
        stack = [self.proc.pid]
        while stack:
            pid = stack.pop()
            try:
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            for line in status.splitlines():
                if line.startswith("VmHWM:"):
                    total_kb += int(line.split()[1])
                    count += 1
            try:
                for task in os.listdir(f"/proc/{pid}/task"):
                    children = Path(f"/proc/{pid}/task/{task}/children").read_text().split()
                    stack.extend(int(c) for c in children)
            except OSError:
                pass
        return total_kb / 1024, count

    def close(self) -> None:
        """shutdown + exit, then kill if the process does not end promptly."""
        try:
            if self.proc.poll() is None and not self.eof.is_set():
                self.request("shutdown", None)
                self.notify("exit", None)
                self.proc.wait(timeout=10)
        except (BenchError, subprocess.TimeoutExpired) as e:
            print(f"  {self.name}: no clean shutdown ({e}); killing it", file=sys.stderr)
        finally:
            self.kill()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self._stderr.close()


# -- one server on one document ---------------------------------------------------------------

def doc_sites(text: str) -> tuple[list[tuple[int, int]], list[tuple[int, int, int]]]:
    """Edit sites and code-action ranges, one per function from the middle of the file on.

    Edit site: (line, column) right after the comma of `arith.ceildivui %n, %c256`, where a
    blank between operands changes the op's text but not its meaning. Code-action range:
    (line, start, end) of the first `gpu.memcpy` of the function.
    """
    lines = text.split("\n")
    starts = [i for i, ln in enumerate(lines) if ln.lstrip().startswith("func.func @step")]
    if not starts:
        raise SystemExit("gen_host.generate produced no functions")
    edits, actions = [], []
    for k in range(len(starts) // 2, len(starts)):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        edit = action = None
        for i in range(starts[k], end):
            ln = lines[i]
            if edit is None and "arith.ceildivui %n," in ln:
                edit = (i, ln.index("%n,") + 3)
            if action is None and ln.lstrip().startswith("gpu.memcpy"):
                action = (i, len(ln) - len(ln.lstrip()), len(ln))
        if edit and action:
            edits.append(edit)
            actions.append(action)
    return edits, actions


class Session:
    """One server process serving the document of one size; collects its samples."""

    def __init__(self, key: str, cmd: list[str], timeout: float, tmp: str):
        self.key = key
        self.label = LABELS[key]
        self.client = LspClient(key, cmd, timeout, tmp)
        self.samples: dict[str, list[float]] = {"open": [], "cold_open": [], "insert": [],
                                                "delete": [],
                                                "action": []}
        self.failed: str | None = None
        self.info: dict[str, Any] = {}
        self.version = 0
        self.clears_on_close: bool | None = None

    def initialize(self, root: Path) -> None:
        params = {
            "processId": os.getpid(),
            "clientInfo": {"name": "bench_server.py", "version": "1"},
            "locale": "en",
            "rootPath": str(root),
            "rootUri": root.as_uri(),
            "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
            "capabilities": CLIENT_CAPABILITIES,
            "trace": "off",
        }
        result, dt = self.client.request("initialize", params)
        caps = (result or {}).get("capabilities", {})
        sync = caps.get("textDocumentSync")
        change = sync.get("change", 0) if isinstance(sync, dict) else (sync or 0)
        self.info.update(sync=change, encoding=caps.get("positionEncoding", "(none: utf-16)"),
                         code_actions=caps.get("codeActionProvider"),
                         server=(result or {}).get("serverInfo"), init_ms=dt * 1000)
        self.client.notify("initialized", {})
        if change not in (1, 2):
            raise BenchError(f"{self.key}: textDocumentSync.change is {change}: cannot edit")

    def set_document(self, uri: str, text: str, edits, actions) -> None:
        self.uri, self.text, self.edits, self.actions = uri, text, edits, actions

    def _open(self) -> tuple[dict, float]:
        self.version += 1
        self.client.drain_diagnostics()
        t0 = self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": self.uri, "languageId": "mlir", "version": self.version, "text": self.text}})
        params, dt = self.client.wait_diagnostics(self.uri, self.version, t0)
        self.info.setdefault("diag_version", "version" in params)
        self.info["open_diagnostics"] = len(params.get("diagnostics", []))
        return params, dt

    def measure_open(self) -> None:
        _, dt = self._open()
        # The first open of a text is the cold one; a server that caches by text (ours
        # does) answers the re-opens of the same text from its cache.
        self.samples["cold_open" if not self.samples["cold_open"] else "open"].append(dt)
        self.client.notify("textDocument/didClose", {"textDocument": {"uri": self.uri}})
        if self.clears_on_close is False:
            return
        # Wait for the clearing notification, so it is not taken for the next open's.
        try:
            while True:
                params, _ = self.client.wait_diagnostics(
                    self.uri, None, time.perf_counter(),
                    timeout=5 if self.clears_on_close is None else None)
                if not params.get("diagnostics"):
                    break
            self.clears_on_close = True
            self.info["close_clears"] = "yes" + (", with a version" if "version" in params
                                                 else ", without a version")
        except WaitTimeout:
            self.clears_on_close = False
            self.info["close_clears"] = "nothing published on close"

    def open_for_edits(self) -> None:
        self._open()
        self.current = self.text

    def measure_edit(self, r: int, insert: bool) -> None:
        line, col = self.edits[r % len(self.edits)]
        start = {"line": line, "character": col}
        if insert:
            rng = {"start": start, "end": start}
            new_text = " "
        else:
            rng = {"start": start, "end": {"line": line, "character": col + 1}}
            new_text = ""
        # The document after the edit (the client keeps its own copy, as an editor does).
        lines = self.current.split("\n")
        ln = lines[line]
        lines[line] = ln[:col] + new_text + ln[col + (0 if insert else 1):]
        self.current = "\n".join(lines)
        if self.info["sync"] == 2:
            change = {"range": rng, "text": new_text}
        else:
            change = {"text": self.current}
        self.version += 1
        self.client.drain_diagnostics()
        t0 = self.client.notify("textDocument/didChange", {
            "textDocument": {"uri": self.uri, "version": self.version},
            "contentChanges": [change]})
        _, dt = self.client.wait_diagnostics(self.uri, self.version, t0)
        self.samples["insert" if insert else "delete"].append(dt)

    def measure_action(self, r: int) -> None:
        line, start, end = self.actions[r % len(self.actions)]
        result, dt = self.client.request("textDocument/codeAction", {
            "textDocument": {"uri": self.uri},
            "range": {"start": {"line": line, "character": start},
                      "end": {"line": line, "character": end}},
            "context": {"diagnostics": [], "triggerKind": 1}})
        self.samples["action"].append(dt)
        actions = result or []
        self.info["actions"] = [
            (a.get("title", "?"), a.get("kind", "(command)"),
             "disabled" if a.get("disabled") else ("edit" if a.get("edit") else "no edit"))
            for a in actions]

    def finish(self) -> None:
        if self.failed is None:
            self.info["rss_mb"], self.info["processes"] = self.client.peak_rss_mb()
        self.client.close()

    def fail(self, e: Exception) -> None:
        self.failed = str(e)
        print(f"  {self.label} failed: {e}", file=sys.stderr)
        self.client.kill()


# -- the run ----------------------------------------------------------------------------------

def ours_available(cmd: list[str]) -> str | None:
    """None if our server can be started, else why not (only checked for the default command)."""
    if cmd != OURS_CMD:
        return None
    probe = subprocess.run(
        [sys.executable, "-c", "from gpu_async_lsp.server import main"],
        capture_output=True, text=True)
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return f"cannot import gpu_async_lsp.server.main ({last})"
    return None


def run_size(size: int, servers: dict[str, list[str]], args, tmp: str) -> dict[str, Session]:
    text = generate(size)
    root = Path(tmp)
    path = root / f"host{size}.mlir"
    path.write_text(text)
    uri = path.as_uri()
    edits, actions = doc_sites(text)
    sessions: dict[str, Session] = {}
    for key, cmd in servers.items():
        try:
            s = Session(key, cmd, args.timeout, tmp)
        except BenchError as e:
            print(f"  {LABELS[key]}: {e}", file=sys.stderr)
            continue
        sessions[key] = s
        try:
            s.initialize(root)
            s.set_document(uri, text, edits, actions)
        except BenchError as e:
            s.fail(e)

    def each(r: int):
        live = [s for s in sessions.values() if s.failed is None]
        return live if r % 2 == 0 else live[::-1]       # ABBA: no server always goes first

    def step(s: Session, fn, *a) -> None:
        try:
            fn(*a)
        except BenchError as e:
            s.fail(e)

    for r in range(args.repeat):
        for s in each(r):
            step(s, s.measure_open)
    for s in each(0):
        step(s, s.open_for_edits)
    for r in range(args.repeat):
        for s in each(r):
            step(s, s.measure_edit, r, True)
            if s.failed is None:
                step(s, s.measure_edit, r, False)
    for r in range(args.repeat):
        for s in each(r):
            step(s, s.measure_action, r)
    for s in sessions.values():
        s.finish()
    return sessions


def fmt(v: float | None, width: int, spec: str = ".1f") -> str:
    return f"{'-' if v is None else format(v, spec):>{width}}"


def med(xs: list[float]) -> float | None:
    return statistics.median(xs) * 1000 if xs else None


def low(xs: list[float]) -> float | None:
    return min(xs) * 1000 if xs else None


def print_table(title: str, results: dict[int, dict[str, Session]], kinds: list[str],
                keys: list[str]) -> dict[int, float | None]:
    """One table of one measurement; returns the ratio ours/theirs per size."""
    print(f"\n{title} (ms)")
    head = f"{'lines':>7}"
    for k in keys:
        head += f" {LABELS[k] + ' median':>26} {'min':>8}"
    head += f" {'ours/mlir':>10}"
    print(head)
    ratios: dict[int, float | None] = {}
    for size, sessions in results.items():
        row = f"{size:>7}"
        meds: dict[str, float | None] = {}
        for k in keys:
            xs = [x for kind in kinds for x in sessions[k].samples[kind]] if k in sessions else []
            meds[k] = med(xs)
            row += f" {fmt(meds[k], 26)} {fmt(low(xs), 8)}"
        o, t = meds.get("ours"), meds.get("mlir")
        ratios[size] = o / t if o is not None and t else None
        row += f" {fmt(ratios[size], 10, '.3f')}"
        print(row)
    return ratios


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[1:]))
    ap.add_argument("--sizes", default="1000,10000,50000", help="line counts, comma-separated")
    ap.add_argument("--repeat", type=int, default=5, help="samples per measurement (median)")
    ap.add_argument("--servers", default="ours,mlir", help="which of ours,mlir to run")
    ap.add_argument("--ours-cmd", default=shlex.join(OURS_CMD),
                    help="command line of our server (default: %(default)s)")
    ap.add_argument("--mlir-cmd", default=shlex.join(MLIR_CMD),
                    help="command line of the reference server (default: %(default)s)")
    ap.add_argument("--timeout", type=float, default=120, help="seconds any single wait may take")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    wanted = [k.strip() for k in args.servers.split(",") if k.strip()]
    unknown = [k for k in wanted if k not in LABELS]
    if unknown or not wanted or args.repeat < 1:
        ap.error(f"--servers takes ours and/or mlir; --repeat at least 1 (got {args.servers!r})")

    servers: dict[str, list[str]] = {}
    if "ours" in wanted:
        cmd = shlex.split(args.ours_cmd)
        why = ours_available(cmd)
        if why:
            print(f"Our language server is not installed in this checkout: {why}.\n"
                  f"Measuring {LABELS['mlir']} alone.", file=sys.stderr)
        else:
            servers["ours"] = cmd
    if "mlir" in wanted:
        cmd = shlex.split(args.mlir_cmd)
        if shutil.which(cmd[0]) is None:
            print(f"{cmd[0]} not found (apt-get install mlir-22-tools); measuring ours alone.",
                  file=sys.stderr)
        else:
            servers["mlir"] = cmd
    if not servers:
        print("No server to measure.", file=sys.stderr)
        return 2
    keys = list(servers)
    for k in keys:
        print(f"{LABELS[k]}: {shlex.join(servers[k])}")
    print(f"sizes {sizes}, {args.repeat} samples each, timeout {args.timeout:.0f} s per wait")

    results: dict[int, dict[str, Session]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_server.") as tmp:
        for size in sizes:
            print(f"-- {size} lines ...", flush=True)
            t = time.perf_counter()
            results[size] = run_size(size, servers, args, tmp)
            print(f"   done in {time.perf_counter() - t:.1f} s", flush=True)

    print_table("1a. first didOpen of the text (cold) -> first publishDiagnostics", results,
                ["cold_open"], keys)
    print_table("1b. didOpen of the same text again -> first publishDiagnostics", results,
                ["open"], keys)
    edit_ratios = print_table("2. one-character didChange -> publishDiagnostics of that version",
                              results, ["insert", "delete"], keys)
    for k in keys:
        parts = []
        for size, sessions in results.items():
            if k in sessions:
                s = sessions[k].samples
                parts.append(f"{size}: {fmt(med(s['insert']), 0)}/{fmt(med(s['delete']), 0)}")
        print(f"   {LABELS[k]} median insert/delete ms: " + ", ".join(parts))
    print_table("3. textDocument/codeAction round trip", results, ["action"], keys)

    print("\n4. peak resident memory of the server process (VmHWM, MB), document open")
    print(f"{'lines':>7}" + "".join(f" {LABELS[k]:>26}" for k in keys))
    for size, sessions in results.items():
        row = f"{size:>7}"
        for k in keys:
            s = sessions.get(k)
            mb = s.info.get("rss_mb") if s else None
            n = s.info.get("processes", 1) if s else 1
            cell = "-" if mb is None else f"{mb:.0f}" + (f" ({n} procs)" if n > 1 else "")
            row += f" {cell:>26}"
        print(row)

    print("\nProtocol behaviour observed")
    sync_names = {1: "full", 2: "incremental"}
    for k in keys:
        for size, sessions in results.items():
            s = sessions.get(k)
            if s is None:
                continue
            i = s.info
            sync = sync_names.get(i.get("sync"), i.get("sync"))
            print(f"  {LABELS[k]} ({size} lines): sync {sync}, "
                  f"position encoding {i.get('encoding')}, publishDiagnostics carries version: "
                  f"{i.get('diag_version')}, diagnostics on open: {i.get('open_diagnostics')}, "
                  f"close clears: {i.get('close_clears')}")
            print(f"    code actions on a gpu.memcpy line: {i.get('actions')}")
            if s.client.server_requests:
                print(f"    server requests: {sorted(set(s.client.server_requests))}")
            if s.client.messages:
                print(f"    messages: {s.client.messages[:3]}")
            break   # the same for every size
        for size, sessions in results.items():
            s = sessions.get(k)
            if s is not None and s.failed:
                print(f"    FAILED at {size} lines: {s.failed}")

    print("\nTargets (issue 3)")
    for size, target in sorted(EDIT_TARGETS.items()):
        r = edit_ratios.get(size)
        verdict = "not measured" if r is None else ("met" if r <= target else "MISSED")
        print(f"  edit at {size} lines <= {target}x mlir-lsp-server-22: "
              + ("" if r is None else f"{r:.3f}x, ") + verdict)
    s = results.get(MEMORY_TARGET_LINES, {}).get("ours")
    mb = s.info.get("rss_mb") if s else None
    verdict = "not measured" if mb is None else ("met" if mb < MEMORY_TARGET_MB else "MISSED")
    print(f"  memory with a {MEMORY_TARGET_LINES}-line document open < {MEMORY_TARGET_MB} MB: "
          + ("" if mb is None else f"{mb:.0f} MB, ") + verdict)
    return 0


if __name__ == "__main__":
    sys.exit(main())
