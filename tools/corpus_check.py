#!/usr/bin/env python3
"""Compare gpu-async-lsp's parser with LLVM's on every `.mlir` file of a folder.

    python tools/corpus_check.py FOLDER [FOLDER ...] [--mlir-opt mlir-opt-22] [--json OUT]

Each file is cut into chunks as `mlir-opt -split-input-file` cuts it (at every `// -----`, so
a file that holds a marker is split even if its RUN lines do not split it). For each chunk,
`mlir-opt --mlir-print-op-generic` says whether LLVM parses it (tried without and then with
`-allow-unregistered-dialect`) and gives its op structure. For each chunk LLVM parses, the
script reports whether our parser's op tree (`gpu-async-lsp tree`) equals LLVM's and whether
we report a syntax finding there:

    ok      path#chunk
    differs path#chunk  where the trees first differ
    syntax  path#chunk  line:col: our syntax finding

then a summary. Chunks LLVM rejects are counted, not compared (`--verbose` lists them with our
findings there). Exit status: 0 when every chunk LLVM parses has its tree and no syntax
finding, 1 otherwise, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpu_async_lsp.syntax import parse_document
from gpu_async_lsp.syntax.optree import document_trees, first_difference

MARKER = "// -----"
# Chunks LLVM takes longer than this to print are reported as rejected.
TIMEOUT = 120


@dataclass
class ChunkReport:
    path: str
    chunk: int
    line: int  # the chunk's first line in the file (1-based)
    llvm: str  # "parses", "parses-unregistered" (with -allow-unregistered-dialect), "rejects"
    tree: str | None  # "equal", "differs", None where LLVM rejects the chunk
    difference: str | None  # where the trees first differ
    syntax_findings: int  # how many syntax findings we report in the chunk
    first_syntax: str | None  # "line:col: message" of the first one (file positions)


def llvm_chunks(text: str) -> list[tuple[int, str]]:
    """(offset, text) of each chunk, cut where `mlir-opt -split-input-file` cuts: at every
    occurrence of the marker, anywhere on a line (what follows it on its line belongs to the
    next chunk: `// ----- notes` makes mlir-opt parse ` notes` as code)."""
    if MARKER not in text:
        return [(0, text)]
    out = []
    pos = 0
    while True:
        at = text.find(MARKER, pos)
        if at < 0:
            out.append((pos, text[pos:]))
            return out
        out.append((pos, text[pos:at]))
        pos = at + len(MARKER)


def _generic(mlir_opt: str, chunk: str) -> tuple[str, str | None]:
    """(how LLVM reads the chunk, its generic print or None)."""
    for flags, verdict in (([], "parses"), (["-allow-unregistered-dialect"], "parses-unregistered")):
        try:
            proc = subprocess.run([mlir_opt, "--mlir-print-op-generic", *flags, "-"],
                                  input=chunk, capture_output=True, text=True, timeout=TIMEOUT,
                                  check=False)
        except subprocess.TimeoutExpired:
            return "rejects", None
        if proc.returncode == 0:
            return verdict, proc.stdout
    return "rejects", None


def _position(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    col = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return f"{line}:{col}"


def check_chunk(mlir_opt: str, shown: str, text: str, index: int, offset: int,
                chunk: str) -> ChunkReport:
    llvm, generic = _generic(mlir_opt, chunk)
    doc = parse_document(chunk)
    errors = [e for c in doc.chunks for e in c.errors]
    first = (f"{_position(text, offset + errors[0].start)}: {errors[0].message}"
             if errors else None)
    tree = difference = None
    if generic is not None:
        reference = parse_document(generic)
        ref_trees = document_trees(reference)
        ref_errors = [e for c in reference.chunks for e in c.errors]
        if ref_errors or len(ref_trees) != 1 or len(ref_trees[0]) != 1:
            tree = "differs"
            difference = ("our parser cannot read LLVM's generic print: "
                          + (ref_errors[0].message if ref_errors else "not one module"))
        else:
            ours = [t for trees in document_trees(doc) for t in trees]
            difference = first_difference(ours, ref_trees[0][0])
            tree = "equal" if difference is None else "differs"
    return ChunkReport(shown, index, text.count("\n", 0, offset) + 1, llvm, tree, difference,
                       len(errors), first)


def _check_file(mlir_opt: str, path: Path, shown: str) -> tuple[list[ChunkReport], str | None]:
    """The reports of a file's chunks, or why it was skipped."""
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return [], f"skipped {shown}: {e}"
    return [check_chunk(mlir_opt, shown, text, i, offset, chunk)
            for i, (offset, chunk) in enumerate(llvm_chunks(text))], None


def _files(folders: list[Path]) -> list[tuple[Path, str]]:
    out = []
    for folder in folders:
        if folder.is_file():
            out.append((folder, str(folder)))
            continue
        for path in sorted(folder.rglob("*.mlir")):
            if path.is_file():
                out.append((path, str(path.relative_to(folder))))
    return out


def summary(reports: list[ChunkReport], files: int) -> str:
    parsed = [r for r in reports if r.llvm != "rejects"]
    equal = sum(r.tree == "equal" for r in parsed)
    syntax = sum(r.syntax_findings > 0 for r in parsed)
    clean = sum(r.tree == "equal" and not r.syntax_findings for r in parsed)
    return (f"{files} files, {len(reports)} chunks, {len(parsed)} parsed by LLVM: "
            f"{equal} trees equal to LLVM's ({len(parsed) - equal} differ), "
            f"{syntax} with a syntax finding; {clean}/{len(parsed)} clean")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folders", nargs="+", type=Path, help="folders (searched recursively) or files")
    ap.add_argument("--mlir-opt", default=None,
                    help="the mlir-opt to compare with (default: mlir-opt-22, else mlir-opt)")
    ap.add_argument("--json", type=Path, help="also write one record per chunk to this file")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--verbose", action="store_true",
                    help="also list the chunks that are clean and those LLVM rejects")
    args = ap.parse_args(argv)
    mlir_opt = args.mlir_opt or shutil.which("mlir-opt-22") or shutil.which("mlir-opt")
    if mlir_opt is None or shutil.which(mlir_opt) is None:
        print("error: no mlir-opt found (install mlir-22-tools, or pass --mlir-opt)",
              file=sys.stderr)
        return 2
    for folder in args.folders:
        if not folder.exists():
            print(f"error: {folder} does not exist", file=sys.stderr)
            return 2
    files = _files(args.folders)
    reports: list[ChunkReport] = []
    with concurrent.futures.ProcessPoolExecutor(max(1, args.jobs)) as pool:
        for result, skipped in pool.map(_check_file, [mlir_opt] * len(files),
                                        *zip(*files) if files else ((), ())):
            reports.extend(result)
            if skipped:
                print(skipped, file=sys.stderr)
    for r in reports:
        where = f"{r.path}#{r.chunk}"
        if r.llvm == "rejects":
            if args.verbose:
                print(f"rejected {where}  (LLVM does not parse it; ours: "
                      f"{r.first_syntax or 'no syntax finding'})")
        elif r.tree != "equal":
            print(f"differs {where}  {r.difference}"
                  + (f"  [{r.first_syntax}]" if r.first_syntax else ""))
        elif r.syntax_findings:
            print(f"syntax  {where}  {r.first_syntax}")
        elif args.verbose:
            print(f"ok      {where}")
    print(summary(reports, len(files)))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in reports], indent=1) + "\n")
    bad = [r for r in reports if r.llvm != "rejects" and (r.tree != "equal" or r.syntax_findings)]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
