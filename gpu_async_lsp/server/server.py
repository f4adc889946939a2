"""Protocol layer: the language server's state and the scheduling of its work.

One state map, `Documents` (uri -> DocState). Analyses run in a worker thread, one at a time,
and prepare everything the publication needs there (the analysis, the line index of its text,
the diagnostics as JSON text); changes that arrive meanwhile are coalesced (only the newest
version is analysed next) and a result for an older version is never published. Requests
answer from the stored analysis of the current version (waiting for it if it is being
computed); the whole-document ones build their answers in a request thread (`off_loop`), so the
event loop stays free for the next message and a cancelled request stops early.

Handlers live in server/handlers.py; what departs from pygls's protocol handling in
server/protocol.py; how the heap is kept small in server/heap.py.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from threading import Event
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcRequestCancelled
from pygls.io_ import StdoutWriter, run_async
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from gpu_async_lsp import __version__, arenas
from gpu_async_lsp.config import CONFIG_NAMES, DEFAULTS, Config, ConfigError, Finder
from gpu_async_lsp.gcpause import gc_paused
from gpu_async_lsp.ide import semantic
from gpu_async_lsp.ide.cache import UnitCache
from gpu_async_lsp.ide.host import Analyzer, changed_span
from gpu_async_lsp.server import convert, responses
from gpu_async_lsp.server.capabilities import ClientFeatures
from gpu_async_lsp.server.documents import DocState, Documents
from gpu_async_lsp.server.heap import Heap, freeze_if_big
from gpu_async_lsp.server.protocol import Protocol, StdinMessageReader, Utf8Reader
from gpu_async_lsp.server.settings import Settings, effective, parse_settings, severity_table
from gpu_async_lsp.text import LineIndex

log = logging.getLogger("gpu_async_lsp.server")

ANALYSIS_TIMEOUT = 120.0
RELEASE_DELAY = 0.25  # seconds of quiet after a close before the heap is released
IDLE_RELEASE_DELAY = 5.0  # seconds without analyses before a release that freezes made due


class Cancelled(Exception):
    """Raised in the request thread when the request it computes was cancelled."""


class GpuAsyncServer(LanguageServer):
    def __init__(self):
        super().__init__("gpu-async-lsp", __version__,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                         protocol_cls=Protocol)
        self.settings = Settings()
        self.cache = UnitCache()
        # One analyzer per set of rules (strict, semantics, thread_launch, lowering) that some document
        # is analysed with, all sharing the cache (whose keys hold the rules).
        self.analyzers: dict[tuple, Analyzer] = {}
        self.configs = Finder()
        self._config_errors: dict[str, ConfigError] = {}  # the last one told, by file
        self.documents = Documents()
        self.client = ClientFeatures()
        self.heap = Heap()
        self._release: asyncio.TimerHandle | None = None
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="analysis")
        self._analyses_waiting = 0  # analyses sent to the executor and not done
        self.requests = ThreadPoolExecutor(max_workers=1, thread_name_prefix="requests")

    # -- transport: message bodies checked for UTF-8 --------------------------------------------

    def start_io(self, stdin=None, stdout=None):
        self._stop_event = Event()
        reader = Utf8Reader(StdinMessageReader(stdin or sys.stdin.buffer, self.thread_pool),
                            self.protocol)
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(run_async(stop_event=self._stop_event, reader=reader,
                                  protocol=self.protocol, logger=log,
                                  error_handler=self.report_server_error))
        except BrokenPipeError:
            log.error("the connection to the client is lost")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self._stop_event.set()

    def start_tcp(self, host: str, port: int) -> None:
        self._stop_event = stop_event = Event()

        async def connection(reader, writer):
            self.protocol.set_writer(writer)
            await run_async(stop_event=stop_event, reader=Utf8Reader(reader, self.protocol),
                            protocol=self.protocol, logger=log,
                            error_handler=self.report_server_error)
            self._server.close()

        async def serve():
            self._server = await asyncio.start_server(connection, host, port)
            async with self._server:
                try:
                    await self._server.serve_forever()
                except asyncio.CancelledError:
                    pass

        asyncio.run(serve())

    # -- settings and capabilities --------------------------------------------------------------

    def initialized_with(self, params: lsp.InitializeParams) -> None:
        self.client = ClientFeatures.of(params.capabilities)
        self.apply_settings(params.initialization_options)

    def apply_settings(self, raw) -> bool:
        """Take the client's settings; whether they differ from those in force."""
        settings, problems = parse_settings(raw)
        if problems:
            self.show_warning("invalid settings, defaults used for: " + "; ".join(problems))
        changed = settings != self.settings
        self.settings = settings
        return changed

    def watch_config_files(self) -> None:
        """Ask the client to tell about changes of configuration files (when it can be asked:
        workspace/didChangeWatchedFiles registered dynamically)."""
        if not self.client.watched_files_registration:
            return
        watchers = [lsp.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_NAMES]
        self.protocol.send_request(lsp.CLIENT_REGISTER_CAPABILITY, lsp.RegistrationParams([
            lsp.Registration("gpu-async-lsp/config-files", lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                             lsp.DidChangeWatchedFilesRegistrationOptions(watchers))]))

    # -- configuration files ----------------------------------------------------------------------

    def read_config(self, state: DocState, fresh: bool) -> bool:
        """Find the configuration file of a document (config.py; `fresh`: look at the files
        again instead of trusting the cache). An invalid file: one warning per content, and
        the defaults. True when the document's configuration changed."""
        folder = _folder_of(state.uri)
        config = DEFAULTS
        if folder is not None:
            try:
                config = self.configs.find(folder, fresh)
            except ConfigError as error:
                if self._config_errors.get(error.path) is not error:
                    self._config_errors[error.path] = error
                    self.show_warning(f"{error}; the defaults are used for the documents "
                                      "under it")
        changed = state.file_config != config
        state.file_config = config
        return changed

    def config_files_changed(self, uris: list[str]) -> None:
        """Configuration files were created, changed or deleted: read again the
        configuration of every open document; analyse those whose configuration changed."""
        paths = [p for p in map(_path_of, uris)
                 if p is not None and os.path.basename(p) in CONFIG_NAMES]
        if not paths:
            return
        for path in paths:
            self.configs.forget(path)
        changed = [state.uri for state in self.documents
                   if state.mlir and self.read_config(state, fresh=True)]
        for uri in changed:
            self.schedule(uri)
        if changed:
            self.refresh_views()

    def config_of(self, state: DocState) -> Config:
        """What the document is analysed and published with: its file's configuration, the
        client's settings on top."""
        return effective(state.file_config, self.settings)

    def analyzer_for(self, config: Config) -> Analyzer:
        analyzer = self.analyzers.get(config.rules)
        if analyzer is None:
            strict, semantics, thread_launch, lowering = config.rules
            analyzer = self.analyzers[config.rules] = Analyzer(
                strict=strict, semantics=semantics, thread_launch=thread_launch,
                lowering=lowering, cache=self.cache)
        return analyzer

    def show_warning(self, message: str) -> None:
        self.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Warning,
                                                       "gpu-async-lsp: " + message))

    @property
    def encoding(self) -> str:
        return convert.encoding_of(self.workspace.position_encoding)

    # -- documents ------------------------------------------------------------------------------

    def current(self, uri: str):
        """The open document (pygls's), or None. (pygls keys them by the unquoted URI.)"""
        if unquote(uri) not in self.workspace.text_documents:
            return None
        return self.workspace.get_text_document(uri)

    def close(self, uri: str) -> None:
        state = self.documents.closed(uri)
        if state is None or not state.mlir:
            return
        self.protocol.send_json_text(responses.publication(uri, None, ""))
        # The configuration files of folders no open document is under go too.
        self.configs.keep(f for f in map(_folder_of, (d.uri for d in self.documents))
                          if f is not None)
        self._config_errors = {p: e for p, e in self._config_errors.items()
                               if self.configs.holds(p)}
        # What the document held is freed by reference counting now; what else can go goes
        # once the closing is over (an editor closes many at once).
        self.release_later(RELEASE_DELAY)

    def release_later(self, delay: float) -> None:
        """Release the heap (heap.py) after `delay` seconds without analyses or closes."""
        if self._release is not None:
            self._release.cancel()
        self._release = asyncio.get_running_loop().call_later(delay, self._release_heap,
                                                              delay)

    def _release_heap(self, delay: float) -> None:
        self._release = None
        if any(state.running for state in self.documents):
            self.release_later(delay)
            return
        if not any(state.mlir for state in self.documents):
            self.cache.clear_recent()  # nothing is open: nothing to reopen cheaply
            arenas.drop_reserve()  # nor arenas kept for the next analysis (arenas.py)
        self.heap.release()

    def lose_sync(self, uri: str, why: str, version: int | None = None) -> None:
        """The server can no longer follow the client's text of `uri` (from `version` on):
        keep the last text it had, say so once, and wait for a full-text change (protocol.py
        applies it)."""
        state = self.documents.get(uri)
        if state is None or not state.mlir:
            return
        first = state.out_of_sync is None
        state.out_of_sync = why
        log.warning("%s is out of sync: %s", uri, why)
        if first:
            self.show_warning(f"lost track of {uri}: {why}. Close and reopen it to get "
                              "findings again.")
            if version is None:
                doc = self.current(uri)
                version = doc.version if doc else None
            self.protocol.send_json_text(responses.out_of_sync_diagnostics(uri, version, why))

    def regain_sync(self, uri: str) -> None:
        state = self.documents.get(uri)
        if state is not None:
            state.out_of_sync = None
            state.analysis = None  # its text is not the client's: analyse afresh
            state.index = None

    def tell_replaced_bytes(self, uri: str) -> None:
        state = self.documents.get(uri)
        if state is not None and state.mlir and not state.told_replaced_bytes:
            state.told_replaced_bytes = True
            self.show_warning(f"the editor sent text for {uri} that is not UTF-8; the bytes "
                              "that are not were read as U+FFFD")

    # -- analysis scheduling --------------------------------------------------------------------

    def schedule(self, uri: str) -> None:
        state = self.documents.get(uri)
        if state is None or not state.mlir or state.out_of_sync is not None:
            return
        state.ready.clear()
        if state.running:
            state.dirty = True  # the running analysis is stale: analyse the newest next
            return
        state.running = True
        asyncio.get_running_loop().create_task(self._analyze_loop(state))

    def _is_current(self, state: DocState) -> bool:
        return self.documents.get(state.uri) is state and state.out_of_sync is None

    async def _analyze_loop(self, state: DocState) -> None:
        """Analyse the document's current text until it stops changing: wait out the
        debounce, analyse in the analysis thread, publish (or say the analysis failed), then,
        while nothing else is to do, make the highlighting of that version."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                state.dirty = False
                if self.settings.debounce_ms:
                    await asyncio.sleep(self.settings.debounce_ms / 1000)
                doc = self.current(state.uri)
                if doc is None or not self._is_current(state):
                    return
                text, version = doc.source, doc.version
                prepared, failure = await self._analysis(loop, state, text, version)
                doc = self.current(state.uri)
                if doc is None or not self._is_current(state):
                    return
                if doc.version == version:
                    if prepared is None:
                        self._publish_failure(state, version, failure)
                    elif doc.source is text:
                        await self._adopt(loop, state, text, prepared)
                if not state.dirty and prepared is not None and self.client.semantic_tokens:
                    await self._warm_highlighting(loop, state, prepared[0])
                if not state.dirty and (prepared is None or doc.version == version):
                    return
        finally:
            state.running = False
            if not state.ready.is_set() and state.analysis is not None:
                doc = self.current(state.uri)
                if doc is not None and doc.version == state.analysis.version:
                    state.ready.set()

    async def _analysis(self, loop, state: DocState, text: str, version) -> tuple:
        """(what `_prepare` made of `text` in the analysis thread, None; or None, why not)."""
        config = self.config_of(state)
        severity = severity_table(config)
        early = _EarlyPublication(self, loop, state, text, version, severity)
        self._analyses_waiting += 1  # a warm-up in the analysis thread gives way
        try:
            return await loop.run_in_executor(
                self.executor, self._prepare, self.analyzer_for(config), state, text,
                version, self.encoding, severity, early), None
        except Exception as error:  # a bug in the analysis must not stop the server
            log.exception("analysis of %s failed", state.uri)
            return None, f"{type(error).__name__}: {error}"
        finally:
            self._analyses_waiting -= 1

    def _publish_failure(self, state: DocState, version, failure: str) -> None:
        """Said, not left to a client that would wait for diagnostics forever; requests on
        this version answer nothing instead of retrying."""
        state.failed_version = version
        self.protocol.send_json_text(responses.internal_error_diagnostics(
            state.uri, version, failure))

    async def _adopt(self, loop, state: DocState, text: str, prepared: tuple) -> None:
        """The analysis of the current text becomes the document's: its diagnostics go out,
        then (a first analysis) its line index is made, and the heap is settled."""
        result, index, publication, allocations, early = prepared
        state.analysis, state.index = result, index
        if early is None or not early.delivered:
            self.protocol.send_json_text(publication)
        state.ready.set()
        if index is None:  # a first analysis: the line index after publishing
            index = await loop.run_in_executor(self.executor, LineIndex, text)
            if state.analysis is result and state.index is None:
                state.index = index
        current = self.current(state.uri)
        if (current is not None and current.source is text
                and (state.text_index is None or state.text_index.text is not text)):
            state.text_index = index  # of the current text: for its changes
        self.heap.settle(allocations)
        if self.heap.release_overdue:
            self.heap.release()
        elif self.heap.release_due:
            self.release_later(IDLE_RELEASE_DELAY)

    async def _warm_highlighting(self, loop, state: DocState, result) -> None:
        """While nothing else is to do: the highlighting of this version, so that the
        client's request finds it made. It stops at the next change, when the document is
        closed, and when another analysis waits for the analysis thread (a document opened
        meanwhile, or this one reopened: they waited behind the whole warm-up of a big
        file, 265-630 ms to reopen 50k lines against 60 ms of analysis)."""
        def stop() -> bool:  # read in the analysis thread
            return self._analyses_waiting > 0 or self.documents.get(state.uri) is not state
        allocations = await loop.run_in_executor(
            self.executor, self._warm_semantic_tokens, state, result, self.encoding, stop)
        self.heap.settle(allocations)

    @staticmethod
    def _prepare(analyzer: Analyzer, state: DocState, text: str, version, encoding: str,
                 severity, early: _EarlyPublication | None = None) -> tuple:
        """In the analysis thread: the analysis of `text`, the line index of `text` (moved
        along with the edit from the previous one; None when there is none to move: the
        loop makes it after publishing, which does not need it), the diagnostics to
        publish (None when `early` published them already) and `early`."""
        previous, previous_index = state.analysis, state.index
        # The collector stays paused until what the analysis allocated is frozen (heap.py): the
        # first allocation after it would otherwise traverse the whole new IR (at 50k lines,
        # building the diagnostics took 480 ms instead of 30).
        with gc_paused():
            result = analyzer.analyze(text, version, previous, encoding, early)
            if previous is not None and previous_index is not None \
                    and previous_index.text is previous.text:
                start, old_end, new_end = changed_span(previous.text, text)
                index = previous_index.edited(text, start, old_end, new_end)
            elif state.text_index is not None and state.text_index.text is text:
                index = state.text_index
            else:
                index = None
            # Published already (the loop sent it while this thread joined the results):
            # the same text, made of the same fragments (tested), is not made again.
            delivered = early is not None and early.delivered
            publication = None if delivered else responses.diagnostics(
                state.uri, result, index, encoding, severity)
            allocations = gc.get_count()[0]
            freeze_if_big(allocations)
        return result, index, publication, allocations, early

    @staticmethod
    def _warm_semantic_tokens(state: DocState, analysis, encoding: str,
                              stop=lambda: False) -> int:
        """In the analysis thread: the semantic tokens of each unit not scanned yet (and the
        IR of units analysed in another process, which the scan reads), until the document
        changes. Under a paused collector, frozen after, as an analysis is (a 500k-line
        file's second half rebuilt its IR in 6.2 s with the collector running, 2.7 s
        without); the objects the collector was not shown, for Heap.settle."""
        with gc_paused():
            for unit in analysis.units:
                if state.dirty or state.analysis is not analysis or stop():
                    break
                try:
                    semantic.unit_piece(unit.result, encoding)
                except Exception:  # a bug here must not stop the analyses: the request says it
                    log.exception("semantic tokens of %s", state.uri)
                    break
            allocations = gc.get_count()[0]
            freeze_if_big(allocations)
        return allocations

    async def analysis_of(self, uri: str) -> DocState | None:
        """The document's state with the analysis of its current version, or None (not
        open, not MLIR, out of sync, or no analysis in time)."""
        doc = self.current(uri)
        state = self.documents.get(uri)
        if doc is None or state is None or not state.mlir:
            return None
        deadline = asyncio.get_running_loop().time() + ANALYSIS_TIMEOUT
        while state.analysis is None or state.analysis.version != doc.version \
                or state.analysis.text is not doc.source:
            if state.out_of_sync is not None or not self._is_current(state) \
                    or state.failed_version == doc.version:
                return None
            if not state.running:
                self.schedule(uri)
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return None
            try:
                await asyncio.wait_for(state.ready.wait(), remaining)
            except asyncio.TimeoutError:
                return None
            doc = self.current(uri)
            if doc is None:
                return None
        return state if state.out_of_sync is None else None

    # -- requests off the event loop ------------------------------------------------------------

    async def off_loop(self, fn, *args):
        """`fn(*args, check=...)` in the request thread. When the request is cancelled
        ($/cancelRequest), the client gets RequestCancelled at once and `check()` raises in
        the thread at its next call, so the work stops early."""
        cancelled = threading.Event()

        def check() -> None:
            if cancelled.is_set():
                raise Cancelled()

        future = asyncio.get_running_loop().run_in_executor(
            self.requests, lambda: fn(*args, check=check))
        try:
            return await future
        except asyncio.CancelledError:
            cancelled.set()
            raise
        except Cancelled:
            raise JsonRpcRequestCancelled("the request was cancelled") from None

    def refresh_views(self) -> None:
        """Ask the client to request code lenses and inlay hints again (settings change what
        they show; e.g. strict mode adds lenses on blocked functions)."""
        if self.client.code_lens_refresh:
            self.protocol.send_request(lsp.WORKSPACE_CODE_LENS_REFRESH, None)
        if self.client.inlay_hint_refresh:
            self.protocol.send_request(lsp.WORKSPACE_INLAY_HINT_REFRESH, None)


class _EarlyPublication(responses.Fragments):
    """The diagnostics of a first open shared with a forked process, published (an
    `ide.host.EarlyPublication`) as soon as both processes are done, before the analysis
    thread loads and joins the other's results (at 500k lines of host code, 130 ms that the
    client waited for). The analysis thread assembles the notification; the event loop
    sends it if the analysed version is still the document's, as `_adopt` would, while the
    analysis thread waits: the loop needs the interpreter lock to send, which the joining
    thread would hold (without the wait, 50k lines were published 4-8 ms later)."""

    __slots__ = ("server", "loop", "state", "text", "version", "delivered", "_done")

    def __init__(self, server: GpuAsyncServer, loop, state: DocState, text: str, version,
                 severity):
        super().__init__(state.uri, server.encoding, severity)
        self.server, self.loop, self.state = server, loop, state
        self.text, self.version = text, version
        self.delivered = False  # set on the event loop once sent
        self._done = Event()

    def publish(self, text: str, headers: list, parts: list[str]) -> None:
        """In the analysis thread: the publication, handed to the event loop; returns once
        the loop has sent it (or found it out of date)."""
        body = responses.publication_of(self.uri, self.version,
                                        [*self.headers(headers, None, text)[0], *parts])
        try:
            self.loop.call_soon_threadsafe(self._deliver, body)
        except RuntimeError:  # the loop is closed: the server is exiting
            return
        self._done.wait(ANALYSIS_TIMEOUT)

    def _deliver(self, body: str) -> None:
        try:
            server, state = self.server, self.state
            doc = server.current(state.uri)
            if doc is None or not server._is_current(state) or doc.version != self.version \
                    or doc.source is not self.text:
                return  # changed meanwhile: nothing of an older version is published
            server.protocol.send_json_text(body)
            self.delivered = True
        finally:
            self._done.set()


def _path_of(uri: str) -> str | None:
    """The file system path of a `file:` URI, else None."""
    if not uri.lower().startswith("file:"):
        return None
    return to_fs_path(uri)


def _folder_of(uri: str) -> str | None:
    path = _path_of(uri)
    return os.path.dirname(path) if path else None
