"""A server that lasts a working day, over real pipes: bounded memory, prompt exit, a free
event loop, cancellation, and no change ever lost in silence.

Memory is read from the server's own /proc/PID/status (VmRSS), with bounds generous enough for
a noisy CI machine but far below what an unbounded cache holds after the same session (each
test says what the figure was before). Times are not asserted except where the behaviour *is*
a time (exit within seconds where the old server took the length of an analysis); orders of
answers are asserted instead where they say the same thing.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.lsp_session import SERVER_COMMAND, TIMEOUT, check_fix, position, rng, whole_range

pytestmark = pytest.mark.asyncio(loop_scope="session")

MB = 1 << 20


def rss(session) -> int:
    """The server's resident set in bytes."""
    status = Path(f"/proc/{session.process.pid}/status").read_text()
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc status")


def host_function(name: str, groups: int) -> str:
    """One host function with `groups` copies of alloc, copy, launch and dealloc."""
    body = []
    for i in range(groups):
        body += [f"    %d{i} = gpu.alloc (%n) : memref<?xf32>",
                 f"    gpu.memcpy %d{i}, %host : memref<?xf32>, memref<?xf32>",
                 "    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) "
                 f"threads in (%c1, %c1, %c1) args(%d{i} : memref<?xf32>)",
                 f"    %v{i} = arith.addi %n, %c1 : index",
                 f"    gpu.dealloc %d{i} : memref<?xf32>"]
    return (f"  func.func @{name}(%host: memref<?xf32>, %n: index) {{\n"
            "    %c1 = arith.constant 1 : index\n" + "\n".join(body) + "\n    return\n  }\n")


KERNELS = ("  gpu.module @kernels {\n    gpu.func @k(%b: memref<?xf32>) kernel {\n"
           "      gpu.return\n    }\n  }\n")


def module(functions: list[str]) -> str:
    return "module attributes {gpu.container_module} {\n" + KERNELS + "".join(functions) + "}\n"


