"""Syntax layer: the assembly formats of the GPU ops the rewrite edits, as regular expressions.

From LLVM 22's mlir/include/mlir/Dialect/GPU/IR/GPUOps.td. Every op starts with
`custom<AsyncDependencies>`: an optional `async` keyword and an optional `[deps]` list right
after the op name. What follows is checked here at C speed for the common case (the whole op on
its line, or a launch_func over several lines, with no attribute dictionary, location or
comment inside); anything else goes to the grammar token by token, where the same formats are
written as LALR rules (grammar/mlir.lark) and errors are reported at the offending token.

No lark, pygls or lsprotocol here.
"""

from __future__ import annotations

import re

# Ops modeled exactly (their whole custom form) and their grammar terminals.
EXACT_GPU_OPS = {
    "gpu.wait": "GPU_WAIT",
    "gpu.alloc": "GPU_ALLOC",
    "gpu.dealloc": "GPU_DEALLOC",
    "gpu.memcpy": "GPU_MEMCPY",
    "gpu.memset": "GPU_MEMSET",
    "gpu.launch_func": "GPU_LAUNCH_FUNC",
}

from gpu_async_lsp.syntax.patterns import angle_body as _angle


_S = r"[ \t]*+"  # blanks inside a line (possessive: no backtracking over long blank runs)
_NL = r"[ \t]*+(?:\r?\n[ \t]*+)?"  # blanks, at most one line break (multi-line launch_func)
_V = r"%[\w$.\-]+(?:#\d+)?"
_VS = rf"{_V}(?:{_S},{_S}{_V})*"
# A type: `f32`, `memref<?xf32, strided<[1]>>`, `!gpu.async.token`, `!llvm.ptr<1>`. Three
# levels of `<>` cover GPU operand types; deeper ones take the token-by-token path.
_TYPE = rf"!?[A-Za-z_][\w$.]*(?:{_angle(3)})?"
_SYM = r"@[\w$.\-]+(?:::@[\w$.\-]+)*"
_DIMS = rf"\({_S}{_V}{_S},{_S}{_V}{_S},{_S}{_V}{_S}\)"
_EOL = r"(?=[ \t]*(?://[^\n]*)?(?:\r?\n|\Z))"

# custom<AsyncDependencies>, right after the op name.
ASYNC_DEPS = re.compile(
    rf"(?:{_S}\b(?P<async>async)\b)?(?:{_S}(?P<open>\[){_S}(?P<deps>{_VS})?{_S}(?P<close>\]))?"
)

# What follows the async clause, per op.
OPERANDS = {
    "gpu.wait": re.compile(_EOL),
    "gpu.alloc": re.compile(
        rf"(?:{_S}host_shared)?{_S}\({_S}(?:{_VS})?{_S}\)(?:{_S}\[{_S}{_VS}{_S}\])?"
        rf"{_S}:{_S}{_TYPE}{_EOL}"
    ),
    "gpu.dealloc": re.compile(rf"{_S}{_V}{_S}:{_S}{_TYPE}{_EOL}"),
    "gpu.memcpy": re.compile(rf"{_S}{_V}{_S},{_S}{_V}{_S}:{_S}{_TYPE}{_S},{_S}{_TYPE}{_EOL}"),
    "gpu.memset": re.compile(rf"{_S}{_V}{_S},{_S}{_V}{_S}:{_S}{_TYPE}{_S},{_S}{_TYPE}{_EOL}"),
    "gpu.launch_func": re.compile(
        rf"(?:{_S}<{_S}{_V}{_S}:{_S}{_TYPE}{_S}>)?{_NL}{_SYM}"
        rf"(?:{_NL}clusters{_S}in{_S}{_DIMS})?{_NL}blocks{_S}in{_S}{_DIMS}{_NL}threads{_S}in{_S}{_DIMS}"
        rf"(?:{_S}:{_S}{_TYPE})?(?:{_NL}dynamic_shared_memory_size{_S}{_V})?"
        rf"(?:{_NL}args{_S}\({_S}(?:{_V}{_S}:{_S}{_TYPE}(?:{_S},{_NL}{_V}{_S}:{_S}{_TYPE})*)?{_S}\))?"
        rf"{_EOL}"
    ),
}

VALUE_RE = re.compile(_V)
EOL_RE = re.compile(r"[ \t]*(?://[^\n]*)?(?:\r?\n|\Z)")
