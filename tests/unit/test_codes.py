"""The registry of finding codes (`RULES` in async_region/findings.py) and everything said from
it: docs/codes.md, the README's table, package.json's severity schema, the SARIF rules, the
hover of a blocker. Each rule's example is real: analysed, it gets exactly its code."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from gpu_async_lsp import report
from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.lowering import LLVM22_LOWERING
from gpu_async_lsp.async_region.suppression import suppress
from gpu_async_lsp.cli import CheckOptions, check_text
from gpu_async_lsp.ide import features
from gpu_async_lsp.ide.host import Analyzer
from gpu_async_lsp.text import LineIndex

ROOT = Path(__file__).resolve().parents[2]
RULES = {r.code: r for r in F.RULES}


def _gen():
    path = ROOT / "tools" / "gen_codes_doc.py"
    spec = importlib.util.spec_from_file_location("gen_codes_doc", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_codes_derived_names_come_from_the_registry():
    assert F.CODES == tuple(r.code for r in F.RULES)
    assert len(set(F.CODES)) == len(F.CODES)
    assert F.DEFAULT_SEVERITY == {r.code: r.severity for r in F.RULES}
    assert F.BLOCKING == {F.PRE_EXISTING_WAIT, F.ALREADY_ASYNC, F.ASYNC_OP_WITH_REGIONS,
                          F.LAUNCH_NOT_OUTLINED, F.UNSUPPORTED_FORM}


def test_codes_docs_page_is_what_the_registry_generates():
    assert (ROOT / "docs" / "codes.md").read_text(encoding="utf-8") == _gen().render_page(), \
        "run python tools/gen_codes_doc.py"


def test_codes_docs_page_has_one_section_per_code_in_order():
    page = (ROOT / "docs" / "codes.md").read_text(encoding="utf-8")
    assert re.findall(r"^## (.+)$", page, re.M) == list(F.CODES)


def test_codes_readme_table_is_what_the_registry_generates():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme == _gen().render_readme(readme), "run python tools/gen_codes_doc.py"
    rows = [line for line in readme.splitlines() if line.startswith("| [`")]
    assert [re.match(r"\| \[`([a-z-]+)`\]", row).group(1) for row in rows] == list(F.CODES)


def test_codes_vscode_severity_schema_lists_exactly_the_registry():
    manifest = json.loads((ROOT / "editors" / "vscode" / "package.json").read_text())
    setting = manifest["contributes"]["configuration"]["properties"]["gpuAsyncLsp.severity"]
    assert list(setting["properties"]) == list(F.CODES)
    labels = [s.label for s in F.Severity]
    for code, schema in setting["properties"].items():
        assert schema["type"] == "string" and schema["enum"] == labels, code
        assert RULES[code].summary in schema["markdownDescription"]
    assert setting["properties"] == _gen().severity_properties(), \
        "run python tools/gen_codes_doc.py"


def test_codes_generator_check_mode_passes_on_this_checkout(monkeypatch, capsys):
    gen = _gen()
    monkeypatch.setattr("sys.argv", ["gen_codes_doc.py", "--check"])
    assert gen.main() == 0


def test_codes_every_rule_says_everything():
    for r in F.RULES:
        for field in ("message", "summary", "hover", "meaning", "example", "resolve"):
            assert getattr(r, field).strip(), (r.code, field)
        assert r.summary.endswith("."), r.code
        assert r.docs == f"docs/codes.md#{r.code}"
    hovers = [r.hover for r in F.RULES]
    assert len(set(hovers)) == len(hovers), "each code has its own hover text"


@pytest.mark.parametrize("code", F.CODES)
def test_codes_example_gets_exactly_its_code_with_the_message_shape(code):
    rule = RULES[code]
    # As check reports them: after the suppression comments (invalid-suppression's example).
    # With the command's default options, the lowering findings on: they come with every
    # synchronous GPU op, so the other codes' examples are read with them off.
    lowering = LLVM22_LOWERING if code in (F.NOT_LOWERED, F.STREAM_HAZARD) else "none"
    found = suppress(rule.example, analyze(rule.example, lowering=lowering).findings)
    assert {f.code for f in found} == {code}
    shape = "".join(".+" if part.startswith("<") else re.escape(part)
                    for part in re.split(r"(<[^>]*>)", rule.message) if part)
    for f in found:
        assert re.fullmatch(shape, f.message), (f.message, rule.message)
        assert f.severity == rule.severity


@pytest.mark.parametrize("code", F.CODES)
def test_codes_fixable_says_whether_check_fix_removes_the_finding(code):
    rule = RULES[code]
    before, _ = check_text(rule.example, "x.mlir", CheckOptions())
    after, _ = check_text(rule.example, "x.mlir", CheckOptions(fix=True))
    assert all((f["fix"] is not None) == rule.fixable for f in before.findings
               if f["code"] == code)
    assert (code not in {f["code"] for f in after.findings}) == rule.fixable


@pytest.mark.parametrize("code", sorted(F.BLOCKING))
def test_codes_a_blocker_leaves_its_function_as_it_is(code):
    a = analyze(RULES[code].example)
    (fn,) = a.functions
    assert fn.sync_ops or fn.func.regions  # there was work to do
    assert not fn.rewritable
    assert a.edits() == []


@pytest.mark.parametrize("code", sorted(F.BLOCKING))
def test_codes_hover_on_a_blocker_says_the_registry_text(code):
    text = RULES[code].example
    a = Analyzer().analyze(text, 1)
    (blocker,) = analyze(text).findings
    index = LineIndex(text)
    found = features.hover(a, blocker.start + 1, lambda o: index.line_of(o) + 1)
    assert found is not None
    assert RULES[code].hover in found[0]


def test_codes_hover_on_a_generic_op_adds_what_is_particular_to_it():
    text = RULES[F.UNSUPPORTED_FORM].example
    a = Analyzer().analyze(text, 1)
    index = LineIndex(text)
    found = features.hover(a, text.index('"gpu.memcpy"') + 2, lambda o: index.line_of(o) + 1)
    assert "It is written in generic form: write it in its custom form." in found[0]


def test_codes_sarif_rules_come_from_the_registry():
    rules = report.sarif_rules()
    assert [r["id"] for r in rules] == list(F.CODES)
    for entry, rule in zip(rules, F.RULES, strict=True):
        assert entry["shortDescription"]["text"] == rule.summary
        assert entry["fullDescription"]["text"] == rule.meaning
        assert rule.resolve in entry["help"]["text"]
        assert entry["help"]["markdown"] == report.rule_markdown(rule)
        assert entry["helpUri"] == report.docs_url(rule.code)
        assert entry["defaultConfiguration"]["level"] == report.SARIF_LEVEL[rule.severity]
        assert entry["properties"] == {"blocksRewrite": rule.blocks, "fixable": rule.fixable}


def test_codes_docs_url_is_the_anchor_of_the_code_in_the_page():
    page = ROOT / "docs" / "codes.md"
    assert report.codes_page() == page
    for code in F.CODES:
        assert report.docs_url(code) == f"{page.as_uri()}#{code}"


def test_finding_is_a_frozen_value_made_either_way():
    """Finding is a named tuple, made by its class or in C (`tuple.__new__`, where findings
    are made often): either way it is immutable, compared, hashed, replaced and pickled by
    its seven fields, with their defaults, by position or by name."""
    import pickle

    r = F.Related(1, 2, "here")
    f = F.Finding("not-lowered", "m", 3, 5, F.Severity.WARNING, (r,), "@f")
    assert F.Finding._fields == (
        "code", "message", "start", "end", "severity", "related", "function")
    assert f._asdict() == {"code": "not-lowered", "message": "m", "start": 3, "end": 5,
                           "severity": F.Severity.WARNING, "related": (r,), "function": "@f"}
    with pytest.raises(AttributeError):
        f.start = 4
    bare = F.Finding(code="syntax", message="m", start=0, end=1, severity=F.Severity.ERROR)
    assert (bare.related, bare.function) == ((), None)
    made = tuple.__new__(F.Finding, ("not-lowered", "m", 3, 5, F.Severity.WARNING, (r,), "@f"))
    assert f == made != bare and type(made) is F.Finding
    assert hash(f) == hash(made)
    assert pickle.loads(pickle.dumps(f)) == f and type(pickle.loads(pickle.dumps(f))) is F.Finding
    assert f._replace(severity=F.Severity.ERROR).severity == F.Severity.ERROR


def test_function_info_is_a_frozen_value_whatever_its_init():
    """FunctionInfo's __init__ writes its fields directly too: frozen, compared without its
    plan, replaced and pickled by its fields, with their defaults."""
    import dataclasses
    import pickle

    from gpu_async_lsp.ide.units import FunctionInfo

    names = [f.name for f in dataclasses.fields(FunctionInfo)]
    assert names == ["name", "start", "end", "anchor", "sync_ops", "rewritable",
                     "first_blocker", "plan", "blocker_span", "blocker_spans", "blocker_codes",
                     "delta"]
    fn = FunctionInfo("@f", 0, 9, (1, 3), 2, True, None, None)
    assert vars(fn) == {"name": "@f", "start": 0, "end": 9, "anchor": (1, 3), "sync_ops": 2,
                        "rewritable": True, "first_blocker": None, "plan": None,
                        "blocker_span": None, "blocker_spans": (), "blocker_codes": (),
                        "delta": 0}
    with pytest.raises(dataclasses.FrozenInstanceError):
        fn.start = 1
    moved = dataclasses.replace(fn, start=5, delta=5)
    assert (moved.start, moved.delta, moved.anchor) == (5, 5, (1, 3))
    assert fn == FunctionInfo("@f", 0, 9, (1, 3), 2, True, None, "another plan")
    assert pickle.loads(pickle.dumps(fn)) == fn