def many_functions(lines: int, tag: str = "") -> str:
    """A module of functions of ~25 lines each, `lines` lines in all."""
    return module([host_function(f"f{tag}{i}", 4) for i in range(max(1, lines // 25))])


async def statistics(session) -> dict:
    """`gpuAsyncLsp/statistics` (pygls's client hands back JSON objects as namedtuples)."""
    result = await asyncio.wait_for(
        session.client.protocol.send_request_async("gpuAsyncLsp/statistics", None), TIMEOUT)

    def plain(value):
        return {k: plain(v) for k, v in value._asdict().items()} \
            if hasattr(value, "_asdict") else value

    return plain(result)


# -- memory ---------------------------------------------------------------------------------

async def test_memory_edits_of_a_big_function_stay_bounded(start_server):
    """Typing in one 5k-line function: every keystroke made a new version of the unit, and the
    old cache kept each one (about 6 MB a keystroke here, 240 MB after these 40); now what is
    not open is held up to the cache's budget only."""
    session = await start_server("vscode")
    uri = "file:///e2e/long/typing.mlir"
    text = module([host_function("big", 1000)])
    await session.open_and_wait(uri, text)
    await session.open_and_wait(uri + ".warm", many_functions(200, "w"))
    before = rss(session)
    anchor = text.index("%v500 = arith.addi %n")
    for i in range(40):
        offset = anchor + len("%v500 = arith.addi %n") + i
        version = session.replace(uri, offset, offset, " ")
        await session.wait_diagnostics(uri, version)
    grown = rss(session) - before
    stats = (await statistics(session))["cache"]
    assert stats["recent_bytes"] <= stats["budget"], stats
    assert grown < 120 * MB, f"RSS grew {grown / MB:.0f} MB over 40 keystrokes"


async def test_memory_open_close_rounds_give_back_what_documents_held(start_server):
    """Opening and closing the same 60 distinct documents three times: the old server kept
    every unit ever analysed (about +60 MB a round here); now a round leaves nothing behind."""
    session = await start_server("vscode")
    texts = [many_functions(400, f"d{i}_") for i in range(60)]
    start = rss(session)
    after_round = []
    for r in range(3):
        for i, text in enumerate(texts):
            uri = f"file:///e2e/long/round/{r}/doc{i}.mlir"
            await session.open_and_wait(uri, text)
        for i in range(len(texts)):
            uri = f"file:///e2e/long/round/{r}/doc{i}.mlir"
            session.client.text_document_did_close(types.DidCloseTextDocumentParams(
                types.TextDocumentIdentifier(uri=uri)))
        await session.round_trip()
        await asyncio.sleep(2.0)  # the heap is released once closing is over
        await session.round_trip()
        after_round.append(rss(session))
    stats = await statistics(session)
    assert stats["documents"] == 0
    assert stats["cache"]["live"] == 0 and stats["cache"]["recent"] == 0, stats
    growth = after_round[2] - after_round[0]
    assert growth < 25 * MB, [f"{x / MB:.0f} MB" for x in after_round]
    # What Python keeps after everything is closed: its own arenas with a live object left
    # in them, and the parser and tables built once.
    assert after_round[2] - start < 60 * MB, (start / MB, [x / MB for x in after_round])


# -- exit -----------------------------------------------------------------------------------

def big_document(lines: int) -> str:
    return many_functions(lines, "x")


async def _exit_took(session, *, shutdown: bool) -> float:
    if shutdown:
        await asyncio.wait_for(session.client.shutdown_async(None), TIMEOUT)
    session.client.exit(None)
    t0 = time.monotonic()
    await asyncio.wait_for(session.process.wait(), 30)
    return time.monotonic() - t0


# Lines whose first analysis runs well past the half second the exit tests wait (300k lines,
# once several seconds, are now analysed in about that half second).
BIG_ANALYSIS_LINES = 1_000_000


@pytest.mark.parametrize("shutdown", [True, False], ids=["shutdown_then_exit", "exit_alone"])
async def test_exit_during_a_big_analysis_is_prompt_with_lsp_status(start_server, shutdown):
    """A million lines take seconds to analyse; `exit` while that runs used to wait for it
    (and then for the heap to be torn down), and exited 0 even without `shutdown`."""
    session = await start_server("vscode")
    uri = "file:///e2e/long/exit.mlir"
    session.open(uri, big_document(BIG_ANALYSIS_LINES))
    await asyncio.sleep(0.5)
    took = await _exit_took(session, shutdown=shutdown)
    assert not session.published_for(uri), "the analysis finished before exit: not a test"
    assert took < 3.0, f"the process took {took:.1f} s to end after exit"
    assert session.process.returncode == (0 if shutdown else 1)


async def test_exit_when_the_client_goes_away_during_an_analysis_is_prompt(start_server):
    session = await start_server("vscode")
    uri = "file:///e2e/long/gone.mlir"
    session.open(uri, big_document(BIG_ANALYSIS_LINES))
    await asyncio.sleep(0.5)
    session.process.stdin.close()
    t0 = time.monotonic()
    await asyncio.wait_for(session.process.wait(), 30)
    took = time.monotonic() - t0
    assert not session.published_for(uri), "the analysis finished first: not a test"
    assert took < 3.0, f"the process took {took:.1f} s to end after its stdin closed"


# -- the event loop -------------------------------------------------------------------------

def _whole_document_action(session, uri: str, msg_id: str | None = None):
    text = session.texts[uri]
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=whole_range(text, session.encoding),
        context=types.CodeActionContext(diagnostics=[]))
    return session.client.protocol.send_request_async(types.TEXT_DOCUMENT_CODE_ACTION, params,
                                                     msg_id=msg_id)


async def test_hover_answered_while_a_whole_document_code_action_runs(start_server):
    """The minimal client resolves nothing: a code action over the whole of a 100k-line file
    carries 4,000 edits. That work used to hold the event loop, so a hover on another document
    waited for it."""
    session = await start_server("minimal")
    big, small = "file:///e2e/long/big.mlir", "file:///e2e/long/small.mlir"
    await session.open_and_wait(big, big_document(100_000))
    small_text = module([host_function("s", 2)])
    await session.open_and_wait(small, small_text)
    action = asyncio.ensure_future(_whole_document_action(session, big))
    await asyncio.sleep(0.05)
    hover = await asyncio.wait_for(session.client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri=small),
        position(small_text, small_text.index("gpu.memcpy") + 4, session.encoding))), TIMEOUT)
    assert hover is not None and "gpu.memcpy" in hover.contents.value
    assert not action.done(), "the code action was answered before the hover"
    actions = await asyncio.wait_for(action, 60)
    assert sum(1 for a in actions if a.edit is not None) > 4000


