"""Go to definition, ours against mlir-lsp-server-22's, on the upstream corpus and a few cases
the corpus lacks (definition for SSA values, block labels and `@symbols`).

Every file of ../shared/corpus/upstream with a `// -----` chunk that mlir-opt-22 parses
(manifest.json) is opened whole in one mlir-lsp-server-22 process and in our analysis
(`Analyzer().analyze`, `features.definition`). mlir-lsp-server loses all navigation in a chunk
with an error, so only parseable chunks are asked, and it must report no error in them. In those
chunks every `%value` (`%x#1` too), `^block` and each `@name` of a symbol reference (`@a::@b`
is two) outside comments and strings is asked for its definition, with the cursor one character
into the name; definition sites are asked as well (their definition is themselves).

What "agree" means (mlir-lsp-server's columns are UTF-8 bytes; ours are converted to them):
- value, block: the same list of definition start positions (line and byte column). Both
  answer the defining result or argument: a use of `%x#1` goes to the start of `%x:2`, a
  header argument (`scf.for %i`, `iter_args(%acc = ...)`, `gpu.launch blocks(%bx, ...)`,
  `async.execute (%v as %x: ...)`) to its name in the header.
- symbol: mlir-lsp-server's range is the defining op's name (`func.func` of
  `func.func private @f`), ours the symbol name: they agree when both are empty or both are on
  the same line with nothing between their start and ours but the op name and keywords
  (`private`, `internal`, `"private" constant`).

Known differences (intended, in KNOWN_DIFFERENCES):
- unresolved-leaf: `@binary_1::@kernel` where `@binary_1` is a `gpu.binary` (no symbol table):
  MLIR resolves a nested reference whole or not at all, so mlir-lsp-server answers nothing for
  any of its names; we resolve each name that exists (`@binary_1` goes to the binary).

Bugs this test found in our server, fixed (EXPECTED_FAILURES lists any still open):
- a symbol op whose name follows a keyword (`func.func private @f`, `llvm.mlir.global
  internal @g`, `memref.global "private" constant @g`) did not define its symbol;
- a GPU op with nothing after its dependency list (`%t = gpu.create_csr async [%t0]`) ended,
  in our IR, at its name, so a dependency under the cursor found no op.
"""

from __future__ import annotations

import bisect
import collections
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from benchmarks.bench_server import LspClient
from gpu_async_lsp.ide import features
from gpu_async_lsp.ide.host import Analyzer
from gpu_async_lsp.syntax.lexer import split_chunks
from tests.mlir_tools import mlir_opt, require_tool

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
MANIFEST = CORPUS / "manifest.json"
TIMEOUT = 30.0

# Our own scanner, independent of the IR: what is neither a comment nor a string.
_STRING = r'"(?:[^"\\\n]|\\.)*"'
_SUFFIX_ID = r"(?:\d+|[A-Za-z_$.\-][\w$.\-]*)"
_SYMBOL_NAME = rf"@(?:[A-Za-z_$.][\w$.\-]*|{_STRING})"
_SCAN = re.compile(rf"//[^\n]*|(?P<symbol>{_SYMBOL_NAME}(?:::{_SYMBOL_NAME})*)|{_STRING}"
                   rf"|(?P<value>%{_SUFFIX_ID}(?:#\d+)?)|(?P<block>\^{_SUFFIX_ID})")
_SYMBOL_PART = re.compile(_SYMBOL_NAME)
# What may stand between a symbol op's name and its `@name`.
_OP_HEAD = re.compile(rf'[A-Za-z_][\w$.]*(?:\s+(?:[A-Za-z_][\w$]*|{_STRING}))*\s+')

VALUE, BLOCK, SYMBOL = "value", "block", "symbol"

# (file, line, name as written) -> why the two servers answer differently on purpose.
UNRESOLVED_LEAF = "unresolved-leaf"
KNOWN_DIFFERENCES: dict[tuple[str, int, str], str] = {
    ("Dialect/GPU/ops.mlir", 219, "@binary_1"): UNRESOLVED_LEAF,
}

# Our bugs found by this test, each fixed, none listed now: (file, line, name as written) ->
# which bug. An entry must still disagree (a fix fails the test until it is removed).
EXPECTED_FAILURES: dict[tuple[str, int, str], str] = {}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """One mlir-lsp-server-22 for the module, through the benchmark's client (stdio, JSON-RPC
    framing, answers to the server's own requests)."""
    client = LspClient("mlir-lsp-server-22", [require_tool("mlir-lsp-server-22")], TIMEOUT,
                       str(tmp_path_factory.mktemp("mlir-lsp-server")))
    client.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {}})
    client.notify("initialized", {})
    yield client
    client.close()


