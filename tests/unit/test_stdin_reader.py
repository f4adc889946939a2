"""The server's stdin reader (server/protocol.py `StdinMessageReader`) reads a whole message per
thread hand-off; pygls's message loop, run over it, must see exactly what it sees over pygls's
own reader (`StdinAsyncReader`, a hand-off per header line and per body): the same messages
in the same order, for any byte stream: extra headers, blank lines, a body of length 0, a
second Content-Length, bodies that are not JSON or not UTF-8, input that ends anywhere."""

from __future__ import annotations

import asyncio
import io
import json
import random
import threading
from concurrent.futures import ThreadPoolExecutor

from pygls.io_ import StdinAsyncReader, run_async

from gpu_async_lsp.server.protocol import StdinMessageReader


class _Seen:
    """A protocol as pygls's loop uses it: records each message it is handed (its
    structure_message hook turns every JSON object into a sorted tuple of its items)."""

    def __init__(self):
        self.messages: list = []

    @staticmethod
    def structure_message(data):
        return ("object", tuple(sorted(data.items(), key=lambda kv: kv[0])))

    def handle_message(self, message):
        self.messages.append(message)


def _handled(reader_class, data: bytes) -> tuple[list, list]:
    seen, errors = _Seen(), []

    async def loop():
        with ThreadPoolExecutor(max_workers=1) as pool:
            await run_async(threading.Event(), reader_class(io.BufferedReader(io.BytesIO(data)),
                                                            pool),
                            seen, error_handler=lambda e, kind: errors.append(type(e).__name__))

    asyncio.run(loop())
    return seen.messages, errors


def _frame(body: bytes, rng: random.Random) -> bytes:
    headers = [b"Content-Length: %d\r\n" % len(body)]
    if rng.random() < 0.3:
        headers.append(b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n")
    if rng.random() < 0.2:
        headers.insert(0, b"X-Other: 1\r\n")
    if rng.random() < 0.1:  # a second length: pygls keeps the first
        headers.append(b"Content-Length: 3\r\n")
    if rng.random() < 0.1:  # a blank line before the length: pygls reads on
        headers.insert(0, b"\r\n")
    return b"".join(headers) + b"\r\n" + body


def _body(rng: random.Random) -> bytes:
    kind = rng.randrange(6)
    if kind == 0:
        return b""
    if kind == 1:
        return b"{not json"
    if kind == 2:
        return b'{"jsonrpc": "2.0", "method": "x", "params": {"t": "\xff\xfe"}}'
    value = {"jsonrpc": "2.0", "method": rng.choice(["initialized", "textDocument/didOpen"]),
             "params": {"text": "".join(rng.choice("ab\n\r\"\\é€𝄞") for _ in
                                        range(rng.randrange(0, 3000)))}}
    if rng.random() < 0.5:
        value["id"] = rng.randrange(100)
    return json.dumps(value, ensure_ascii=rng.random() < 0.5).encode()


def test_pygls_loop_sees_what_it_sees_over_its_own_reader():
    rng = random.Random(5)
    for _ in range(150):
        stream = b"".join(_frame(_body(rng), rng) for _ in range(rng.randrange(1, 6)))
        for end in (len(stream), rng.randrange(len(stream) + 1)):  # whole, or cut anywhere
            data = stream[:end]
            ours = _handled(StdinMessageReader, data)
            theirs = _handled(StdinAsyncReader, data)
            assert ours == theirs, data[:300]


def test_a_message_is_one_hand_off():
    """Three messages of two header lines each: three calls into the thread, not nine."""
    calls = []

    class Counting(ThreadPoolExecutor):
        def submit(self, fn, *args, **kwargs):
            calls.append(fn)
            return super().submit(fn, *args, **kwargs)

    body = b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}'
    frame = b"Content-Length: %d\r\nContent-Type: x\r\n\r\n%s" % (len(body), body)
    seen = _Seen()

    async def loop():
        with Counting(max_workers=1) as pool:
            await run_async(threading.Event(),
                            StdinMessageReader(io.BufferedReader(io.BytesIO(frame * 3)), pool),
                            seen)

    asyncio.run(loop())
    assert len(seen.messages) == 3
    assert len(calls) == 4  # a message each, and the end of the input


def test_a_body_longer_than_memory_is_waited_for_not_allocated():
    """`Content-Length: 99999999999999`: read(n) would allocate n bytes first and fail; the
    reader waits for the body like any other, and what came of it is handed on at the end
    of the input."""
    data = b"Content-Length: 99999999999999\r\n\r\n{}"
    seen, errors = _handled(StdinMessageReader, data)
    assert seen == [("object", ())] and errors == []


def test_the_server_survives_a_length_longer_than_memory(tmp_path):
    """The real server over pipes: alive while the body is awaited, and at the end of its
    input it ends as without `exit` (status 1), with no traceback."""
    import subprocess
    import sys
    import time

    proc = subprocess.Popen([sys.executable, "-m", "gpu_async_lsp", "serve"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp_path)
    init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                       "params": {"processId": None, "rootUri": None,
                                  "capabilities": {}}}).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(init), init))
    proc.stdin.write(b"Content-Length: 99999999999999\r\n\r\n{}")
    proc.stdin.flush()
    time.sleep(1.0)
    assert proc.poll() is None, proc.stderr.read().decode("utf-8", "replace")
    proc.stdin.close()
    assert proc.wait(timeout=60) == 1
    err = proc.stderr.read().decode("utf-8", "replace")
    assert "Traceback" not in err and "MemoryError" not in err, err
    assert b'"id": 1' in proc.stdout.read()
