"""Drive the real `gpu-async-lsp` server subprocess over stdio with pytest-lsp's client.

A `Session` is one server process and one client speaking with the capabilities of a real
editor (tests/e2e/clients.py). It keeps a client-side copy of every open document, edited with
the same change events it sends, every `publishDiagnostics` in arrival order, and converts
offsets to positions in the encoding the server negotiated, with its own converter (it must not
share the server's, or both could be wrong the same way).

The reference for every rewrite is the CLI: `check --fix -`.
"""

from __future__ import annotations

import asyncio
import bisect
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.protocol import default_converter
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

from tests.e2e.clients import CAPABILITIES, has_document_changes

SERVER_COMMAND = [sys.executable, "-m", "gpu_async_lsp", "serve"]
# A big first open is shared with a forked process whatever else the machine runs, as the
# tests of that path expect (parallel.cpu_to_spare would skip it beside a busy CPU).
SERVER_ENV = {**os.environ, "GPU_ASYNC_LSP_SECOND_PROCESS": "always"}
# Generous: CI machines are slow; a passing test never waits this long.
TIMEOUT = 20.0
SOURCE = "gpu-async"

_converter = get_converter()


# -- positions in an encoding, written here independently of gpu_async_lsp.text ---------------

_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # LSP 3.17: "\n", "\r\n" and "\r" end a line


def line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in _LINE_BREAK.finditer(text)]


def _line_content_end(text: str, start: int) -> int:
    m = _LINE_BREAK.search(text, start)
    return m.start() if m else len(text)


def units(s: str, encoding: str) -> int:
    """Length of `s` in code units of `encoding`."""
    if encoding == "utf-8":
        return len(s.encode("utf-8", "surrogatepass"))
    if encoding == "utf-16":
        return len(s.encode("utf-16-le", "surrogatepass")) // 2
    assert encoding == "utf-32", encoding
    return len(s)


def position(text: str, offset: int, encoding: str) -> types.Position:
    starts = line_starts(text)
    line = bisect.bisect_right(starts, offset) - 1
    return types.Position(line, units(text[starts[line]:offset], encoding))


def offset(text: str, pos: types.Position, encoding: str) -> int:
    """Offset of an LSP position; a line past the end means the end of the text, a column
    past its line's end the line's end (LSP 3.17, "Position")."""
    starts = line_starts(text)
    if pos.line >= len(starts):
        return len(text)
    start = starts[pos.line]
    end = _line_content_end(text, start)
    seen = 0
    for i in range(start, end):
        if seen >= pos.character:
            assert seen == pos.character, f"column {pos.character} inside a character"
            return i
        seen += units(text[i], encoding)
    return end


def text_range(text: str, start: int, end: int, encoding: str) -> types.Range:
    return types.Range(position(text, start, encoding), position(text, end, encoding))


def find_range(text: str, needle: str, encoding: str, occurrence: int = 0,
               after: str | None = None) -> types.Range:
    """The range of the `occurrence`-th `needle` (after the first `after`, if given)."""
    at = text.index(after) if after is not None else 0
    for _ in range(occurrence + 1):
        at = text.index(needle, at)
        found = at
        at += 1
    return text_range(text, found, found + len(needle), encoding)


def whole_range(text: str, encoding: str) -> types.Range:
    return text_range(text, 0, len(text), encoding)


def apply_text_edits(text: str, edits: Iterable[types.TextEdit], encoding: str) -> str:
    """Apply LSP TextEdits (all relative to `text`) as a client does: edits may not overlap;
    of several inserted at one position, the first in the list comes first."""
    spans = []
    for i, e in enumerate(edits):
        start, end = offset(text, e.range.start, encoding), offset(text, e.range.end, encoding)
        assert start <= end, f"edit with start after end: {e.range}"
        spans.append((start, end, i, e.new_text))
    spans.sort()
    for (s1, e1, _, _), (s2, e2, _, _) in zip(spans, spans[1:]):
        assert e1 <= s2, f"overlapping edits at offsets {s1}-{e1} and {s2}-{e2}"
    out, at = [], 0
    for start, end, _, new_text in spans:
        out.append(text[at:start])
        out.append(new_text)
        at = end
    out.append(text[at:])
    return "".join(out)


# -- the reference: the CLI -------------------------------------------------------------------

