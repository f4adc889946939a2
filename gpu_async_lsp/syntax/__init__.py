"""Syntax layer: MLIR text -> IR with exact spans (see `parse_document`).

Knows the grammar and the text; must not import pygls, lsprotocol or the analysis layer.
This package is the only place that imports lark.

Its doors are the names below (`__all__`) and two modules read as vocabulary: `patterns`
(the lexical forms every scan shares) and `navigation` (what a name in the IR refers to).
Code outside `syntax/` imports nothing else of it (tests/unit/test_packaging.py).
"""

from gpu_async_lsp.syntax.aliases import undefined_aliases
from gpu_async_lsp.syntax.braces import OP_WORDS
from gpu_async_lsp.syntax.ir import Alias, Block, Chunk, Document, Op, Region, SyntaxIssue, ValueRef
from gpu_async_lsp.syntax.lexer import split_chunks
from gpu_async_lsp.syntax.parser import (
    ContainerHeader,
    LeafShare,
    UnitVisit,
    build_parser_once,
    head_symbol,
    iter_units,
    leaf_counts,
    leaf_unit_sizes,
    parse_document,
    parse_unit,
    split_document,
)
from gpu_async_lsp.syntax.tree import format_tree

__all__ = [
    "OP_WORDS",
    "Alias",
    "Block",
    "Chunk",
    "ContainerHeader",
    "Document",
    "LeafShare",
    "Op",
    "Region",
    "SyntaxIssue",
    "UnitVisit",
    "ValueRef",
    "build_parser_once",
    "format_tree",
    "head_symbol",
    "iter_units",
    "leaf_counts",
    "leaf_unit_sizes",
    "parse_document",
    "parse_unit",
    "split_chunks",
    "split_document",
    "undefined_aliases",
]
