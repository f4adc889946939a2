"""Benchmark: our language server against `mlir-lsp-server-22` over real stdio pipes, same run.

    python benchmarks/bench_server.py [--sizes 1000,10000,50000] [--repeat 5]
                                      [--servers ours,mlir] [--ours-cmd CMD] [--timeout 120]
                                      [--feature-lines 50000]

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
   it has any), read just before `shutdown`, with the document of that size still open;
5. editor requests, on the document of `--feature-lines` lines only (default 50000; the largest
   of `--sizes` if that size is not among them), once it is open and analysed (after the edits
   above, whose last publishDiagnostics has been read, so the text is the opened one again):
   `textDocument/inlayHint` for 60 visible lines in the middle of the file and for the last 60
   lines, `textDocument/codeLens` for the document, `textDocument/semanticTokens/full` and
   `/range` (the same 60 lines), `textDocument/hover` on the name of a
   `gpu.memcpy` in the middle, `textDocument/definition` on an SSA use there (`%dev`) and on
   the `@scale` of a `gpu.launch_func @kernels::@scale`; each request -> its response.
   5a asks them again and again of the same version (what was computed for it may be cached;
   the first request of each is printed apart); 5b asks each once after an edit (a blank
   inserted in a function not edited before, its publishDiagnostics read, then removed again,
   untimed, after the requests), as an editor does after every change. Every request goes to
   both servers; one that answers a method with an error (e.g. -32601, method not found) is
   reported as "unsupported" for it and not asked again, a null result is timed and marked
   "(null)", one that times out stops measurement 5 for that server (not the whole run), and
   hints are checked to lie in the range asked and definitions to point to the right line.
   The last lines of the output sum 5b up: ours vs mlir-lsp-server-22 and the ratio.

Why: the targets are ratios to `mlir-lsp-server-22`, the MLIR project's server that
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
workspace edits, definition links, inlay hints and code lenses with refresh support). Every
wait has a timeout; a server that fails or times out is reported and killed, and the other one
goes on. The script exits 0 whether or not the targets are met.
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
from gen_wide import generate as generate_wide  # noqa: E402
from interpreter import of_command  # noqa: E402

OURS_CMD = [sys.executable, "-m", "gpu_async_lsp", "serve"]
MLIR_CMD = ["mlir-lsp-server-22"]
LABELS = {"ours": "ours", "mlir": "mlir-lsp-server-22"}

# Targets: edit ratio per size, memory of ours with a 50k-line document open.
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
        "definition": {"dynamicRegistration": False, "linkSupport": True},
        "inlayHint": {"dynamicRegistration": False, "resolveSupport": {"properties": [
            "tooltip", "textEdits", "label.tooltip", "label.location", "label.command"]}},
        "codeLens": {"dynamicRegistration": False},
        "semanticTokens": {"dynamicRegistration": False, "requests": {"range": True, "full": True},
                           "tokenTypes": [], "tokenModifiers": [], "formats": ["relative"],
                           "multilineTokenSupport": False, "overlappingTokenSupport": False},
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
        "inlayHint": {"refreshSupport": True},
        "codeLens": {"refreshSupport": True},
    },
    "window": {"workDoneProgress": False, "showMessage": {}},
}


class BenchError(Exception):
    """A server failed, died or timed out; the message says which and how."""


class WaitTimeout(BenchError):
    """A wait ran out of time."""


class ResponseError(BenchError):
    """The server answered a request with a JSON-RPC error (the server itself is fine)."""

    def __init__(self, message: str, error: dict):
        super().__init__(message)
        self.error = error


# -- the client -------------------------------------------------------------------------------

# --cpus: the CPUs every server process (and whatever it forks) may run on; empty: any.
SERVER_CPUS: set[int] = set()


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
            if SERVER_CPUS:  # before it is spoken to (its start-up is not timed)
                os.sched_setaffinity(self.proc.pid, SERVER_CPUS)
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
            raise ResponseError(f"{self.name}: {method} answered with an error: {msg['error']}",
                                msg["error"] if isinstance(msg["error"], dict) else {})
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


HINT_LINES = 60   # an editor window's worth of lines


class Feature:
    """One editor request of measurement 5: its method, its params and what to expect.

    `expect_line` is the 0-based line a definition should point to (None: not checked).
    """

    def __init__(self, name: str, method: str, params: dict, where: str,
                 expect_line: int | None = None):
        self.name, self.method, self.params, self.where = name, method, params, where
        self.expect_line = expect_line


def feature_sites(text: str, uri: str) -> list[Feature]:
    """The requests of measurement 5, at positions in the function in the middle of the file."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()               # the text ends with a newline: no line after it to show
    starts = [i for i, ln in enumerate(lines) if ln.lstrip().startswith("func.func @step")]
    if not starts:
        raise SystemExit("gen_host.generate produced no functions")
    kernel_line = next((i for i, ln in enumerate(lines) if "gpu.func @scale" in ln), None)
    doc = {"uri": uri}

    def pos(line: int, col: int) -> dict:
        return {"line": line, "character": col}

    mid = len(starts) // 2
    alloc = memcpy = launch = None
    for k in range(mid, len(starts)):       # the middle function, or the next one that has all
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        alloc = memcpy = launch = None
        for i in range(starts[k], end):
            ln = lines[i]
            if alloc is None and "%dev = gpu.alloc" in ln:
                alloc = i
            if memcpy is None and ln.lstrip().startswith("gpu.memcpy %dev"):
                memcpy = i
            if launch is None and "gpu.launch_func @kernels::@scale" in ln:
                launch = i
        if alloc is not None and memcpy is not None and launch is not None:
            mid = k
            break
    if alloc is None or memcpy is None or launch is None:
        raise SystemExit("gen_host.generate produced no function with gpu.alloc, gpu.memcpy "
                         "and gpu.launch_func")
    top = starts[mid]
    last = len(lines) - 1
    mid_range = {"start": pos(top, 0), "end": pos(top + HINT_LINES, 0)}
    end_first = max(0, last + 1 - HINT_LINES)
    end_range = {"start": pos(end_first, 0), "end": pos(last, len(lines[last]))}
    op_col = lines[memcpy].index("gpu.memcpy")
    use_col = lines[memcpy].index("%dev")
    sym_col = lines[launch].index("@scale")
    return [
        Feature("inlayHint (middle)", "textDocument/inlayHint",
                {"textDocument": doc, "range": mid_range},
                f"lines {top + 1}-{top + HINT_LINES}"),
        Feature("inlayHint (end)", "textDocument/inlayHint",
                {"textDocument": doc, "range": end_range},
                f"lines {end_first + 1}-{last + 1}"),
        Feature("codeLens", "textDocument/codeLens", {"textDocument": doc}, "whole document"),
        Feature("semanticTokens/full", "textDocument/semanticTokens/full",
                {"textDocument": doc}, "whole document"),
        Feature("semanticTokens/range", "textDocument/semanticTokens/range",
                {"textDocument": doc, "range": mid_range}, f"lines {top + 1}-{top + HINT_LINES}"),
        Feature("hover gpu.memcpy", "textDocument/hover",
                {"textDocument": doc, "position": pos(memcpy, op_col + 4)},
                f"{memcpy + 1}:{op_col + 5}"),
        Feature("definition %dev", "textDocument/definition",
                {"textDocument": doc, "position": pos(memcpy, use_col + 2)},
                f"{memcpy + 1}:{use_col + 3}", expect_line=alloc),
        Feature("definition @kernels::@scale", "textDocument/definition",
                {"textDocument": doc, "position": pos(launch, sym_col + 2)},
                f"{launch + 1}:{sym_col + 3}", expect_line=kernel_line),
    ]


