"""Test helper: `mlir-opt-22` as the reference for the rewrite (the rewrite must equal its pass:
docs/ARCHITECTURE.md, "Rewrite semantics, in short").

Both sides of a comparison are reprinted by `mlir-opt-22` (generic SSA names, one format), so
what is compared is the ops, tokens and `gpu.wait`s, not our SSA names or layout. Texts are
batched into one invocation with `-split-input-file`; a chunk that fails prints nothing, so each
chunk's result is told apart from the others'.

Used by tests/differential and tests/unit/test_fixtures.py. Without `mlir-opt-22` the tests that
need it skip on a developer's machine and fail under CI (`CI` set): `tests.mlir_tools`.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from tests.mlir_tools import require_mlir_opt

__all__ = ["PASS_PIPELINE", "ChunkResult", "reference", "reprint", "require_mlir_opt",
           "run_chunks", "untouched_lines_survive"]

# `builtin.module(func.func(gpu-async-region))` only reaches the functions of the top-level
# module; we rewrite host functions at any depth of nested modules, so the reference runs
# the same pass on the functions of nested `builtin.module`s too (never inside a gpu.module).
_PASS = "func.func(gpu-async-region)"
_NESTING_DEPTH = 4


def _pipeline(depth: int) -> str:
    inner = f",{_pipeline(depth - 1)}" if depth > 1 else ""
    return f"builtin.module({_PASS}{inner})"


PASS_PIPELINE = f"--pass-pipeline={_pipeline(_NESTING_DEPTH)}"
SPLIT_MARKER = "// -----"
# mlir-opt prints the split marker on its own line between the outputs of the chunks.
_OUTPUT_SPLIT = re.compile(r"^// -----$", re.M)


@dataclass(frozen=True)
class ChunkResult:
    output: str | None  # the printed module, None when mlir-opt-22 rejected the chunk
    stderr: str  # the whole invocation's diagnostics (for failure messages)

    @property
    def ok(self) -> bool:
        return self.output is not None


def run_chunks(chunks: list[str], *, pipeline: bool = False,
               allow_unregistered: bool = False) -> list[ChunkResult]:
    """Print each chunk through `mlir-opt-22` (after the gpu-async-region pass if `pipeline`).

    One invocation for all chunks. The chunks must not contain the split marker themselves.
    """
    if not chunks:
        return []
    exe = require_mlir_opt()
    args = [exe, "-split-input-file"]
    if allow_unregistered:
        args.append("-allow-unregistered-dialect")
    if pipeline:
        args.append(PASS_PIPELINE)
    joined = f"\n{SPLIT_MARKER}\n".join(chunks)
    proc = subprocess.run(args, input=joined.encode("utf-8"), capture_output=True, timeout=600)
    stderr = proc.stderr.decode("utf-8", "replace")
    outputs = _OUTPUT_SPLIT.split(proc.stdout.decode("utf-8"))
    if len(outputs) != len(chunks):
        raise AssertionError(
            f"mlir-opt-22 printed {len(outputs)} chunks for {len(chunks)} inputs "
            f"(exit {proc.returncode}):\n{stderr}")
    return [ChunkResult(out.strip() + "\n" if out.strip() else None, stderr) for out in outputs]


def reprint(chunks: list[str], *, allow_unregistered: bool = False) -> list[ChunkResult]:
    return run_chunks(chunks, allow_unregistered=allow_unregistered)


def reference(chunks: list[str], *, allow_unregistered: bool = False) -> list[ChunkResult]:
    """The reference pass on each chunk, its output reprinted once more (both sides of every
    comparison go through the same parse-and-print)."""
    ran = run_chunks(chunks, pipeline=True, allow_unregistered=allow_unregistered)
    again = reprint([r.output if r.ok else "" for r in ran], allow_unregistered=allow_unregistered)
    return [ChunkResult(a.output if r.ok else None, r.stderr) for r, a in zip(ran, again)]


# What the rewrite may insert into an existing line: a token result
# (`%t = ` before the op, `, %t` after its results), `async [%t]` after the op name, `async ` and
# a dependency into an existing `[...]` list, and a whole `gpu.wait` statement where the op (or
# a closing brace) shares its line with text before it.
_INLINE_INSERTIONS = [re.compile(p) for p in (
    r"%t\d+ = gpu\.wait async ", r"gpu\.wait \[%t\d+\] ", r"%t\d+ = ", r", %t\d+",
    r" async \[%t\d+\]", r"async ", r"%t\d+, ", r"%t\d+")]
# A line the rewrite inserts: the `gpu.wait` statements, indented.
_INSERTED_LINE = re.compile(r"[ \t]*(%t\d+ = gpu\.wait async|gpu\.wait \[%t\d+\])\r?\n?")


def untouched_lines_survive(original: str, fixed: str) -> str | None:
    """Every line of `original` survives in `fixed` byte for byte and in order, except that the
    rewrite may insert whole `gpu.wait` lines and insert (never remove) token text into a line.
    Lines are compared with their endings: CRLF stays CRLF, a missing final newline
    stays missing. Returns a description of the first violation, or None.
    """
    orig = original.splitlines(keepends=True)
    new = fixed.splitlines(keepends=True)
    i = j = 0
    while i < len(orig) or j < len(new):
        if i < len(orig) and j < len(new) and new[j] == orig[i]:
            i += 1
            j += 1
        elif j < len(new) and _INSERTED_LINE.fullmatch(new[j]):
            j += 1
        elif i < len(orig) and j < len(new) and _is_rewrite_of(orig[i], new[j]):
            i += 1
            j += 1
        elif i < len(orig):
            got = repr(new[j]) if j < len(new) else "end of text"
            return f"input line {i + 1} {orig[i]!r} lost or changed (output line {j + 1}: {got})"
        else:
            return f"output line {j + 1} {new[j]!r} is neither an input line nor a gpu.wait"
    return None


def _is_rewrite_of(line: str, candidate: str) -> bool:
    """`candidate` is `line` with only the insertions of `_INLINE_INSERTIONS` (each at most a
    few times, anywhere): a search over (position in line, position in candidate)."""
    seen: set[tuple[int, int]] = set()
    work = [(0, 0)]
    while work:
        i, j = work.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(line) and j == len(candidate):
            return True
        if i < len(line) and j < len(candidate) and line[i] == candidate[j]:
            work.append((i + 1, j + 1))
        for pattern in _INLINE_INSERTIONS:
            m = pattern.match(candidate, j)
            if m:
                work.append((i, m.end()))
    return False
