"""How `check` reports (gpu_async_lsp/report.py): the fixes in JSON and SARIF, --statistics,
--show-fixes, --quiet, --exit-zero, --color, and --fix with --diff. Commands run in-process
through `main`, as in test_cli.py."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from gpu_async_lsp import report
from gpu_async_lsp.async_region.findings import RULE
from gpu_async_lsp.cli import main
from tests.unit.test_cli import (
    BLOCKED,
    CLEAN,
    EXAMPLES,
    SYNC,
    SYNC_FIXED,
    SYNTAX_ERROR,
    TEXT_LINE,
    _sarif_validator,
    _Tty,
    run,
    write,
)

# Two functions the rewrite changes, and one it cannot.
TWO = SYNC + SYNC.replace("@f", "@h") + BLOCKED


def _offset(text: str, line: int, column: int) -> int:
    """1-based line and column (code points) -> offset; lines end at \\r\\n, \\r or \\n."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    return starts[line - 1] + column - 1


def _apply(text: str, edits: list[tuple[int, int, int, int, str]]) -> str:
    """Apply (line, col, end_line, end_col, new_text) edits, all on the original text."""
    spans = [(_offset(text, a, b), _offset(text, c, d), new) for a, b, c, d, new in edits]
    # Last first; insertions at one offset keep their order (the first ends up first).
    for start, end, new in reversed(sorted(spans, key=lambda s: s[:2])):
        text = text[:start] + new + text[end:]
    return text


def _fixed_by_check(tmp_path: Path, text: str, capsys) -> str:
    f = write(tmp_path / "fixed" / "x.mlir", text)
    run(["check", "--fix", str(f)], capsys)
    return f.read_bytes().decode()


# -- fixes in JSON and SARIF -------------------------------------------------------------------

@pytest.mark.parametrize("name, text", [
    ("two functions and a blocked one", TWO),
    ("CRLF", TWO.replace("\n", "\r\n")),
    ("examples/matmul.mlir", (EXAMPLES / "matmul.mlir").read_text()),
])
def test_report_json_fixes_applied_give_what_check_fix_writes(tmp_path, capsys, name, text):
    f = write(tmp_path / "x.mlir", text)
    _, out, _ = run(["check", "--output-format", "json", str(f)], capsys)
    items = json.loads(out)
    fixable = [i for i in items if i["fix_available"]]
    assert fixable and {i["code"] for i in fixable} <= {"sync-gpu-ops", "not-lowered"}
    assert all(i["fix"] is None for i in items if not i["fix_available"])
    # A function's fix is that of each of its findings it removes: applied once.
    fixes = {i["fix"]["message"]: i["fix"] for i in fixable}
    edits = [(e["location"]["line"], e["location"]["column"], e["end_location"]["line"],
              e["end_location"]["column"], e["content"])
             for fix in fixes.values() for e in fix["edits"]]
    assert _apply(text, edits) == _fixed_by_check(tmp_path, text, capsys)


def test_report_json_one_fix_per_function_says_which(tmp_path, capsys):
    f = write(tmp_path / "x.mlir", TWO)
    _, out, _ = run(["check", "--output-format", "json", str(f)], capsys)
    fixes = {i["message"]: i["fix"] for i in json.loads(out) if i["fix_available"]}
    assert sorted({fix["message"] for fix in fixes.values()}) == [
        "Make GPU ops in @f asynchronous", "Make GPU ops in @h asynchronous"]
    one = _apply(TWO, [(e["location"]["line"], e["location"]["column"],
                        e["end_location"]["line"], e["end_location"]["column"], e["content"])
                       for e in fixes["1 GPU op in @f runs synchronously"]["edits"]])
    assert one == SYNC_FIXED + SYNC.replace("@f", "@h") + BLOCKED