def describe_result(f: Feature, result: Any) -> str:
    """A short account of a response of measurement 5 (what was answered, not how fast)."""
    if result is None:
        return "null"
    if f.method == "textDocument/inlayHint":
        hints = result if isinstance(result, list) else []
        rng = f.params["range"]
        lo = (rng["start"]["line"], rng["start"]["character"])
        hi = (rng["end"]["line"], rng["end"]["character"])
        outside = 0
        for h in hints:
            p = h.get("position") if isinstance(h, dict) else None
            at = (p.get("line", -1), p.get("character", -1)) if isinstance(p, dict) else None
            if at is None or not lo <= at <= hi:
                outside += 1
        labels = []
        for h in hints[:2]:
            label = h.get("label") if isinstance(h, dict) else None
            if isinstance(label, list):
                label = "".join(p.get("value", "") for p in label if isinstance(p, dict))
            labels.append(repr(str(label)[:40]))
        return (f"{len(hints)} hints" + (f" ({outside} OUTSIDE the range)" if outside else "")
                + (f", e.g. {', '.join(labels)}" if labels else ""))
    if f.method.startswith("textDocument/semanticTokens"):
        data = result.get("data") if isinstance(result, dict) else None
        return f"{len(data) // 5} tokens" if isinstance(data, list) else "no data"
    if f.method == "textDocument/codeLens":
        lenses = result if isinstance(result, list) else []
        unresolved = sum(1 for c in lenses if isinstance(c, dict) and not c.get("command"))
        title = next((c["command"].get("title", "") for c in lenses
                      if isinstance(c, dict) and isinstance(c.get("command"), dict)), None)
        return (f"{len(lenses)} lenses" + (f" ({unresolved} to resolve)" if unresolved else "")
                + (f", e.g. {title[:50]!r}" if title is not None else ""))
    if f.method == "textDocument/hover":
        contents = result.get("contents") if isinstance(result, dict) else None
        if isinstance(contents, dict):
            value = contents.get("value", "")
        elif isinstance(contents, list):
            value = "\n".join(c if isinstance(c, str) else c.get("value", "") for c in contents)
        else:
            value = str(contents or "")
        first = next((ln.strip() for ln in value.splitlines() if ln.strip().strip("`")), "")
        return f"{len(value)} chars, {first[:50]!r}"
    if f.method == "textDocument/definition":
        locs = result if isinstance(result, list) else [result]
        targets = []
        for loc in locs:
            if not isinstance(loc, dict):
                continue
            rng = loc.get("targetSelectionRange") or loc.get("range") or loc.get("targetRange")
            if isinstance(rng, dict):
                targets.append(rng.get("start", {}).get("line"))
        if not targets:
            return "no location"
        shown = ", ".join(str(t + 1) if isinstance(t, int) else "?" for t in targets[:3])
        verdict = ""
        if f.expect_line is not None:
            verdict = (" (right)" if f.expect_line in targets
                       else f" (WRONG: expected line {f.expect_line + 1})")
        return f"line {shown}{verdict}"
    return type(result).__name__


