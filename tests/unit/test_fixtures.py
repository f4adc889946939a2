"""Golden fixtures: tests/fixtures/*.mlir with their findings written inline, MLIR style.

Each fixture holds several cases split by `// -----`. Findings are expected with comments as
`mlir-opt -verify-diagnostics` reads them (mlir/lib/IR/Diagnostics.cpp,
SourceMgrDiagnosticVerifierHandler), with our severities, as `check` reports them (suppression
comments, `// gpu-async-lsp: ignore[...]`, applied):

    // expected-error @+1 {{unexpected pre-existing gpu.wait}}
    // expected-warning @below {{replace with gpu.launch_func first}}
    // expected-hint @+2 {{2 GPU ops in @f run synchronously}}

`@+N` / `@-N` count from the comment's line, `@above` / `@below` name the nearest line above /
below that holds no expectation, no designator means the comment's own line; the text between
`{{` and `}}` is a substring of the message. Every finding must be expected and every
expectation met.

`--fix` output is compared byte for byte with `<name>.expected.mlir` (or with the input when
there is none). Goldens are rewritten only on request: `GPU_ASYNC_REGEN=1 pytest
tests/unit/test_fixtures.py`, and the diff is then reviewed like any code change.

Directives, as comments:
- on the first line, `// gpu-async-fixture: strict` (analyze in strict scope), `llvm22` (with
  LLVM 22's semantics instead of the original pass's) and/or `allow-unregistered-dialect` (for
  mlir-opt-22);
- in a chunk, `// gpu-async-fixture: no-reference <why>`: mlir-opt-22's pass is not the reference
  for this chunk (a known divergence, explained by `<why>`);
- in a chunk, `// gpu-async-fixture: not-mlir <why>`: the chunk is not valid MLIR on purpose
  (e.g. a region on a GPU op), so mlir-opt-22 is not asked about it.

With mlir-opt-22, the fixed text of every chunk must parse, a chunk with a syntax finding must
be rejected, and a chunk where no function has a blocker must equal the reference pass on the
input after both are reprinted (tests/differential/mlir_reference.py). The goldens themselves
are held to the same reference, so a hand-written golden (of an XFAIL fixture) is checked too.

Fixtures that expose a bug outside this test's reach are listed in XFAIL (strict): they say what
the product must do, and start passing, loudly, when it does.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from gpu_async_lsp.async_region import analyze, fix_text
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.lowering import LLVM22_LOWERING, NO_LOWERING
from gpu_async_lsp.async_region.suppression import suppress
from gpu_async_lsp.text import LineIndex
from tests.differential import mlir_reference

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REGEN = os.environ.get("GPU_ASYNC_REGEN") == "1"


# Fixtures that expose parser bugs (gpu_async_lsp/syntax is being rewritten): they state what
# the product must do and fail until the parser does it. name -> (reason, the tests that fail:
# "findings" for the findings-and-fix test, "mlir_opt" for the mlir-opt-22 test).
XFAIL: dict[str, tuple[str, frozenset[str]]] = {
}

SEVERITIES = {"error": F.Severity.ERROR, "warning": F.Severity.WARNING, "hint": F.Severity.HINT}
_EXPECTATION = re.compile(
    r"expected-(?P<kind>\w+)(?P<re>-re)?\s*(?P<count>\d+)?"
    r"(?:\s*@(?P<at>[+-]\d+|above|below))?\s*\{\{(?P<text>.*?)\}\}")
_DIRECTIVE = re.compile(r"//\s*gpu-async-fixture:\s*(.*)")
_SPLIT = re.compile(r"^// -----\r?$", re.M)


@dataclass(frozen=True)
class Expectation:
    severity: str
    line: int  # 1-based
    text: str
    written_at: int  # the line of the comment


@dataclass
class Fixture:
    path: Path
    text: str
    strict: bool = False
    semantics: str = "original"
    allow_unregistered: bool = False
    # `lowering`: the not-lowered findings on (else off, so that the expectations of the other
    # fixtures need not repeat one per synchronous op).
    lowering: str = NO_LOWERING
    expectations: list[Expectation] = field(default_factory=list)

    @property
    def expected_path(self) -> Path:
        return self.path.with_name(self.path.name.removesuffix(".mlir") + ".expected.mlir")


def read_text(path: Path) -> str:
    """The file exactly as stored: no newline translation (CRLF fixtures stay CRLF)."""
    return path.read_bytes().decode("utf-8")


def parse_expectations(text: str) -> list[Expectation]:
    """MLIR's designators: `@below` waits for the next line without an expectation, `@above`
    takes the last such line (SourceMgrDiagnosticVerifierHandler::computeExpectedDiags)."""
    result: list[Expectation] = []
    pending_below: list[tuple[str, str, int]] = []
    last_plain_line = 0
    for lineno, line in enumerate(text.splitlines(), start=1):
        comment = line.find("//")
        matches = list(_EXPECTATION.finditer(line, comment)) if comment >= 0 else []
        if comment >= 0 and "expected-" in line[comment:] and not matches:
            raise ValueError(f"line {lineno}: malformed expectation: {line.strip()}")
        if not matches:
            for kind, msg, at in pending_below:
                result.append(Expectation(kind, lineno, msg, at))
            pending_below.clear()
            last_plain_line = lineno
            continue
        for m in matches:
            kind = m["kind"]
            if kind not in SEVERITIES or m["re"] or m["count"]:
                raise ValueError(f"line {lineno}: only expected-error/warning/hint with a plain "
                                 f"{{{{substring}}}} are supported: {m.group()}")
            at = m["at"]
            if at is None:
                result.append(Expectation(kind, lineno, m["text"], lineno))
            elif at == "above":
                result.append(Expectation(kind, last_plain_line, m["text"], lineno))
            elif at == "below":
                pending_below.append((kind, m["text"], lineno))
            else:
                result.append(Expectation(kind, lineno + int(at), m["text"], lineno))
    if pending_below:
        raise ValueError(f"line {pending_below[0][2]}: @below with no line below it")
    return result


def load_fixture(path: Path) -> Fixture:
    text = read_text(path)
    fx = Fixture(path, text, expectations=parse_expectations(text))
    first = text.split("\n", 1)[0]
    m = _DIRECTIVE.match(first)
    if m:
        options = m[1].replace(",", " ").split()
        unknown = set(options) - {"strict", "llvm22", "allow-unregistered-dialect", "lowering"}
        if unknown:
            raise ValueError(f"{path.name}: unknown fixture options {sorted(unknown)}")
        fx.strict = "strict" in options
        fx.semantics = "llvm22" if "llvm22" in options else "original"
        fx.allow_unregistered = "allow-unregistered-dialect" in options
        fx.lowering = LLVM22_LOWERING if "lowering" in options else NO_LOWERING
    return fx


def fixture_paths() -> list[Path]:
    return sorted(p for p in FIXTURES.glob("*.mlir") if not p.name.endswith(".expected.mlir"))


def _params(test: str):
    params = []
    for p in fixture_paths():
        reason, failing = XFAIL.get(p.name, ("", frozenset()))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if test in failing else []
        params.append(pytest.param(p, id=p.name, marks=marks))
    return params


def compare_findings(fx: Fixture) -> list[str]:
    """Differences between the findings and the inline expectations (empty when equal)."""
    analysis = analyze(fx.text, strict=fx.strict, semantics=fx.semantics, lowering=fx.lowering)
    index = LineIndex(fx.text)
    actual = [(f.severity, index.line_col_1based(f.start)[0], f.message, f.code)
              for f in suppress(fx.text, analysis.findings)]
    unmatched = list(actual)
    problems = []
    for e in fx.expectations:
        hit = next((a for a in unmatched if a[0] == SEVERITIES[e.severity] and a[1] == e.line
                    and e.text in a[2]), None)
        if hit is None:
            problems.append(f"line {e.line}: expected {e.severity} {{{{{e.text}}}}} (written on "
                            f"line {e.written_at}) was not produced")
        else:
            unmatched.remove(hit)
    for severity, line, message, code in unmatched:
        problems.append(f"line {line}: unexpected {severity.label}: {message} [{code}]")
    return problems


@pytest.mark.parametrize("path", _params("findings"))
def test_golden_fixture_findings_and_fix_match_expectations(path: Path):
    """Findings equal the inline expectations; `--fix` output equals `.expected.mlir` (or the
    input); every untouched line of the input survives byte for byte and in order."""
    fx = load_fixture(path)
    problems = compare_findings(fx)

    fixed = fix_text(fx.text, fx.semantics)
    if REGEN and path.name not in XFAIL:
        if fixed != fx.text:
            fx.expected_path.write_bytes(fixed.encode("utf-8"))
        elif fx.expected_path.exists():
            fx.expected_path.unlink()
    if fx.expected_path.exists():
        expected, golden = read_text(fx.expected_path), fx.expected_path.name
        if expected == fx.text:
            problems.append(f"{golden} equals the input: delete it")
    else:
        expected, golden = fx.text, "the input"
    if fixed != expected:
        problems.append(f"--fix output differs from {golden}:\n{_diff(expected, fixed)}")
    survival = mlir_reference.untouched_lines_survive(
        fx.text, fixed, llvm22=fx.semantics == "llvm22")
    if survival:
        problems.append(f"--fix changed a line it must keep: {survival}")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@dataclass
class ChunkPlan:
    index: int
    input: str
    fixed: str
    syntax_error: bool
    blocked: bool
    not_mlir: str | None
    no_reference: str | None


def split_chunks(text: str) -> list[tuple[int, str]]:
    """(offset, text) of each `// -----` chunk, split as `mlir-opt -split-input-file` does for
    markers on their own line (the marker line itself belongs to no chunk)."""
    chunks, start = [], 0
    for m in _SPLIT.finditer(text):
        chunks.append((start, text[start:m.start()]))
        start = m.end() + 1 if text[m.end():m.end() + 1] == "\n" else m.end()
    chunks.append((start, text[start:]))
    return chunks


def _directive(chunk: str, name: str) -> str | None:
    for m in _DIRECTIVE.finditer(chunk):
        if m[1].startswith(name):
            return m[1][len(name):].strip() or name
    return None


def plan_chunks(fx: Fixture, fixed: str) -> list[ChunkPlan]:
    analysis = analyze(fx.text, strict=fx.strict, semantics=fx.semantics)
    inputs, outputs = split_chunks(fx.text), split_chunks(fixed)
    assert len(inputs) == len(outputs), "the fix added or removed a split marker"
    plans = []
    for k, ((start, chunk), (_, out)) in enumerate(zip(inputs, outputs)):
        end = start + len(chunk)
        syntax = any(f.code == F.SYNTAX and start <= f.start <= end for f in analysis.findings)
        blocked = any(fn.blockers and start <= fn.func.start < end for fn in analysis.functions)
        plans.append(ChunkPlan(k, chunk, out, syntax, blocked, _directive(chunk, "not-mlir"),
                               _directive(chunk, "no-reference")))
    return plans


def plan_from_expectations(fx: Fixture, golden: str) -> list[ChunkPlan]:
    """The fixture's own view of its chunks: a chunk that expects an error or a warning has a
    blocker (or a syntax error: those are the chunks mlir-opt-22 rejects)."""
    inputs, outputs = split_chunks(fx.text), split_chunks(golden)
    assert len(inputs) == len(outputs), "the golden adds or removes a split marker"
    parsed = mlir_reference.reprint([chunk for _, chunk in inputs],
                                    allow_unregistered=fx.allow_unregistered)
    plans = []
    index = LineIndex(fx.text)
    for k, ((start, chunk), (_, out), r) in enumerate(zip(inputs, outputs, parsed)):
        first, last = (index.line_col_1based(o)[0] for o in (start, start + len(chunk)))
        blocked = any(e.severity in ("error", "warning") and first <= e.line <= last
                      for e in fx.expectations)
        plans.append(ChunkPlan(k, chunk, out, not r.ok, blocked, _directive(chunk, "not-mlir"),
                               _directive(chunk, "no-reference")))
    return plans


def check_against_mlir_opt(plans: list[ChunkPlan], allow_unregistered: bool,
                           compare: bool = True, refused_ok: bool = False) -> list[str]:
    """The fixed chunks parse (those with a syntax error must not), and the chunks without
    blockers equal the reference pass on the input, both reprinted by mlir-opt-22.

    `refused_ok`: a chunk the reference pass refuses is fine if it is left unchanged (a blocker
    that default scope does not report, e.g. a gpu.launch in a function with no other GPU op).
    """
    plans = [p for p in plans if p.not_mlir is None]
    opts = {"allow_unregistered": allow_unregistered}
    parsed = mlir_reference.reprint([p.fixed for p in plans], **opts)
    compared = [p for p in plans if compare and not (p.syntax_error or p.blocked
                                                     or p.no_reference)]
    refs = mlir_reference.reference([p.input for p in compared], **opts)
    problems = []
    for p, r in zip(plans, parsed):
        if p.syntax_error and r.ok:
            problems.append(f"chunk {p.index + 1}: has a syntax error but mlir-opt-22 parses it")
        elif not p.syntax_error and not r.ok:
            problems.append(f"chunk {p.index + 1}: the fixed text does not parse:\n{r.stderr}")
    ours = {p.index: r for p, r in zip(plans, parsed)}
    for p, ref in zip(compared, refs):
        if not ref.ok and not (refused_ok and p.fixed == p.input):
            problems.append(f"chunk {p.index + 1}: the reference pass failed:\n{ref.stderr}")
        elif ref.ok and ours[p.index].ok and ours[p.index].output != ref.output:
            problems.append(f"chunk {p.index + 1}: differs from the reference pass "
                            f"(- mlir-opt-22, + ours):\n{_diff(ref.output, ours[p.index].output)}")
    return problems


@pytest.mark.mlir_opt
@pytest.mark.parametrize("path", _params("mlir_opt"))
def test_golden_fixture_fix_matches_mlir_opt_pass(path: Path):
    """The `--fix` output parses in mlir-opt-22 (chunks with a syntax finding must not), and
    where nothing blocks the rewrite it equals mlir-opt-22's gpu-async-region on the input."""
    mlir_reference.require_mlir_opt()
    fx = load_fixture(path)
    fixed = fix_text(fx.text, fx.semantics)
    # A file with a syntax error is not rewritten at all, so nothing is compared.
    compare = not analyze(fx.text, semantics=fx.semantics).has_syntax_errors
    problems = check_against_mlir_opt(plan_chunks(fx, fixed), fx.allow_unregistered, compare)
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