def test_report_json_after_fix_has_nothing_left_to_fix(tmp_path, capsys):
    f = write(tmp_path / "x.mlir", TWO)
    _, out, _ = run(["check", "--lowering", "none", "--fix", "--output-format", "json", str(f)], capsys)
    items = json.loads(out)
    assert [i["code"] for i in items] == ["pre-existing-wait"]
    assert items[0]["fix_available"] is False
    assert len(items[0]["related"]) == 1


def test_report_json_syntax_error_file_offers_no_fix(tmp_path, capsys):
    f = write(tmp_path / "x.mlir", SYNTAX_ERROR)
    _, out, _ = run(["check", "--lowering", "none", "--output-format", "json", str(f)], capsys)
    items = json.loads(out)
    assert {i["code"] for i in items} == {"syntax", "sync-gpu-ops"}
    assert not any(i["fix_available"] for i in items)


def test_report_sarif_fixes_validate_and_give_what_check_fix_writes(tmp_path, capsys):
    validator = _sarif_validator()
    text = TWO.replace("\n", "\r\n")
    f = write(tmp_path / "x.mlir", text)
    _, out, _ = run(["check", "--output-format", "sarif", str(f)], capsys)
    log = json.loads(out)
    errors = list(validator.iter_errors(log))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)
    results = log["runs"][0]["results"]
    with_fixes = [r for r in results if "fixes" in r]
    assert [r["ruleId"] for r in with_fixes if r["ruleId"] == "sync-gpu-ops"] == [
        "sync-gpu-ops", "sync-gpu-ops"]
    assert {r["ruleId"] for r in with_fixes} <= {"sync-gpu-ops", "not-lowered"}
    edits, seen = [], set()
    for r in with_fixes:
        (fix,) = r["fixes"]
        assert fix["description"]["text"].startswith("Make GPU ops in @")
        if fix["description"]["text"] in seen:
            continue  # a function's fix, also that of its not-lowered findings: once
        seen.add(fix["description"]["text"])
        (change,) = fix["artifactChanges"]
        assert change["artifactLocation"]["uri"] == r["locations"][0]["physicalLocation"][
            "artifactLocation"]["uri"]
        for rep in change["replacements"]:
            region = rep["deletedRegion"]
            edits.append((region["startLine"], region["startColumn"], region["endLine"],
                          region["endColumn"], rep.get("insertedContent", {}).get("text", "")))
    assert _apply(text, edits) == _fixed_by_check(tmp_path, text, capsys)


def test_report_sarif_rules_carry_help_uri_to_the_codes_page(tmp_path, capsys):
    f = write(tmp_path / "x.mlir", BLOCKED)
    _, out, _ = run(["check", "--output-format", "sarif", str(f)], capsys)
    rules = json.loads(out)["runs"][0]["tool"]["driver"]["rules"]
    page = Path(__file__).resolve().parents[2] / "docs" / "codes.md"
    for rule in rules:
        assert rule["helpUri"] == f"{page.as_uri()}#{rule['id']}"
        assert rule["help"]["markdown"].startswith(RULE[rule["id"]].summary)


# -- --exit-zero -------------------------------------------------------------------------------

def test_report_exit_zero_with_errors_left_exits_0_and_still_reports(tmp_path, capsys):
    f = write(tmp_path / "blocked.mlir", BLOCKED)
    code, out, err = run(["check", "--exit-zero", str(f)], capsys)
    assert code == 0
    assert "[pre-existing-wait]" in out
    assert "1 error" in err


def test_report_exit_zero_with_a_diff_exits_0(tmp_path, capsys):
    f = write(tmp_path / "sync.mlir", SYNC)
    code, out, _ = run(["check", "--diff", "--exit-zero", str(f)], capsys)
    assert code == 0
    assert out.startswith("--- a/")


def test_report_exit_zero_keeps_exit_2_for_io_errors(tmp_path, capsys):
    code, _, err = run(["check", "--exit-zero", str(tmp_path / "missing.mlir")], capsys)
    assert code == 2
    assert "No such file or directory" in err


# -- --quiet -----------------------------------------------------------------------------------