async def test_cancelled_whole_document_code_action_answers_request_cancelled(start_server):
    session = await start_server("minimal")
    big = "file:///e2e/long/cancel.mlir"
    await session.open_and_wait(big, big_document(100_000))
    action = asyncio.ensure_future(_whole_document_action(session, big, msg_id="cancel-me"))
    await asyncio.sleep(0.05)
    session.client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="cancel-me"))
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(action, TIMEOUT)
    assert error.value.code == -32800  # RequestCancelled
    assert session.alive


async def test_code_actions_come_without_edits_to_a_client_that_resolves_them(start_server):
    """VS Code and Neovim resolve `edit` (codeAction/resolve): the list is small and each edit
    is computed when the action is chosen; after a change, resolving an older action fails with
    ContentModified instead of editing the wrong text."""
    session = await start_server("vscode")
    uri = "file:///e2e/long/lazy.mlir"
    text = many_functions(2_000, "l")
    await session.open_and_wait(uri, text)
    lazy = await session.code_actions(uri, resolve=False)
    assert lazy and all(a.edit is None and a.data is not None for a in lazy)
    full = await session.code_actions(uri)
    fix_all = next(a for a in full if a.kind == "source.fixAll.gpuAsync")
    assert session.applied(fix_all, uri) == check_fix(text)
    version = session.change(uri, [(None, text + "\n")])
    await session.wait_diagnostics(uri, version)
    with pytest.raises(JsonRpcException) as error:
        await session.resolve_code_action(lazy[0])
    assert error.value.code == -32801


# -- changes the server cannot apply --------------------------------------------------------

DOC = module([host_function("f", 1)])


async def test_change_with_a_negative_position_loses_sync_and_says_so(start_server):
    """A change lsprotocol cannot even read used to vanish with a traceback; now the server
    keeps its last text, warns once, publishes one out-of-sync finding, ignores incremental
    changes (they are relative to a text it does not have) and takes the next full text."""
    session = await start_server("vscode")
    uri = "file:///e2e/long/negative.mlir"
    await session.open_and_wait(uri, DOC)
    session.raw_notify("textDocument/didChange", json.dumps({
        "textDocument": {"uri": uri, "version": 2},
        "contentChanges": [{"range": {"start": {"line": -1, "character": 0},
                                      "end": {"line": 0, "character": 0}}, "text": "x"}]}))
    published = await session.wait_diagnostics(uri, 2)
    assert [d.code for d in published.diagnostics] == ["out-of-sync"]
    assert any("lost track" in m.message for m in session.warnings)
    session.versions[uri] = 2
    session.change(uri, [(rng(0, 0, 0, 0), "// typed\n")])
    await session.round_trip()
    assert session.published_for(uri)[-1].version == 2, "an incremental change was applied"
    assert await session.code_actions(uri) == []  # no answers from a text that is not theirs
    version = session.change(uri, [(None, DOC.replace("    return", "    gpu.wait\n    return"))])
    diagnostics = (await session.wait_diagnostics(uri, version)).diagnostics
    assert "pre-existing-wait" in {d.code for d in diagnostics}


