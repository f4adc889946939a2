"""Syntax layer: `gpu-async-lsp tree`, the op tree as the parser sees it.

One op per line, two spaces of indent per nesting level, the fully qualified name only;
chunks separated by `// -----`. No implicit ops are added.
"""

from __future__ import annotations

from gpu_async_lsp.syntax.ir import Document, Op


def _lines(op: Op, depth: int, out: list[str]) -> None:
    out.append("  " * depth + op.name)
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                _lines(child, depth + 1, out)


def format_tree(doc: Document) -> str:
    out: list[str] = []
    for i, chunk in enumerate(doc.chunks):
        if i:
            out.append("// -----")
        for op in chunk.ops:
            _lines(op, 0, out)
    return "\n".join(out) + ("\n" if out else "")
