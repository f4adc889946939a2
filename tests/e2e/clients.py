"""Client capability sets of real LSP clients, as they send them in `initialize`.

Each set is copied from a recorded `initialize` request of the named client (sources next to
each), not written from the specification, so the tests see what the server meets in the
field: VS Code (UTF-16, versioned edits, disabled code actions), Neovim 0.11 (UTF-8 first, plain
`changes`, no disabled actions), Emacs/eglot 29 (UTF-32 first). `MINIMAL` is the least a client
may send that still lets the server offer code action literals.
"""

from __future__ import annotations

from typing import Any

_SYMBOL_KINDS = list(range(1, 27))
_COMPLETION_KINDS = list(range(1, 26))
_SEMANTIC_TOKEN_TYPES = [
    "namespace", "type", "class", "enum", "interface", "struct", "typeParameter", "parameter",
    "variable", "property", "enumMember", "event", "function", "method", "macro", "keyword",
    "modifier", "comment", "string", "number", "regexp", "operator", "decorator",
]
_SEMANTIC_TOKEN_MODIFIERS = [
    "declaration", "definition", "readonly", "static", "deprecated", "abstract", "async",
    "modification", "documentation", "defaultLibrary",
]

# VS Code 1.96.4 with vscode-languageclient 9: the `initialize` request the Typst extension
# tinymist (which depends on vscode-languageclient ^9.0.0; its initializationOptions are in the
# same recording) sent, kept in a public C# LSP test harness; a recording from VS Code 1.97.2
# kept in a Kotlin JASS language server's tests has the same capabilities byte for byte. Note
# `publishDiagnostics.versionSupport: false` and no `source.fixAll` among the code action
# kinds: that is what vscode-languageclient 9 sends.
VSCODE: dict[str, Any] = {
    "workspace": {
        "applyEdit": True,
        "workspaceEdit": {
            "documentChanges": True,
            "resourceOperations": ["create", "rename", "delete"],
            "failureHandling": "textOnlyTransactional",
            "normalizesLineEndings": True,
            "changeAnnotationSupport": {"groupsOnLabel": True},
        },
        "configuration": True,
        "didChangeWatchedFiles": {"dynamicRegistration": True, "relativePatternSupport": True},
        "symbol": {
            "dynamicRegistration": True,
            "symbolKind": {"valueSet": _SYMBOL_KINDS},
            "tagSupport": {"valueSet": [1]},
            "resolveSupport": {"properties": ["location.range"]},
        },
        "codeLens": {"refreshSupport": True},
        "executeCommand": {"dynamicRegistration": True},
        "didChangeConfiguration": {"dynamicRegistration": True},
        "workspaceFolders": True,
        "foldingRange": {"refreshSupport": True},
        "semanticTokens": {"refreshSupport": True},
        "fileOperations": {
            "dynamicRegistration": True, "didCreate": True, "didRename": True,
            "didDelete": True, "willCreate": True, "willRename": True, "willDelete": True,
        },
        "inlineValue": {"refreshSupport": True},
        "inlayHint": {"refreshSupport": True},
        "diagnostics": {"refreshSupport": True},
    },
    "textDocument": {
        "publishDiagnostics": {
            "relatedInformation": True,
            "versionSupport": False,
            "tagSupport": {"valueSet": [1, 2]},
            "codeDescriptionSupport": True,
            "dataSupport": True,
        },
        "synchronization": {
            "dynamicRegistration": True, "willSave": True, "willSaveWaitUntil": True,
            "didSave": True,
        },
        "completion": {
            "dynamicRegistration": True,
            "contextSupport": True,
            "completionItem": {
                "snippetSupport": True,
                "commitCharactersSupport": True,
                "documentationFormat": ["markdown", "plaintext"],
                "deprecatedSupport": True,
                "preselectSupport": True,
                "tagSupport": {"valueSet": [1]},
                "insertReplaceSupport": True,
                "resolveSupport": {"properties": ["documentation", "detail",
                                                  "additionalTextEdits"]},
                "insertTextModeSupport": {"valueSet": [1, 2]},
                "labelDetailsSupport": True,
            },
            "insertTextMode": 2,
            "completionItemKind": {"valueSet": _COMPLETION_KINDS},
            "completionList": {"itemDefaults": ["commitCharacters", "editRange",
                                                "insertTextFormat", "insertTextMode", "data"]},
        },
        "hover": {"dynamicRegistration": True, "contentFormat": ["markdown", "plaintext"]},
        "signatureHelp": {
            "dynamicRegistration": True,
            "signatureInformation": {
                "documentationFormat": ["markdown", "plaintext"],
                "parameterInformation": {"labelOffsetSupport": True},
                "activeParameterSupport": True,
            },
            "contextSupport": True,
        },
        "definition": {"dynamicRegistration": True, "linkSupport": True},
        "references": {"dynamicRegistration": True},
        "documentHighlight": {"dynamicRegistration": True},
        "documentSymbol": {
            "dynamicRegistration": True,
            "symbolKind": {"valueSet": _SYMBOL_KINDS},
            "hierarchicalDocumentSymbolSupport": True,
            "tagSupport": {"valueSet": [1]},
            "labelSupport": True,
        },
        "codeAction": {
            "dynamicRegistration": True,
            "isPreferredSupport": True,
            "disabledSupport": True,
            "dataSupport": True,
            "resolveSupport": {"properties": ["edit"]},
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                "", "quickfix", "refactor", "refactor.extract", "refactor.inline",
                "refactor.rewrite", "source", "source.organizeImports"]}},
            "honorsChangeAnnotations": True,
        },
        "codeLens": {"dynamicRegistration": True},
        "formatting": {"dynamicRegistration": True},
        "rangeFormatting": {"dynamicRegistration": True, "rangesSupport": True},
        "onTypeFormatting": {"dynamicRegistration": True},
        "rename": {
            "dynamicRegistration": True, "prepareSupport": True,
            "prepareSupportDefaultBehavior": 1, "honorsChangeAnnotations": True,
        },
        "documentLink": {"dynamicRegistration": True, "tooltipSupport": True},
        "typeDefinition": {"dynamicRegistration": True, "linkSupport": True},
        "implementation": {"dynamicRegistration": True, "linkSupport": True},
        "colorProvider": {"dynamicRegistration": True},
        "foldingRange": {
            "dynamicRegistration": True,
            "rangeLimit": 5000,
            "lineFoldingOnly": True,
            "foldingRangeKind": {"valueSet": ["comment", "imports", "region"]},
            "foldingRange": {"collapsedText": False},
        },
        "declaration": {"dynamicRegistration": True, "linkSupport": True},
        "selectionRange": {"dynamicRegistration": True},
        "callHierarchy": {"dynamicRegistration": True},
        "semanticTokens": {
            "dynamicRegistration": True,
            "tokenTypes": _SEMANTIC_TOKEN_TYPES,
            "tokenModifiers": _SEMANTIC_TOKEN_MODIFIERS,
            "formats": ["relative"],
            "requests": {"range": True, "full": {"delta": True}},
            "multilineTokenSupport": False,
            "overlappingTokenSupport": False,
            "serverCancelSupport": True,
            "augmentsSyntaxTokens": True,
        },
        "linkedEditingRange": {"dynamicRegistration": True},
        "typeHierarchy": {"dynamicRegistration": True},
        "inlineValue": {"dynamicRegistration": True},
        "inlayHint": {
            "dynamicRegistration": True,
            "resolveSupport": {"properties": ["tooltip", "textEdits", "label.tooltip",
                                              "label.location", "label.command"]},
        },
        "diagnostic": {"dynamicRegistration": True, "relatedDocumentSupport": False},
    },
    "window": {
        "showMessage": {"messageActionItem": {"additionalPropertiesSupport": True}},
        "showDocument": {"support": True},
        "workDoneProgress": True,
    },
    "general": {
        "staleRequestSupport": {
            "cancel": True,
            "retryOnContentModified": ["textDocument/semanticTokens/full",
                                       "textDocument/semanticTokens/range",
                                       "textDocument/semanticTokens/full/delta"],
        },
        "regularExpressions": {"engine": "ECMAScript", "version": "ES2020"},
        "markdown": {"parser": "marked", "version": "1.1.0"},
        "positionEncodings": ["utf-16"],
    },
    "notebookDocument": {
        "synchronization": {"dynamicRegistration": True, "executionSummarySupport": True},
    },
}

