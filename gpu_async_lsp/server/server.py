"""Protocol layer: the pygls language server (SPEC section 5).

Handlers stay thin: fetch the document, call the analysis (server/analysis.py), convert with
server/convert.py. One state map `uri -> DocState`; analyses run in a worker thread, one at a
time; changes that arrive meanwhile are coalesced (only the newest version is analysed next)
and a result for an older version is never published. Code actions answer from the stored
analysis of the current version (waiting for it if it is being computed).
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import json
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import JsonRPCNotification, JsonRPCProtocol, LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from gpu_async_lsp import __version__
from gpu_async_lsp.async_region.findings import SYNC_GPU_OPS
from gpu_async_lsp.server import convert, features
from gpu_async_lsp.server.analysis import Analyzer, DocumentAnalysis, FunctionInfo, changed_span
from gpu_async_lsp.server.settings import Settings, parse_settings
from gpu_async_lsp.text import LineIndex

log = logging.getLogger("gpu_async_lsp.server")

FIX_ALL_KIND = "source.fixAll.gpuAsync"
# Commands of the code lenses (workspace/executeCommand); arguments: uri, `@f`, which of the
# functions named `@f` (split files repeat names). The command acts on the current version.
MAKE_ASYNC_COMMAND = "gpu-async.makeAsynchronous"
SHOW_BLOCKER_COMMAND = "gpu-async.showBlocker"
CODE_ACTION_KINDS = [lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.RefactorRewrite, FIX_ALL_KIND]
ANALYSIS_TIMEOUT = 120.0
FREEZE_AFTER_ALLOCATIONS = 50_000  # tracked objects an analysis added (a ~7k-line file)
_IGNORED = "$/gpuAsyncLsp/invalidMessage"  # what an unreadable message becomes


def is_open(workspace, uri: str) -> bool:
    """Is `uri` an open document? (pygls keys its documents by the unquoted URI.)"""
    return unquote(uri) in workspace.text_documents


@dataclass
class DocState:
    uri: str
    analysis: DocumentAnalysis | None = None
    index: LineIndex | None = None  # of analysis.text
    running: bool = False
    dirty: bool = False
    closed: bool = False
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    fix_all: tuple | None = None  # ((version, encoding, documentChanges), WorkspaceEdit)
    fix_all_of: DocumentAnalysis | None = None

    def line_index(self) -> LineIndex:
        if self.index is None or self.index.text is not self.analysis.text:
            self.index = LineIndex(self.analysis.text)
        return self.index

    def take(self, result: DocumentAnalysis) -> None:
        """Make `result` the current analysis, moving the line index along with the edit."""
        if self.index is not None and self.analysis is not None \
                and self.index.text is self.analysis.text:
            start, old_end, new_end = changed_span(self.analysis.text, result.text)
            self.index = self.index.edited(result.text, start, old_end, new_end)
        else:
            self.index = None
        self.analysis = result


class RawResult:
    """A request's result already serialized as JSON text (see _Protocol._send_response)."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text


