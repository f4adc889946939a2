"""Syntax layer: the assembly formats of the GPU ops the rewrite edits, in one table.

From LLVM 22's mlir/include/mlir/Dialect/GPU/IR/GPUOps.td. Every op starts with
`custom<AsyncDependencies>`: an optional `async` keyword and an optional `[deps]` list right
after the op name. What follows is written twice in each entry of FORMATS, as the same format:

- `operands`, a regular expression checked at C speed for the common case (the whole op on its
  line, or a launch_func over several lines, with no attribute dictionary, location or comment
  inside): the lexer then passes the op on as one token (lexer.GpuLineToken);
- `rule`, the LALR rule of grammar/mlir.lark's terminals that the grammar checks token by token
  for every other case, reporting errors at the offending token.

Adding an op is one entry here (its terminal is declared, its `op` alternative and operand rule
are added to the grammar by parser.grammar_text); tests/unit/test_gpu_formats.py checks that
both paths accept the same texts and read the same operands from them.

No lark, pygls or lsprotocol here.
"""

from __future__ import annotations

from typing import NamedTuple

from gpu_async_lsp import regex_cache
from gpu_async_lsp.syntax.patterns import SYMBOL_REF
from gpu_async_lsp.syntax.patterns import angle_body as _angle

_S = r"[ \t]*+"  # blanks inside a line (possessive: no backtracking over long blank runs)
_NL = r"[ \t]*+(?:\r?\n[ \t]*+)?"  # blanks, at most one line break (multi-line launch_func)
# Possessive, as the module's loops are (patterns.py): what follows a value or a type can
# never start with what they hold, so they give nothing back; sre keeps no state for them.
_V = r"%[\w$.\-]++(?:#\d++)?+"  # SSA_USE
_VS = rf"{_V}(?:{_S},{_S}{_V})*+"
# A type: `f32`, `memref<?xf32, strided<[1]>>`, `!gpu.async.token`, `!llvm.ptr<1>`. Three
# levels of `<>` cover GPU operand types; deeper ones take the token-by-token path.
_TYPE = rf"!?[A-Za-z_][\w$.]*+(?:{_angle(3)})?+"
_DIMS = rf"\({_S}{_V}{_S},{_S}{_V}{_S},{_S}{_V}{_S}\)"
_EOL = r"(?=[ \t]*(?://[^\n]*)?(?:\r?\n|\Z))"


class GpuFormat(NamedTuple):
    """The format of one exactly modeled GPU op, after its async clause."""

    name: str  # the op, fully qualified
    terminal: str  # its name's grammar terminal
    operands: str  # the fast path: a pattern of the rest of the op, up to the end of its line
    rule: str  # the grammar path: the rest of the op, in grammar/mlir.lark's terminals