class Session:
    """One server process serving the document of one size; collects its samples."""

    def __init__(self, key: str, cmd: list[str], timeout: float, tmp: str):
        self.key = key
        self.label = LABELS[key]
        self.client = LspClient(key, cmd, timeout, tmp)
        self.samples: dict[str, list[float]] = {"open": [], "cold_open": [], "insert": [],
                                                "delete": [],
                                                "action": []}
        self.features: list[Feature] = []
        self.feature_notes: dict[str, str] = {}     # phase:feature -> what was answered
        self.unsupported: dict[str, tuple[str, str]] = {}   # feature -> (status, why)
        self.features_stopped: str | None = None     # why no more requests of measurement 5
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
                         providers={p: caps.get(p) for p in (
                             "inlayHintProvider", "codeLensProvider", "hoverProvider",
                             "definitionProvider")},
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

    def measure_edit(self, r: int, insert: bool, record: bool = True) -> None:
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
        if record:
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

    def measure_feature(self, f: Feature, phase: str) -> None:
        """One request of measurement 5 (phase "same" or "fresh"); an error answer marks the
        feature unsupported."""
        if f.name in self.unsupported or self.features_stopped:
            return
        try:
            result, dt = self.client.request(f.method, f.params)
        except ResponseError as e:
            code = e.error.get("code")
            status = "unsupported" if code == -32601 else "error"
            self.unsupported[f.name] = (status, f"{status} ({code}: "
                                                f"{str(e.error.get('message', ''))[:80]})")
            return
        except WaitTimeout as e:
            # Not asked again, nor anything else of measurement 5: the server may be stuck
            # on it. The session goes on to its memory reading and shutdown.
            self.unsupported[f.name] = ("timeout", f"timed out ({e})")
            self.features_stopped = f"not asked after {f.name} timed out"
            return
        key = f"{phase}:{f.name}"
        if not self.samples.get(key):
            self.samples[key] = []
            self.info.setdefault("feature_first_ms", {})[key] = dt * 1000
        self.samples[key].append(dt)
        self.feature_notes[key] = describe_result(f, result)

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


