"""Protocol layer: the LSP handlers, thin: fetch the document's analysis, call the IDE layer
or a response builder (server/responses.py), convert.

`register(server)` attaches them to a server (tests start several servers in one process, so
they are not bound to a module-level instance).
"""

from __future__ import annotations

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from gpu_async_lsp.ide import features, semantic
from gpu_async_lsp.ide.units import FunctionInfo
from gpu_async_lsp.server import convert, responses
from gpu_async_lsp.server.protocol import RawResult
from gpu_async_lsp.server.server import GpuAsyncServer

CONTENT_MODIFIED = -32801


# -- lifecycle and documents ----------------------------------------------------------------

def initialize(ls: GpuAsyncServer, params: lsp.InitializeParams):
    ls.initialized_with(params)


def initialized(ls: GpuAsyncServer, params: lsp.InitializedParams):
    ls.watch_config_files()


def did_change_configuration(ls: GpuAsyncServer, params: lsp.DidChangeConfigurationParams):
    if not ls.apply_settings(params.settings):
        # The settings in force (VS Code sends them right after `initialized`, as the
        # document opens): nothing to analyse again, no views to refresh. A refresh request
        # at that moment left code-server without the document's first code lenses.
        return
    for state in ls.documents:
        ls.schedule(state.uri)
    ls.refresh_views()


def did_change_watched_files(ls: GpuAsyncServer, params: lsp.DidChangeWatchedFilesParams):
    ls.config_files_changed([change.uri for change in params.changes])


def did_open(ls: GpuAsyncServer, params: lsp.DidOpenTextDocumentParams):
    doc = params.text_document
    state = ls.documents.get(doc.uri)
    if state is None:
        return
    # Not MLIR: a client that sends everything gets no findings for it.
    state.mlir = doc.language_id == "mlir" or doc.uri.lower().endswith(".mlir")
    if ls.protocol.replaced_bytes:
        ls.tell_replaced_bytes(doc.uri)
    if state.mlir:
        ls.read_config(state, fresh=True)
    ls.schedule(doc.uri)


def did_change(ls: GpuAsyncServer, params: lsp.DidChangeTextDocumentParams):
    ls.schedule(params.text_document.uri)


def did_save(ls: GpuAsyncServer, params: lsp.DidSaveTextDocumentParams):
    # The buffer is analysed on every change already; a client that syncs every file tells
    # of a configuration file saved this way too.
    ls.config_files_changed([params.text_document.uri])


def did_close(ls: GpuAsyncServer, params: lsp.DidCloseTextDocumentParams):
    ls.close(params.text_document.uri)


# -- the rewrite ----------------------------------------------------------------------------

async def code_action(ls: GpuAsyncServer, params: lsp.CodeActionParams):
    state = await ls.analysis_of(params.text_document.uri)
    if state is None:
        return []
    return RawResult(await ls.off_loop(responses.code_actions, state, ls.client, ls.encoding,
                                       params))


async def code_action_resolve(ls: GpuAsyncServer, params: lsp.CodeAction):
    action = convert.CONVERTER.unstructure(params)
    data = action.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("uri"), str):
        raise JsonRpcInvalidParams("this code action was not made by gpu-async-lsp")
    state = await ls.analysis_of(data["uri"])
    if state is None or state.analysis.version != data.get("version"):
        raise JsonRpcException("the document changed since this action was offered: ask for "
                               "code actions again", CONTENT_MODIFIED)
    resolved = await ls.off_loop(
        lambda check: responses.resolve_code_action(state, ls.client, ls.encoding, action))
    if resolved is None:
        raise JsonRpcException("this action no longer applies (its function is not rewritable, "
                               "or its finding is gone): ask for code actions again",
                               CONTENT_MODIFIED)
    return convert.CONVERTER.structure(resolved, lsp.CodeAction)


async def code_lens(ls: GpuAsyncServer, params: lsp.CodeLensParams):
    state = await ls.analysis_of(params.text_document.uri)
    if state is None:
        return []
    return RawResult(await ls.off_loop(responses.code_lenses, state, ls.encoding))


def _uri_argument(args) -> str:
    if not args or not isinstance(args[0], str):
        raise JsonRpcInvalidParams("expected [uri, function name, index]")
    return args[0]


