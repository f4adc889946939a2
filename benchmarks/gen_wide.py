"""Real IR of many dialects, repeated to a size: the chunks of ../shared/corpus-wide that
mlir-opt-22 parses (its manifest says which), joined with `// -----`.

python benchmarks/gen_wide.py LINES > file.mlir
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus-wide"
MARKER = "// -----"


def chunks() -> list[str]:
    """The chunks LLVM 22 parses, each as mlir-opt -split-input-file cuts it."""
    manifest = CORPUS / "manifest.json"
    if not manifest.exists():
        raise SystemExit(f"gen_wide: {CORPUS} is missing (the wide corpus of ../shared)")
    out = []
    for entry in json.loads(manifest.read_text()):
        text = (CORPUS / entry["path"]).read_text(encoding="utf-8")
        pieces = text.split(MARKER) if entry["split_input_file"] else [text]
        details = entry["chunk_details"]
        for i, piece in enumerate(pieces):
            ok = details[i]["parses"] if details else entry["mlir_opt_parses"]
            # Without -allow-unregistered-dialect, as a user's server opens a file.
            if ok and not entry["allow_unregistered"] and not entry["verify_diagnostics"]:
                out.append(piece.strip("\n") + "\n")
    return out


def generate(lines: int) -> str:
    """At least `lines` lines of real IR: the corpus chunks, in order, again and again."""
    pieces = chunks()
    out: list[str] = []
    count = 0
    while count < lines:
        for piece in pieces:
            out.append(piece)
            count += piece.count("\n") + 1
            if count >= lines:
                break
    return f"\n{MARKER}\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(generate(int(sys.argv[1]) if len(sys.argv) > 1 else 50000))
