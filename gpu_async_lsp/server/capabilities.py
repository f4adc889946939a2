"""Protocol layer: what the client can do, resolved once at `initialize`.

Handlers read these flags instead of walking lsprotocol's optional capability tree each time
(ruff's server does the same with its `ResolvedClientCapabilities`).
"""

from __future__ import annotations

from dataclasses import dataclass

from lsprotocol import types as lsp


@dataclass(frozen=True)
class ClientFeatures:
    apply_edit: bool = False  # workspace/applyEdit
    document_changes: bool = False  # versioned WorkspaceEdit.documentChanges
    code_lens_refresh: bool = False
    inlay_hint_refresh: bool = False
    show_document: bool = False  # window/showDocument
    code_action_disabled: bool = False  # CodeAction.disabled
    code_action_resolve_edit: bool = False  # codeAction/resolve fills in `edit` (and keeps data)
    hover_markdown: bool = True
    hierarchical_symbols: bool = False
    folding_range_limit: int | None = None
    semantic_tokens: bool = False  # asks for them: worth computing ahead, after an analysis
    # workspace/didChangeWatchedFiles registered by the server (for configuration files)
    watched_files_registration: bool = False

    @classmethod
    def of(cls, caps: lsp.ClientCapabilities | None) -> ClientFeatures:
        if caps is None:
            return cls()
        ws = caps.workspace
        td = caps.text_document
        window = caps.window
        action = td.code_action if td else None
        resolve = action.resolve_support if action else None
        hover_formats = td.hover.content_format if td and td.hover else None
        symbols = td.document_symbol if td else None
        folding = td.folding_range if td else None
        return cls(
            apply_edit=bool(ws and ws.apply_edit),
            document_changes=bool(ws and ws.workspace_edit and ws.workspace_edit.document_changes),
            code_lens_refresh=bool(ws and ws.code_lens and ws.code_lens.refresh_support),
            inlay_hint_refresh=bool(ws and ws.inlay_hint and ws.inlay_hint.refresh_support),
            show_document=bool(window and window.show_document
                               and window.show_document.support),
            code_action_disabled=bool(action and action.disabled_support),
            code_action_resolve_edit=bool(action and action.data_support and resolve
                                          and "edit" in (resolve.properties or ())),
            # Plain text only for a client that lists formats without Markdown (the Markdown
            # we write reads as text).
            hover_markdown=not hover_formats or lsp.MarkupKind.Markdown in hover_formats,
            hierarchical_symbols=bool(symbols and symbols.hierarchical_document_symbol_support),
            folding_range_limit=folding.range_limit if folding else None,
            semantic_tokens=bool(td and td.semantic_tokens),
            watched_files_registration=bool(ws and ws.did_change_watched_files
                                            and ws.did_change_watched_files.dynamic_registration),
        )