_CHECK_FIX: dict[str, str] = {}
# Without the lowering, as the sessions start the server (`Session.start`'s default): the
# pass's text, which these tests compare with mlir-opt-22's.
_CLI = [sys.executable, "-m", "gpu_async_lsp", "check", "--fix", "--lowering", "none"]


def check_fix(text: str, semantics: str = "original", thread_launch: bool = False) -> str:
    """What `gpu-async-lsp check --fix --semantics S [--thread-launch] -` writes for `text`
    (the whole rewritten buffer)."""
    key = text if (semantics, thread_launch) == ("original", False) else (
        semantics, thread_launch, text)
    if key not in _CHECK_FIX:
        flags = ["--thread-launch"] if thread_launch else []
        proc = subprocess.run([*_CLI, "--semantics", semantics, *flags, "-"],
                              input=text.encode("utf-8", "surrogatepass"),
                              capture_output=True, timeout=120)
        assert proc.returncode in (0, 1), proc.stderr.decode("utf-8", "replace")
        _CHECK_FIX[key] = proc.stdout.decode("utf-8", "surrogatepass")
    return _CHECK_FIX[key]


def prefetch_check_fix(texts: Iterable[str]) -> None:
    """`check --fix` of many texts in one run of the CLI, as files of one directory (the same
    rewrite as on stdin; a file with syntax errors is left as it is, like stdin's buffer)."""
    todo = [t for t in dict.fromkeys(texts) if t not in _CHECK_FIX]
    if not todo:
        return
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp, f"{i:04d}.mlir") for i in range(len(todo))]
        for path, text in zip(paths, todo):
            path.write_bytes(text.encode("utf-8", "surrogatepass"))
        proc = subprocess.run([*_CLI, tmp], capture_output=True, timeout=300)
        assert proc.returncode in (0, 1), proc.stderr.decode("utf-8", "replace")
        for path, text in zip(paths, todo):
            _CHECK_FIX[text] = path.read_bytes().decode("utf-8", "surrogatepass")


def fix_function(text: str, name: str, semantics: str = "original") -> str:
    """`text` with only function `name` (e.g. "@f") rewritten, by the core's own plan."""
    from gpu_async_lsp.async_region import analyze
    from gpu_async_lsp.edits import apply_edits

    analysis = analyze(text, semantics=semantics)
    chosen = [fn for fn in analysis.functions if fn.name == name]
    assert chosen, f"no function {name}"
    return apply_edits(text, analysis.edits(chosen))


# -- the client ------------------------------------------------------------------------------

