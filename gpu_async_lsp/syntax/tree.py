"""Syntax layer: `gpu-async-lsp tree`, the op tree as the parser sees it.

One op per line, two spaces of indent per nesting level, the fully qualified name only;
chunks separated by `// -----`. No implicit ops are added.
"""

from __future__ import annotations

from gpu_async_lsp.syntax.ir import Document


def format_tree(doc: Document) -> str:
    out: list[str] = []
    for i, chunk in enumerate(doc.chunks):
        if i:
            out.append("// -----")
        stack = [(op, 0) for op in reversed(chunk.ops)]
        while stack:  # no recursion: regions may nest thousands deep
            op, depth = stack.pop()
            out.append("  " * depth + op.name)
            for region in reversed(op.regions):
                for block in reversed(region.blocks):
                    stack.extend((child, depth + 1) for child in reversed(block.ops))
    return "\n".join(out) + ("\n" if out else "")