class _Protocol(LanguageServerProtocol):
    """publishDiagnostics go out as plain JSON values, built from cached per-unit positions:
    no lsprotocol objects and no cattrs pass over thousands of diagnostics of a 50k-line file
    (json.dumps of plain values: ~6 ms, through cattrs: ~20 ms, with lsprotocol objects
    ~50 ms). Everything else goes through pygls as usual."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._indexes: dict[str, LineIndex] = {}  # uri -> line index of its current text

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: lsp.DidChangeTextDocumentParams):
        """Apply incremental changes through text.LineIndex (one conversion module for
        positions): a column past a line's end, or between its CR and LF, is the line's end
        (LSP 3.17, Position); a range given end first is taken in order. pygls's own
        per-line rebuild is avoided (it is O(lines) per keystroke, and splits CRLFs)."""
        uri = params.text_document.uri
        if is_open(self.workspace, uri):
            doc = self.workspace.get_text_document(uri)
            text = doc.source
            index = self._indexes.get(uri)
            if index is None or index.text is not text:
                index = LineIndex(text)
            encoding = convert.encoding_of(self.workspace.position_encoding)
            for change in params.content_changes:
                if isinstance(change, lsp.TextDocumentContentChangePartial):
                    a = convert.offset_of(index, change.range.start, encoding)
                    b = convert.offset_of(index, change.range.end, encoding)
                    start, end = min(a, b), max(a, b)
                    text = text[:start] + change.text + text[end:]
                    index = index.edited(text, start, end, start + len(change.text))
                else:
                    text = change.text
                    index = LineIndex(text)
            self.workspace.update_text_document(
                params.text_document, lsp.TextDocumentContentChangeWholeDocument(text=text))
            self._indexes[uri] = index
        if (handler := self.fm.features.get(lsp.TEXT_DOCUMENT_DID_CHANGE)) is not None:
            yield handler, (params,), None

    @lsp_method(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: lsp.DidCloseTextDocumentParams):
        self._indexes.pop(params.text_document.uri, None)
        yield from super().lsp_text_document__did_close(params)

    def structure_message(self, data):
        """pygls raises when a message does not fit its method, and the message is lost.
        A request with bad params (a negative position, a missing field) would go
        unanswered: answer it with the JSON-RPC error. A client's response that does not fit
        (`workspace/applyEdit` answered with `null`) would leave the server waiting for it
        forever: it becomes that error. Either way, keep serving."""
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
            return JsonRPCNotification(method=_IGNORED, params=None,
                                       jsonrpc=JsonRPCProtocol.VERSION)

    def _send_response(self, msg_id, result=None, error=None):
        """Results of whole-document requests on big files (thousands of code lenses, symbols,
        folding ranges) are built as JSON values and cached as text per document version;
        they skip lsprotocol objects and cattrs as diagnostics do."""
        if error is None and isinstance(result, RawResult):
            self._result_types.pop(msg_id, None)
            self.send_json_text('{"jsonrpc":"2.0","id":' + json.dumps(msg_id) + ',"result":'
                                + result.text + "}")
            return
        super()._send_response(msg_id, result, error)

    def publish_diagnostics_json(self, params: dict) -> None:
        self.send_json_text(json.dumps({"jsonrpc": JsonRPCProtocol.VERSION,
                                        "method": lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS,
                                        "params": params}))

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


class GpuAsyncServer(LanguageServer):
    def __init__(self):
        super().__init__("gpu-async-lsp", __version__,
                         text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                         protocol_cls=_Protocol)
        self.settings = Settings()
        self.analyzer = Analyzer()
        self.docs: dict[str, DocState] = {}
        self.ignored: set[str] = set()  # open documents that are not MLIR
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="analysis")

    # -- settings --------------------------------------------------------------------------

    def apply_settings(self, raw) -> None:
        settings, problems = parse_settings(raw)
        if problems:
            self.window_show_message(lsp.ShowMessageParams(
                lsp.MessageType.Warning,
                "gpu-async-lsp: invalid settings, defaults used for: " + "; ".join(problems)))
        if settings.strict != self.settings.strict:
            self.analyzer = Analyzer(strict=settings.strict)
        self.settings = settings

    # -- analysis scheduling -------------------------------------------------------------------

    @property
    def encoding(self) -> str:
        return convert.encoding_of(self.workspace.position_encoding)

    def current(self, uri: str):
        """The open document (pygls's), or None."""
        if not is_open(self.workspace, uri):
            return None
        return self.workspace.get_text_document(uri)

    def schedule(self, uri: str) -> None:
        state = self.docs.setdefault(uri, DocState(uri))
        state.closed = False
        state.ready.clear()
        if state.running:
            state.dirty = True  # the running analysis is stale: analyse the newest next
            return
        state.running = True
        asyncio.get_running_loop().create_task(self._analyze_loop(state))

    async def _analyze_loop(self, state: DocState) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                state.dirty = False
                if self.settings.debounce_ms:
                    await asyncio.sleep(self.settings.debounce_ms / 1000)
                doc = self.current(state.uri)
                if doc is None or state.closed:
                    return
                text, version = doc.source, doc.version
                try:
                    result = await loop.run_in_executor(
                        self.executor, self.analyzer.analyze, text, version, state.analysis)
                except Exception:  # a bug in the analysis must not stop the server
                    log.exception("analysis of %s failed", state.uri)
                    result = None
                doc = self.current(state.uri)
                if doc is None or state.closed:
                    return
                if result is not None and doc.version == version and doc.source is text:
                    state.take(result)
                    self.publish(state)
                    state.ready.set()
                    self.settle_heap()
                if not state.dirty and (result is None or doc.version == version):
                    return
        finally:
            state.running = False
            if not state.ready.is_set() and state.analysis is not None:
                doc = self.current(state.uri)
                if doc is not None and doc.version == state.analysis.version:
                    state.ready.set()

    def settle_heap(self) -> None:
        """After an analysis that made many objects (the first open of a big file), move
        everything alive out of the cycle collector's sight (gc.freeze). Kept, that IR would
        be traversed by every collection the server's later allocations trigger: at 50k lines
        publishing the diagnostics took 260 ms instead of 60. What is kept per document has
        no reference cycles (tests/unit/test_server_analysis.py), so when dropped it is freed
        by reference counting, frozen or not."""
        if self.analyzer.last_allocations >= FREEZE_AFTER_ALLOCATIONS:
            gc.freeze()

    def publish(self, state: DocState) -> None:
        """publishDiagnostics for the state's analysis, as JSON text assembled from one cached
        fragment per unit: a unit whose place (line, column) and findings did not change since
        the last publication costs nothing (a keystroke re-renders one unit)."""
        a = state.analysis
        index = state.line_index()
        encoding = self.encoding
        severity = self.settings.severity
        uri = state.uri
        parts = [json.dumps(convert.diagnostic_json(uri, index, f, encoding, severity))
                 for f in a.header_findings]
        for unit in a.units:
            result = unit.result
            if not result.findings:
                continue
            base = index.position(unit.base, encoding)
            key = (uri, encoding, base.line, base.character, id(severity))
            cached = result.fragment
            if cached is None or cached[0] != key:
                text = ",".join(json.dumps(convert.placed_diagnostic_json(
                    uri, f, base.line, base.character, start, end, related, severity))
                    for f, (start, end, related) in zip(result.findings,
                                                        result.positions(encoding)))
                cached = result.fragment = (key, text)
            parts.append(cached[1])
        version = "null" if a.version is None else str(int(a.version))
        self.protocol.send_json_text(
            '{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":'
            + json.dumps(uri) + ',"version":' + version + ',"diagnostics":['
            + ",".join(parts) + "]}}")

    async def analysis_of(self, uri: str) -> DocState | None:
        """The document's state with the analysis of its current version."""
        doc = self.current(uri)
        if doc is None or uri in self.ignored:
            return None
        state = self.docs.get(uri)
        if state is None:
            self.schedule(uri)
            state = self.docs[uri]
        deadline = asyncio.get_running_loop().time() + ANALYSIS_TIMEOUT
        while state.analysis is None or state.analysis.version != doc.version \
                or state.analysis.text is not doc.source:
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
        return state

    # -- requests at a position ------------------------------------------------------------

    async def at_position(self, params) -> tuple[DocState, LineIndex, int] | None:
        """The analysed document of a request at a position, its line index and the offset
        (a position past a line's or the text's end is its end)."""
        state = await self.analysis_of(params.text_document.uri)
        if state is None:
            return None
        index = state.line_index()
        return state, index, convert.offset_of(index, params.position, self.encoding)

    def locations(self, state: DocState, spans) -> list[lsp.Location]:
        index = state.line_index()
        return [lsp.Location(state.uri, convert.lsp_range(index, s.start, s.end, self.encoding))
                for s in spans]

    # -- code actions ------------------------------------------------------------------------

    def function_edit(self, state: DocState, functions: list[FunctionInfo]) -> lsp.WorkspaceEdit:
        """The rewrite of `functions` as one WorkspaceEdit (versioned when the client can)."""
        a = state.analysis
        caps = self.client_capabilities
        doc_changes = bool(caps.workspace and caps.workspace.workspace_edit
                           and caps.workspace.workspace_edit.document_changes)
        edits = convert.merge_insertions([e for fn in functions for e in fn.edits])
        return convert.workspace_edit(state.uri, a.version,
                                      convert.text_edits(state.line_index(), edits, self.encoding),
                                      doc_changes)

    def code_actions(self, state: DocState, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        a = state.analysis
        index = state.line_index()
        encoding = self.encoding
        caps = self.client_capabilities
        ca_caps = caps.text_document.code_action if caps.text_document else None
        disabled_support = bool(ca_caps and ca_caps.disabled_support)
        doc_changes = bool(caps.workspace and caps.workspace.workspace_edit
                           and caps.workspace.workspace_edit.document_changes)
        only = params.context.only
        start = convert.offset_of(index, params.range.start, encoding)
        end = convert.offset_of(index, params.range.end, encoding)
        hints = {}
        for d in params.context.diagnostics or []:
            if d.code == SYNC_GPU_OPS and d.source == "gpu-async":
                hints[(d.range.start.line, d.range.start.character)] = d

        def wanted(kind: str) -> bool:
            return not only or any(kind == k or kind.startswith(k + ".") for k in only)

        def edit_for(functions: list[FunctionInfo]) -> lsp.WorkspaceEdit:
            return self.function_edit(state, functions)

        actions: list[lsp.CodeAction] = []
        for fn in a.functions_between(start, end):
            if fn.sync_ops == 0:
                continue
            title = f"Make GPU ops in {fn.name} asynchronous"
            if not fn.rewritable:
                if disabled_support and wanted(lsp.CodeActionKind.RefactorRewrite):
                    actions.append(lsp.CodeAction(
                        title, kind=lsp.CodeActionKind.RefactorRewrite,
                        disabled=lsp.CodeActionDisabled(fn.first_blocker or "blocked")))
                continue
            anchor = index.position(fn.anchor[0], encoding)
            hint = hints.get((anchor.line, anchor.character))
            if hint is not None and wanted(lsp.CodeActionKind.QuickFix):
                actions.append(lsp.CodeAction(title, kind=lsp.CodeActionKind.QuickFix,
                                              diagnostics=[hint], is_preferred=True,
                                              edit=edit_for([fn])))
            if wanted(lsp.CodeActionKind.RefactorRewrite):
                actions.append(lsp.CodeAction(title, kind=lsp.CodeActionKind.RefactorRewrite,
                                              edit=edit_for([fn])))
        if wanted(FIX_ALL_KIND) and a.any_rewritable:
            key = (a.version, encoding, doc_changes)
            if state.fix_all is None or state.fix_all[0] != key or state.fix_all_of is not a:
                edit = convert.workspace_edit(
                    state.uri, a.version, convert.text_edits(index, a.fixes(), encoding),
                    doc_changes)
                state.fix_all = (key, edit)
                state.fix_all_of = a
            actions.append(lsp.CodeAction("Make all GPU ops in this file asynchronous",
                                          kind=FIX_ALL_KIND, edit=state.fix_all[1]))
        return actions


    # -- code lens ----------------------------------------------------------------------------

    def refresh_views(self) -> None:
        """Ask the client to request code lenses and inlay hints again (settings change what
        they show; e.g. strict mode adds lenses on blocked functions)."""
        workspace = self.client_capabilities.workspace
        if workspace is None:
            return
        if workspace.code_lens and workspace.code_lens.refresh_support:
            self.protocol.send_request(lsp.WORKSPACE_CODE_LENS_REFRESH, None)
        if workspace.inlay_hint and workspace.inlay_hint.refresh_support:
            self.protocol.send_request(lsp.WORKSPACE_INLAY_HINT_REFRESH, None)

    def code_lenses(self, state: DocState) -> RawResult:
        a = state.analysis
        encoding = self.encoding
        key = ("lenses", encoding)
        cached = a.memo.get(key)
        if cached is None:
            index = state.line_index()
            lenses = []
            uri = json.dumps(state.uri)
            for unit, placement, unit_lenses in features.code_lenses(a, index, encoding):
                # One JSON fragment per unit, kept while its place and names do not change
                # (an edit re-renders the lenses of the units it moved, as for diagnostics).
                fragment_key = (uri, encoding, placement)
                fragment = unit.result.memo.get("lens-json")
                if fragment is None or fragment[0] != fragment_key:
                    text = ",".join(json.dumps({
                        "range": convert.json_range_of(lens.start, lens.end),
                        "command": {"title": lens.title,
                                    "command": SHOW_BLOCKER_COMMAND if lens.blocker
                                    else MAKE_ASYNC_COMMAND,
                                    "arguments": [state.uri, lens.function, lens.nth]}},
                        ensure_ascii=False) for lens in unit_lenses)
                    fragment = unit.result.memo["lens-json"] = (fragment_key, text)
                lenses.append(fragment[1])
            cached = a.memo[key] = RawResult("[" + ",".join(lenses) + "]")
        return cached

    def lens_function(self, state: DocState, args) -> FunctionInfo:
        """The function a lens command names (uri, `@f`, n-th of that name)."""
        if len(args) < 3 or not isinstance(args[1], str) or not isinstance(args[2], int) \
                or isinstance(args[2], bool):
            raise JsonRpcInvalidParams("expected [uri, function name, index]")
        matches = state.analysis.functions_named(args[1])
        if args[2] < 0 or args[2] >= len(matches):
            raise JsonRpcInvalidParams(f"no function {args[1]} in {state.uri}")
        return matches[args[2]]


def _uri_argument(args) -> str:
    if not args or not isinstance(args[0], str):
        raise JsonRpcInvalidParams("expected [uri, function name, index]")
    return args[0]


def build_server() -> GpuAsyncServer:
    server = GpuAsyncServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: GpuAsyncServer, params: lsp.InitializeParams):
        ls.apply_settings(params.initialization_options)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(ls: GpuAsyncServer, params: lsp.DidChangeConfigurationParams):
        ls.apply_settings(params.settings)
        for uri, state in list(ls.docs.items()):
            if not state.closed and ls.current(uri) is not None:
                ls.schedule(uri)
        ls.refresh_views()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: GpuAsyncServer, params: lsp.DidOpenTextDocumentParams):
        doc = params.text_document
        if doc.language_id == "mlir" or doc.uri.lower().endswith(".mlir"):
            ls.ignored.discard(doc.uri)
            ls.schedule(doc.uri)
        else:  # not MLIR: a client that sends everything gets no findings for it
            ls.ignored.add(doc.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: GpuAsyncServer, params: lsp.DidChangeTextDocumentParams):
        if params.text_document.uri not in ls.ignored:
            ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: GpuAsyncServer, params: lsp.DidSaveTextDocumentParams):
        pass  # the buffer is analysed on every change already

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: GpuAsyncServer, params: lsp.DidCloseTextDocumentParams):
        uri = params.text_document.uri
        if uri in ls.ignored:
            ls.ignored.discard(uri)
            return
        state = ls.docs.pop(uri, None)
        if state is not None:
            state.closed = True
        ls.protocol.publish_diagnostics_json({"uri": uri, "diagnostics": []})

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION,
                    lsp.CodeActionOptions(code_action_kinds=CODE_ACTION_KINDS))
    async def code_action(ls: GpuAsyncServer, params: lsp.CodeActionParams):
        state = await ls.analysis_of(params.text_document.uri)
        if state is None:
            return []
        return ls.code_actions(state, params)

    # -- the rewrite, previewed and explained -----------------------------------------------

    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensOptions(resolve_provider=False))
    async def code_lens(ls: GpuAsyncServer, params: lsp.CodeLensParams):
        state = await ls.analysis_of(params.text_document.uri)
        if state is None:
            return []
        return ls.code_lenses(state)

    @server.command(MAKE_ASYNC_COMMAND)
    async def make_asynchronous(ls: GpuAsyncServer, *args):
        """The lens's rewrite of one function, sent back as workspace/applyEdit (the same
        edit as the function's code action)."""
        state = await ls.analysis_of(_uri_argument(args))
        if state is None:
            raise JsonRpcInvalidParams(f"{args[0]} is not an open MLIR document")
        fn = ls.lens_function(state, args)
        workspace = ls.client_capabilities.workspace
        if not (workspace and workspace.apply_edit):
            ls.window_show_message(lsp.ShowMessageParams(
                lsp.MessageType.Warning,
                "gpu-async-lsp: this client cannot apply edits sent by the server; use the "
                f"code action 'Make GPU ops in {fn.name} asynchronous' instead"))
            return {"applied": False}
        if not fn.rewritable:
            ls.window_show_message(lsp.ShowMessageParams(
                lsp.MessageType.Warning,
                f"gpu-async-lsp: {fn.name} cannot be rewritten: {fn.first_blocker}"))
            return {"applied": False}
        try:
            result = await ls.workspace_apply_edit_async(lsp.ApplyWorkspaceEditParams(
                ls.function_edit(state, [fn]), label=f"Make GPU ops in {fn.name} asynchronous"))
        except JsonRpcException as error:
            ls.window_show_message(lsp.ShowMessageParams(
                lsp.MessageType.Warning,
                f"gpu-async-lsp: the editor did not apply the rewrite of {fn.name}: {error}"))
            return {"applied": False}
        return {"applied": bool(result and result.applied)}

    @server.command(SHOW_BLOCKER_COMMAND)
    async def show_blocker(ls: GpuAsyncServer, *args):
        """Reveal the first op that blocks a function's rewrite (window/showDocument)."""
        state = await ls.analysis_of(_uri_argument(args))
        if state is None:
            raise JsonRpcInvalidParams(f"{args[0]} is not an open MLIR document")
        fn = ls.lens_function(state, args)
        if fn.blocker_span is None:
            return None
        selection = convert.lsp_range(state.line_index(), *fn.blocker_span, ls.encoding)
        caps = ls.client_capabilities
        if caps.window and caps.window.show_document and caps.window.show_document.support:
            await ls.window_show_document_async(lsp.ShowDocumentParams(
                state.uri, take_focus=True, selection=selection))
        return {"uri": state.uri, "range": {
            "start": {"line": selection.start.line, "character": selection.start.character},
            "end": {"line": selection.end.line, "character": selection.end.character}}}

    @server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT, lsp.InlayHintOptions(resolve_provider=False))
    async def inlay_hint(ls: GpuAsyncServer, params: lsp.InlayHintParams):
        state = await ls.analysis_of(params.text_document.uri)
        if state is None:
            return []
        index = state.line_index()
        encoding = ls.encoding
        start = convert.offset_of(index, params.range.start, encoding)
        end = convert.offset_of(index, params.range.end, encoding)
        hints = []
        for unit, hint in features.inlay_hints(state.analysis, min(start, end), max(start, end)):
            p = index.position(unit.base + hint.offset, encoding)
            hints.append(lsp.InlayHint(lsp.Position(p.line, p.character), hint.label,
                                       tooltip=hint.tooltip, padding_left=hint.pad_left,
                                       padding_right=hint.pad_right))
        return hints

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(ls: GpuAsyncServer, params: lsp.HoverParams):
        at = await ls.at_position(params)
        if at is None:
            return None
        state, index, offset = at
        found = features.hover(state.analysis, offset, lambda o: index.line_of(o) + 1)
        if found is None:
            return None
        markdown, span = found
        caps = ls.client_capabilities.text_document
        formats = caps.hover.content_format if caps and caps.hover else None
        # Plain text only for a client that lists formats without Markdown (the Markdown
        # we write reads as text).
        kind = lsp.MarkupKind.PlainText if formats and lsp.MarkupKind.Markdown not in formats \
            else lsp.MarkupKind.Markdown
        return lsp.Hover(lsp.MarkupContent(kind, markdown),
                         convert.lsp_range(index, span.start, span.end, ls.encoding))

    # -- navigation ---------------------------------------------------------------------------

    @server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    async def document_symbol(ls: GpuAsyncServer, params: lsp.DocumentSymbolParams):
        state = await ls.analysis_of(params.text_document.uri)
        if state is None:
            return []
        caps = ls.client_capabilities.text_document
        symbol_caps = caps.document_symbol if caps else None
        tree = bool(symbol_caps and symbol_caps.hierarchical_document_symbol_support)
        a = state.analysis
        encoding = ls.encoding
        key = ("symbols", encoding, tree)
        cached = a.memo.get(key)
        if cached is not None:
            return cached
        index = state.line_index()
        nodes = features.document_symbols(a)
        bases: dict = {}

        def ranges(node: features.SymbolNode) -> tuple[dict, dict]:
            start, end, sel_start, sel_end = features.symbol_places(node, index, encoding, bases)
            return (convert.json_range_of(start, end), convert.json_range_of(sel_start, sel_end))

        out = []
        if tree:
            # DocumentSymbol trees, built without recursion (modules may nest deeply).
            stack = [(n, out) for n in reversed(nodes)]
            while stack:
                node, siblings = stack.pop()
                children: list = []
                whole, selection = ranges(node)
                siblings.append({"name": node.name, "detail": node.detail,
                                 "kind": int(convert.SYMBOL_KINDS[node.kind]),
                                 "range": whole, "selectionRange": selection,
                                 "children": children})
                stack.extend((c, children) for c in reversed(node.children))
        else:
            # A client without hierarchy support gets the flat list, each with its container.
            stack = [(n, None) for n in reversed(nodes)]
            while stack:
                node, parent = stack.pop()
                item = {"name": node.name, "kind": int(convert.SYMBOL_KINDS[node.kind]),
                        "location": {"uri": state.uri, "range": ranges(node)[0]}}
                if parent is not None:
                    item["containerName"] = parent
                out.append(item)
                stack.extend((c, node.name) for c in reversed(node.children))
        cached = a.memo[key] = RawResult(json.dumps(out, ensure_ascii=False))
        return cached

    @server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
    async def folding_range(ls: GpuAsyncServer, params: lsp.FoldingRangeParams):
        state = await ls.analysis_of(params.text_document.uri)
        if state is None:
            return []
        found = features.folding_ranges(state.analysis, state.line_index())
        caps = ls.client_capabilities.text_document
        limit = caps.folding_range.range_limit if caps and caps.folding_range else None
        if limit is not None:
            found = found[:max(limit, 0)]
        return RawResult(json.dumps([{"startLine": first, "endLine": last, "kind": "region"}
                                     for first, last, _ in found]))

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    async def definition(ls: GpuAsyncServer, params: lsp.DefinitionParams):
        at = await ls.at_position(params)
        if at is None:
            return None
        state, _, offset = at
        return ls.locations(state, features.definition(state.analysis, offset)) or None

    @server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
    async def references(ls: GpuAsyncServer, params: lsp.ReferenceParams):
        at = await ls.at_position(params)
        if at is None:
            return None
        state, _, offset = at
        return ls.locations(state, features.references(state.analysis, offset,
                                                       params.context.include_declaration))

    return server
