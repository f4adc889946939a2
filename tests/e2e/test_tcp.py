"""`--tcp --host --port` serves one client over a socket; `--log-file`/`--log-level` log there.

A raw JSON-RPC exchange over a real loopback socket (pytest-lsp drives stdio only)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _send(sock: socket.socket, message: dict) -> None:
    body = json.dumps(message).encode()
    sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)


def _receive(stream) -> dict:
    length = None
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("server closed the connection")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode().partition(":")
        if name.lower() == "content-length":
            length = int(value)
    return json.loads(stream.read(length))


def _response(stream, msg_id: int) -> dict:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        message = _receive(stream)
        if message.get("id") == msg_id and "method" not in message:
            return message
    raise TimeoutError(f"no response to request {msg_id}")


def test_tcp_server_answers_one_client_and_logs_to_file(tmp_path):
    port = _free_port()
    log = tmp_path / "server.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "gpu_async_lsp", "--tcp", "--host", "127.0.0.1", "--port",
         str(port), "--log-file", str(log), "--log-level", "debug"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()
                assert time.monotonic() < deadline, "the server did not listen"
                time.sleep(0.1)
        with sock, sock.makefile("rb") as stream:
            _send(sock, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"processId": None, "rootUri": None, "capabilities": {}}})
            init = _response(stream, 1)
            assert init["result"]["serverInfo"]["name"] == "gpu-async-lsp"
            assert init["result"]["capabilities"]["textDocumentSync"]["change"] == 2
            _send(sock, {"jsonrpc": "2.0", "method": "initialized", "params": {}})
            uri = "file:///tcp/a.mlir"
            _send(sock, {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
                "textDocument": {"uri": uri, "languageId": "mlir", "version": 1,
                                 "text": "func.func @f() {\n  gpu.wait\n  return\n}\n"}}})
            _send(sock, {"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
            assert _response(stream, 2)["result"] is None
            _send(sock, {"jsonrpc": "2.0", "method": "exit"})
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.stdout.read() == b""  # nothing but the protocol, and that went to the socket
    assert log.read_text(encoding="utf-8").strip()  # --log-file got the logs
