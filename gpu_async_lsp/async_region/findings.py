"""Analysis layer: findings (diagnostics independent of any protocol), their codes and wording.

The messages are the pass's own (mlir/lib/Dialect/GPU/Transforms/AsyncRegionRewriter.cpp),
prefixed as MLIR's `emitOpError` prefixes them. `RULES` is the one registry of the codes:
what each means, its default severity, whether it blocks the rewrite, its docs.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

SOURCE = "gpu-async"


class Severity(enum.IntEnum):
    """Ordered as LSP orders DiagnosticSeverity (1 is the most severe)."""

    ERROR = 1
    WARNING = 2
    INFORMATION = 3
    HINT = 4

    @property
    def label(self) -> str:
        return self.name.lower()


PRE_EXISTING_WAIT = "pre-existing-wait"
ALREADY_ASYNC = "already-async"
ASYNC_OP_WITH_REGIONS = "async-op-with-regions"
LAUNCH_NOT_OUTLINED = "launch-not-outlined"
UNSUPPORTED_FORM = "unsupported-form"
SYNTAX = "syntax"
SYNC_GPU_OPS = "sync-gpu-ops"
# A host GPU op LLVM 22's gpu-to-llvm leaves unconverted (async_region/lowering.py).
NOT_LOWERED = "not-lowered"
# A token the lowered code would synchronize and destroy twice, or use after a wait destroyed
# its stream (async_region/lowering.py).
STREAM_HAZARD = "stream-hazard"
# A `// gpu-async-lsp: ignore[...]` comment that names an unknown code or is malformed
# (async_region/suppression.py).
INVALID_SUPPRESSION = "invalid-suppression"

# The docs page of the codes, relative to the repository root (and to the installed package,
# which ships it); one section per code, its anchor the code itself.
CODES_PAGE = "docs/codes.md"


class Rule(NamedTuple):
    """One finding code and everything said about it (a value: a named tuple).

    `docs/codes.md`, the README's table, the SARIF rules, the JSON `url`, the hover of a
    blocker and `package.json`'s severity schema all come from `RULES`
    (`tools/gen_codes_doc.py`; `tests/unit/test_codes.py` checks each against it)."""

    code: str
    severity: Severity  # the default; the server's `severity` setting overrides it
    blocks: bool  # stops the rewrite of its function
    fixable: bool  # `check --fix` (with the same options) makes it go away
    message: str  # its shape, `<...>` standing for what varies
    summary: str  # one sentence
    hover: str  # what the server's hover says on an op with this finding (blockers)
    meaning: str  # docs/codes.md: what it means (Markdown)
    example: str  # docs/codes.md: MLIR that gets it, with the default options
    resolve: str  # docs/codes.md: how to resolve it (Markdown)

    @property
    def docs(self) -> str:
        """Its section of the docs page, relative to the repository root."""
        return f"{CODES_PAGE}#{self.code}"


RULES: tuple[Rule, ...] = (
    Rule(
        PRE_EXISTING_WAIT, Severity.ERROR, blocks=True, fixable=False,
        message="'gpu.wait' op unexpected pre-existing gpu.wait",
        summary="A gpu.wait already in the function blocks the gpu-async-region rewrite.",
        hover="A pre-existing `gpu.wait`: the original `-gpu-async-region` pass refuses "
              "functions that already synchronize by hand (remove it to let the rewrite "
              "thread tokens).",
        meaning="The function already synchronizes by hand with a `gpu.wait`. The original "
                "`-gpu-async-region` pass refuses such a function (it fails on the "
                "`gpu.wait`), so nothing in it is rewritten. By default the finding is "
                "reported only in functions that also hold synchronous GPU ops to rewrite; "
                "`--strict` reports it in every `func.func`, as the pass fails on each.",
        example="func.func @g(%m: memref<4xf32>) {\n"
                "  gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32>\n"
                "  gpu.wait\n"
                "  return\n"
                "}\n",
        resolve="Remove the `gpu.wait`: the rewrite inserts the waits the host needs. Or "
                "follow LLVM 22's pass, which threads the token through a pre-existing "
                "`gpu.wait`: `check --semantics llvm22` (the server's `semantics` setting; "
                "the server's quick fix on this finding applies that rewrite to the one "
                "function)."),
    Rule(
        ALREADY_ASYNC, Severity.ERROR, blocks=True, fixable=False,
        message="'<op>' op is already async",
        summary="An already asynchronous GPU op blocks the gpu-async-region rewrite.",
        hover="Already asynchronous: the original `-gpu-async-region` pass refuses an op "
              "that has its own token.",
        meaning="A GPU op of the `AsyncOpInterface` is asynchronous already (the `async` "
                "keyword, or a `!gpu.async.token` result in generic form): the function is "
                "threaded by hand, at least in part. The original pass refuses it and "
                "leaves the function as it is.",
        example="func.func @f(%m: memref<4xf32>, %dep: !gpu.async.token, %x: f32) {\n"
                "  %t = gpu.memcpy async [%dep] %m, %m : memref<4xf32>, memref<4xf32>\n"
                "  gpu.memset %m, %x : memref<4xf32>, f32\n"
                "  return\n"
                "}\n",
        resolve="Thread the rest of the function by hand, or follow LLVM 22's pass "
                "(`check --semantics llvm22`, the server's `semantics` setting), which adds "
                "the current token to the op's dependencies and goes on from the op's own "
                "token."),
    Rule(
        ASYNC_OP_WITH_REGIONS, Severity.ERROR, blocks=True, fixable=False,
        message="'<op>' op regions are not supported",
        summary="A GPU async op with regions blocks the gpu-async-region rewrite.",
        hover="An async GPU op with regions: the pass does not rewrite those.",
        meaning="An op of the `AsyncOpInterface` other than `gpu.launch` holds regions, which "
                "the original pass does not rewrite. In LLVM 22 no such GPU op has regions, "
                "so only an op in generic form shows it, and MLIR's verifier rejects that "
                "op.",
        example="func.func @f(%n: index, %m: memref<?xf32>) {\n"
                "  \"gpu.dealloc\"(%m) ({\n"
                "    %a = gpu.alloc (%n) : memref<?xf32>\n"
                "  }) : (memref<?xf32>) -> ()\n"
                "  return\n"
                "}\n",
        resolve="Write the op as its dialect defines it (`mlir-opt` rejects this one)."),
    Rule(
        LAUNCH_NOT_OUTLINED, Severity.WARNING, blocks=True, fixable=False,
        message="'gpu.launch' op replace with gpu.launch_func first",
        summary="gpu.launch must be outlined to gpu.launch_func before the rewrite.",
        hover="Not outlined: replace `gpu.launch` with `gpu.launch_func` first "
              "(`-gpu-kernel-outlining`).",
        meaning="The pass runs after kernel outlining: it refuses an inline `gpu.launch`, "
                "which `-gpu-kernel-outlining` turns into a `gpu.launch_func`. The function "
                "is not rewritten until then. A warning: the code is valid, the rewrite "
                "waits for the outlining.",
        example="func.func @f(%n: index) {\n"
                "  %a = gpu.alloc (%n) : memref<?xf32>\n"
                "  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n)\n"
                "             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {\n"
                "    gpu.terminator\n"
                "  }\n"
                "  return\n"
                "}\n",
        resolve="Outline the kernels first (`mlir-opt --gpu-kernel-outlining`), or thread "
                "the token through the `gpu.launch` itself, its body left as written: "
                "`check --thread-launch` (the server's `threadLaunch` setting)."),
    Rule(
        UNSUPPORTED_FORM, Severity.WARNING, blocks=True, fixable=False,
        message="'<op>' op in generic form cannot be rewritten in place; write it in its "
                "custom form",
        summary="An op the rewrite cannot edit in place (e.g. generic form).",
        hover="The rewrite cannot edit this op's text in place, so its function stays as "
              "it is.",
        meaning="The rewrite edits each op where it stands (`async [%t]` after its name, a "
                "token among its results). An op in generic form (`\"gpu.memcpy\"(...)`) "
                "cannot be edited so, nor, in `llvm22` semantics, what LLVM 22's "
                "`async.execute` phases would change in some functions; the message says "
                "which. The function is left as it is; the rest of the file is still "
                "rewritten.",
        example="func.func @f(%n: index, %host: memref<?xf32>) {\n"
                "  %dev = gpu.alloc (%n) : memref<?xf32>\n"
                "  \"gpu.memcpy\"(%dev, %host) : (memref<?xf32>, memref<?xf32>) -> ()\n"
                "  return\n"
                "}\n",
        resolve="Write the op in its custom form, as `mlir-opt` prints it."),
    Rule(
        SYNTAX, Severity.ERROR, blocks=False, fixable=False,
        message="<the parser's message>",
        summary="The MLIR text does not parse.",
        hover="The text does not parse here.",
        meaning="The text does not parse as MLIR at this point. The error costs only the "
                "op it is in: the rest of the file is still analysed. `check --fix` "
                "rewrites nothing in a file with a syntax error (the server still offers "
                "the rewrite of the functions that parse).",
        example="func.func @f(%m: memref<4xf32> {\n"
                "  return\n"
                "}\n",
        resolve="Fix the text. `gpu-async-lsp tree FILE` shows how the parser reads the "
                "file, and `mlir-opt FILE` whether MLIR accepts it."),
    Rule(
        SYNC_GPU_OPS, Severity.HINT, blocks=False, fixable=True,
        message="<n> GPU ops in @<function> run synchronously",
        summary="GPU ops in this function run synchronously; the rewrite can make them "
                "async.",
        hover="GPU ops here run synchronously: the rewrite can thread "
              "`!gpu.async.token`s through them.",
        meaning="A host `func.func` holds GPU ops that run synchronously and nothing blocks "
                "the rewrite: it can thread `!gpu.async.token`s through them and insert "
                "the `gpu.wait`s the host needs. A hint, not a problem: it never fails "
                "`check`.",
        example="func.func @f(%m: memref<4xf32>, %x: f32) {\n"
                "  gpu.memset %m, %x : memref<4xf32>, f32\n"
                "  gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32>\n"
                "  return\n"
                "}\n",
        resolve="`check --fix` rewrites the function (`check --diff` shows the change "
                "first); in the editor, its code lens or the quick fix `Make GPU ops in @f "
                "asynchronous`."),
    Rule(
        NOT_LOWERED, Severity.WARNING, blocks=False, fixable=True,
        message="'<op>' op is not lowered by LLVM 22's gpu-to-llvm: <why>",
        summary="LLVM 22's gpu-to-llvm would leave this GPU op unconverted, silently.",
        hover="LLVM 22's `gpu-to-llvm` leaves this op as it is (exit status 0): the failure "
              "would show later, in `mlir-translate` or at link time.",
        meaning="`mlir-opt-22 --gpu-to-llvm` turns a GPU memory op into a runtime call only "
                "in some forms and leaves every other one in the IR, with exit status 0: "
                "`gpu.alloc`, `gpu.memcpy`, `gpu.memset` and `gpu.dealloc` must be async "
                "with exactly one dependency (the stream the call runs on), except a "
                "`gpu.alloc host_shared`, which must be synchronous; the memref of an alloc "
                "or memset, and the source of a memcpy, must have the identity layout; a "
                "memset value must be 16 or 32 bits wide; a memref in a "
                "`#gpu.address_space<...>` is not converted. The async rewrite makes the "
                "synchronous ops of a function lowerable (async with one dependency each): "
                "`--fix` rewrites them, and they come with their function's `sync-gpu-ops` "
                "hint, whose fix that is. `--fix` also joins several dependencies through one "
                "`%j = gpu.wait async [%a, %b]` before the op, gives an op with none a "
                "`gpu.wait async` first, and (its rewrite) leaves a `host_shared` alloc "
                "synchronous. A layout, a memory space, a memset width or a `host_shared` "
                "alloc written async is the user's to change: those stay. `--lowering none` "
                "turns these findings off (and the rewrite is then exactly the pass's).",
        example="func.func @f(%a: !gpu.async.token, %b: !gpu.async.token, %m: memref<4xf32>) {\n"
                "  %t = gpu.memcpy async [%a, %b] %m, %m : memref<4xf32>, memref<4xf32>\n"
                "  return\n"
                "}\n",
        resolve="Give the op exactly one dependency: join several through one "
                "`%j = gpu.wait async [%a, %b]` before it and depend on `%j`; start a chain "
                "with `%t0 = gpu.wait async` for an op with none. A synchronous op: rewrite "
                "its function (`check --fix`). A `host_shared` alloc: keep it synchronous."),
    Rule(
        STREAM_HAZARD, Severity.WARNING, blocks=False, fixable=True,
        message="'<op>' op lowered by LLVM 22: <why>",
        summary="The lowered code would destroy a stream twice, or use one after a gpu.wait "
                "destroyed it.",
        hover="LLVM 22's `gpu-to-llvm` makes each token a stream: a synchronous `gpu.wait` "
              "synchronizes and destroys the stream of each operand. Here one stream is "
              "destroyed twice, or used after it was.",
        meaning="`mlir-opt-22 --gpu-to-llvm` turns tokens into streams: `gpu.wait async` "
                "creates one, an async op with one dependency runs on that dependency's "
                "stream and returns it as its token, and a synchronous `gpu.wait [...]` "
                "synchronizes and destroys the stream of each operand. Two operands of one "
                "wait on the same stream (a token and one it was made from), or a token used "
                "after a wait destroyed its stream, make a program that destroys a stream "
                "twice or uses a destroyed one, errors the CUDA driver need not survive. "
                "Looked at in each block in text order, in the text as written and, after "
                "`--fix`, as it leaves it. A `gpu.wait async` of one token is that token's "
                "stream (canonicalization, which `-gpu-lower-to-nvvm-pipeline` runs first, "
                "folds it). `--fix` keeps one operand per stream (the last token of its "
                "chain). A token used after a wait destroyed its stream is the user's to "
                "change; LLVM 22's threading (`--semantics llvm22`) can make the rewrite "
                "destroy a stream the text uses afterwards: `--semantics sync-only` never "
                "threads into the text's chains. `--lowering none` turns it off.",
        example="func.func @f(%m: memref<4xf32>, %x: f32) {\n"
                "  %t0 = gpu.wait async\n"
                "  %t1 = gpu.memset async [%t0] %m, %x : memref<4xf32>, f32\n"
                "  gpu.wait [%t1, %t0]\n"
                "  return\n"
                "}\n",
        resolve="Wait on the last token of each chain only (`gpu.wait [%t1]`): waiting on it "
                "waits for everything before it on its stream. Do not use a token after a "
                "`gpu.wait` that named it (or a token made from it); start a new chain with "
                "`gpu.wait async`."),
    Rule(
        INVALID_SUPPRESSION, Severity.WARNING, blocks=False, fixable=False,
        message="unknown finding code '<code>' in a suppression comment (known: <codes>)",
        summary="A gpu-async-lsp: ignore comment names an unknown code or is malformed.",
        hover="A suppression comment that names an unknown code or is malformed.",
        meaning="A `// gpu-async-lsp: ignore[...]` comment (see \"Suppression comments\" in "
                "the README) lists a code that does not exist, lists `syntax` or "
                "`invalid-suppression` (which cannot be hidden), lists no code (`ignore[]`), "
                "or is neither `ignore` nor `ignore[...]`. The comment still hides the valid "
                "codes it lists. A warning, not an error: a mistyped code does not fail a "
                "run that passed, and the finding it meant to hide is seen again.",
        example="func.func @f(%m: memref<4xf32>) {\n"
                "  // gpu-async-lsp: ignore[pre-existing-wiat]\n"
                "  gpu.wait\n"
                "  return\n"
                "}\n",
        resolve="Correct the code (the codes are the sections of this page), or write "
                "`// gpu-async-lsp: ignore` to hide every finding of the op."),
)
RULE = {r.code: r for r in RULES}
CODES = tuple(RULE)
DEFAULT_SEVERITY = {r.code: r.severity for r in RULES}
# Findings that stop the rewrite of their function.
BLOCKING = frozenset(r.code for r in RULES if r.blocks)

def op_error(op_name: str, message: str) -> str:
    """MLIR's `op->emitOpError(message)` wording."""
    return f"'{op_name}' op {message}"


class Related(NamedTuple):
    """A place a finding points to (LSP relatedInformation)."""

    start: int
    end: int
    message: str


class Finding(NamedTuple):
    """What the analysis found at text[start:end]: a value (compared, hashed, immutable).

    A named tuple: a first open makes one per diagnostic (12k at 50k lines of host code) and
    reads each ~14 times (sorted, placed, formatted, pickled by a forked process); a field is
    read by index, and none has an instance dictionary made for it (it was a frozen dataclass
    that wrote its fields into one). Made where made often as `tuple.__new__(Finding, (...))`
    with all seven fields (the class's __new__ is Python)."""

    code: str
    message: str
    start: int
    end: int
    severity: Severity
    related: tuple[Related, ...] = ()
    function: str | None = None  # `@f` of the func.func it belongs to

    def __reduce__(self):
        # Rebuilt by a compiled function (a forked process sends thousands): not through the
        # class's __new__, a Python frame per finding.
        return (_finding, tuple(self))


def _finding(*fields) -> Finding:
    return _new(Finding, fields)


_new = tuple.__new__