def _lens_function(state, args) -> FunctionInfo:
    """The function a lens command names (uri, `@f`, n-th of that name)."""
    if len(args) < 3 or not isinstance(args[1], str) or not isinstance(args[2], int) \
            or isinstance(args[2], bool):
        raise JsonRpcInvalidParams("expected [uri, function name, index]")
    matches = state.analysis.functions_named(args[1])
    if args[2] < 0 or args[2] >= len(matches):
        raise JsonRpcInvalidParams(f"no function {args[1]} in {state.uri}")
    return matches[args[2]]


async def make_asynchronous(ls: GpuAsyncServer, *args):
    """The lens's rewrite of one function, sent back as workspace/applyEdit (the same edit as
    the function's code action)."""
    state = await ls.analysis_of(_uri_argument(args))
    if state is None:
        raise JsonRpcInvalidParams(f"{args[0]} is not an open MLIR document")
    fn = _lens_function(state, args)
    # Another rewrite of a blocked function, past its blockers (FunctionInfo.variants).
    variant = args[3] if len(args) > 3 and isinstance(args[3], str) else None
    if not ls.client.apply_edit:
        ls.show_warning("this client cannot apply edits sent by the server; use the code "
                        f"action 'Make GPU ops in {fn.name} asynchronous' instead")
        return {"applied": False}
    if not (fn.rewritable if variant is None else fn.variant_edits(variant)):
        ls.show_warning(f"{fn.name} cannot be rewritten: {fn.first_blocker}")
        return {"applied": False}
    edit = responses.function_edit(state, [fn], ls.encoding, ls.client.document_changes,
                                   variant)
    try:
        result = await ls.workspace_apply_edit_async(lsp.ApplyWorkspaceEditParams(
            convert.CONVERTER.structure(edit, lsp.WorkspaceEdit),
            label=f"Make GPU ops in {fn.name} asynchronous"))
    except JsonRpcException as error:
        ls.show_warning(f"the editor did not apply the rewrite of {fn.name}: {error}")
        return {"applied": False}
    return {"applied": bool(result and result.applied)}


async def show_blocker(ls: GpuAsyncServer, *args):
    """Reveal the first op that blocks a function's rewrite (window/showDocument)."""
    state = await ls.analysis_of(_uri_argument(args))
    if state is None:
        raise JsonRpcInvalidParams(f"{args[0]} is not an open MLIR document")
    fn = _lens_function(state, args)
    if fn.blocker_span is None:
        return None
    selection = convert.lsp_range(state.line_index(), *fn.blocker_span, ls.encoding)
    if ls.client.show_document:
        await ls.window_show_document_async(lsp.ShowDocumentParams(
            state.uri, take_focus=True, selection=selection))
    return {"uri": state.uri, "range": {
        "start": {"line": selection.start.line, "character": selection.start.character},
        "end": {"line": selection.end.line, "character": selection.end.character}}}


# -- the rewrite, previewed and explained -----------------------------------------------------

async def inlay_hint(ls: GpuAsyncServer, params: lsp.InlayHintParams):
    state = await ls.analysis_of(params.text_document.uri)
    if state is None:
        return []
    return RawResult(responses.inlay_hints(state, ls.encoding, params.range,
                                           ls.settings.waits_on_hints))


async def _at_position(ls: GpuAsyncServer, params):
    """The analysed document of a request at a position, its line index and the offset (a
    position past a line's or the text's end is its end)."""
    state = await ls.analysis_of(params.text_document.uri)
    if state is None:
        return None
    index = state.line_index()
    return state, index, convert.offset_of(index, params.position, ls.encoding)


async def hover(ls: GpuAsyncServer, params: lsp.HoverParams):
    at = await _at_position(ls, params)
    if at is None:
        return None
    state, index, offset = at
    found = features.hover(state.analysis, offset, lambda o: index.line_of(o) + 1)
    if found is None:
        return None
    markdown, span = found
    kind = lsp.MarkupKind.Markdown if ls.client.hover_markdown else lsp.MarkupKind.PlainText
    return lsp.Hover(lsp.MarkupContent(kind, markdown),
                     convert.lsp_range(index, span.start, span.end, ls.encoding))


# -- navigation -----------------------------------------------------------------------------