async def test_change_with_bytes_that_are_not_utf8_is_applied_and_told(start_server):
    session = await start_server("vscode")
    uri = "file:///e2e/long/latin1.mlir"
    await session.open_and_wait(uri, DOC)
    body = (b'{"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {'
            b'"textDocument": {"uri": "' + uri.encode() + b'", "version": 2}, '
            b'"contentChanges": [{"text": "// caf\xe9\\n' + DOC.encode().replace(b"\n", b"\\n")
            + b'"}]}}')
    session.send_raw(body)
    published = await session.wait_diagnostics(uri, 2)
    assert "sync-gpu-ops" in {d.code for d in published.diagnostics}
    assert any("not UTF-8" in m.message for m in session.warnings)


async def test_request_with_wrong_jsonrpc_version_gets_invalid_request(start_server):
    session = await start_server("vscode")
    with pytest.raises(JsonRpcException) as error:
        await session.raw_request("textDocument/hover", json.dumps({
            "textDocument": {"uri": "file:///x.mlir"}, "position": {"line": 0, "character": 0}}),
            jsonrpc="1.0", timeout=5)
    assert error.value.code == -32600
    assert session.alive


async def test_request_after_shutdown_gets_invalid_request(start_server):
    session = await start_server("vscode")
    await asyncio.wait_for(session.client.shutdown_async(None), TIMEOUT)
    with pytest.raises(JsonRpcException) as error:
        await session.raw_request("textDocument/hover", json.dumps({
            "textDocument": {"uri": "file:///x.mlir"}, "position": {"line": 0, "character": 0}}),
            timeout=5)
    assert error.value.code == -32600


async def test_batch_request_gets_one_invalid_request_error_per_request():
    """pytest-lsp's client cannot read a batch answer: this one is a bare pipe (blocking reads,
    so in a thread: the module's tests share one event loop)."""
    await asyncio.to_thread(_batch_request_gets_one_invalid_request_error_per_request)


def _batch_request_gets_one_invalid_request_error_per_request() -> None:
    with RawServer() as server:
        server.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"capabilities": {}}})
        assert server.receive()["id"] == 1
        server.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        server.send([{"jsonrpc": "2.0", "id": "a", "method": "shutdown"},
                     {"jsonrpc": "2.0", "method": "initialized", "params": {}},
                     {"jsonrpc": "2.0", "id": "b", "method": "shutdown"}])
        answer = server.receive()
        assert isinstance(answer, list), answer
        assert [(m["id"], m["error"]["code"]) for m in answer] == [("a", -32600), ("b", -32600)]
        server.send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
        assert server.receive() == {"jsonrpc": "2.0", "id": 2, "result": None}