def run_size(size: int, servers: dict[str, list[str]], args, tmp: str,
             with_features: bool = False) -> dict[str, Session]:
    text = generate(size)
    root = Path(tmp)
    path = root / f"host{size}.mlir"
    path.write_text(text)
    uri = path.as_uri()
    edits, actions = doc_sites(text)
    features = feature_sites(text, uri) if with_features else []
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
            s.features = features
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
    # 5a. The document is open, its text is the opened one again and the diagnostics of the
    # last edit have been read: it has been analysed. The same requests again and again.
    for r in range(args.repeat):
        for s in each(r):
            for f in features:
                if s.failed is None:
                    step(s, s.measure_feature, f, "same")
    # 5b. What an editor asks after each change: a blank inserted in a function not edited
    # before (a text no server has seen), its diagnostics read, then every request once;
    # the blank is removed again (not timed) before the next repeat.
    if features:
        for r in range(args.repeat):
            for s in each(r):
                step(s, s.measure_edit, args.repeat + r, True, False)
                for f in features:
                    if s.failed is None:
                        step(s, s.measure_feature, f, "fresh")
                if s.failed is None:
                    step(s, s.measure_edit, args.repeat + r, False, False)
    for s in sessions.values():
        s.finish()
    return sessions


def cold_open(kind: str, size: int, servers: dict[str, list[str]], args, tmp: str) -> dict:
    """--cold: `repeat` first opens of one document, each in a fresh server process (started
    and initialized untimed), the servers alternating (ABBA). Returns, per server, the times
    (s) from didOpen to the first publishDiagnostics and each process's peak RSS (MB) then."""
    text = generate(size) if kind == "host" else generate_wide(size)
    root = Path(tmp)
    path = root / f"{kind}{size}.mlir"
    path.write_text(text)
    uri = path.as_uri()
    out = {k: {"ms": [], "mb": [], "diagnostics": None, "failed": None} for k in servers}
    keys = list(servers)
    for r in range(args.repeat):
        for key in (keys if r % 2 == 0 else keys[::-1]):
            if out[key]["failed"]:
                continue
            s = None
            try:
                s = Session(key, servers[key], args.timeout, tmp)
                s.initialize(root)
                s.set_document(uri, text, [], [])
                params, dt = s._open()
                out[key]["ms"].append(dt)  # seconds; med() and the table print ms
                out[key]["mb"].append(s.client.peak_rss_mb()[0])
                out[key]["diagnostics"] = len(params.get("diagnostics", []))
                s.client.close()
            except BenchError as e:
                out[key]["failed"] = str(e)
                if s is not None:
                    s.fail(e)
    return {"lines": text.count("\n") + 1, "servers": out}


def print_cold(results: dict, keys: list[str]) -> None:
    print("\ncold: first didOpen in a fresh server process -> first publishDiagnostics (ms, "
          "median [min-max]); peak RSS (MB, max)")
    head = f"{'document':>14}"
    for k in keys:
        head += f" {LABELS[k] + ' ms':>26} {'MB':>6}"
    print(head + (f" {'ratio':>6}" if len(keys) == 2 else ""))
    for (kind, size), res in results.items():
        row = f"{kind + ' ' + str(size):>14}"
        medians = {}
        for k in keys:
            r = res["servers"][k]
            if r["failed"] or not r["ms"]:
                row += f" {'failed' if r['failed'] else '-':>26} {'':>6}"
                continue
            medians[k] = med(r["ms"])
            cell = f"{medians[k]:.0f} [{min(r['ms']) * 1000:.0f}-{max(r['ms']) * 1000:.0f}]"
            row += f" {cell:>26} {max(r['mb']):>6.0f}"
        if len(keys) == 2:
            ratio = ours_over_mlir(medians)
            row += f" {fmt(ratio, 6, '.2f')}"
        print(row)


def fmt(v: float | None, width: int, spec: str = ".1f") -> str:
    return f"{'-' if v is None else format(v, spec):>{width}}"


def med(xs: list[float]) -> float | None:
    return statistics.median(xs) * 1000 if xs else None


def low(xs: list[float]) -> float | None:
    return min(xs) * 1000 if xs else None


def table_head(first: str, keys: list[str]) -> str:
    """A table's header: the first column, a median and a min per server, the ratio."""
    return first + "".join(f" {LABELS[k] + ' median':>26} {'min':>8}" for k in keys) \
        + f" {'ours/mlir':>10}"


