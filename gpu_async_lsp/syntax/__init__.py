"""Syntax layer: MLIR text -> IR with exact spans (see `parse_document`).

Knows the grammar and the text; must not import pygls, lsprotocol or the analysis layer.
This package is the only place that imports lark.
"""

from gpu_async_lsp.syntax.aliases import undefined_aliases
from gpu_async_lsp.syntax.ir import Alias, Block, Chunk, Document, Op, Region, SyntaxIssue, ValueRef
from gpu_async_lsp.syntax.parser import parse_document

__all__ = [
    "Alias",
    "Block",
    "Chunk",
    "Document",
    "Op",
    "Region",
    "SyntaxIssue",
    "ValueRef",
    "parse_document",
    "undefined_aliases",
]