# -- the comparison ------------------------------------------------------------------------------

class _Lines:
    """Offsets in a text as (line, UTF-8 byte column), mlir-lsp-server's positions."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.starts, offset) - 1
        return line, len(self.text[self.starts[line]:offset].encode("utf-8"))

    def line_bytes(self, line: int) -> bytes:
        end = self.starts[line + 1] if line + 1 < len(self.starts) else len(self.text)
        return self.text[self.starts[line]:end].encode("utf-8")


@dataclass
class Comparison:
    """Counts per kind and site (`use` or `definition`), what disagreed, and the errors
    mlir-lsp-server reported in the compared spans (line from 1, message)."""

    counts: collections.Counter = field(default_factory=collections.Counter)
    agreed: collections.Counter = field(default_factory=collections.Counter)
    disagreements: list[dict] = field(default_factory=list)
    errors: list[tuple[int, str]] = field(default_factory=list)


def _occurrences(text: str, start: int, end: int):
    """(kind, offset of the name, the name as written) in text[start:end]."""
    for m in _SCAN.finditer(text, start, end):
        kind = m.lastgroup
        if kind == SYMBOL:
            for part in _SYMBOL_PART.finditer(m.group()):
                yield SYMBOL, m.start() + part.start(), part.group()
        elif kind is not None:
            yield kind, m.start(), m.group()


def _symbols_agree(ours, theirs, lines: _Lines) -> bool:
    if not ours or not theirs:
        return not ours and not theirs
    if len(ours) != 1 or len(theirs) != 1 or ours[0][0] != theirs[0][0]:
        return False
    (line, our_col), (_, their_col) = ours[0], theirs[0]
    between = lines.line_bytes(line)[their_col:our_col].decode("utf-8", "replace")
    return _OP_HEAD.fullmatch(between) is not None


def compare_definitions(client: LspClient, name: str, text: str,
                        spans: list[tuple[int, int]] | None = None) -> Comparison:
    """Ask both servers for the definition of every name in `spans` of `text` (default: all)."""
    uri = "file:///reference/" + name
    client.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "mlir", "version": 1, "text": text}})
    analysis = Analyzer().analyze(text, 1)
    lines = _Lines(text)
    result = Comparison()
    spans = spans or [(0, len(text))]
    try:
        published, _ = client.wait_diagnostics(uri, 1, 0.0)
        for d in published["diagnostics"]:
            offset = lines.starts[d["range"]["start"]["line"]]
            if d.get("severity", 1) == 1 and any(s <= offset < e for s, e in spans):
                result.errors.append((d["range"]["start"]["line"] + 1, d["message"]))
        for start, end in spans:
            for kind, offset, written in _occurrences(text, start, end):
                cursor = offset + 1
                line, column = lines.position(cursor)
                answer, _ = client.request("textDocument/definition", {
                    "textDocument": {"uri": uri},
                    "position": {"line": line, "character": column}})
                answer = answer or []
                theirs = [(loc["range"]["start"]["line"], loc["range"]["start"]["character"])
                          for loc in answer]
                ours = [lines.position(span.start) for span in features.definition(analysis,
                                                                                   cursor)]
                here = lines.position(offset)
                if kind == SYMBOL:
                    agree = _symbols_agree(ours, theirs, lines)
                    site = ("definition" if theirs and _symbols_agree([here], theirs, lines)
                            else "use")
                else:
                    agree = ours == theirs
                    site = "definition" if here in theirs else "use"
                result.counts[kind, site] += 1
                if agree:
                    result.agreed[kind, site] += 1
                else:
                    result.disagreements.append({
                        "line": line + 1, "name": written, "kind": kind, "ours": ours,
                        "theirs": theirs,
                        "text": lines.line_bytes(line).decode("utf-8").strip()})
    finally:
        client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    return result


def _shown(positions) -> str:
    """Positions as `line:byte column`, lines counted from 1 like the keys."""
    return "[" + ", ".join(f"{line + 1}:{column}" for line, column in positions) + "]"


def _check(key: str, result: Comparison) -> None:
    """Every disagreement in file `key` is listed in KNOWN_DIFFERENCES or EXPECTED_FAILURES,
    and every entry listed for `key` still disagrees."""
    listed = {k: v for k, v in {**KNOWN_DIFFERENCES, **EXPECTED_FAILURES}.items()
              if k[0] == key}
    seen = {(key, d["line"], d["name"]) for d in result.disagreements}
    unexpected = [d for d in result.disagreements if (key, d["line"], d["name"]) not in listed]
    stale = sorted(k for k in listed if k not in seen)
    assert not unexpected, f"{key}: definitions differ from mlir-lsp-server-22's:\n" + "\n".join(
        f"  {d['line']}: {d['name']} ({d['kind']}) ours {_shown(d['ours'])} theirs "
        f"{_shown(d['theirs'])}  | {d['text']}" for d in unexpected)
    assert not stale, f"{key}: these now agree with mlir-lsp-server-22, remove them: {stale}"


# -- the corpus ----------------------------------------------------------------------------------

def _entries():
    if not MANIFEST.exists():
        return []
    return json.loads(MANIFEST.read_text())


def _parseable(entry) -> list[int]:
    if entry["chunk_details"]:
        return [i for i, d in enumerate(entry["chunk_details"]) if d["parses"]]
    return [0] if entry["mlir_opt_parses"] else []


ENTRIES = [e for e in _entries() if _parseable(e)]


def _key(path: str) -> str:
    return path.removeprefix("upstream/mlir/test/")


@pytest.mark.mlir_opt
@pytest.mark.parametrize("entry", ENTRIES, ids=[_key(e["path"]) for e in ENTRIES])
def test_definition_on_corpus_file_agrees_with_mlir_lsp_server(reference, entry):
    text = (CORPUS / entry["path"]).read_text(encoding="utf-8")
    chunks = split_chunks(text) if entry["split_input_file"] else [(0, len(text))]
    assert len(chunks) == entry["chunks"], entry["path"]
    spans = [chunks[i] for i in _parseable(entry)]
    name = _key(entry["path"])
    result = compare_definitions(reference, name, text, spans)
    assert not result.errors, "mlir-lsp-server-22 reports errors in parseable chunks"
    if any(text[s:e].strip() for s, e in spans):
        assert sum(result.counts.values()), "nothing compared"
    _check(name, result)


def test_corpus_manifest_lists_parseable_files():
    if not MANIFEST.exists():
        if os.environ.get("CI"):
            pytest.fail(f"corpus missing at {CORPUS}")
        pytest.skip(f"corpus missing at {CORPUS}")
    assert ENTRIES


# -- what the corpus lacks -----------------------------------------------------------------------

# Header and region arguments, iter_args, sibling regions reusing names, generic ops with
# regions, block arguments and branches, result groups, nested symbol tables, symbols in
# attributes. Each parses with `mlir-opt-22 -allow-unregistered-dialect`.
EXTRA = {
    "extra/scopes.mlir": """\