def test_report_quiet_prints_the_same_findings_and_no_summary(tmp_path, capsys):
    f = write(tmp_path / "blocked.mlir", BLOCKED)
    loud = run(["check", str(f)], capsys)
    code, out, err = run(["check", "-q", str(f)], capsys)
    assert (code, out) == loud[:2]
    assert out and all(TEXT_LINE.match(line) for line in out.splitlines())
    assert err == ""
    assert run(["check", "--quiet", str(f)], capsys) == (code, out, err)


def test_report_quiet_leaves_out_notes_and_progress(tmp_path, capsys, monkeypatch):
    (tmp_path / "empty").mkdir()
    assert run(["check", "-q", str(tmp_path / "empty")], capsys) == (0, "", "")
    for i in range(10):
        write(tmp_path / "many" / f"f{i}.mlir", CLEAN)
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["check", "-q", "-j", "1", str(tmp_path / "many")]) == 0
    assert tty.getvalue() == ""


def test_report_quiet_still_prints_io_errors(tmp_path, capsys):
    code, _, err = run(["check", "-q", str(tmp_path / "missing.mlir")], capsys)
    assert code == 2
    assert err == f"{tmp_path / 'missing.mlir'}: error: No such file or directory\n"


# -- --statistics ------------------------------------------------------------------------------

def test_report_statistics_text_counts_per_code_most_frequent_first(tmp_path, capsys):
    write(tmp_path / "a.mlir", SYNC)
    write(tmp_path / "b.mlir", SYNC)
    write(tmp_path / "c.mlir", BLOCKED)
    code, out, err = run(["check", "--lowering", "none", "--statistics", str(tmp_path)], capsys)
    assert code == 1
    assert out.splitlines() == [
        f"2\tsync-gpu-ops     \t[*] {RULE['sync-gpu-ops'].summary}",
        f"1\tpre-existing-wait\t[ ] {RULE['pre-existing-wait'].summary}",
    ]
    assert "checked 3 files; 1 error, 2 hints" in err


def test_report_statistics_without_a_fixable_code_has_no_marks(tmp_path, capsys):
    f = write(tmp_path / "c.mlir", BLOCKED + BLOCKED.replace("@g", "@g2"))
    _, out, _ = run(["check", "--lowering", "none", "--statistics", str(f)], capsys)
    assert out == f"2\tpre-existing-wait\t{RULE['pre-existing-wait'].summary}\n"


def test_report_statistics_json_lists_code_summary_count_fixable(tmp_path, capsys):
    f = write(tmp_path / "x.mlir", TWO)
    code, out, _ = run(["check", "--lowering", "none", "--statistics", "--output-format", "json", str(f)], capsys)
    assert code == 1
    assert json.loads(out) == [
        {"code": "sync-gpu-ops", "summary": RULE["sync-gpu-ops"].summary, "count": 2,
         "fixable": True},
        {"code": "pre-existing-wait", "summary": RULE["pre-existing-wait"].summary,
         "count": 1, "fixable": False},
    ]


def test_report_statistics_after_fix_count_what_remains(tmp_path, capsys):
    f = write(tmp_path / "x.mlir", TWO)
    _, out, _ = run(["check", "--lowering", "none", "--fix", "--statistics", str(f)], capsys)
    assert out == f"1\tpre-existing-wait\t{RULE['pre-existing-wait'].summary}\n"


def test_report_statistics_no_findings_prints_nothing_or_empty_list(tmp_path, capsys):
    f = write(tmp_path / "clean.mlir", CLEAN)
    assert run(["check", "--statistics", str(f)], capsys)[:2] == (0, "")
    _, out, _ = run(["check", "--statistics", "--output-format", "json", str(f)], capsys)
    assert json.loads(out) == []


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_report_statistics_in_sarif_or_github_is_a_usage_error_exit_2(tmp_path, capsys, fmt):
    f = write(tmp_path / "x.mlir", SYNC)
    code, out, err = run(["check", "--statistics", "--output-format", fmt, str(f)], capsys)
    assert (code, out) == (2, "")
    assert err == "gpu-async-lsp check: error: --statistics needs --output-format text or json\n"


