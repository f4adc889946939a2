"""Analysis layer: which host GPU ops LLVM 22's `gpu-to-llvm` leaves unconverted, silently.

`mlir-opt-22 --gpu-to-llvm` converts a GPU memory op to a runtime call only in some forms and
leaves every other one in the IR as it was, with exit status 0; the failure shows up later, in
`mlir-translate` or at link time. The rules, from the patterns of
mlir/lib/Conversion/GPUCommon/GPUToLLVMConversion.cpp and each confirmed with `mlir-opt-22`
(`tests/integration/test_lowering_reference.py` compares them with it on the corpora, on
generated programs and on a matrix of forms):

- `gpu.alloc`, `gpu.memcpy`, `gpu.memset`, `gpu.dealloc` must be async with exactly one
  dependency (`isAsyncWithOneDependency`: the dependency is the stream the call runs on);
- except a `gpu.alloc host_shared`, which must be synchronous (a `host_shared` alloc with a
  token is not supported);
- the memref of `gpu.alloc` and `gpu.memset`, and the source of `gpu.memcpy`, must have the
  identity layout (`isConvertibleAndHasIdentityMaps`: `strided<[1]>` of rank 1 is one, a
  `strided<[4, 1]>` is not, as the type converter sees them);
- a `gpu.memset` value must be 16 or 32 bits wide (`mgpuMemset16`, `mgpuMemset32`);
- a memref in a `#gpu.address_space<...>` memory space is not converted at all (the pass maps
  no GPU address space);
- an alloc none of whose results is used is not left but erased (the conversion drops
  trivially dead ops).

What the lowering reports as an error itself (a memref in an integer memory space given to
`gpu.alloc`, a `gpu.launch_func` with two dependencies) is not repeated here; nor is a
`gpu.launch_func` whose kernel module is not compiled yet (`gpu-module-to-binary` comes first
in a real pipeline), nor device code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gpu_async_lsp import regex_cache
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.findings import Finding, Severity

if TYPE_CHECKING:
    from gpu_async_lsp.syntax import Op

# The `lowering` option: which lowering the findings are about.
LLVM22_LOWERING = "llvm22"
NO_LOWERING = "none"
LOWERINGS = (LLVM22_LOWERING, NO_LOWERING)

ALLOC, MEMCPY, MEMSET, DEALLOC = "gpu.alloc", "gpu.memcpy", "gpu.memset", "gpu.dealloc"
MEMORY_OPS = frozenset({ALLOC, MEMCPY, MEMSET, DEALLOC})
_DEVICE_BODIES = frozenset({"gpu.launch", "gpu.module", "gpu.func"})

_HOST_SHARED = regex_cache.compile(r"\bhost_shared\b")
_MEMSET_WIDTHS = regex_cache.compile(r"(?:[su]?i(?:16|32)|f16|bf16|f32|tf32)\Z")
_IDENTITY_MAP = regex_cache.compile(r"affine_map<\(([^)]*)\)\s*->\s*\(([^)]*)\)>\Z")
_UNIT_STRIDE = regex_cache.compile(r"strided<\[\s*(1)?\s*\](?:\s*,\s*offset\s*:\s*0\s*)?>\Z")


def problem(op: Op, text: str, is_async: bool, deps: int, used: bool = True) -> str | None:
    """Why LLVM 22's gpu-to-llvm leaves the memory op `op` unconverted when it is async or not
    with `deps` dependencies (as written, or as a rewrite leaves it), or None. `used`: is any
    result of an alloc used (an unused one is erased, not left)?"""
    name = op.name
    if name not in MEMORY_OPS:
        return None
    types = _types(text, op)
    if name == ALLOC:
        if not used:
            return None
        if _HOST_SHARED.search(text, op.name_end, op.end) is not None:
            if is_async:
                return "a host_shared allocation must be synchronous"
        elif not is_async or deps != 1:
            return "it must be async with exactly one dependency"
    elif not is_async or deps != 1:
        return "it must be async with exactly one dependency"
    if not types:
        return None
    memref = types[1] if name == MEMCPY and len(types) > 1 else types[0]
    params = _memref_params(memref)
    if params is None:
        return None
    shape, layout, space = params
    if space is not None and space.startswith("#gpu.address_space<"):
        return f"its memref's memory space {space} is not converted"
    if name == DEALLOC:
        return None
    if layout is not None and not _identity(layout, shape):
        what = "its source memref" if name == MEMCPY else "its memref"
        return f"{what} must have the identity layout, not {layout}"
    if name == MEMSET and len(types) > 1 and not _MEMSET_WIDTHS.match(types[1]):
        return f"its value must be 16 or 32 bits wide, not {types[1]}"
    return None


def finding(op: Op, why: str, function: str | None = None) -> Finding:
    return Finding(F.NOT_LOWERED,
                   f"'{op.name}' op is not lowered by LLVM 22's gpu-to-llvm: {why}",
                   op.name_start, op.name_end, Severity.WARNING, function=function)


def as_written(text: str, func: Op, name: str | None = None) -> list[Finding]:
    """The memory ops of the host function `func` (`name`: its `@f`) that gpu-to-llvm would
    leave, as written."""
    out = []
    for op in memory_ops(func):
        g = op.gpu
        is_async = g is not None and g.async_kw is not None
        why = problem(op, text, is_async, len(g.deps) if g is not None else 0,
                      _results_used(text, op, func))
        if why is not None:
            out.append(finding(op, why, name))
    return out


def after_rewrite(text: str, func: Op, plans: dict, name: str | None = None) -> list[Finding]:
    """The same, as the rewrite leaves the function: `plans` (id(Op) -> OpPlan) says which
    ops it made async, which dependencies it added, which it erased. The ops it inserts
    (`gpu.wait`) are always lowered."""
    out = []
    for op in memory_ops(func):
        plan = plans.get(id(op))
        if plan is not None and plan.erased:
            continue
        g = op.gpu
        written_async = g is not None and g.async_kw is not None
        made_async = plan is not None and plan.token is not None
        deps = len(plan.dependencies) if plan is not None else (len(g.deps) if g else 0)
        # A token the rewrite adds is used by what follows: the op is not dead.
        used = made_async or _results_used(text, op, func)
        why = problem(op, text, written_async or made_async, deps, used)
        if why is not None:
            out.append(finding(op, why, name))
    return out


def memory_ops(func: Op):
    """The GPU memory ops of a host function, at any depth of its regions (not in device
    code: a `gpu.launch` body), in text order."""
    work = [op for region in reversed(func.regions) for block in reversed(region.blocks)
            for op in reversed(block.ops)]
    while work:
        op = work.pop()
        if op.name in MEMORY_OPS:
            yield op
        if op.regions and op.name not in _DEVICE_BODIES:
            for region in reversed(op.regions):
                for block in reversed(region.blocks):
                    work.extend(reversed(block.ops))


def _results_used(text: str, op: Op, func: Op) -> bool:
    """Is any result of `op` named again after it in its function (an alloc whose results
    nobody uses is erased by the conversion)?"""
    for r in op.results:
        k = text.find(r.name, op.end, func.end)
        while k >= 0:
            after = k + len(r.name)
            if after >= len(text) or text[after] not in _NAME_CHARS:
                return True
            k = text.find(r.name, after, func.end)
    return False


_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$.-")


def _types(text: str, op: Op) -> list[str]:
    """The types after the op's last top-level `:`, split at top-level commas."""
    depth = 0
    colon = -1
    for k in range(op.name_end, op.end):
        c = text[k]
        if c in "<([{":
            depth += 1
        elif c in ">)]}" and text[k - 1] != "-":  # not the `->` of an affine map
            depth -= 1
        elif c == ":" and depth == 0:
            colon = k
    if colon < 0:
        return []
    return _split(text[colon + 1:op.end])