func.func @loops(%n: index, %buf: memref<?xf32>) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    %v = memref.load %buf[%i] : memref<?xf32>
    %inner = scf.for %j = %c0 to %i step %c1 iter_args(%acc2 = %acc) -> (f32) {
      %w = arith.addf %acc2, %v : f32
      scf.yield %w : f32
    }
    %next = arith.addf %acc, %inner : f32
    scf.yield %next : f32
  }
  affine.for %k = 0 to 10 {
    %x = affine.load %buf[%k] : memref<?xf32>
    affine.store %x, %buf[%k + 1] : memref<?xf32>
  }
  %r:2 = scf.while (%a = %c0, %b = %sum) : (index, f32) -> (index, f32) {
    %cond = arith.cmpi slt, %a, %n : index
    scf.condition(%cond) %a, %b : index, f32
  } do {
  ^bb0(%a2: index, %b2: f32):
    %a3 = arith.addi %a2, %c1 : index
    scf.yield %a3, %b2 : index, f32
  }
  %true = arith.constant true
  %p = scf.if %true -> (f32) {
    scf.yield %r#1 : f32
  } else {
    scf.yield %zero : f32
  }
  scf.parallel (%pi, %pj) = (%c0, %c0) to (%n, %n) step (%c1, %c1) {
    %pv = memref.load %buf[%pi] : memref<?xf32>
    memref.store %pv, %buf[%pj] : memref<?xf32>
  }
  %e = scf.execute_region -> f32 {
    cf.br ^bb1(%p : f32)
  ^bb1(%arg: f32):
    scf.yield %arg : f32
  }
  return %e : f32
}
""",
    "extra/reuse.mlir": """\
func.func @siblings(%n: index, %cond: i1) -> index {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    %v = arith.addi %i, %c1 : index
    "test.use"(%v) : (index) -> ()
  }
  scf.for %i = %c1 to %n step %c1 {
    %v = arith.muli %i, %i : index
    "test.use"(%v, %i) : (index, index) -> ()
  }
  %r = scf.if %cond -> (index) {
    %v = arith.addi %n, %c1 : index
    scf.yield %v : index
  } else {
    %v = arith.subi %n, %c1 : index
    scf.yield %v : index
  }
  %v = arith.addi %r, %r : index
  "scf.for"(%c0, %n, %c1) ({
  ^bb0(%gi: index):
    %gv = "arith.addi"(%gi, %v) : (index, index) -> index
    "scf.yield"() : () -> ()
  }) : (index, index, index) -> ()
  %pair:2 = "test.two"() : () -> (index, index)
  %s = arith.addi %pair#0, %pair#1 : index
  return %s : index
}