# Neovim 0.11.0, `vim.lsp.protocol.make_client_capabilities()`: the capture
# neovim_v0.11.0.json that lsp-devtools records from a real nvim 0.11.0 (its
# capabilities-nvim.yml workflow) and ships in pytest-lsp 1.0.1. Neovim lists UTF-8 first, sends
# no `workspaceEdit.documentChanges` (it applies them, but does not advertise them: only
# `resourceOperations`) and no `codeAction.disabledSupport`; its code action kinds have no
# `source.fixAll` either.
NEOVIM: dict[str, Any] = {
    "window": {
        "showMessage": {"messageActionItem": {"additionalPropertiesSupport": True}},
        "showDocument": {"support": True},
        "workDoneProgress": True,
    },
    "workspace": {
        "didChangeWatchedFiles": {"dynamicRegistration": False, "relativePatternSupport": True},
        "inlayHint": {"refreshSupport": True},
        "semanticTokens": {"refreshSupport": True},
        "symbol": {"dynamicRegistration": False, "symbolKind": {"valueSet": _SYMBOL_KINDS}},
        "configuration": True,
        "didChangeConfiguration": {"dynamicRegistration": False},
        "workspaceFolders": True,
        "applyEdit": True,
        "workspaceEdit": {"resourceOperations": ["rename", "create", "delete"]},
    },
    "general": {"positionEncodings": ["utf-8", "utf-16", "utf-32"]},
    "textDocument": {
        "documentHighlight": {"dynamicRegistration": False},
        "documentSymbol": {
            "dynamicRegistration": False,
            "hierarchicalDocumentSymbolSupport": True,
            "symbolKind": {"valueSet": _SYMBOL_KINDS},
        },
        "hover": {"dynamicRegistration": True, "contentFormat": ["markdown", "plaintext"]},
        "inlayHint": {
            "dynamicRegistration": True,
            "resolveSupport": {"properties": ["textEdits", "tooltip", "location", "command"]},
        },
        "publishDiagnostics": {
            "relatedInformation": True,
            "tagSupport": {"valueSet": [1, 2]},
            "dataSupport": True,
        },
        "semanticTokens": {
            "formats": ["relative"],
            "requests": {"range": False, "full": {"delta": True}},
            "dynamicRegistration": False,
            "overlappingTokenSupport": True,
            "multilineTokenSupport": False,
            "tokenModifiers": _SEMANTIC_TOKEN_MODIFIERS,
            "tokenTypes": _SEMANTIC_TOKEN_TYPES,
            "augmentsSyntaxTokens": True,
            "serverCancelSupport": False,
        },
        "rangeFormatting": {"dynamicRegistration": True, "rangesSupport": True},
        "callHierarchy": {"dynamicRegistration": False},
        "completion": {
            "contextSupport": True,
            "completionItemKind": {"valueSet": _COMPLETION_KINDS},
            "dynamicRegistration": False,
            "completionItem": {
                "documentationFormat": ["markdown", "plaintext"],
                "tagSupport": {"valueSet": [1]},
                "resolveSupport": {"properties": ["additionalTextEdits", "command"]},
                "snippetSupport": True,
                "commitCharactersSupport": False,
                "preselectSupport": False,
                "deprecatedSupport": True,
            },
            "completionList": {"itemDefaults": ["editRange", "insertTextFormat",
                                                "insertTextMode", "data"]},
        },
        "formatting": {"dynamicRegistration": True},
        "references": {"dynamicRegistration": False},
        "implementation": {"linkSupport": True},
        "codeLens": {"dynamicRegistration": False, "resolveSupport": {"properties": ["command"]}},
        "foldingRange": {
            "dynamicRegistration": False,
            "foldingRange": {"collapsedText": True},
            "lineFoldingOnly": True,
        },
        "synchronization": {
            "dynamicRegistration": False, "didSave": True, "willSaveWaitUntil": True,
            "willSave": True,
        },
        "declaration": {"linkSupport": True},
        "definition": {"linkSupport": True, "dynamicRegistration": True},
        "typeDefinition": {"linkSupport": True},
        "diagnostic": {"dynamicRegistration": False},
        "signatureHelp": {
            "dynamicRegistration": False,
            "signatureInformation": {
                "documentationFormat": ["markdown", "plaintext"],
                "parameterInformation": {"labelOffsetSupport": True},
                "activeParameterSupport": True,
            },
        },
        "codeAction": {
            "isPreferredSupport": True,
            "dataSupport": True,
            "dynamicRegistration": True,
            "resolveSupport": {"properties": ["edit", "command"]},
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                "", "quickfix", "refactor", "refactor.extract", "refactor.inline",
                "refactor.rewrite", "source", "source.organizeImports"]}},
        },
        "rename": {"dynamicRegistration": True, "prepareSupport": True},
    },
}