def ours_over_mlir(medians: dict[str, float | None]) -> float | None:
    ours, theirs = medians.get("ours"), medians.get("mlir")
    return ours / theirs if ours is not None and theirs else None


def print_table(title: str, results: dict[int, dict[str, Session]], kinds: list[str],
                keys: list[str]) -> dict[int, float | None]:
    """One table of one measurement; returns the ratio ours/theirs per size."""
    print(f"\n{title} (ms)")
    print(table_head(f"{'lines':>7}", keys))
    ratios: dict[int, float | None] = {}
    for size, sessions in results.items():
        row = f"{size:>7}"
        meds: dict[str, float | None] = {}
        for k in keys:
            xs = [x for kind in kinds for x in sessions[k].samples[kind]] if k in sessions else []
            meds[k] = med(xs)
            row += f" {fmt(meds[k], 26)} {fmt(low(xs), 8)}"
        ratios[size] = ours_over_mlir(meds)
        row += f" {fmt(ratios[size], 10, '.3f')}"
        print(row)
    return ratios


PHASES = {
    "same": "a. the same version, asked again and again (first request in the notes below)",
    "fresh": "b. the first request after an edit (a new version, its diagnostics read): what "
             "an editor asks after each change",
}


def print_features(size: int, sessions: dict[str, Session],
                   keys: list[str]) -> list[tuple[str, dict[str, str], float | None]]:
    """Tables of measurement 5 (feature, ours, mlir, ratio), then what each server answered.

    Returns the rows of 5b (feature, median cell per server, ratio) for the summary.
    """
    features = next((s.features for s in sessions.values() if s.features), [])
    print(f"\n5. editor requests on the {size}-line document, open and analysed: "
          "request -> response (ms)")
    summary: list[tuple[str, dict[str, str], float | None]] = []
    if not features:
        print("   not measured (no server got that far)")
        return summary

    def cell(s: Session | None, f: Feature, phase: str) -> tuple[str, str, float | None]:
        if s is None:
            return "-", "-", None
        xs = s.samples.get(f"{phase}:{f.name}", [])
        if xs:
            null = " (null)" if s.feature_notes.get(f"{phase}:{f.name}") == "null" else ""
            return fmt(med(xs), 0, ".2f") + null, fmt(low(xs), 0, ".2f"), med(xs)
        if f.name in s.unsupported:
            return s.unsupported[f.name][0], "-", None
        if s.failed:
            return "failed", "-", None
        return "skipped" if s.features_stopped else "-", "-", None

    for phase, title in PHASES.items():
        print(f"5{title}")
        print(table_head(f"{'feature':<28}", keys))
        for f in features:
            row = f"{f.name:<28}"
            meds: dict[str, float | None] = {}
            cells: dict[str, str] = {}
            for k in keys:
                cells[k], lo, meds[k] = cell(sessions.get(k), f, phase)
                row += f" {cells[k]:>26} {lo:>8}"
            ratio = ours_over_mlir(meds)
            row += f" {fmt(ratio, 10, '.3f')}"
            print(row)
            if phase == "fresh":
                summary.append((f.name, cells, ratio))
    print("   where: " + "; ".join(f"{f.name} at {f.where}" for f in features))
    for k in keys:
        s = sessions.get(k)
        if s is None:
            continue
        first = s.info.get("feature_first_ms", {})
        if s.failed and not any(x.startswith(("same:", "fresh:")) for x in s.samples):
            print(f"   {LABELS[k]}: not measured, the server failed: {s.failed}")
            continue
        print(f"   {LABELS[k]} answered (5a; the first request of 5a took):")
        for f in features:
            key = "same:" + f.name
            if key not in s.feature_notes and f.name in s.unsupported:
                note = s.unsupported[f.name][1]
            elif key in s.feature_notes:
                note = s.feature_notes[key] + (f"; first {first[key]:.1f} ms" if key in first
                                               else "")
                fresh = s.feature_notes.get("fresh:" + f.name)
                if fresh is not None and fresh != s.feature_notes[key]:
                    note += f"; after an edit: {fresh}"
                if f.name in s.unsupported:
                    note += f"; then {s.unsupported[f.name][1]}"
            else:
                note = "not measured" + (f" (server failed: {s.failed})" if s.failed else
                                         f" ({s.features_stopped})" if s.features_stopped
                                         else "")
            print(f"     {f.name:<28} {note}")
    return summary


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
    ap.add_argument("--feature-lines", type=int, default=50000,
                    help="size of the document on which inlay hints, code lenses, hover and "
                         "definition are measured (the largest of --sizes if it is not one of "
                         "them; 0: not measured; default: %(default)s)")
    ap.add_argument("--cold", default="",
                    help="instead of everything else: first opens in fresh server processes of "
                         "these document kinds, comma-separated: host (gen_host.py), wide (real "
                         "IR of many dialects, gen_wide.py, from ../shared/corpus-wide)")
    ap.add_argument("--cpus", default="",
                    help="CPUs the servers may run on, comma-separated (default: any): `--cpus "
                         "1` measures both on one CPU, as when an editor keeps the other busy "
                         "(mlir-lsp-server-22 parses on one thread; ours shares a big file with "
                         "a second process where it may use two CPUs)")
    args = ap.parse_args()
    if args.cpus:
        try:
            SERVER_CPUS.update(int(c) for c in args.cpus.split(","))
            os.sched_getaffinity(0)
        except (ValueError, AttributeError):
            ap.error("--cpus takes CPU numbers, comma-separated, on a system with affinity masks")
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    wanted = [k.strip() for k in args.servers.split(",") if k.strip()]
    unknown = [k for k in wanted if k not in LABELS]
    if unknown or not wanted or args.repeat < 1:
        ap.error(f"--servers takes ours and/or mlir; --repeat at least 1 (got {args.servers!r})")
    if not sizes:
        ap.error("--sizes: no size given")
    feature_size = None
    if args.feature_lines > 0:
        feature_size = args.feature_lines if args.feature_lines in sizes else max(sizes)

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
        python = of_command(servers[k])
        if python:
            print(f"  {python}")
    if SERVER_CPUS:
        print(f"servers pinned to CPU(s) {sorted(SERVER_CPUS)} of {os.cpu_count()}")
    print(f"sizes {sizes}, {args.repeat} samples each, timeout {args.timeout:.0f} s per wait"
          + (f"; editor requests at {feature_size} lines" if feature_size else ""))

    cold_kinds = [k.strip() for k in args.cold.split(",") if k.strip()]
    if cold_kinds:
        if set(cold_kinds) - {"host", "wide"}:
            ap.error("--cold takes host and/or wide")
        cold: dict = {}
        with tempfile.TemporaryDirectory(prefix="bench_server.") as tmp:
            for kind in cold_kinds:
                for size in sizes:
                    print(f"-- cold {kind} {size} lines ...", flush=True)
                    cold[kind, size] = cold_open(kind, size, servers, args, tmp)
        print_cold(cold, keys)
        return 0

    results: dict[int, dict[str, Session]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_server.") as tmp:
        for size in sizes:
            print(f"-- {size} lines ...", flush=True)
            t = time.perf_counter()
            results[size] = run_size(size, servers, args, tmp,
                                     with_features=size == feature_size)
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

    feature_summary = []
    if feature_size is not None:
        feature_summary = print_features(feature_size, results.get(feature_size, {}), keys)

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
            providers = {p.removesuffix("Provider"): v
                         for p, v in (i.get("providers") or {}).items() if v}
            print(f"    providers advertised (of inlayHint, codeLens, hover, definition): "
                  f"{json.dumps(providers, separators=(',', ':')) if providers else 'none'}")
            if s.client.server_requests:
                print(f"    server requests: {sorted(set(s.client.server_requests))}")
            if s.client.messages:
                print(f"    messages: {s.client.messages[:3]}")
            break   # the same for every size
        for size, sessions in results.items():
            s = sessions.get(k)
            if s is not None and s.failed:
                print(f"    FAILED at {size} lines: {s.failed}")

    print("\nTargets")
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
    if feature_summary:
        print(f"\nEditor requests at {feature_size} lines, first after an edit (5b), medians: "
              + " vs ".join(LABELS[k] for k in keys))
        for name, cells, ratio in feature_summary:
            print(f"  {name}: " + " vs ".join(
                cells[k] + (" ms" if cells[k][:1].isdigit() else "") for k in keys)
                + ("" if ratio is None else f" ({ratio:.2f}x)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
