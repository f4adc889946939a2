"""Protocol layer: where this server departs from pygls's JSON-RPC and LSP handling.

- **Document sync**: incremental changes are applied through `text.LineIndex` (the one
  conversion module for positions). What LSP lets a server clamp is clamped (a column past a
  line's end or between its CR and LF is the line's end, a line past the end is the end, a range
  given end first is taken in order). A change that cannot be applied at all (a negative
  position, a change that does not fit its method's shape, a batch holding it) is never
  dropped in silence: the document is marked out of sync (`Server.lose_sync`), its last good
  text is kept, and the next full-text change is taken as the truth.
- **Bytes that are not UTF-8** in a message are read as U+FFFD, so the message is handled and
  line structure stays in step with the client; the document is told about (once).
- **JSON-RPC errors** where pygls logs and drops: a batch (LSP has none), a message whose
  `jsonrpc` is not "2.0", a request after `shutdown` (InvalidRequest, -32600), a request whose
  params do not fit (InvalidParams), a client response that does not fit its request.
- **Exit** ends the process at once (`os._exit`) with status 0 after `shutdown` and 1 without:
  nothing waits for a running analysis or tears down a big heap object by object.
- **Big results** (diagnostics, code actions, lenses, symbols) are sent as JSON text built off
  the event loop, not as lsprotocol objects through cattrs (json.dumps of plain values: ~6 ms
  for a 50k-line file's diagnostics; through cattrs ~20 ms; lsprotocol objects ~50 ms).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import json
import logging
import os
import re
import sys

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCProtocol,
    LanguageServerProtocol,
)
from pygls.protocol.language_server import lsp_method

from gpu_async_lsp.server import convert
from gpu_async_lsp.text import LineIndex

log = logging.getLogger("gpu_async_lsp.server")

IGNORED = "$/gpuAsyncLsp/invalidMessage"  # what an unreadable message becomes
INVALID_REQUEST = -32600


class RawResult:
    """A request's result already serialized as JSON text (see Protocol._send_response)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


# pygls's header rule (pygls.io_.run_async): the first such line gives the body's length.
_CONTENT_LENGTH = re.compile(rb"^Content-Length: (\d+)\r\n$")
_READ_AT_ONCE = 64 << 20  # a 1.5M-line document's didOpen


class StdinMessageReader:
    """Reads stdin one whole message at a time in a thread (its header lines, then the body of
    the length they give) and hands the lines and the body to pygls's loop from memory: one
    hand-off between the thread and the event loop a message. pygls's own reader
    (`StdinAsyncReader`) makes one a header line and one for the body, three a message,
    0.1-0.4 ms each: ~1 ms of a fresh server's first open went to the `initialized`
    notification's and the didOpen's. The lines are read and the body found by pygls's rule
    (`_CONTENT_LENGTH`), so what its loop asks for next is always what was read ahead."""

    def __init__(self, stdin, executor):
        self._stdin = stdin
        self._executor = executor
        self._lines: collections.deque[bytes] = collections.deque()
        self._body: bytes | None = None

    def _message(self) -> tuple[list[bytes], bytes | None]:
        """In the thread: a message's header lines up to the blank line after a
        Content-Length (the last line empty at the end of the input) and its body."""
        lines: list[bytes] = []
        length = None
        while True:
            line = self._stdin.readline()
            lines.append(line)
            if not line:
                return lines, None
            if length is None:
                match = _CONTENT_LENGTH.fullmatch(line)
                if match:
                    length = int(match.group(1))
            elif not line.strip():
                return lines, self._read(length) if length else None

    def _read(self, n: int) -> bytes:
        """In the thread: n bytes, or those up to the end of the input. A body over
        `_READ_AT_ONCE` is read in pieces: `read(n)` allocates n bytes first, and a header
        that claims more than the memory (`Content-Length: 99999999999999`) ended the
        server with a MemoryError; now it waits for the body like any other, and ends as
        at the end of the input if that comes first."""
        if n <= _READ_AT_ONCE:
            return self._stdin.read(n)
        pieces = []
        while n > 0:
            piece = self._stdin.read(min(n, _READ_AT_ONCE))
            if not piece:
                break
            pieces.append(piece)
            n -= len(piece)
        return b"".join(pieces)

    async def readline(self) -> bytes:
        if not self._lines:
            loop = asyncio.get_running_loop()
            lines, self._body = await loop.run_in_executor(self._executor, self._message)
            self._lines.extend(lines)
        return self._lines.popleft()

    async def readexactly(self, n: int) -> bytes:
        body, self._body = self._body, None
        if body is None or len(body) != n:  # not read ahead (not pygls's loop): read it now
            loop = asyncio.get_running_loop()
            rest = await loop.run_in_executor(self._executor, self._read,
                                              n - len(body or b""))
            body = (body or b"") + rest
        return body