# -- --show-fixes ------------------------------------------------------------------------------

def test_report_show_fixes_lists_what_fix_would_rewrite(tmp_path, capsys):
    f = write(tmp_path / "x.mlir", TWO)
    code, _, err = run(["check", "--show-fixes", str(f)], capsys)
    assert code == 1
    assert f.read_text() == TWO
    lines = err.splitlines()
    start = lines.index("would rewrite 2 functions in 1 file:")
    assert lines[start + 1:start + 3] == [f"  {f}:1: @f", f"  {f}:5: @h"]


def test_report_show_fixes_with_fix_gives_lines_of_the_rewritten_file(tmp_path, capsys):
    f = write(tmp_path / "x.mlir", TWO)
    g = write(tmp_path / "y.mlir", SYNC)
    write(tmp_path / "z.mlir", BLOCKED)
    _, _, err = run(["check", "--fix", "--show-fixes", str(tmp_path)], capsys)
    assert "rewrote 3 functions in 2 files:" in err
    listed = re.findall(r"^  (.+):(\d+): (@\w+)$", err, re.M)
    assert listed == [(str(f), "1", "@f"), (str(f), "7", "@h"), (str(g), "1", "@f")]
    for path, line, name in listed:
        assert Path(path).read_text().splitlines()[int(line) - 1].startswith(
            f"func.func {name}(")


def test_report_show_fixes_with_diff_says_would_rewrite(tmp_path, capsys):
    f = write(tmp_path / "x.mlir", SYNC)
    _, out, err = run(["check", "--diff", "--show-fixes", str(f)], capsys)
    assert out.startswith("--- a/")
    assert f"would rewrite 1 function in 1 file:\n  {f}:1: @f\n" in err


def test_report_show_fixes_prints_even_when_quiet(tmp_path, capsys):
    f = write(tmp_path / "x.mlir", SYNC)
    _, out, err = run(["check", "-q", "--show-fixes", str(f)], capsys)
    assert "[sync-gpu-ops]" in out
    assert err == f"would rewrite 1 function in 1 file:\n  {f}:1: @f\n"


def test_report_show_fixes_nothing_to_rewrite_lists_nothing(tmp_path, capsys):
    write(tmp_path / "blocked.mlir", BLOCKED)
    write(tmp_path / "syntax.mlir", SYNTAX_ERROR)
    _, _, err = run(["check", "-q", "--show-fixes", str(tmp_path)], capsys)
    assert err == ""


def test_report_show_fixes_stdin_fix_names_the_buffer(capsys, monkeypatch):
    _, out, err = run(["check", "--fix", "--show-fixes", "--stdin-filename", "s.mlir"],
                      capsys, monkeypatch, stdin=TWO.encode())
    assert out.splitlines()[6] == "func.func @h(%m: memref<4xf32>) {"
    assert "rewrote 2 functions in 1 file:\n  s.mlir:1: @f\n  s.mlir:7: @h\n" in err


# -- --fix with --diff: as ruff, the diff is shown and nothing is written ----------------------

def test_report_fix_with_diff_on_stdin_prints_only_the_diff(capsys, monkeypatch):
    code, out, err = run(["check", "--fix", "--diff", "-"], capsys, monkeypatch,
                         stdin=SYNC.encode())
    assert code == 1
    assert out.startswith("--- a/-\n+++ b/-\n")
    assert SYNC_FIXED not in out
    assert "would rewrite 1 file" in err


# -- --color -----------------------------------------------------------------------------------

class _Pipe:
    def isatty(self):
        return False


