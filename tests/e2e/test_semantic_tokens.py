"""Semantic tokens over the real protocol (`textDocument/semanticTokens/full` and `/range`),
with the capability sets of VS Code, Neovim 0.11 and a minimal client; positions and lengths
checked in the encoding each negotiates (non-ASCII text sits before tokens on its line)."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types

from tests.e2e.lsp_session import TIMEOUT, offset

pytestmark = pytest.mark.asyncio(loop_scope="session")

DOC = """\
// Copies in and out. é𝄞
module attributes {gpu.container_module} {
  func.func @scale(%n: index, %dep: !gpu.async.token) {
    %c1 = arith.constant 1 : index
    %0:2 = "test.two"() {note = "é𝄞"} : () -> (index, index) %buf = gpu.alloc (%n) : memref<?xf32>
    %t0 = gpu.wait async [%dep]
    %t1 = gpu.memset async [%t0] %buf, %c1 : memref<?xf32>, index
    gpu.wait [%t1]
    cf.br ^bb1(%c1 : index)
  ^bb1(%x: index):
    return
  }
  func.func @broken(%n: index) {
    %y = arith.addi (
  }
}
"""


async def tokens(server, uri: str, rng: types.Range | None = None) -> list[tuple]:
    """(text, type, modifiers, line) of each token the server sends, decoded."""
    ident = types.TextDocumentIdentifier(uri=uri)
    if rng is None:
        result = await asyncio.wait_for(server.client.text_document_semantic_tokens_full_async(
            types.SemanticTokensParams(ident)), TIMEOUT)
    else:
        result = await asyncio.wait_for(server.client.text_document_semantic_tokens_range_async(
            types.SemanticTokensRangeParams(ident, rng)), TIMEOUT)
    legend = server.result.capabilities.semantic_tokens_provider.legend
    text = server.texts[uri]
    out, line, col = [], 0, 0
    data = result.data
    assert len(data) % 5 == 0
    for i in range(0, len(data), 5):
        dl, dc, length, kind, mods = data[i:i + 5]
        line, col = line + dl, (dc if dl else col + dc)
        start = offset(text, types.Position(line, col), server.encoding)
        end = offset(text, types.Position(line, col + length), server.encoding)
        names = {m for bit, m in enumerate(legend.token_modifiers) if mods >> bit & 1}
        out.append((text[start:end], legend.token_types[kind], names, line))
    return out


def find(found: list[tuple], text: str, kind: str | None = None) -> list[tuple]:
    return [t for t in found if t[0] == text and (kind is None or t[1] == kind)]


async def test_semantic_tokens_are_advertised_with_a_legend(server):
    provider = server.result.capabilities.semantic_tokens_provider
    assert provider.full and provider.range
    legend = provider.legend
    for kind in ("namespace", "macro", "function", "variable", "label", "type", "property",
                 "keyword", "string", "number", "comment"):
        assert kind in legend.token_types
    assert "declaration" in legend.token_modifiers and "asyncToken" in legend.token_modifiers


async def test_semantic_tokens_full_classifies_what_mlir_text_holds(server, uri):
    await server.open_and_wait(uri, DOC)
    found = await tokens(server, uri)
    # Tokens come in text order, one line each, none overlapping.
    places = [(t[3], i) for i, t in enumerate(found)]
    assert places == sorted(places)
    assert find(found, "// Copies in and out. é𝄞", "comment")
    assert find(found, "module", "macro") and find(found, "attributes", "keyword")
    assert find(found, "gpu.container_module", "property")
    assert find(found, "func", "namespace") and find(found, "func", "macro")
    assert find(found, "@scale", "function")
    assert [t[2] for t in find(found, "%buf", "variable")] == [{"declaration"}, set()]
    assert find(found, '"test.two"', "macro") and find(found, "note", "property")
    assert find(found, '"é𝄞"', "string")  # its length in the negotiated encoding
    assert find(found, "alloc", "macro") and find(found, "memref", "type")
    assert find(found, "?xf32", "type") and find(found, "index", "type")
    assert find(found, "!gpu.async.token", "type")
    assert find(found, "1", "number") and find(found, "async", "keyword")
    assert [t[1] for t in find(found, "^bb1")] == ["label", "label"]
    assert find(found, "return", "macro")


async def test_semantic_tokens_mark_async_token_values(server, uri):
    await server.open_and_wait(uri, DOC)
    found = await tokens(server, uri)
    for name in ("%t0", "%t1", "%dep"):
        uses = find(found, name, "variable")
        assert uses and all("asyncToken" in t[2] for t in uses), (name, uses)
        assert any("declaration" in t[2] for t in uses), name
    assert all("asyncToken" not in t[2] for t in find(found, "%buf") + find(found, "%c1"))


async def test_semantic_tokens_of_a_broken_function_are_kept(server, uri):
    """The function with a syntax error keeps the tokens of what it holds; the other one
    is unchanged by it."""
    await server.open_and_wait(uri, DOC)
    found = await tokens(server, uri)
    assert find(found, "@broken", "function") and find(found, "%y", "variable")
    assert find(found, "arith", "namespace") and find(found, "addi", "macro")
    assert find(found, "@scale", "function")


async def test_semantic_tokens_range_and_after_an_edit(server, uri):
    await server.open_and_wait(uri, DOC)
    full = await tokens(server, uri)
    rng = types.Range(types.Position(9, 0), types.Position(11, 0))
    part = await tokens(server, uri, rng)
    assert part and all(t in full for t in part)
    assert any(t[3] in (9, 10) for t in part)
    assert find(part, "^bb1", "label")
    # An edit inside @scale: the new token is there, at its place, the rest moved along.
    at = server.texts[uri].index("%c1 = arith")
    server.replace(uri, at, at + 3, "%one")
    await server.wait_diagnostics(uri, server.versions[uri])
    after = await tokens(server, uri)
    assert find(after, "%one", "variable") and len(after) == len(full)
    assert [t[1:] for t in after] == [t[1:] for t in full]