def _split(s: str) -> list[str]:
    out, depth, start = [], 0, 0
    for k, c in enumerate(s):
        if c in "<([{":
            depth += 1
        elif c in ">)]}" and (k == 0 or s[k - 1] != "-"):  # not the `->` of an affine map
            depth -= 1
        elif c == "," and depth == 0:
            out.append(s[start:k].strip())
            start = k + 1
    out.append(s[start:].strip())
    return [t for t in out if t]


def _memref_params(memref: str) -> tuple[list[str], str | None, str | None] | None:
    """(shape, layout, memory space) of a `memref<...>` type, or None (not a memref, or a
    parameter whose kind cannot be told: an alias, `#map`)."""
    if not (memref.startswith("memref<") and memref.endswith(">")):
        return None
    params = _split(memref[len("memref<"):-1])
    if not params:
        return None
    shape = _split_dims(params[0])
    rest = params[1:]
    if len(rest) == 2:
        return shape, rest[0], rest[1]
    if not rest:
        return shape, None, None
    only = rest[0]
    if only.startswith(("strided<", "affine_map<")):
        return shape, only, None
    if only[:1].isdigit() or only.startswith("#gpu.address_space<"):
        return shape, None, only
    return None


def _split_dims(shape_and_element: str) -> list[str]:
    """The dimensions of `4x?x8xf32` (the element type last, not returned)."""
    dims = []
    k = 0
    s = shape_and_element
    while True:
        x = s.find("x", k)
        if x < 0 or not (s[k:x].isdigit() or s[k:x] == "?"):
            return dims
        dims.append(s[k:x])
        k = x + 1


def _identity(layout: str, shape: list[str]) -> bool:
    """Does the layout map each index to itself (MLIR then drops it from the type)?"""
    m = _IDENTITY_MAP.match(layout)
    if m is not None:
        return [d.strip() for d in m.group(1).split(",")] == [
            d.strip() for d in m.group(2).split(",")]
    m = _UNIT_STRIDE.match(layout)
    if m is not None:
        return len(shape) == (1 if m.group(1) else 0)
    return False