# Emacs 29.1 with eglot: the capture emacs_v29.1.json recorded with lsp-devtools and shipped in
# pytest-lsp 1.0.1. It lists UTF-32 first, has `documentChanges` but no `disabledSupport`, and
# declines related information.
EGLOT: dict[str, Any] = {
    "workspace": {
        "applyEdit": True,
        "executeCommand": {"dynamicRegistration": False},
        "workspaceEdit": {"documentChanges": True},
        "didChangeWatchedFiles": {"dynamicRegistration": True},
        "symbol": {"dynamicRegistration": False},
        "configuration": True,
        "workspaceFolders": True,
    },
    "textDocument": {
        "synchronization": {
            "dynamicRegistration": False, "willSave": True, "willSaveWaitUntil": True,
            "didSave": True,
        },
        "completion": {
            "dynamicRegistration": False,
            "completionItem": {
                "snippetSupport": False,
                "deprecatedSupport": True,
                "resolveSupport": {"properties": ["documentation", "details",
                                                  "additionalTextEdits"]},
                "tagSupport": {"valueSet": [1]},
            },
            "contextSupport": True,
        },
        "hover": {"dynamicRegistration": False, "contentFormat": ["markdown", "plaintext"]},
        "signatureHelp": {
            "dynamicRegistration": False,
            "signatureInformation": {
                "parameterInformation": {"labelOffsetSupport": True},
                "activeParameterSupport": True,
            },
        },
        "references": {"dynamicRegistration": False},
        "definition": {"dynamicRegistration": False, "linkSupport": True},
        "declaration": {"dynamicRegistration": False, "linkSupport": True},
        "implementation": {"dynamicRegistration": False, "linkSupport": True},
        "typeDefinition": {"dynamicRegistration": False, "linkSupport": True},
        "documentSymbol": {
            "dynamicRegistration": False,
            "hierarchicalDocumentSymbolSupport": True,
            "symbolKind": {"valueSet": _SYMBOL_KINDS},
        },
        "documentHighlight": {"dynamicRegistration": False},
        "codeAction": {
            "dynamicRegistration": False,
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                "quickfix", "refactor", "refactor.extract", "refactor.inline",
                "refactor.rewrite", "source", "source.organizeImports"]}},
            "isPreferredSupport": True,
        },
        "formatting": {"dynamicRegistration": False},
        "rangeFormatting": {"dynamicRegistration": False},
        "rename": {"dynamicRegistration": False},
        "inlayHint": {"dynamicRegistration": False},
        "publishDiagnostics": {
            "relatedInformation": False,
            "codeDescriptionSupport": False,
            "tagSupport": {"valueSet": [1, 2]},
        },
    },
    "window": {"workDoneProgress": True},
    "general": {"positionEncodings": ["utf-32", "utf-8", "utf-16"]},
    "experimental": {},
}