async def document_symbol(ls: GpuAsyncServer, params: lsp.DocumentSymbolParams):
    state = await ls.analysis_of(params.text_document.uri)
    if state is None:
        return []
    return RawResult(await ls.off_loop(responses.document_symbols, state, ls.client,
                                       ls.encoding))


async def folding_range(ls: GpuAsyncServer, params: lsp.FoldingRangeParams):
    state = await ls.analysis_of(params.text_document.uri)
    if state is None:
        return []
    return RawResult(await ls.off_loop(
        lambda check: responses.folding_ranges(state, ls.client)))


async def definition(ls: GpuAsyncServer, params: lsp.DefinitionParams):
    at = await _at_position(ls, params)
    if at is None:
        return None
    state, _, offset = at
    spans = features.definition(state.analysis, offset)
    return RawResult(responses.locations(state, spans, ls.encoding)) if spans else None


async def references(ls: GpuAsyncServer, params: lsp.ReferenceParams):
    at = await _at_position(ls, params)
    if at is None:
        return None
    state, _, offset = at
    spans = await ls.off_loop(lambda check: features.references(
        state.analysis, offset, params.context.include_declaration))
    return RawResult(responses.locations(state, spans, ls.encoding))


# -- highlighting ------------------------------------------------------------------------------

async def semantic_tokens_full(ls: GpuAsyncServer, params: lsp.SemanticTokensParams):
    state = await ls.analysis_of(params.text_document.uri)
    if state is None:
        return None
    return RawResult(await ls.off_loop(
        lambda check: responses.semantic_tokens(state, ls.encoding, None, check)))


async def semantic_tokens_range(ls: GpuAsyncServer, params: lsp.SemanticTokensRangeParams):
    state = await ls.analysis_of(params.text_document.uri)
    if state is None:
        return None
    return RawResult(await ls.off_loop(
        lambda check: responses.semantic_tokens(state, ls.encoding, params.range, check)))


SEMANTIC_TOKENS_LEGEND = lsp.SemanticTokensLegend(semantic.TOKEN_TYPES, semantic.TOKEN_MODIFIERS)


def statistics(ls: GpuAsyncServer, params):
    """`gpuAsyncLsp/statistics`: what the server holds (for tests and curious users)."""
    return {"documents": len(ls.documents), "cache": ls.cache.statistics().as_json(),
            "configFiles": len(ls.configs)}


STATISTICS = "gpuAsyncLsp/statistics"


def build_server() -> GpuAsyncServer:
    """A server with every handler registered."""
    server = GpuAsyncServer()
    register(server)
    return server


def register(server: GpuAsyncServer) -> None:
    feature = server.feature
    feature(lsp.INITIALIZE)(initialize)
    feature(lsp.INITIALIZED)(initialized)
    feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)(did_change_configuration)
    feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)(did_change_watched_files)
    feature(lsp.TEXT_DOCUMENT_DID_OPEN)(did_open)
    feature(lsp.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    feature(lsp.TEXT_DOCUMENT_DID_SAVE)(did_save)
    feature(lsp.TEXT_DOCUMENT_DID_CLOSE)(did_close)
    feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=responses.CODE_ACTION_KINDS, resolve_provider=True))(code_action)
    feature(lsp.CODE_ACTION_RESOLVE)(code_action_resolve)
    feature(lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensOptions(resolve_provider=False))(code_lens)
    server.command(responses.MAKE_ASYNC_COMMAND)(make_asynchronous)
    server.command(responses.SHOW_BLOCKER_COMMAND)(show_blocker)
    feature(lsp.TEXT_DOCUMENT_INLAY_HINT, lsp.InlayHintOptions(resolve_provider=False))(
        inlay_hint)
    feature(lsp.TEXT_DOCUMENT_HOVER)(hover)
    feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)(document_symbol)
    feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)(folding_range)
    feature(lsp.TEXT_DOCUMENT_DEFINITION)(definition)
    feature(lsp.TEXT_DOCUMENT_REFERENCES)(references)
    feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL, SEMANTIC_TOKENS_LEGEND)(semantic_tokens_full)
    feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_RANGE, SEMANTIC_TOKENS_LEGEND)(
        semantic_tokens_range)
    feature(STATISTICS)(statistics)