class RawServer:
    """The server over bare pipes, one JSON message at a time (a reader thread)."""

    def __enter__(self):
        self.process = subprocess.Popen(SERVER_COMMAND, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.messages: list = []
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()

    def send(self, message) -> None:
        body = json.dumps(message).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def _read(self) -> None:
        out = self.process.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
                if line in (b"\r\n", b"\n"):
                    break
            message = json.loads(out.read(length))
            with self.arrived:
                self.messages.append(message)
                self.arrived.notify_all()

    def receive(self, timeout: float = TIMEOUT):
        """The next message that is not a notification from the server."""
        deadline = time.monotonic() + timeout
        with self.arrived:
            while True:
                while self.messages:
                    message = self.messages.pop(0)
                    if isinstance(message, list) or "id" in message:
                        return message
                left = deadline - time.monotonic()
                assert left > 0, "no answer from the server"
                self.arrived.wait(left)


if sys.platform != "linux":  # /proc is where memory is read
    pytestmark = [pytestmark, pytest.mark.skip(reason="needs /proc")]


BROKEN_SERVER = [sys.executable, "-c", (
    "import gpu_async_lsp.ide.host as host\n"
    "def broken(self, *args, **kwargs):\n"
    "    raise RuntimeError('injected by the test')\n"
    "host.Analyzer.analyze = broken\n"
    "from gpu_async_lsp.cli import main\n"
    "main(['serve'])\n")]


async def test_analysis_that_raises_is_reported_and_requests_answer(start_server):
    """A bug in the analysis: the client gets one internal-error finding for that version
    (it used to get nothing, and would wait for diagnostics forever), and requests on it
    answer at once with nothing."""
    session = await start_server("vscode", command=BROKEN_SERVER)
    uri = "file:///e2e/long/broken.mlir"
    diagnostics = await session.open_and_wait(uri, DOC)
    assert [d.code for d in diagnostics] == ["internal-error"]
    assert "injected by the test" in diagnostics[0].message
    assert await asyncio.wait_for(session.code_actions(uri), 5) == []
    assert session.alive


# -- a big first open ------------------------------------------------------------------------

async def test_big_first_open_is_shared_with_a_process_and_answers_like_check(start_server):
    """A first open of 400k characters or more is analysed by the server and a forked process
    together (the server's reader thread waits on stdin meanwhile: a multiprocessing child
    hung there). The diagnostics are check's, published once (before the other process's
    results are joined), at the places check gives; hover and definition work in the half
    whose units came back without IR."""
    from gpu_async_lsp.async_region import analyze
    from gpu_async_lsp.syntax import parse_document
    from gpu_async_lsp.text import LineIndex

    session = await start_server("vscode")
    uri = "file:///e2e/long/first_open.mlir"
    text = many_functions(16_000)
    assert len(text) > 400_000
    diagnostics = await session.open_and_wait(uri, text)
    expected = analyze(parse_document(text)).findings
    lines = LineIndex(text)
    places = [lines.position(f.start, session.encoding) for f in expected]
    assert sorted((d.code, d.message, d.range.start.line, d.range.start.character)
                  for d in diagnostics) == sorted(
        (f.code, f.message, p.line, p.character) for f, p in zip(expected, places))
    last = text.rindex("gpu.memcpy")
    hover = await asyncio.wait_for(session.client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri=uri), position(text, last + 4, session.encoding))),
        TIMEOUT)
    assert hover is not None and "gpu.memcpy" in hover.contents.value
    use = text.index("%host", last)
    found = await asyncio.wait_for(session.client.text_document_definition_async(
        types.DefinitionParams(types.TextDocumentIdentifier(uri=uri),
                               position(text, use + 1, session.encoding))), TIMEOUT)
    definition = text.rindex("%host: memref<?xf32>", 0, use)
    targets = found if isinstance(found, list) else [found]
    starts = [getattr(t, "target_selection_range", None) or t.range for t in targets]
    assert [s.start for s in starts] == [position(text, definition, session.encoding)]
    assert len(session.published_for(uri)) == 1  # the requests waited for the join


async def test_big_first_open_of_many_chunks_is_split_by_two_processes(start_server):
    """A -split-input-file text of 400k characters or more is split and analysed chunk by
    chunk by the server and a forked process (whose cache is read under a lock of its own:
    the server's other threads may hold the server's at the fork). The diagnostics are
    check's; hover works in the last chunk, whose units came back without IR."""
    from gpu_async_lsp.async_region import analyze
    from gpu_async_lsp.syntax import parse_document
    from gpu_async_lsp.text import LineIndex

    session = await start_server("vscode")
    uri = "file:///e2e/long/split_input.mlir"
    # Chunks that repeat every 7th (a unit found in both processes' chunks) and one of a
    # kind at the end.
    text = "\n// -----\n".join(many_functions(100, tag=f"c{i % 7}_") for i in range(400))
    text += "\n// -----\n" + many_functions(100, tag="last_")
    assert len(text) > 400_000
    diagnostics = await session.open_and_wait(uri, text)
    expected = analyze(parse_document(text)).findings
    lines = LineIndex(text)
    assert sorted((d.code, d.message, d.range.start.line) for d in diagnostics) == sorted(
        (f.code, f.message, lines.position(f.start, session.encoding).line) for f in expected)
    last = text.rindex("gpu.memcpy")
    hover = await asyncio.wait_for(session.client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri=uri), position(text, last + 4, session.encoding))),
        TIMEOUT)
    assert hover is not None and "gpu.memcpy" in hover.contents.value