func.func @siblings2(%n: index) -> index {
  %v = arith.addi %n, %n : index
  return %v : index
}
""",
    "extra/generic.mlir": """\
#map = affine_map<(d0) -> (d0)>
func.func @generic(%in: tensor<8xf32>, %out: tensor<8xf32>) -> tensor<8xf32> {
  %res = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%in : tensor<8xf32>) outs(%out : tensor<8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<8xf32>
  %gen = "scf.execute_region"() ({
    %q = "arith.addf"(%in, %out) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
    "scf.yield"(%q) : (tensor<8xf32>) -> ()
  }) : () -> tensor<8xf32>
  %t = tensor.generate {
  ^bb0(%gi: index):
    %c = arith.constant 1.0 : f32
    tensor.yield %c : f32
  } : tensor<8xf32>
  return %gen : tensor<8xf32>
}

func.func @branches(%flag: i1, %x: i32) -> i32 {
  cf.cond_br %flag, ^bb1(%x : i32), ^bb2
^bb1(%y: i32):
  cf.br ^bb3(%y : i32)
^bb2:
  %c = arith.constant 7 : i32
  cf.br ^bb3(%c : i32)
^bb3(%z: i32):
  return %z : i32
}
""",
    "extra/gpu.mlir": """\
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%arg0: memref<?xf32>) kernel {
      %tid = gpu.thread_id x
      %v = memref.load %arg0[%tid] : memref<?xf32>
      %r = gpu.all_reduce add %v uniform {} : (f32) -> f32
      %r2 = gpu.all_reduce %v {
      ^bb(%lhs : f32, %rhs : f32):
        %sum = arith.addf %lhs, %rhs : f32
        "gpu.yield"(%sum) : (f32) -> ()
      } : (f32) -> (f32)
      memref.store %r2, %arg0[%tid] : memref<?xf32>
      gpu.return
    }
  }
  func.func private @helper(memref<?xf32>)
  func.func @host(%n: index, %buf: memref<?xf32>) {
    %c1 = arith.constant 1 : index
    %t0 = gpu.wait async
    %mem, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>
    %t2 = gpu.launch_func async [%t1] @kernels::@kernel blocks in (%n, %c1, %c1)
        threads in (%c1, %c1, %c1) args(%mem : memref<?xf32>)
    gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %c1, %gz = %c1)
               threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
      %idx = arith.addi %bx, %tx : index
      %l = memref.load %buf[%idx] : memref<?xf32>
      memref.store %l, %buf[%gx] : memref<?xf32>
      gpu.terminator
    }
    %lane = gpu.lane_id
    %w = gpu.warp_execute_on_lane_0(%lane)[32] args(%buf : memref<?xf32>) -> (f32) {
    ^bb0(%wbuf: memref<?xf32>):
      %wv = memref.load %wbuf[%c1] : memref<?xf32>
      gpu.yield %wv : f32
    }
    %token = async.execute {
      func.call @helper(%buf) : (memref<?xf32>) -> ()
      async.yield
    }
    %token2, %val = async.execute [%token] -> !async.value<index> {
      async.yield %n : index
    }
    async.await %token2 : !async.token
    %token3 = async.execute [%token2] (%val as %iv: !async.value<index>) {
      %sq = arith.muli %iv, %iv : index
      async.yield
    }
    gpu.wait [%t2]
    return
  }
}
""",
    "extra/symbols.mlir": """\
module @outer {
  module @inner {
    func.func nested @f() {
      return
    }
    func.func @g() {
      func.call @f() : () -> ()
      return
    }
  }
  memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
  memref.global @plain : memref<2xf32>
  llvm.mlir.global internal @counter(0 : i64) : i64
  func.func private @decl(index) -> index
  func.func @user(%i: index) -> index {
    %t = memref.get_global @table : memref<2xf32>
    %p = memref.get_global @plain : memref<2xf32>
    %c = llvm.mlir.addressof @counter : !llvm.ptr
    %r = func.call @decl(%i) : (index) -> index
    "test.ref"() {target = @inner::@g, flat = @user} : () -> ()
    return %r : index
  }
}
""",
}


@pytest.mark.mlir_opt
@pytest.mark.parametrize("name", sorted(EXTRA))
def test_definition_on_scoping_case_agrees_with_mlir_lsp_server(reference, name):
    text = EXTRA[name]
    mlir_opt(text, "-allow-unregistered-dialect", check=True)
    result = compare_definitions(reference, name, text)
    assert not result.errors
    _check(name, result)