def _make_client() -> LanguageClient:
    """pytest-lsp's client, keeping every publishDiagnostics (not only the last per URI) and
    answering registrations the way editors do."""
    client = LanguageClient(converter_factory=default_converter)
    client.publications = []  # type: ignore[attr-defined]
    client.registrations = []  # type: ignore[attr-defined]
    client.applied_edits = []  # type: ignore[attr-defined]
    client.apply_edit_answer = "applied"  # type: ignore[attr-defined]
    client.refreshes = []  # type: ignore[attr-defined]  # workspace/*/refresh requests

    def publish(ls: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
        ls.diagnostics[params.uri] = params.diagnostics
        ls.publications.append(params)  # type: ignore[attr-defined]

    def register(ls: LanguageClient, params: types.RegistrationParams) -> None:
        ls.registrations.extend(params.registrations)  # type: ignore[attr-defined]

    def unregister(ls: LanguageClient, params: types.UnregistrationParams) -> None:
        return None

    def apply_edit(ls: LanguageClient, params: types.ApplyWorkspaceEditParams):
        """workspace/applyEdit: kept for the test, which applies it to its copy. A test may
        make the client answer as a faulty or unwilling editor would (`apply_edit_answer`)."""
        ls.applied_edits.append(params)  # type: ignore[attr-defined]
        answer = ls.apply_edit_answer  # type: ignore[attr-defined]
        if answer == "null":
            return None
        if answer == "error":
            raise RuntimeError("the editor failed to apply the edit")
        return types.ApplyWorkspaceEditResult(applied=answer == "applied",
                                              failure_reason=None if answer == "applied"
                                              else "the user said no")

    def refresh(method: str):
        def answer(ls: LanguageClient, params) -> None:
            ls.refreshes.append(method)  # type: ignore[attr-defined]
        return answer

    features = dict(DEFAULT_CLIENT_FEATURES)
    for method in (types.WORKSPACE_CODE_LENS_REFRESH, types.WORKSPACE_INLAY_HINT_REFRESH):
        features[method] = refresh(method)
    features[types.WORKSPACE_APPLY_EDIT] = apply_edit
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = publish
    features[types.CLIENT_REGISTER_CAPABILITY] = register
    features[types.CLIENT_UNREGISTER_CAPABILITY] = unregister
    register_lsp_features(client, features)
    return client


class ServerGone(AssertionError):
    pass


class Session:
    """One server process, one client with a named capability set."""

    def __init__(self, client: LanguageClient, client_name: str):
        self.client = client
        self.client_name = client_name
        self.result: types.InitializeResult | None = None
        self.encoding = "utf-16"
        self.lowering: str | None = "none"
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}

    # -- start and stop -----------------------------------------------------------------------

    @classmethod
    async def start(cls, client_name: str = "vscode", *,
                    lowering: str | None = "none",
                    initialization_options: Any = None,
                    command: list[str] | None = None,
                    settings: dict | None = None) -> Session:
        config = ClientServerConfig(server_command=command or SERVER_COMMAND,
                                    client_factory=_make_client, server_env=SERVER_ENV)
        client = await config.start()
        session = cls(client, client_name)
        session.lowering = lowering
        initialization_options = session._with_lowering(initialization_options)
        if settings is not None:
            settings = session._with_lowering(settings)
        if settings is not None:
            # What an editor answers to workspace/configuration holds the same settings.
            client.set_configuration(settings, section="gpuAsyncLsp")
        caps = _converter.structure(CAPABILITIES[client_name], types.ClientCapabilities)
        params = types.InitializeParams(
            capabilities=caps,
            client_info=types.ClientInfo(name=f"e2e-{client_name}", version="1"),
            initialization_options=initialization_options,
            root_uri=None,
        )
        session.result = await asyncio.wait_for(client.initialize_session(params), TIMEOUT)
        session.encoding = session.result.capabilities.position_encoding or "utf-16"
        return session

    @property
    def process(self) -> asyncio.subprocess.Process:
        assert self.client._server is not None
        return self.client._server

    @property
    def alive(self) -> bool:
        return self.process.returncode is None and not self.client.stopped

    async def shutdown(self, timeout: float = 5.0) -> float:
        """shutdown + exit; returns how long the process took to end after `exit`."""
        await asyncio.wait_for(self.client.shutdown_async(None), timeout)
        self.client.exit(None)
        t0 = time.monotonic()
        await asyncio.wait_for(self.process.wait(), timeout)
        return time.monotonic() - t0

    async def close_all(self) -> None:
        """Teardown: end the process politely, else kill it (only this process)."""
        try:
            if self.alive:
                await self.shutdown()
        except Exception:
            pass
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        await asyncio.wait_for(self.client.stop(), 10)

    # -- documents ----------------------------------------------------------------------------

    def open(self, uri: str, text: str, version: int = 1, language_id: str = "mlir") -> None:
        self.texts[uri] = text
        self.versions[uri] = version
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id=language_id, version=version,
                                   text=text)))

    async def open_and_wait(self, uri: str, text: str, version: int = 1
                            ) -> list[types.Diagnostic]:
        self.open(uri, text, version)
        return (await self.wait_diagnostics(uri, version)).diagnostics

    def change(self, uri: str, changes: list[tuple[types.Range | None, str]],
               version: int | None = None) -> int:
        """Send one didChange with `changes` (range None: the whole text), in order; the local
        copy follows. Returns the new version."""
        version = self.versions[uri] + 1 if version is None else version
        events: list[Any] = []
        text = self.texts[uri]
        for rng, new_text in changes:
            if rng is None:
                events.append(types.TextDocumentContentChangeWholeDocument(text=new_text))
                text = new_text
            else:
                events.append(types.TextDocumentContentChangePartial(range=rng, text=new_text))
                text = apply_text_edits(text, [types.TextEdit(rng, new_text)], self.encoding)
        self.texts[uri] = text
        self.versions[uri] = version
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=uri, version=version), events))
        return version

    def replace(self, uri: str, start: int, end: int, new_text: str) -> int:
        """One incremental change replacing offsets [start, end) of the local copy."""
        rng = text_range(self.texts[uri], start, end, self.encoding)
        return self.change(uri, [(rng, new_text)])

    def close(self, uri: str) -> None:
        self.client.text_document_did_close(types.DidCloseTextDocumentParams(
            types.TextDocumentIdentifier(uri=uri)))

    def range_of(self, uri: str, needle: str, occurrence: int = 0,
                 after: str | None = None) -> types.Range:
        return find_range(self.texts[uri], needle, self.encoding, occurrence, after)

    # -- settings -----------------------------------------------------------------------------

    def _with_lowering(self, settings: Any) -> Any:
        """`settings` with this session's `lowering` (None: the server's default) where they
        do not say: the tests of other features run with the not-lowered findings off, as
        the library's `analyze` (their reference) has them; tests/e2e/test_lowering.py turns
        them on. Settings of another shape are sent as they are (tests of bad settings)."""
        if self.lowering is None:
            return settings
        if settings is None:
            return {"lowering": self.lowering}
        if isinstance(settings, dict) and isinstance(settings.get("gpuAsyncLsp"), dict):
            return {**settings, "gpuAsyncLsp": self._with_lowering(settings["gpuAsyncLsp"])}
        if isinstance(settings, dict) and "gpuAsyncLsp" not in settings:
            return {"lowering": self.lowering, **settings}
        return settings

    def change_configuration(self, settings: Any, nested: bool = True) -> None:
        """workspace/didChangeConfiguration with `settings` under "gpuAsyncLsp" (or directly);
        the client's answer to workspace/configuration holds the same settings."""
        settings = self._with_lowering(settings)
        self.client.set_configuration(settings, section="gpuAsyncLsp")
        payload = {"gpuAsyncLsp": settings} if nested else settings
        self.client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings=payload))

    @property
    def warnings(self) -> list[types.ShowMessageParams]:
        return [m for m in self.client.messages if m.type == types.MessageType.Warning]

    async def round_trip(self) -> None:
        """A request answered (with a result or an error: either will do): every message the
        server sent before answering has arrived."""
        request = self.client.protocol.send_request_async(
            types.TEXT_DOCUMENT_CODE_ACTION,
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri="file:///e2e/round-trip.mlir"),
                range=types.Range(types.Position(0, 0), types.Position(0, 0)),
                context=types.CodeActionContext(diagnostics=[])))
        try:
            await asyncio.wait_for(request, TIMEOUT)
        except asyncio.TimeoutError:
            raise
        except Exception:
            pass

    # -- diagnostics --------------------------------------------------------------------------

    @property
    def publications(self) -> list[types.PublishDiagnosticsParams]:
        return self.client.publications  # type: ignore[attr-defined]

    def published_for(self, uri: str) -> list[types.PublishDiagnosticsParams]:
        return [p for p in self.publications if p.uri == uri]

    async def wait_until(self, predicate: Callable[[], Any], what: str,
                         timeout: float = TIMEOUT) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if not self.alive:
                raise ServerGone(f"server process ended (exit {self.process.returncode}) "
                                 f"while waiting for {what}")
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            await asyncio.sleep(0.01)

    async def wait_diagnostics(self, uri: str, version: int | None = None,
                               timeout: float = TIMEOUT) -> types.PublishDiagnosticsParams:
        """The latest publication for `uri` with `version` (default: the current version)."""
        version = self.versions.get(uri) if version is None else version

        def found():
            for p in reversed(self.published_for(uri)):
                if p.version == version:
                    return p
            return None

        return await self.wait_until(found, f"diagnostics of {uri} version {version}", timeout)

    async def wait_cleared(self, uri: str, timeout: float = TIMEOUT
                           ) -> types.PublishDiagnosticsParams:
        n = len(self.published_for(uri))

        def found():
            later = self.published_for(uri)[n:]
            return next((p for p in later if not p.diagnostics), None)

        if self.published_for(uri) and not self.published_for(uri)[-1].diagnostics:
            return self.published_for(uri)[-1]
        return await self.wait_until(found, f"an empty publication for {uri}", timeout)

    def latest_diagnostics(self, uri: str) -> list[types.Diagnostic]:
        pubs = self.published_for(uri)
        return list(pubs[-1].diagnostics) if pubs else []

    # -- requests -----------------------------------------------------------------------------

    async def code_actions(self, uri: str, rng: types.Range | None = None,
                           diagnostics: list[types.Diagnostic] | None = None,
                           only: list[str] | None = None, resolve: bool = True,
                           timeout: float = TIMEOUT) -> list[types.CodeAction]:
        """textDocument/codeAction as an editor sends it: by default over the whole document
        with the diagnostics last published for it. An action that comes without its edit
        (a client that can resolve edits gets them lazily) is resolved with codeAction/resolve,
        as the editor does when it is chosen, unless `resolve` is False."""
        if rng is None:
            rng = whole_range(self.texts[uri], self.encoding)
        if diagnostics is None:
            diagnostics = self.latest_diagnostics(uri)
        params = types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=rng,
            context=types.CodeActionContext(
                diagnostics=diagnostics, only=only,
                trigger_kind=types.CodeActionTriggerKind.Invoked),
        )
        result = await asyncio.wait_for(
            self.client.text_document_code_action_async(params), timeout)
        actions = list(result or [])
        for a in actions:
            assert isinstance(a, types.CodeAction), f"a Command instead of a CodeAction: {a}"
        if resolve:
            actions = [await self.resolve_code_action(a, timeout) for a in actions]
        return actions

    async def resolve_code_action(self, action: types.CodeAction,
                                  timeout: float = TIMEOUT) -> types.CodeAction:
        """`action` with its edit: as it is, or from codeAction/resolve when it came lazily."""
        if action.edit is not None or action.disabled is not None:
            return action
        assert action.data is not None, f"action {action.title!r}: no edit and no data"
        return await asyncio.wait_for(self.client.code_action_resolve_async(action), timeout)

    def edits_of(self, action: types.CodeAction, uri: str) -> list[types.TextEdit]:
        """The TextEdits of `action` for `uri`, checking the WorkspaceEdit has the shape the
        client's capabilities ask for: versioned documentChanges, or plain changes."""
        edit = action.edit
        assert edit is not None, f"action {action.title!r} carries no edit"
        if has_document_changes(self.client_name):
            assert edit.changes is None, "documentChanges client got `changes` too"
            assert edit.document_changes, f"action {action.title!r}: no documentChanges"
            assert len(edit.document_changes) == 1, edit.document_changes
            doc_edit = edit.document_changes[0]
            assert isinstance(doc_edit, types.TextDocumentEdit), doc_edit
            assert doc_edit.text_document.uri == uri
            assert doc_edit.text_document.version == self.versions[uri], (
                f"edit for version {doc_edit.text_document.version}, "
                f"document is at {self.versions[uri]}")
            return list(doc_edit.edits)
        assert edit.document_changes is None, (
            f"{self.client_name} has no workspaceEdit.documentChanges but got them")
        assert edit.changes is not None and list(edit.changes) == [uri], edit.changes
        return list(edit.changes[uri])

    def applied(self, action: types.CodeAction, uri: str) -> str:
        """The document text after applying `action`'s edit on the client's copy."""
        return apply_text_edits(self.texts[uri], self.edits_of(action, uri), self.encoding)

    # -- raw protocol, for bad input ----------------------------------------------------------

    def send_raw(self, body: bytes) -> None:
        """Write one message with `body` as is (any bytes) to the server."""
        header = f"Content-Length: {len(body)}\r\n\r\n".encode("ascii")
        self.process.stdin.write(header + body)

    async def raw_request(self, method: str, params_json: str,
                          timeout: float = TIMEOUT, jsonrpc: str = "2.0") -> Any:
        """Send a request whose params are the JSON text `params_json` (possibly invalid for
        the method); returns the raw result or raises the error response."""
        msg_id = f"raw-{uuid.uuid4()}"
        future: Future = Future()
        self.client.protocol._request_futures[msg_id] = future
        body = ('{"jsonrpc": %s, "id": %s, "method": %s, "params": %s}'
                % (json.dumps(jsonrpc), json.dumps(msg_id), json.dumps(method), params_json))
        self.send_raw(body.encode("utf-8", "surrogatepass"))
        return await asyncio.wait_for(asyncio.wrap_future(future), timeout)

    def raw_notify(self, method: str, params_json: str) -> None:
        body = ('{"jsonrpc": "2.0", "method": %s, "params": %s}'
                % (json.dumps(method), params_json))
        self.send_raw(body.encode("utf-8", "surrogatepass"))


def diag_summary(d: types.Diagnostic) -> tuple:
    """A diagnostic as a comparable tuple (code, severity, message, range)."""
    r = d.range
    return (d.code, int(d.severity) if d.severity else None, d.message,
            (r.start.line, r.start.character, r.end.line, r.end.character))


def rng(l1: int, c1: int, l2: int, c2: int) -> types.Range:
    return types.Range(types.Position(l1, c1), types.Position(l2, c2))