FORMATS: tuple[GpuFormat, ...] = (
    GpuFormat(
        "gpu.wait", "GPU_WAIT",
        _EOL,
        "[ATTR_DICT] [LOC]"),
    GpuFormat(
        "gpu.alloc", "GPU_ALLOC",
        rf"(?:{_S}host_shared)?{_S}\({_S}(?:{_VS})?{_S}\)(?:{_S}\[{_S}{_VS}{_S}\])?"
        rf"{_S}:{_S}{_TYPE}{_EOL}",
        "[KW_HOST_SHARED] LPAR [_operands] RPAR [LSQB _symbol_operands RSQB] [ATTR_DICT] "
        "COLON TYPE [LOC]"),
    GpuFormat(
        "gpu.dealloc", "GPU_DEALLOC",
        rf"{_S}{_V}{_S}:{_S}{_TYPE}{_EOL}",
        "VALUE [ATTR_DICT] COLON TYPE [LOC]"),
    GpuFormat(
        "gpu.memcpy", "GPU_MEMCPY",
        rf"{_S}{_V}{_S},{_S}{_V}{_S}:{_S}{_TYPE}{_S},{_S}{_TYPE}{_EOL}",
        "VALUE COMMA VALUE [ATTR_DICT] COLON TYPE COMMA TYPE [LOC]"),
    GpuFormat(
        "gpu.memset", "GPU_MEMSET",
        rf"{_S}{_V}{_S},{_S}{_V}{_S}:{_S}{_TYPE}{_S},{_S}{_TYPE}{_EOL}",
        "VALUE COMMA VALUE [ATTR_DICT] COLON TYPE COMMA TYPE [LOC]"),
    GpuFormat(
        "gpu.launch_func", "GPU_LAUNCH_FUNC",
        rf"(?:{_S}<{_S}{_V}{_S}:{_S}{_TYPE}{_S}>)?{_NL}{SYMBOL_REF}"
        rf"(?:{_NL}clusters{_S}in{_S}{_DIMS})?{_NL}blocks{_S}in{_S}{_DIMS}{_NL}threads{_S}in"
        rf"{_S}{_DIMS}(?:{_S}:{_S}{_TYPE})?(?:{_NL}dynamic_shared_memory_size{_S}{_V})?"
        rf"(?:{_NL}args{_S}\({_S}(?:{_V}{_S}:{_S}{_TYPE}(?:{_S},{_NL}{_V}{_S}:{_S}{_TYPE})*)?"
        rf"{_S}\))?{_EOL}",
        # `clusters in (...)`, `blocks in (...)`, `threads in (...)` and `args(...)` come as one
        # token each, their shape checked by the pre-lexer (prelex._merge_launch_part).
        "[async_object] SYMBOL launch_dims [dynamic_shared] [kernel_args] [ATTR_DICT] [LOC]"),
)

# Op name -> its name's grammar terminal.
EXACT_GPU_OPS = {f.name: f.terminal for f in FORMATS}


def operand_rule(f: GpuFormat) -> str:
    """The name of the grammar rule of an op's operands."""
    return f.terminal.lower() + "_operands"


def grammar_rules() -> str:
    """The grammar of FORMATS, added to grammar/mlir.lark: each op's `op` alternative (the
    async clause, then the operands the fast path checked or the rule), its operand rule and
    its terminal."""
    out = []
    for f in FORMATS:
        out.append(f"%extend op: [RESULTS] {f.terminal} async_deps "
                   f"(CHECKED_OPERANDS | {operand_rule(f)}) -> gpu_op")
        out.append(f"{operand_rule(f)}: {f.rule}")
    out.append("%declare " + " ".join(f.terminal for f in FORMATS))
    return "\n".join(out) + "\n"


# custom<AsyncDependencies>, right after the op name.
_ASYNC_DEPS = (
    rf"(?:{_S}\b(?P<async>async)\b)?(?:{_S}(?P<open>\[){_S}(?P<deps>{_VS})?{_S}(?P<close>\]))?"
)

VALUE_RE = regex_cache.compile(_V)
_EOL_TEXT = r"[ \t]*(?://[^\n]*)?(?:\r?\n|\Z)"

# After a GPU op that matched its format up to the end of a line: the next line goes on with the
# op (MLIR's formats ignore line breaks) when it starts with what the format may still hold:
# the async clause's `[`, an attribute dictionary, a `:` type, `loc(...)`, a launch_func part.
# Read after the op's line break (and any blank or comment lines).
_GOES_ON = (r"(?:[ \t]*+(?://[^\n]*+)?\r?\n)*+[ \t]*+"
            r"(?:[\[{:(<]|(?:loc|args|blocks|threads|clusters|dynamic_shared_memory_size)\b)")

# Op name -> the fast path's pattern of all of the op after its name, in one match: the async
# clause (groups `async`, `open`, `deps`, `close`), the operands (`ops`), the end of the line
# (`eol`), and no next line that goes on with the op. Atomic groups: each part matches as
# its own pattern would, first alone (no backtracking from one part into another).
WHOLE_OP = {f.name: regex_cache.compile(
    rf"(?>{_ASYNC_DEPS})(?P<ops>(?>{f.operands}))(?P<eol>{_EOL_TEXT})"
    rf"(?!{_GOES_ON})") for f in FORMATS}
