"""Test helper: the corpora of real MLIR in ../shared, and `check --fix` run on many texts.

`../shared/corpus` (80 files of LLVM's own tests) and `../shared/corpus-wide` (510 files of
buddy-mlir), each with a `manifest.json` saying how mlir-opt-22 reads every file (split into
`// -----` chunks or not, with `-allow-unregistered-dialect` or not) and which chunks it
parses. A clone without ../shared skips the tests that need it; in CI (env CI set) they fail.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
# name -> (folder, the prefix of its paths left out of test ids)
CORPORA = {
    "corpus": (SHARED / "corpus", "upstream/mlir/test/"),
    "wide": (SHARED / "corpus-wide", "buddy-compiler__buddy-mlir/"),
}


def manifest(corpus: str) -> list[dict]:
    path = CORPORA[corpus][0] / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else []


def require_corpus(corpus: str) -> None:
    folder = CORPORA[corpus][0]
    if not (folder / "manifest.json").exists():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing at {folder}")
        pytest.skip(f"corpus missing at {folder}")


def corpus_texts() -> list[str]:
    """The text of every .mlir file of both corpora (each corpus required), in order."""
    texts = []
    for corpus, (folder, _) in CORPORA.items():
        require_corpus(corpus)
        texts += [p.read_text(errors="replace") for p in sorted(folder.rglob("*.mlir"))]
    return texts


def parses(entry: dict, chunk: int) -> bool:
    """Whether mlir-opt-22 parses chunk `chunk` of a manifest entry."""
    details = entry["chunk_details"]
    return details[chunk]["parses"] if details else entry["mlir_opt_parses"]


def chunk_id(corpus: str, path: str, chunk: int) -> str:
    return f"{corpus}:{path.removeprefix(CORPORA[corpus][1])}#{chunk}"


def fix_with_the_command(texts: list[str], *flags: str) -> list[str]:
    """`gpu-async-lsp check --fix --lowering none FLAGS` (the pass's text: these compare with
    it) on a directory holding each text as a file (one run of the command for all of them);
    the texts as it leaves them."""
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / f"{i:04d}.mlir" for i in range(len(texts))]
        for path, text in zip(paths, texts):
            path.write_bytes(text.encode("utf-8"))
        proc = subprocess.run([sys.executable, "-m", "gpu_async_lsp", "check", "--fix",
                               "--lowering", "none", *flags, tmp], capture_output=True, text=True, timeout=600,
                              check=False)
        assert proc.returncode in (0, 1), proc.stderr  # 1: findings remain
        return [path.read_bytes().decode("utf-8") for path in paths]