@pytest.mark.mlir_opt
@pytest.mark.parametrize("path", fixture_paths(), ids=lambda p: p.name)
def test_golden_expected_output_matches_mlir_opt_pass(path: Path):
    """The goldens themselves, independently of the product (so the xfail fixtures' hand-written
    goldens are checked too): `.expected.mlir` (or the input) parses in mlir-opt-22 and equals
    the reference pass in every chunk that expects no error or warning."""
    mlir_reference.require_mlir_opt()
    fx = load_fixture(path)
    golden = read_text(fx.expected_path) if fx.expected_path.exists() else fx.text
    plans = plan_from_expectations(fx, golden)
    compare = not any(p.syntax_error for p in plans)
    problems = check_against_mlir_opt(plans, fx.allow_unregistered, compare, refused_ok=True)
    survival = mlir_reference.untouched_lines_survive(
        fx.text, golden, llvm22=fx.semantics == "llvm22")
    if survival:
        problems.append(f"the golden changes a line it must keep: {survival}")
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


def test_golden_fixtures_cover_every_finding_code():
    """Every finding code (`F.CODES`) is expected somewhere, in default and in strict scope."""
    seen: dict[bool, set[str]] = {False: set(), True: set()}
    for path in fixture_paths():
        if path.name in XFAIL:
            continue
        fx = load_fixture(path)
        found = analyze(fx.text, strict=fx.strict, semantics=fx.semantics,
                        lowering=fx.lowering).findings
        seen[fx.strict].update(f.code for f in suppress(fx.text, found))
    assert set(F.CODES) <= seen[False] | seen[True], set(F.CODES) - (seen[False] | seen[True])
    assert set(F.BLOCKING) <= seen[True], f"not covered in strict scope: {F.BLOCKING - seen[True]}"


def test_parse_expectations_designators_follow_mlir():
    text = "\n".join([
        "op1",                                   # 1
        "// expected-error @above {{a}}",        # 2 -> 1
        "// expected-warning @below {{b}}",      # 3 -> 5
        "// expected-hint@+2 {{c}}",             # 4 -> 6
        "op2  // expected-error {{d}}",          # 5 -> 5 (same line: it holds an expectation)
        "op3",                                   # 6
        "// expected-error @-6 {{e}}",           # 7 -> 1
    ])
    got = [(e.severity, e.line, e.text) for e in parse_expectations(text)]
    assert got == [("error", 1, "a"), ("hint", 6, "c"), ("error", 5, "d"),
                   ("warning", 6, "b"), ("error", 1, "e")]


def test_parse_expectations_unknown_kind_is_an_error():
    with pytest.raises(ValueError, match="only expected-error/warning/hint"):
        parse_expectations("// expected-remark {{x}}")


def _diff(a: str, b: str) -> str:
    import difflib
    return "".join(difflib.unified_diff(a.splitlines(keepends=True), b.splitlines(keepends=True),
                                        "expected", "actual"))
