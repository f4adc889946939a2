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


def run_chunks(chunks: list[str], *, pipeline: bool = False, allow_unregistered: bool = False,
               flags: tuple[str, ...] = ()) -> list[ChunkResult]:
    """Print each chunk through `mlir-opt-22` with `flags` (after the gpu-async-region pass
    if `pipeline`).

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
    args.extend(flags)
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


# What the original rewrite may change: insert into an existing line a token result
# (`%t = ` before the op, `, %t` after its results), `async [%t]` after the op name, `async ` and
# a dependency into an existing `[...]` list, and a whole `gpu.wait` statement where the op (or
# a closing brace) shares its line with text before it; insert whole `gpu.wait` lines. It only
# ever inserts its fresh `%tN`.
#
# LLVM 22's rules also thread the function's own tokens (any SSA name, `%r#0`, several at once)
# into pre-existing waits and async ops, and add a `[%tok]` list where there was none; its
# async.execute phases add results (`, %tN`, `-> !async.value<!gpu.async.token>`), operands
# (`(%v as %a: ...)`), yielded values (`async.yield %t : !gpu.async.token`), `async.await`
# lines, rename a use to a fresh `%tN`, and move a synchronous `gpu.wait` out of a body (its
# line erased; after an `async.await`, a `gpu.wait` line, without tokens maybe).
_FRESH = r"%t\d+"
_ANY = r"%[\w$.\-]+(?:#\d+)?"
_LIST = rf"{_ANY}(?:, {_ANY})*?"  # lazy: `%a, ` before `%b, %c` is one insertion
_VALUE = r"!async\.value<!gpu\.async\.token>"
_GPU_TOKEN = r"!gpu\.async\.token"
_OPERAND = rf"{_ANY} as {_ANY}: {_VALUE}"


@dataclass(frozen=True)
class _Changes:
    inline: tuple[re.Pattern, ...]  # what may be inserted into a line
    inserted_line: re.Pattern  # a line that may be inserted
    erased_line: re.Pattern | None  # a line that may be removed
    rename: re.Pattern | None  # what a name of a line may be replaced by


def _compile(*patterns: str) -> tuple[re.Pattern, ...]:
    return tuple(re.compile(p) for p in patterns)


_ORIGINAL_CHANGES = _Changes(
    _compile(rf"{_FRESH} = gpu\.wait async ", rf"gpu\.wait \[{_FRESH}\] ", rf"{_FRESH} = ",
             rf", {_FRESH}", rf" async \[{_FRESH}\]", r"async ", rf"{_FRESH}, ", _FRESH),
    re.compile(rf"[ \t]*({_FRESH} = gpu\.wait async|gpu\.wait \[{_FRESH}\])\r?\n?"),
    None, None)
_LLVM22_CHANGES = _Changes(
    _compile(rf"{_FRESH} = gpu\.wait async ", rf"gpu\.wait \[{_LIST}\] ",
             rf"{_FRESH} = async\.await {_ANY} : {_VALUE} ", rf"{_FRESH} = ", rf", {_ANY}",
             rf" async \[{_LIST}\]", r"async ", rf"{_LIST}, ", _LIST, rf" \[{_LIST}\]",
             rf"-> (?:{_VALUE}|\({_VALUE}(?:, {_VALUE})*\)) ", rf", {_VALUE}", r"\(",
             rf", {_VALUE}\)", rf" \({_OPERAND}(?:, {_OPERAND})*\)", rf", {_OPERAND}",
             rf"{_OPERAND}(?:, {_OPERAND})*", rf" {_LIST} : {_GPU_TOKEN}(?:, {_GPU_TOKEN})*",
             rf", {_GPU_TOKEN}"),
    re.compile(rf"[ \t]*({_FRESH} = gpu\.wait async(?: \[{_LIST}\])?|gpu\.wait(?: \[{_LIST}\])?"
               rf"|{_FRESH} = async\.await {_ANY} : {_VALUE}"
               rf"|async\.yield {_LIST} : {_GPU_TOKEN}(?:, {_GPU_TOKEN})*)\r?\n?"),
    # A wait laid over several lines (tests/relayout.py) is erased whole.
    re.compile(r"[ \t]*gpu\.wait(?:\s*\[[^\]]*\])?[ \t]*(?://[^\n]*)?\r?\n?"),
    re.compile(_FRESH))
_NAME = re.compile(_ANY)


_ERASED_LINES = 8  # the most lines one erased op is looked for over


def untouched_lines_survive(original: str, fixed: str, *, llvm22: bool = False) -> str | None:
    """Every line of `original` survives in `fixed` byte for byte and in order, except for the
    changes the rewrite makes (listed above; with `llvm22`, those of LLVM 22's rules too).
    Lines are compared with their endings: CRLF stays CRLF, a missing final newline stays
    missing. Returns a description of the first violation, or None.
    """
    changes = _LLVM22_CHANGES if llvm22 else _ORIGINAL_CHANGES
    orig = original.splitlines(keepends=True)
    new = fixed.splitlines(keepends=True)
    # A search over (input line, output line): an output line such as `gpu.wait [%t1]` may be
    # an inserted line or the rewrite of an input `gpu.wait`, so every way is tried.
    seen: set[tuple[int, int]] = set()
    work = [(0, 0)]
    furthest = (0, 0)
    while work:
        i, j = work.pop()
        if (i, j) in seen:
            continue
        seen.add((i, j))
        if i == len(orig) and j == len(new):
            return None
        furthest = max(furthest, (i, j))
        if i < len(orig) and changes.erased_line:
            for k in range(i + 1, min(i + _ERASED_LINES, len(orig)) + 1):
                if changes.erased_line.fullmatch("".join(orig[i:k])):
                    # Its comments stay, each on a line of its own with the op's indentation.
                    kept = _kept_comments(orig[i:k])
                    if new[j:j + len(kept)] == kept:
                        work.append((k, j + len(kept)))
        if j < len(new) and changes.inserted_line.fullmatch(new[j]):
            work.append((i, j + 1))
        if i < len(orig) and j < len(new) and (
                new[j] == orig[i] or _is_rewrite_of(orig[i], new[j], changes)):
            work.append((i + 1, j + 1))
    i, j = furthest
    if i < len(orig):
        got = repr(new[j]) if j < len(new) else "end of text"
        return f"input line {i + 1} {orig[i]!r} lost or changed (output line {j + 1}: {got})"
    return f"output line {j + 1} {new[j]!r} is neither an input line nor a gpu.wait"


def _kept_comments(lines: list[str]) -> list[str]:
    """The lines an erased op's `lines` leave: their comments, with the first line's
    indentation, each ending as a line of the text does (the last as the op's last line)."""
    indent = re.match(r"[ \t]*", lines[0]).group()
    eol = "\r\n" if lines[0].endswith("\r\n") else "\n"
    last = eol if lines[-1].endswith("\n") else ""
    comments = [m.group().rstrip() for line in lines for m in re.finditer(r"//[^\r\n]*", line)]
    return [indent + c + (eol if k < len(comments) - 1 else last)
            for k, c in enumerate(comments)]


def _is_rewrite_of(line: str, candidate: str, changes: _Changes) -> bool:
    """`candidate` is `line` with only the `changes` (insertions, each at most a few times,
    anywhere; renames): a search over (position in line, position in candidate)."""
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
        for pattern in changes.inline:
            m = pattern.match(candidate, j)
            if m:
                work.append((i, m.end()))
        if changes.rename is not None and line.startswith("%", i):
            old, fresh = _NAME.match(line, i), changes.rename.match(candidate, j)
            if old and fresh:
                work.append((old.end(), fresh.end()))
    return False
