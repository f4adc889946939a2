"""Relays a language server's stdio and times one document's first open, for the editor test
that measures the first open of a big file in VS Code (tests/editors/test_vscode.py).

    python3 lsp_relay.py LOG URI_SUFFIX [--drop-stdio] -- COMMAND [ARGS...]

Runs COMMAND with the relay between it and the editor, passing every byte on unchanged. When
the editor's `textDocument/didOpen` of a document whose URI ends with URI_SUFFIX has been read
whole, and when the server's first `textDocument/publishDiagnostics` for that URI has been read
whole, it appends a JSON line to LOG ({"event": "open" | "published", "time": seconds on
time.monotonic, "pid": the server's}). Anything that is not LSP framing (an interpreter's
version probe) is passed on and ignored. `--drop-stdio`: the `--stdio` that the VS Code client
adds to a server's command is not passed on (mlir-lsp-server-22 does not take it). Standard library only: the system Python runs it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time


class Frames:
    """Splits a byte stream into LSP message bodies (`Content-Length` framing)."""

    def __init__(self):
        self.buffer = bytearray()
        self.broken = False

    def feed(self, data: bytes):
        if self.broken:
            return
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            length = None
            for line in bytes(self.buffer[:head_end]).split(b"\r\n"):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value.strip())
            if length is None:
                self.broken = True  # not LSP
                return
            start = head_end + 4
            if len(self.buffer) < start + length:
                return
            body = bytes(self.buffer[start:start + length])
            del self.buffer[:start + length]
            yield body


def _open_uri(body: bytes) -> str:
    """The document's URI of a didOpen, read from the message's head (it comes before the
    text), else from the whole message parsed."""
    m = re.search(rb'"uri"\s*:\s*("(?:[^"\\]|\\.)*")', body[:4096])
    if m is not None:
        return json.loads(m.group(1))
    return json.loads(body)["params"]["textDocument"]["uri"]


def main() -> int:
    log_path, suffix, *rest = sys.argv[1:]
    drop_stdio = rest[:1] == ["--drop-stdio"]
    dash, *command = rest[1:] if drop_stdio else rest
    assert dash == "--" and command, __doc__
    if drop_stdio:
        command = [arg for arg in command if arg != "--stdio"]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    state = {"uri": None, "published": False}
    lock = threading.Lock()

    def record(event: str, at: float) -> None:
        with lock, open(log_path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"event": event, "time": at, "pid": child.pid}) + "\n")

    # Each time is taken when the message has been read whole, and the relay's own work
    # (parsing the JSON of a big didOpen or of 10k diagnostics: 20-30 ms) is not counted:
    # the didOpen's URI is read from its head, a publication is passed on before it is parsed.
    def to_server() -> None:
        frames = Frames()
        while data := os.read(0, 1 << 16):
            for body in frames.feed(data):
                at = time.monotonic()
                if state["uri"] is None and b'"textDocument/didOpen"' in body:
                    uri = _open_uri(body)
                    if uri.endswith(suffix):
                        record("open", at)
                        state["uri"] = uri
            child.stdin.write(data)
        child.stdin.close()

    def to_editor() -> None:
        frames = Frames()
        while data := os.read(child.stdout.fileno(), 1 << 16):
            bodies = [(body, time.monotonic()) for body in frames.feed(data)]
            os.write(1, data)
            for body, at in bodies:
                if (state["uri"] is not None and not state["published"]
                        and b'"textDocument/publishDiagnostics"' in body
                        and json.loads(body)["params"]["uri"] == state["uri"]):
                    state["published"] = True
                    record("published", at)

    threading.Thread(target=to_server, daemon=True).start()
    out = threading.Thread(target=to_editor)
    out.start()
    out.join()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
