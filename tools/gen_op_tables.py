"""Regenerate ``gpu_async_lsp/op_tables.py`` from LLVM 22's op definitions.

Dev tool, not shipped. It reads the ODS records of the covered dialects with
``mlir-tblgen-22 --print-records`` (LLVM 22's mlir-tblgen has no ``--dump-json``; the
printed records are the same resolved records, with every superclass named) and
classifies each op the way ``AsyncRegionRewriter.cpp`` sees it:

* ``gpu::AsyncOpInterface`` in the op's traits (after expanding ``TraitList`` s and
  interface ``baseInterfaces``, as ``mlir-tblgen``'s ``Operator`` does);
* ``OpTrait::IsTerminator`` (``Terminator``) in its traits;
* memory effects: the effects of its ``MemoryEffects<[...]>`` traits (``Pure`` and
  ``NoMemoryEffect`` are ``MemoryEffects<[]>``) plus the ``MemRead``/``MemWrite``/... decorators
  of its operands and results, which ``mlir-tblgen`` merges into one
  ``MemoryEffectOpInterface``; ``RecursiveMemoryEffects``; and a hand-written ``getEffects``
  (``DeclareOpInterfaceMethods<MemoryEffectsOpInterface>``), which is recorded as having effects;
* the default dialect of its regions, from an inline ``getDefaultDialect()`` in its
  ``extraClassDeclaration``.

Usage (from the repository root)::

    apt-get install -y mlir-22-tools libmlir-22-dev
    python tools/gen_op_tables.py            # rewrite the module
    python tools/gen_op_tables.py --check    # exit 1 if the checked-in module is stale

Output is sorted and deterministic. ``tests/unit/test_op_tables.py`` imports this file to
check the checked-in tables entry by entry.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

LLVM_ROOT = Path("/usr/lib/llvm-22")
INCLUDE = LLVM_ROOT / "include"
MLIR_INCLUDE = INCLUDE / "mlir"
OUTPUT = Path(__file__).resolve().parent.parent / "gpu_async_lsp" / "op_tables.py"

# Dialect -> ODS files (relative to include/mlir) that define its ops.
DIALECT_FILES: dict[str, tuple[str, ...]] = {
    "builtin": ("IR/BuiltinOps.td",),
    "func": ("Dialect/Func/IR/FuncOps.td",),
    "arith": ("Dialect/Arith/IR/ArithOps.td",),
    "math": ("Dialect/Math/IR/MathOps.td",),
    "index": ("Dialect/Index/IR/IndexOps.td",),
    "affine": ("Dialect/Affine/IR/AffineOps.td",),
    "memref": ("Dialect/MemRef/IR/MemRefOps.td",),
    "scf": ("Dialect/SCF/IR/SCFOps.td",),
    "cf": ("Dialect/ControlFlow/IR/ControlFlowOps.td",),
    "vector": ("Dialect/Vector/IR/VectorOps.td",),
    "tensor": ("Dialect/Tensor/IR/TensorOps.td",),
    "llvm": ("Dialect/LLVMIR/LLVMOps.td", "Dialect/LLVMIR/LLVMIntrinsicOps.td"),
    "gpu": ("Dialect/GPU/IR/GPUOps.td",),
    "async": ("Dialect/Async/IR/AsyncOps.td",),
    "bufferization": ("Dialect/Bufferization/IR/BufferizationOps.td",),
    "linalg": (
        "Dialect/Linalg/IR/LinalgOps.td",
        "Dialect/Linalg/IR/LinalgStructuredOps.td",
        "Dialect/Linalg/IR/LinalgRelayoutOps.td",
    ),
}

MEMORY_EFFECT = "::mlir::MemoryEffects::Effect"
MEMORY_EFFECT_INTERFACE = "::mlir::MemoryEffectOpInterface::Trait"
ASYNC_OP_INTERFACE = "::mlir::gpu::AsyncOpInterface::Trait"
SYMBOL_OP_INTERFACE = "::mlir::SymbolOpInterface::Trait"

_HEADER = re.compile(r"^def (\S+) \{\t?(?://\s*(.*))?$")
_FIELD = re.compile(r"^  (\S+) (\w+) = (.*)$")
_DEFAULT_DIALECT = re.compile(r'getDefaultDialect\(\)\s*\{\s*return\s+"([\w.]*)"\s*;')


@dataclass(frozen=True)
class Record:
    """One resolved TableGen record: all its superclasses and its raw field values."""

    name: str
    superclasses: frozenset[str]
    fields: dict[str, str]

    def refs(self, field: str) -> list[str]:
        """The record names in a ``list<...>`` field (``[]`` or ``?`` give none)."""
        value = self.fields.get(field, "?")
        return re.findall(r"[\w.]+", value) if value.startswith("[") else []

    def string(self, field: str) -> str | None:
        value = self.fields.get(field)
        return value[1:-1] if value and value.startswith('"') else None


@dataclass(frozen=True)
class OpFacts:
    """What the reference pass can ask of one op, straight from its ODS record."""

    name: str
    record: str
    traits: frozenset[str]  # qualified C++ trait names, e.g. ::mlir::OpTrait::IsTerminator
    has_effect_interface: bool
    own_effects: tuple[str, ...]  # static effects, e.g. ::mlir::MemoryEffects::Read
    hand_written_effects: bool
    recursive_effects: bool
    terminator: bool
    async_interface: bool
    default_dialect: str | None
    symbol: bool = False  # implements SymbolOpInterface (defines the symbol it names)
    # Its custom form builds its region (a static `regionBuilder`, as linalg's named ops):
    # the region is in the generic form only.
    implicit_region: bool = False


def tblgen() -> Path | None:
    """The LLVM 22 mlir-tblgen, or None when it or the .td files are not installed."""
    found = shutil.which("mlir-tblgen-22") or shutil.which("mlir-tblgen", path=LLVM_ROOT / "bin")
    if found is None or not (MLIR_INCLUDE / "IR" / "OpBase.td").exists():
        return None
    return Path(found)


def llvm_version() -> str:
    out = subprocess.run(
        [str(tblgen()), "--version"], check=True, capture_output=True, text=True
    ).stdout
    match = re.search(r"LLVM version (\S+)", out)
    return match.group(1) if match else "22"


def parse_records(text: str) -> dict[str, Record]:
    """Parse the ``Defs`` part of ``--print-records`` output.

    A field is ``  <type> <name> = <value>;`` on one line, except ``[{...}]`` code and
    strings holding newlines, which run on to the line that closes them.
    """
    records: dict[str, Record] = {}
    lines = text[text.index("------------- Defs -----------------") :].splitlines()
    i = 0
    while i < len(lines):
        header = _HEADER.match(lines[i])
        i += 1
        if not header:
            continue
        fields: dict[str, str] = {}
        while i < len(lines) and lines[i] != "}":
            field = _FIELD.match(lines[i])
            i += 1
            if not field:
                continue
            value = field.group(3)
            closer = "}];" if value.startswith("[{") else '";' if value.startswith('"') else ";"
            while not value.endswith(closer) and i < len(lines):
                value += "\n" + lines[i]
                i += 1
            fields[field.group(2)] = value[:-1]
        i += 1
        records[header.group(1)] = Record(
            header.group(1), frozenset((header.group(2) or "").split()), fields
        )
    return records


def dump_records(td_file: str) -> dict[str, Record]:
    out = subprocess.run(
        [str(tblgen()), "--print-records", "-I", str(INCLUDE), str(MLIR_INCLUDE / td_file)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return parse_records(out)


def _flatten_traits(records: dict[str, Record], names: list[str]) -> list[Record]:
    """The op's trait records as mlir-tblgen's Operator sees them: TraitLists expanded,
    interface base interfaces added, duplicates dropped."""
    seen: dict[str, Record] = {}

    def insert(refs: list[str]) -> None:
        for ref in refs:
            trait = records[ref]
            if "TraitList" in trait.superclasses:
                insert(trait.refs("traits"))
            elif ref not in seen:
                seen[ref] = trait
                if "Interface" in trait.superclasses:
                    insert(trait.refs("baseInterfaces"))

    insert(names)
    return list(seen.values())


def _qualified_trait(trait: Record) -> str:
    name = trait.string("trait") or trait.name
    namespace = trait.string("cppNamespace") or ""
    return f"{namespace}::{name}" if namespace else name


def _decorator_effects(records: dict[str, Record], op: Record) -> list[str]:
    """Memory effects declared on operands/results (``Arg<..., [MemRead]>`` etc.)."""
    effects = []
    for dag in ("arguments", "results"):
        for ref in re.findall(r"([\w.]+):\$", op.fields.get(dag, "")):
            variable = records.get(ref)
            if variable is None or "OpVariable" not in variable.superclasses:
                continue
            for dec in variable.refs("decorators"):
                decorator = records[dec]
                if decorator.string("baseEffectName") == MEMORY_EFFECT:
                    effects.append(decorator.string("effect") or dec)
    return effects


def op_facts(records: dict[str, Record], op: Record) -> OpFacts:
    dialect = records[op.fields["opDialect"]].string("name")
    traits = _flatten_traits(records, op.refs("traits"))
    own_effects: list[str] = []
    static_interface = hand_written = False
    for trait in traits:
        if _qualified_trait(trait) != MEMORY_EFFECT_INTERFACE:
            continue
        if "SideEffectsTraitBase" in trait.superclasses:
            static_interface = True
            own_effects += [records[e].string("effect") or e for e in trait.refs("effects")]
        else:
            hand_written = True
    decorated = _decorator_effects(records, op)
    qualified = frozenset(_qualified_trait(t) for t in traits)
    default = _DEFAULT_DIALECT.search(op.fields.get("extraClassDeclaration", ""))
    if default is None and any(
        "getDefaultDialect" in trait.fields.get("alwaysOverriddenMethods", "") for trait in traits
    ):
        raise SystemExit(f"{dialect}.{op.string('opName')}: getDefaultDialect is in C++; probe it")
    return OpFacts(
        name=f"{dialect}.{op.string('opName')}",
        record=op.name,
        traits=qualified,
        has_effect_interface=static_interface or hand_written or bool(decorated),
        own_effects=tuple(sorted(own_effects + decorated)),
        hand_written_effects=hand_written,
        recursive_effects="::mlir::OpTrait::HasRecursiveMemoryEffects" in qualified,
        terminator="::mlir::OpTrait::IsTerminator" in qualified,
        async_interface=ASYNC_OP_INTERFACE in qualified,
        default_dialect=default.group(1) if default else None,
        symbol=SYMBOL_OP_INTERFACE in qualified,
        implicit_region="regionBuilder(" in op.fields.get("extraClassDeclaration", ""),
    )


def load_ops() -> dict[str, OpFacts]:
    """Every op of the covered dialects, by fully qualified name."""
    ops: dict[str, OpFacts] = {}
    for dialect, files in DIALECT_FILES.items():
        for td_file in files:
            records = dump_records(td_file)
            for record in records.values():
                if "Op" not in record.superclasses or "opDialect" not in record.fields:
                    continue
                facts = op_facts(records, record)
                if facts.name.split(".", 1)[0] == dialect:
                    ops[facts.name] = facts
    return dict(sorted(ops.items()))


def effect_kind(facts: OpFacts) -> str:
    """``isMemoryEffectFree`` (what the pass's ``hasSideEffects`` negates) per op.

    An op with the interface is free iff its effect list is empty; with
    ``RecursiveMemoryEffects`` iff everything nested is free; with both, iff both hold
    (SideEffectInterfaces.h); with neither, never. A hand-written ``getEffects`` may
    depend on operands, so it is taken as having effects.
    """
    if facts.hand_written_effects or facts.own_effects:
        return "effects"
    if facts.recursive_effects:
        return "recursive"
    return "none" if facts.has_effect_interface else "effects"


_READ_OR_ALLOCATE = {"::mlir::MemoryEffects::Read", "::mlir::MemoryEffects::Allocate"}


def _set_lines(name: str, doc: str, entries: list[str], notes: dict[str, str]) -> list[str]:
    out = [f"# {doc}", f"{name}: frozenset[str] = frozenset(", "    {"]
    for entry in entries:
        note = f"  # {notes[entry]}" if entry in notes else ""
        out.append(f'        "{entry}",{note}')
    return out + ["    }", ")", ""]


def render(ops: dict[str, OpFacts], version: str) -> str:
    kinds = {name: effect_kind(facts) for name, facts in ops.items()}
    notes = {
        name: "hand-written getEffects (operand-dependent)"
        for name, facts in ops.items()
        if facts.hand_written_effects
    }
    for name, facts in ops.items():
        if facts.recursive_effects and facts.own_effects:
            notes[name] = "RecursiveMemoryEffects, but its own effects are not empty"
    dialects = ", ".join(DIALECT_FILES)
    lines = [
        f"# GENERATED by tools/gen_op_tables.py from LLVM {version} (mlir-tblgen-22",
        "# --print-records over the dialects' ODS files). Do not edit. Regenerate with:",
        "#   apt-get install -y mlir-22-tools libmlir-22-dev && python tools/gen_op_tables.py",
        '"""Op facts the gpu-async-region rewrite needs, from LLVM 22\'s op definitions.',
        "",
        "Bottom layer: facts from LLVM 22 ODS, shared by the syntax and analysis layers. Imports nothing of this package, nor lark, pygls or lsprotocol.",
        "",
        *textwrap.wrap(f"Dialects: {dialects}.", 88),
        "",
        "The reference pass (mlir/lib/Dialect/GPU/Transforms/AsyncRegionRewriter.cpp) asks",
        "three things of an op: ``isa<gpu::AsyncOpInterface>``,",
        "``mightHaveTrait<OpTrait::IsTerminator>`` and ``!isMemoryEffectFree``. Memory effects:",
        "an op with ``MemoryEffectOpInterface`` is free iff its effect list is empty",
        "(``Pure``, ``NoMemoryEffect``, ``MemoryEffects<[]>``); one with",
        "``RecursiveMemoryEffects`` iff every op nested in its regions is free; one with both",
        "iff both hold, so its own effects win when not empty; one with neither (and any op",
        "these tables do not know) never. Ops whose ``getEffects`` is hand-written C++ are",
        "taken as having effects (marked below).",
        "",
        "``DEFAULT_DIALECT`` holds the ops whose ``OpAsmOpInterface::getDefaultDialect`` is not",
        "empty. Inside the regions of any other op (``gpu.func``, ``gpu.module``, ``gpu.launch``,",
        "``scf.for``, ``async.execute``, ...) the default dialect is empty, so a bare name such",
        "as ``return`` or ``yield`` does not parse. There is no fallback to ``builtin``: a bare",
        "``module`` parses only where the default dialect is ``builtin`` (top level, inside",
        "``builtin.module``; the parser starts with ``builtin``); inside ``func.func``",
        "mlir-opt-22 says ``custom op 'module' is unknown (tried 'func.module' as well)``.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
    ]
    lines += _set_lines(
        "ASYNC_INTERFACE_OPS",
        "Ops implementing gpu::AsyncOpInterface.",
        [n for n, f in ops.items() if f.async_interface],
        {},
    )
    lines += _set_lines(
        "SYMBOL_OPS",
        "Ops implementing SymbolOpInterface: they define the symbol they name (func.func @f),\n"
        "# unlike ops that only refer to one (func.call @f).",
        [n for n, f in ops.items() if f.symbol],
        {},
    )
    lines += _set_lines(
        "IMPLICIT_REGION_OPS",
        "Ops whose custom form builds their region (a static regionBuilder: linalg's named\n"
        "# ops): `linalg.matmul ins(...) outs(...)` has a region only in generic form.",
        [n for n, f in ops.items() if f.implicit_region],
        {},
    )
    lines += _set_lines(
        "TERMINATOR_OPS",
        "Ops with the OpTrait::IsTerminator trait.",
        [n for n, f in ops.items() if f.terminator],
        {},
    )
    lines += _set_lines(
        "NO_EFFECT_OPS",
        "Ops whose memory effects are always empty.",
        [n for n, k in kinds.items() if k == "none"],
        notes,
    )
    lines += _set_lines(
        "RECURSIVE_EFFECT_OPS",
        "Ops with RecursiveMemoryEffects and no effects of their own.",
        [n for n, k in kinds.items() if k == "recursive"],
        notes,
    )
    lines += _set_lines(
        "READ_OR_ALLOCATE_OPS",
        "Ops whose only effects are reads and allocations (`wouldOpBeTriviallyDead`: unused,\n"
        "# they are dead, as an op without effects is).",
        [n for n, f in ops.items() if f.own_effects and not f.hand_written_effects
         and not f.recursive_effects and set(f.own_effects) <= _READ_OR_ALLOCATE],
        {},
    )
    lines += _set_lines(
        "_EFFECT_OPS",
        "Known ops that may have memory effects.",
        [n for n, k in kinds.items() if k == "effects"],
        notes,
    )
    lines += [
        "# Every op of the covered dialects.",
        "KNOWN_OPS: frozenset[str] = NO_EFFECT_OPS | RECURSIVE_EFFECT_OPS | _EFFECT_OPS",
        "",
        "# Op name -> default dialect of the bare op names in its regions.",
        "DEFAULT_DIALECT: dict[str, str] = {",
    ]
    lines += [f'    "{n}": "{f.default_dialect}",' for n, f in ops.items() if f.default_dialect]
    lines += [
        "}",
        "",
        "",
        "def is_symbol_op(name: str) -> bool:",
        '    """Whether the op defines a symbol (SymbolOpInterface)."""',
        "    return name in SYMBOL_OPS",
        "",
        "",
        "def is_terminator(name: str) -> bool:",
        '    """Whether the op has the IsTerminator trait.',
        "",
        "    Upstream's ``mightHaveTrait`` is also true for unregistered ops; those have effects",
        '    here (``effect_kind``), so the pass\'s decision is the same."""',
        "    return name in TERMINATOR_OPS",
        "",
        "",
        "def is_async_interface_op(name: str) -> bool:",
        '    """Whether the op implements gpu::AsyncOpInterface."""',
        "    return name in ASYNC_INTERFACE_OPS",
        "",
        "",
        "def dead_when_unused(name: str) -> bool:",
        '    """Whether MLIR erases the op when nothing uses its results (no effects, or only',
        '    reads and allocations: ``wouldOpBeTriviallyDead``), regions aside."""',
        "    return name in NO_EFFECT_OPS or name in READ_OR_ALLOCATE_OPS",
        "",
        "",
        "def effect_kind(name: str) -> str:",
        '    """``"none"``, ``"recursive"`` (effects iff something nested has them) or',
        '    ``"effects"``; ops these tables do not know have effects."""',
        "    if name in NO_EFFECT_OPS:",
        '        return "none"',
        "    if name in RECURSIVE_EFFECT_OPS:",
        '        return "recursive"',
        '    return "effects"',
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="fail if op_tables.py is stale")
    args = parser.parse_args(argv)
    if tblgen() is None:
        print("needs mlir-tblgen-22 and libmlir-22-dev (apt-get install -y mlir-22-tools "
              "libmlir-22-dev)", file=sys.stderr)
        return 2
    text = render(load_ops(), llvm_version())
    if args.check:
        if OUTPUT.read_text() != text:
            print(f"{OUTPUT} is stale: run python tools/gen_op_tables.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text)
    print(f"wrote {OUTPUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