class Utf8Reader:
    """A reader of message bodies that turns bytes that are not UTF-8 into U+FFFD (pygls would
    fail to decode the message and drop it), and tells the protocol it did. A body is handed
    on decoded (pygls passes it to json.loads, which takes text too): json.loads would decode
    bytes again, with an error handler that took 1.6 ms of a 2 MB didOpen's 4.6."""

    def __init__(self, reader, protocol: Protocol):
        self._reader = reader
        self._protocol = protocol

    def readline(self):
        return self._reader.readline()

    async def readexactly(self, n: int) -> str:
        body = await self._reader.readexactly(n)
        try:
            return body.decode("utf-8")
        except UnicodeDecodeError:
            self._protocol.replaced_bytes = True
            return body.decode("utf-8", "replace")


def _error(msg_id, code: int, message: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id,
                       "error": {"code": code, "message": message}})


class Protocol(LanguageServerProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.replaced_bytes = False  # the message being handled had bytes that are not UTF-8

    # -- document sync ------------------------------------------------------------------------

    @lsp_method(lsp.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: lsp.DidOpenTextDocumentParams):
        self._server.documents.opened(params.text_document.uri)
        yield from super().lsp_text_document__did_open(params)

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams):
        """Apply the changes through the document's line index (pygls's own per-line rebuild
        is O(lines) per keystroke and splits CRLFs)."""
        uri = params.text_document.uri
        server = self._server
        doc = server.current(uri)
        if doc is not None:
            state = server.documents.get(uri)
            text, index = doc.source, state.text_index if state else None
            if index is None or index.text is not text:
                index = LineIndex(text)
            encoding = convert.encoding_of(self.workspace.position_encoding)
            synced = state is None or state.out_of_sync is None
            for change in params.content_changes:
                if isinstance(change, lsp.TextDocumentContentChangePartial):
                    if not synced:
                        continue  # relative to a text this server does not have
                    a = convert.offset_of(index, change.range.start, encoding)
                    b = convert.offset_of(index, change.range.end, encoding)
                    start, end = min(a, b), max(a, b)
                    text = text[:start] + change.text + text[end:]
                    index = index.edited(text, start, end, start + len(change.text))
                else:
                    text = change.text
                    index = LineIndex(text)
                    synced = True
            self.workspace.update_text_document(
                params.text_document, lsp.TextDocumentContentChangeWholeDocument(text=text))
            if state is not None:
                state.text_index = index
                if synced and state.out_of_sync is not None:
                    server.regain_sync(uri)
        if self.replaced_bytes:
            server.tell_replaced_bytes(uri)
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    # -- messages pygls would drop ------------------------------------------------------------

    def structure_message(self, data):
        """pygls raises when a message does not fit its method, and the message is lost.
        A request with bad params (a negative position, a missing field) is answered with
        the JSON-RPC error; a client's response that does not fit (`workspace/applyEdit`
        answered with `null`) fails the request waiting for it instead of leaving it
        waiting forever; a change that does not fit puts its document out of sync."""
        made = made_without_cattrs(data)
        if made is not None:
            return made
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if isinstance(data, dict) and "id" in data and "method" in data:
                log.warning("invalid params for %s", data.get("method"))
                self._send_response(data["id"], error=error.to_response_error())
            elif isinstance(data, dict) and "id" in data:
                log.warning("invalid response to request %s", data.get("id"))
                return lsp.ResponseErrorMessage(id=data["id"], error=lsp.ResponseError(
                    error.code, f"the client's response does not fit its request: {error}"))
            else:
                self._dropped_notification(data, "its parameters do not fit the protocol")
            return JsonRPCNotification(method=IGNORED, params=None,
                                       jsonrpc=JsonRPCProtocol.VERSION)

    def _dropped_notification(self, data, why: str) -> None:
        """A notification that cannot be handled: a document change loses the document's
        sync; anything else is logged."""
        method = data.get("method") if isinstance(data, dict) else None
        log.warning("notification %s not handled: %s", method, why)
        if method == lsp.TEXT_DOCUMENT_DID_CHANGE:
            params = data.get("params")
            document = params.get("textDocument") if isinstance(params, dict) else None
            uri = document.get("uri") if isinstance(document, dict) else None
            version = document.get("version") if isinstance(document, dict) else None
            if isinstance(uri, str):
                self._server.lose_sync(uri, f"a change could not be applied ({why})",
                                       version if isinstance(version, int) else None)

    def handle_message(self, message):
        try:
            if isinstance(message, list):
                self._reject_batch(message)
            elif not hasattr(message, "jsonrpc") or message.jsonrpc != JsonRPCProtocol.VERSION:
                self._reject_version(message)
            elif self._shutdown and getattr(message, "method", lsp.EXIT) != lsp.EXIT \
                    and getattr(message, "id", None) is not None \
                    and hasattr(message, "params"):
                self.send_json_text(_error(message.id, INVALID_REQUEST,
                                           "the server is shutting down"))
            else:
                super().handle_message(message)
        finally:
            self.replaced_bytes = False

    def _reject_batch(self, messages: list) -> None:
        """LSP has no batches: each request in one gets InvalidRequest; a document change in
        one puts its document out of sync."""
        log.warning("a batch of %d messages was rejected", len(messages))
        errors = []
        for m in messages:
            data = self._unstructured(m)
            if isinstance(data, dict) and "id" in data and "method" in data:
                errors.append(_error(data["id"], INVALID_REQUEST,
                                     "batch messages are not part of LSP"))
            elif isinstance(data, dict) and "method" in data:
                self._dropped_notification(data, "it came in a batch")
        if not messages or errors:
            self.send_json_text("[" + ",".join(errors) + "]" if errors else
                                _error(None, INVALID_REQUEST, "an empty batch"))

    def _reject_version(self, message) -> None:
        data = self._unstructured(message)
        version = data.get("jsonrpc") if isinstance(data, dict) else None
        why = f"its jsonrpc is {version!r}, not '2.0'"
        if isinstance(data, dict) and "id" in data and "method" in data:
            self.send_json_text(_error(data["id"], INVALID_REQUEST, f"invalid request: {why}"))
        else:
            self._dropped_notification(data, why)

    def _unstructured(self, message):
        if isinstance(message, dict):
            return message
        try:
            return self._converter.unstructure(message)
        except Exception:
            return None

    # -- exit ---------------------------------------------------------------------------------

    @lsp_method(lsp.EXIT)
    def lsp_exit(self, *args):
        """End the process now: 0 after `shutdown`, 1 without (LSP 3.17, "Exit")."""
        exit_now(0 if self._shutdown else 1)

    # -- sending ------------------------------------------------------------------------------

    def _send_response(self, msg_id, result=None, error=None):
        if error is None and isinstance(result, RawResult):
            self._result_types.pop(msg_id, None)
            self.send_json_text('{"jsonrpc":"2.0","id":' + json.dumps(msg_id) + ',"result":'
                                + result.text + "}")
            return
        super()._send_response(msg_id, result, error)

    def send_json_text(self, body: str) -> None:
        """Send a message already serialized (framed as pygls frames its own messages)."""
        if self.writer is None:
            return
        data = body.encode("utf-8")
        header = (f"Content-Length: {len(data)}\r\n"
                  f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n")
        result = self.writer.write(header.encode("ascii") + data)
        if inspect.isawaitable(result):
            asyncio.ensure_future(result)


def made_without_cattrs(data):
    """The notifications a client sends before its first document's diagnostics can go out
    (`initialized`, `workspace/didChangeConfiguration`, `textDocument/didOpen`), made from
    their JSON where each field has its type, as cattrs would structure them; None for
    anything else (cattrs structures it, and says what does not fit). cattrs generates its
    code for a type on first use: in a fresh server ~1.1 ms for each of the first two and
    1.3 ms for a didOpen, each between the client's didOpen and the analysis."""
    if not isinstance(data, dict) or "id" in data \
            or data.get("jsonrpc") != JsonRPCProtocol.VERSION:
        return None
    make = _MADE_WITHOUT_CATTRS.get(data.get("method"))
    return make(data) if make is not None else None


def _initialized(data) -> lsp.InitializedNotification | None:
    """`initialized`: its params an object (LSP: `{}`; keys it does not know are ignored)."""
    if not isinstance(data.get("params"), dict):
        return None
    return lsp.InitializedNotification(params=lsp.InitializedParams(),
                                       method=lsp.INITIALIZED, jsonrpc=JsonRPCProtocol.VERSION)


def _did_change_configuration(data) -> lsp.DidChangeConfigurationNotification | None:
    """`workspace/didChangeConfiguration`: its settings any JSON value, kept as it is."""
    params = data.get("params")
    if not isinstance(params, dict) or "settings" not in params:
        return None
    return lsp.DidChangeConfigurationNotification(
        params=lsp.DidChangeConfigurationParams(settings=params["settings"]),
        method=lsp.WORKSPACE_DID_CHANGE_CONFIGURATION, jsonrpc=JsonRPCProtocol.VERSION)


def _did_open(data) -> lsp.DidOpenTextDocumentNotification | None:
    """`textDocument/didOpen`: its document's uri, language and text strings, its version an
    int in LSP's range (the message's own fields: `made_without_cattrs`)."""
    params = data.get("params")
    doc = params.get("textDocument") if isinstance(params, dict) else None
    if not isinstance(doc, dict):
        return None
    uri, language, version, text = (doc.get("uri"), doc.get("languageId"), doc.get("version"),
                                    doc.get("text"))
    if not (type(uri) is str and type(language) is str and type(version) is int
            and type(text) is str):
        return None
    try:
        return lsp.DidOpenTextDocumentNotification(
            params=lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(
                uri=uri, language_id=language, version=version, text=text)),
            method=lsp.TEXT_DOCUMENT_DID_OPEN, jsonrpc=JsonRPCProtocol.VERSION)
    except (TypeError, ValueError):  # a validator's (a version out of range)
        return None


_MADE_WITHOUT_CATTRS = {
    lsp.INITIALIZED: _initialized,
    lsp.WORKSPACE_DID_CHANGE_CONFIGURATION: _did_change_configuration,
    lsp.TEXT_DOCUMENT_DID_OPEN: _did_open,
}


def exit_now(code: int) -> None:
    """Flush what was written and end the process without tearing the heap down (a 1 GB heap
    takes more than 30 s to free object by object) or joining worker threads (a running
    analysis of a 200k-line file would hold the exit for seconds)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(Exception):
        logging.shutdown()
    os._exit(code)
