"""`gpu-async-lsp check` with suppression comments (`// gpu-async-lsp: ignore[...]`): hidden
findings are not reported and fail no run, and a hidden blocker still blocks `--fix`."""

from __future__ import annotations

import json

from gpu_async_lsp.async_region.findings import CODES
from tests.unit.test_cli import BLOCKED, SYNC, SYNC_FIXED, _sarif_validator, run, write

KEPT = BLOCKED.replace("  gpu.wait\n", "  gpu.wait  // gpu-async-lsp: ignore[pre-existing-wait]\n")
KEPT_ABOVE = BLOCKED.replace("  gpu.wait\n", "  // gpu-async-lsp: ignore\n  gpu.wait\n")


def test_check_only_error_suppressed_exit_0(tmp_path, capsys):
    for name, text in (("end.mlir", KEPT), ("above.mlir", KEPT_ABOVE)):
        f = write(tmp_path / name, text)
        code, out, err = run(["check", "--lowering", "none", str(f)], capsys)
        assert (code, out) == (0, ""), name
        assert "checked 1 file; no findings" in err


def test_check_suppression_of_another_code_keeps_the_error_exit_1(tmp_path, capsys):
    f = write(tmp_path / "other.mlir", BLOCKED.replace(
        "  gpu.wait\n", "  gpu.wait // gpu-async-lsp: ignore[already-async]\n"))
    code, out, _ = run(["check", "--lowering", "none", str(f)], capsys)
    assert code == 1
    assert out.splitlines()[0].endswith("[pre-existing-wait]")


def test_check_fix_original_leaves_function_with_suppressed_wait_unrewritten(tmp_path, capsys):
    """The comment hides the finding; the original pass still refuses the wait."""
    f = write(tmp_path / "kept.mlir", SYNC + KEPT)
    code, out, err = run(["check", "--lowering", "none", "--fix", str(f)], capsys)
    assert (code, out) == (0, "")
    assert f.read_text() == SYNC_FIXED + KEPT
    assert "rewrote 1 file" in err
    code, _, _ = run(["check", "--lowering", "none", "--fix", "--semantics", "llvm22", str(f)], capsys)
    assert code == 0
    assert "gpu.wait [%t1]  // gpu-async-lsp: ignore[pre-existing-wait]" in f.read_text()


def test_check_crlf_file_suppression_above_and_fix_keeps_crlf(tmp_path, capsys):
    original = (SYNC + KEPT_ABOVE).replace("\n", "\r\n").encode()
    f = write(tmp_path / "crlf.mlir", original)
    assert run(["check", "--lowering", "none", str(f)], capsys)[:2] == (0, f"{f}:1:11: hint: 1 GPU op in @f runs "
                                                     "synchronously [sync-gpu-ops]\n")
    code, out, _ = run(["check", "--lowering", "none", "--fix", str(f)], capsys)
    assert (code, out) == (0, "")
    assert f.read_bytes() == (SYNC_FIXED + KEPT_ABOVE).replace("\n", "\r\n").encode()


def test_check_unknown_code_is_a_warning_at_its_place_after_fix(tmp_path, capsys):
    """The warning of a misspelt code, in text and SARIF; with --fix at its line in the fixed
    text (two lines were inserted above it)."""
    misspelt = BLOCKED.replace("  gpu.wait\n",
                               "  gpu.wait // gpu-async-lsp: ignore[pre-existing-wiat]\n")
    f = write(tmp_path / "misspelt.mlir", SYNC + misspelt)
    code, out, _ = run(["check", "--lowering", "none", "--fix", str(f)], capsys)
    assert code == 1  # the wait it meant to hide is still an error
    lines = [line for line in out.splitlines() if ": note: " not in line]
    assert lines == [
        f"{f}:9:3: error: 'gpu.wait' op unexpected pre-existing gpu.wait [pre-existing-wait]",
        f"{f}:9:37: warning: unknown finding code 'pre-existing-wiat' in a suppression comment "
        "(known: pre-existing-wait, already-async, async-op-with-regions, launch-not-outlined, "
        "unsupported-form, sync-gpu-ops, not-lowered, stream-hazard) [invalid-suppression]"]
    code, out, _ = run(["check", "--lowering", "none", "--output-format", "sarif", str(f)], capsys)
    log = json.loads(out)
    assert not list(_sarif_validator().iter_errors(log))
    [warning] = [r for r in log["runs"][0]["results"] if r["ruleId"] == "invalid-suppression"]
    assert warning["ruleIndex"] == CODES.index("invalid-suppression")
    assert warning["level"] == "warning"


def test_check_stdin_fix_with_suppressed_wait_echoes_it_unchanged(capsys, monkeypatch):
    code, out, err = run(["check", "--lowering", "none", "--fix", "-"], capsys, monkeypatch, stdin=KEPT.encode())
    assert (code, out) == (0, KEPT)
    assert "no findings" in err
