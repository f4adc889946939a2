"""`not-lowered` over LSP: with the server's default settings (`lowering` llvm22) every golden
fixture's diagnostics are the findings `check` reports, not-lowered ones included; the
setting `lowering: none` turns them off at once."""

from __future__ import annotations

import pytest

from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.lowering import LLVM22_LOWERING
from gpu_async_lsp.async_region.suppression import suppress
from tests.e2e.conftest import fixture_names, fixture_text
from tests.e2e.lsp_session import diag_summary, position

pytestmark = pytest.mark.asyncio(loop_scope="session")


def _pos(text: str, offset: int, encoding: str) -> tuple[int, int]:
    p = position(text, offset, encoding)
    return (p.line, p.character)


async def test_lowering_default_publishes_what_check_reports_on_every_fixture(start_server):
    session = await start_server("vscode", lowering=None)  # the server's own default
    seen = 0
    mismatches = []
    for name in fixture_names():
        text = fixture_text(name)
        diagnostics = await session.open_and_wait(f"file:///e2e/lowering/{name}", text)
        enc = session.encoding
        expected = sorted(
            (f.code, int(f.severity), f.message, _pos(text, f.start, enc) + _pos(text, f.end, enc))
            for f in suppress(text, analyze(text, lowering=LLVM22_LOWERING).findings))
        got = sorted(diag_summary(d) for d in diagnostics)
        if expected != got:
            mismatches.append((name, expected, got))
        seen += sum(1 for d in diagnostics if d.code == F.NOT_LOWERED)
    assert not mismatches, mismatches[0]
    assert seen > 20  # the fixtures' synchronous ops, and not_lowered.mlir's


async def test_lowering_none_setting_turns_the_findings_off(start_server):
    session = await start_server("vscode", lowering=None)
    uri = "file:///e2e/lowering/setting.mlir"
    text = ("func.func @f(%m: memref<4xf32>) {\n"
            "  gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32>\n  return\n}\n")
    diagnostics = await session.open_and_wait(uri, text)
    assert sorted(d.code for d in diagnostics) == [F.NOT_LOWERED, F.SYNC_GPU_OPS]
    n = len(session.published_for(uri))
    session.change_configuration({"lowering": "none"})

    def republished():
        later = session.published_for(uri)[n:]
        return any([d.code for d in p.diagnostics] == [F.SYNC_GPU_OPS] for p in later)

    await session.wait_until(republished, "diagnostics without not-lowered", timeout=10)


TWO_DEPENDENCIES = ("func.func @joined(%a: !gpu.async.token, %b: !gpu.async.token, "
                    "%m: memref<4xf32>) {\n"
                    "  %t = gpu.memcpy async [%a, %b] %m, %m : memref<4xf32>, memref<4xf32>\n"
                    "  gpu.wait [%t]\n"
                    "  return\n}\n"
                    "func.func @sync(%m: memref<4xf32>) {\n"
                    "  gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32>\n  return\n}\n")


async def test_lowering_quick_fix_of_a_function_the_rewrite_leaves_alone(start_server):
    """`@joined` has nothing to rewrite; its not-lowered finding's quick fix joins the two
    dependencies, as `check --fix` does; the file-wide fix is `check --fix`'s text."""
    session = await start_server("vscode", lowering=None)
    uri = "file:///e2e/lowering/joined.mlir"
    diagnostics = await session.open_and_wait(uri, TWO_DEPENDENCIES)
    joined = [d for d in diagnostics if d.code == F.NOT_LOWERED and d.range.start.line == 1]
    actions = await session.code_actions(uri, rng=joined[0].range, diagnostics=joined)
    [fix] = [a for a in actions if a.title == "Make GPU ops in @joined lower with LLVM 22"]
    assert fix.kind == "quickfix" and [d.code for d in fix.diagnostics] == [F.NOT_LOWERED]
    fixed = session.applied(fix, uri)
    assert "  %t0 = gpu.wait async [%a, %b]\n  %t = gpu.memcpy async [%t0] %m, %m" in fixed
    whole = _check_fix(TWO_DEPENDENCIES)
    sync = TWO_DEPENDENCIES.index("func.func @sync")
    # That function as `check --fix` leaves it, the other one as written.
    assert fixed == whole[:whole.index("func.func @sync")] + TWO_DEPENDENCIES[sync:]
    actions = await session.code_actions(uri)
    [fix_all] = [a for a in actions if a.kind == "source.fixAll.gpuAsync"]
    assert session.applied(fix_all, uri) == _check_fix(TWO_DEPENDENCIES)


def _check_fix(text: str) -> str:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "gpu_async_lsp", "check", "--fix", "-"],
                          input=text.encode(), capture_output=True, timeout=120, check=False)
    return proc.stdout.decode()