@pytest.mark.parametrize("choice, environ, tty, expected", [
    ("never", {"FORCE_COLOR": "1"}, True, False),
    ("always", {"NO_COLOR": "1"}, False, True),
    ("auto", {}, True, True),
    ("auto", {}, False, False),
    ("auto", {"NO_COLOR": "1"}, True, False),
    ("auto", {"NO_COLOR": ""}, True, True),  # no-color.org: only a non-empty value counts
    ("auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"}, True, False),
    ("auto", {"FORCE_COLOR": "1"}, False, True),
    ("auto", {"TERM": "dumb"}, True, False),
])
def test_use_color_follows_choice_then_environment_then_terminal(choice, environ, tty,
                                                                  expected):
    assert report.use_color(choice, _Tty() if tty else _Pipe(), environ) is expected


def test_report_color_always_colors_path_severity_code_and_notes(tmp_path, capsys):
    f = write(tmp_path / "blocked.mlir", BLOCKED)
    _, out, _ = run(["check", "--lowering", "none", "--color", "always", str(f)], capsys)
    first, note = out.splitlines()
    assert first == (f"\x1b[1m{f}\x1b[0m:3:3: \x1b[1;31merror\x1b[0m: 'gpu.wait' op unexpected "
                     "pre-existing gpu.wait [\x1b[35mpre-existing-wait\x1b[0m]")
    assert note.startswith(f"\x1b[1m{f}\x1b[0m:2:3: \x1b[1mnote\x1b[0m: ")
    plain = re.sub(r"\x1b\[[0-9;]*m", "", out)
    assert plain == run(["check", "--lowering", "none", "--color", "never", str(f)], capsys)[1]


def test_report_color_auto_is_off_when_output_is_not_a_terminal(tmp_path, capsys):
    f = write(tmp_path / "blocked.mlir", BLOCKED)
    _, out, _ = run(["check", str(f)], capsys)
    assert "\x1b" not in out


def test_report_color_auto_on_a_terminal_unless_no_color(tmp_path, monkeypatch):
    f = write(tmp_path / "blocked.mlir", BLOCKED)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    tty = _Tty()
    monkeypatch.setattr(sys, "stdout", tty)
    main(["check", str(f)])
    assert "\x1b[1;31merror\x1b[0m" in tty.getvalue()
    monkeypatch.setenv("NO_COLOR", "1")
    tty = _Tty()
    monkeypatch.setattr(sys, "stdout", tty)
    main(["check", str(f)])
    assert "\x1b" not in tty.getvalue() and "error" in tty.getvalue()


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_report_color_always_never_colors_machine_formats(tmp_path, capsys, fmt):
    f = write(tmp_path / "blocked.mlir", BLOCKED)
    _, out, _ = run(["check", "--color", "always", "--output-format", fmt, str(f)], capsys)
    assert out and "\x1b" not in out


def test_report_color_always_colors_statistics(tmp_path, capsys):
    f = write(tmp_path / "x.mlir", TWO)
    _, out, _ = run(["check", "--lowering", "none", "--statistics", "--color", "always", str(f)], capsys)
    assert out.splitlines()[0] == (f"\x1b[1m2\x1b[0m\t\x1b[35msync-gpu-ops     \x1b[0m\t"
                                   f"[\x1b[36m*\x1b[0m] {RULE['sync-gpu-ops'].summary}")


def test_report_color_invalid_choice_is_a_usage_error_exit_2(capsys):
    code, _, err = run(["check", "--color", "sometimes"], capsys)
    assert code == 2
    assert "invalid choice: 'sometimes'" in err


def test_report_show_fixes_lines_with_crlf_and_non_ascii(tmp_path, capsys):
    """The lines of rewritten functions are counted in the fixed text, CRLF and non-ASCII
    text before them included."""
    text = "// “é” 𝔸\r\n\r\n" + TWO.replace("\n", "\r\n")
    f = write(tmp_path / "x.mlir", text)
    _, _, err = run(["check", "--fix", "--show-fixes", str(f)], capsys)
    listed = re.findall(r"^  (.+):(\d+): (@\w+)$", err, re.M)
    assert [name for _, _, name in listed] == ["@f", "@h"]
    lines = Path(f).read_text(encoding="utf-8").splitlines()
    for _, line, name in listed:
        assert lines[int(line) - 1].startswith(f"func.func {name}(")