# The least a client may send and still get code action literals: no position encodings
# (UTF-16 then), no versioned edits, no disabled actions, no resolve support.
MINIMAL: dict[str, Any] = {
    "textDocument": {
        "synchronization": {"didSave": True},
        "publishDiagnostics": {"relatedInformation": True},
        "codeAction": {
            "codeActionLiteralSupport": {"codeActionKind": {"valueSet": [
                "quickfix", "refactor", "source"]}},
        },
    },
}

CAPABILITIES: dict[str, dict[str, Any]] = {
    "vscode": VSCODE,
    "neovim": NEOVIM,
    "eglot": EGLOT,
    "minimal": MINIMAL,
}
# What each client negotiates with a pygls server that supports all three encodings.
ENCODING = {"vscode": "utf-16", "neovim": "utf-8", "eglot": "utf-32", "minimal": "utf-16"}
# The three clients the main tests run with; eglot joins where UTF-32 matters.
MAIN_CLIENTS = ("vscode", "neovim", "minimal")


def has_document_changes(client: str) -> bool:
    ws = CAPABILITIES[client].get("workspace", {}).get("workspaceEdit", {})
    return bool(ws.get("documentChanges"))


def has_disabled_support(client: str) -> bool:
    return bool(CAPABILITIES[client].get("textDocument", {}).get("codeAction", {})
                .get("disabledSupport"))
