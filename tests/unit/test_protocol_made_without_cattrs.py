"""The notifications before a first document's diagnostics (`initialized`,
`workspace/didChangeConfiguration`, `textDocument/didOpen`) are made from their JSON without
cattrs where every field has its type (server/protocol.py `made_without_cattrs`): the same
object cattrs makes, for any such message; anything else is left to cattrs (which coerces or
reports what does not fit)."""

from __future__ import annotations

import random

from lsprotocol import types as lsp
from pygls.protocol import default_converter

from gpu_async_lsp.server.protocol import made_without_cattrs

CONVERTER = default_converter()


def _message(document, **top) -> dict:
    return {"jsonrpc": "2.0", "method": lsp.TEXT_DOCUMENT_DID_OPEN,
            "params": {"textDocument": document}, **top}


def test_made_as_cattrs_makes_it():
    rng = random.Random(7)
    alphabet = "ab%@{}\n\r\t\"\\ é€𝄞\x00"
    for i in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        document = {"uri": f"file:///tmp/a{i}.mlir", "languageId": rng.choice(
            ["mlir", "python", "cpp", "", "MLIR"]), "version": rng.randrange(-(1 << 31), 1 << 31),
            "text": text}
        if i % 3 == 0:
            document["extra"] = [1, 2]  # keys LSP does not know are ignored by both
        message = _message(document)
        made = made_without_cattrs(message)
        assert made is not None
        assert made == CONVERTER.structure(message, lsp.DidOpenTextDocumentNotification)


def test_anything_off_type_is_left_to_cattrs():
    good = {"uri": "file:///a.mlir", "languageId": "mlir", "version": 1, "text": "x"}
    off = [
        {**good, "version": True},  # cattrs makes it 1
        {**good, "version": 1.0},
        {**good, "version": None},
        {**good, "version": 1 << 31},  # out of LSP's integer range
        {**good, "uri": None},
        {**good, "text": b"x"},
        {k: v for k, v in good.items() if k != "text"},
        "not a document",
    ]
    for document in off:
        assert made_without_cattrs(_message(document)) is None
    assert made_without_cattrs(_message(good, id=3)) is None  # a request, not a notification
    assert made_without_cattrs({**_message(good), "jsonrpc": "1.0"}) is None
    assert made_without_cattrs({**_message(good), "method": lsp.TEXT_DOCUMENT_DID_CHANGE}) is None
    assert made_without_cattrs({"jsonrpc": "2.0", "method": lsp.TEXT_DOCUMENT_DID_OPEN}) is None
    assert made_without_cattrs({**_message(good), "params": []}) is None
    assert made_without_cattrs([]) is None and made_without_cattrs(None) is None


def _json_value(rng: random.Random, depth: int = 0):
    kinds = ["null", "bool", "int", "float", "str"] + (["list", "dict"] if depth < 3 else [])
    kind = rng.choice(kinds)
    if kind == "list":
        return [_json_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == "dict":
        return {f"k{i}é": _json_value(rng, depth + 1) for i in range(rng.randrange(4))}
    return {"null": None, "bool": rng.random() < 0.5, "int": rng.randrange(-9, 9),
            "float": rng.random(), "str": rng.choice(["", "x", "€𝄞"])}[kind]


def test_the_other_notifications_are_made_as_cattrs_makes_them():
    rng = random.Random(11)
    for _ in range(200):
        settings = _json_value(rng)
        message = {"jsonrpc": "2.0", "method": lsp.WORKSPACE_DID_CHANGE_CONFIGURATION,
                   "params": {"settings": settings}}
        made = made_without_cattrs(message)
        assert made is not None
        assert made == CONVERTER.structure(message, lsp.DidChangeConfigurationNotification)
        assert made.params.settings is settings or settings is None
    for params in ({}, {"unknown": [1]}):
        message = {"jsonrpc": "2.0", "method": lsp.INITIALIZED, "params": params}
        made = made_without_cattrs(message)
        assert made is not None
        assert made == CONVERTER.structure(message, lsp.InitializedNotification)
    document = {"uri": "file:///a.mlir", "languageId": "mlir", "version": 1, "text": "x"}
    assert made_without_cattrs(_message(document)) == CONVERTER.structure(
        _message(document), lsp.DidOpenTextDocumentNotification)


def test_the_other_notifications_off_type_are_left_to_cattrs():
    for method, params in [(lsp.INITIALIZED, None), (lsp.INITIALIZED, []),
                           (lsp.WORKSPACE_DID_CHANGE_CONFIGURATION, {}),
                           (lsp.WORKSPACE_DID_CHANGE_CONFIGURATION, [1]),
                           (lsp.WORKSPACE_DID_CHANGE_CONFIGURATION, None)]:
        assert made_without_cattrs({"jsonrpc": "2.0", "method": method, "params": params}) is None
    assert made_without_cattrs({"jsonrpc": "2.0", "method": lsp.INITIALIZED}) is None
    assert made_without_cattrs({"jsonrpc": "1.0", "method": lsp.INITIALIZED, "params": {}}) is None
    # A request of a notification's method, and methods it does not make: cattrs's.
    assert made_without_cattrs({"jsonrpc": "2.0", "id": 1, "method": lsp.INITIALIZED,
                                "params": {}}) is None
    assert made_without_cattrs({"jsonrpc": "2.0", "method": lsp.TEXT_DOCUMENT_DID_CLOSE,
                                "params": {"textDocument": {"uri": "file:///a"}}}) is None
    assert made_without_cattrs([]) is None and made_without_cattrs({"settings": 1}) is None
