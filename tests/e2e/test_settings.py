"""Settings `strict` and per-code `severity`, from initializationOptions and
workspace/didChangeConfiguration, directly or under "gpuAsyncLsp"; invalid settings: one
warning, defaults used."""

from __future__ import annotations

import asyncio

import pytest

from tests.e2e.lsp_session import diag_summary

pytestmark = pytest.mark.asyncio(loop_scope="session")

WAIT = "'gpu.wait' op unexpected pre-existing gpu.wait"

DOC = """\
func.func @only_a_wait() {
  gpu.wait
  return
}
func.func @g(%n: index) {
  %b = gpu.alloc (%n) : memref<?xf32>
  gpu.wait
  return
}
func.func @h(%n: index) {
  %c = gpu.alloc (%n) : memref<?xf32>
  return
}
"""
ONLY_A_WAIT = ("pre-existing-wait", 1, WAIT, (1, 2, 1, 10))
IN_G = ("pre-existing-wait", 1, WAIT, (6, 2, 6, 10))
HINT_H = ("sync-gpu-ops", 4, "1 GPU op in @h runs synchronously", (9, 10, 9, 12))
DEFAULT = sorted([IN_G, HINT_H])
STRICT = sorted([ONLY_A_WAIT, IN_G, HINT_H])


def summaries(diagnostics) -> list[tuple]:
    return sorted(diag_summary(d) for d in diagnostics)


def wrap(settings: dict, nested: bool) -> dict:
    return {"gpuAsyncLsp": settings} if nested else settings


async def republished(session, uri: str, expected: list[tuple], after: int):
    """Wait for a publication for `uri`, later than the first `after`, equal to `expected`."""
    def found():
        later = session.published_for(uri)[after:]
        return any(summaries(p.diagnostics) == expected for p in later)

    try:
        await session.wait_until(found, f"republished diagnostics {expected}", timeout=10)
    except AssertionError:
        got = [summaries(p.diagnostics) for p in session.published_for(uri)[after:]]
        raise AssertionError(f"expected a republication {expected}, got {got}") from None
    last = session.published_for(uri)[-1]
    assert last.version == session.versions[uri]


@pytest.mark.parametrize("nested", [False, True], ids=["direct", "gpuAsyncLsp"])
async def test_settings_strict_initialization_options_reports_every_function(start_server,
                                                                             uri, nested):
    session = await start_server("vscode", initialization_options=wrap({"strict": True}, nested),
                                 settings={"strict": True})
    assert summaries(await session.open_and_wait(uri, DOC)) == STRICT


async def test_settings_default_scope_reports_only_functions_with_work(start_server, uri):
    session = await start_server("neovim")
    assert summaries(await session.open_and_wait(uri, DOC)) == DEFAULT


@pytest.mark.parametrize("nested", [False, True], ids=["direct", "gpuAsyncLsp"])
async def test_settings_strict_did_change_configuration_republishes(start_server, uri, nested):
    session = await start_server("vscode")
    assert summaries(await session.open_and_wait(uri, DOC)) == DEFAULT
    n = len(session.published_for(uri))
    session.change_configuration({"strict": True}, nested=nested)
    await republished(session, uri, STRICT, n)
    n = len(session.published_for(uri))
    session.change_configuration({"strict": False}, nested=nested)
    await republished(session, uri, DEFAULT, n)


async def test_settings_the_same_again_change_nothing(start_server, uri):
    """VS Code sends the settings of initializationOptions again right after `initialized`, as
    it opens the first document: the same settings are no change (no analysis again, no
    refresh of the client's lenses and hints: a refresh at that moment left code-server
    without the document's first lenses). Changed settings still do both."""
    session = await start_server("vscode", initialization_options={"strict": True},
                                 settings={"strict": True})
    assert summaries(await session.open_and_wait(uri, DOC)) == STRICT
    n = len(session.published_for(uri))
    session.change_configuration({"strict": True})
    await session.round_trip()
    await asyncio.sleep(0.2)
    assert len(session.published_for(uri)) == n
    assert session.client.refreshes == []
    session.change_configuration({"strict": False})
    await republished(session, uri, DEFAULT, n)
    await session.wait_until(lambda: len(session.client.refreshes) == 2, "two refreshes")
    assert sorted(session.client.refreshes) == ["workspace/codeLens/refresh",
                                                "workspace/inlayHint/refresh"]


async def test_settings_did_change_configuration_republishes_every_open_document(start_server):
    session = await start_server("neovim")
    uris = [f"file:///e2e/settings/open{i}.mlir" for i in range(3)]
    for u in uris:
        assert summaries(await session.open_and_wait(u, DOC)) == DEFAULT
    counts = {u: len(session.published_for(u)) for u in uris}
    session.change_configuration({"strict": True})
    for u in uris:
        await republished(session, u, STRICT, counts[u])


async def test_settings_severity_override_initialization_options(start_server, uri):
    session = await start_server(
        "vscode",
        initialization_options={"gpuAsyncLsp": {"severity": {
            "pre-existing-wait": "warning", "sync-gpu-ops": "information"}}})
    got = summaries(await session.open_and_wait(uri, DOC))
    assert got == sorted([IN_G[:1] + (2,) + IN_G[2:], HINT_H[:1] + (3,) + HINT_H[2:]])


async def test_settings_severity_override_did_change_configuration(start_server, uri):
    session = await start_server("minimal")
    assert summaries(await session.open_and_wait(uri, DOC)) == DEFAULT
    n = len(session.published_for(uri))
    session.change_configuration({"severity": {"pre-existing-wait": "hint"}, "strict": True},
                                 nested=False)
    await republished(session, uri, sorted([
        ONLY_A_WAIT[:1] + (4,) + ONLY_A_WAIT[2:], IN_G[:1] + (4,) + IN_G[2:], HINT_H]), n)
    n = len(session.published_for(uri))
    session.change_configuration({"severity": {"sync-gpu-ops": "error"}})
    await republished(session, uri, sorted([IN_G, HINT_H[:1] + (1,) + HINT_H[2:]]), n)


INVALID = [
    {"strict": "yes"},
    {"severity": {"pre-existing-wait": "loud"}},
    {"gpuAsyncLsp": {"strict": "yes"}},
    {"gpuAsyncLsp": {"severity": {"pre-existing-wait": "loud"}}},
    {"gpuAsyncLsp": {"severity": "loud"}},
]
INVALID_IDS = ["strict_yes", "severity_loud", "nested_strict_yes", "nested_severity_loud",
               "nested_severity_not_a_map"]


@pytest.mark.parametrize("options", [INVALID[0], INVALID[1], INVALID[4]],
                         ids=[INVALID_IDS[0], INVALID_IDS[1], INVALID_IDS[4]])
async def test_settings_invalid_initialization_options_one_warning_defaults(start_server, uri,
                                                                             options):
    session = await start_server("vscode", initialization_options=options)
    assert summaries(await session.open_and_wait(uri, DOC)) == DEFAULT
    await session.round_trip()
    await asyncio.sleep(0.2)
    assert len(session.warnings) == 1, [m.message for m in session.client.messages]
    assert session.warnings[0].message


@pytest.mark.parametrize("settings, nested", [(INVALID[0], False), (INVALID[1], True)],
                         ids=["direct_strict_yes", "gpuAsyncLsp_severity_loud"])
async def test_settings_invalid_did_change_configuration_one_warning_defaults(
        start_server, uri, settings, nested):
    session = await start_server("vscode", initialization_options={"strict": True},
                                 settings={"strict": True})
    assert summaries(await session.open_and_wait(uri, DOC)) == STRICT
    assert session.warnings == []
    n = len(session.published_for(uri))
    session.change_configuration(settings, nested=nested)
    await republished(session, uri, DEFAULT, n)
    await session.round_trip()
    await asyncio.sleep(0.2)
    assert len(session.warnings) == 1, [m.message for m in session.client.messages]


async def test_settings_severity_override_quickfix_still_offered(start_server, uri):
    """The client sends back the hint as published, with its overridden severity: it is still
    recognised as the function's sync-gpu-ops diagnostic."""
    session = await start_server("vscode", initialization_options={
        "severity": {"sync-gpu-ops": "warning"}})
    diagnostics = await session.open_and_wait(uri, DOC)
    [hint] = [d for d in diagnostics if d.code == "sync-gpu-ops"]
    assert hint.severity == 2
    actions = await session.code_actions(uri, hint.range, [hint])
    quickfixes = [a for a in actions if a.kind == "quickfix"]
    assert [(a.title, a.is_preferred) for a in quickfixes] == [
        ("Make GPU ops in @h asynchronous", True)]
    assert [diag_summary(d) for d in quickfixes[0].diagnostics] == [diag_summary(hint)]


HINT_G = ("sync-gpu-ops", 4, "1 GPU op in @g runs synchronously", (4, 10, 4, 12))
LLVM22 = sorted([HINT_G, HINT_H])


@pytest.mark.parametrize("nested", [False, True], ids=["direct", "gpuAsyncLsp"])
async def test_settings_semantics_llvm22_threads_through_waits(start_server, uri, nested):
    """`semantics: llvm22`: the pre-existing gpu.wait in @g is no error, @g gets its rewrite
    hint, and the file-wide action gives `check --fix --semantics llvm22`'s text; back to
    `original` by didChangeConfiguration, the error is back."""
    from tests.e2e.lsp_session import check_fix

    session = await start_server("vscode", initialization_options=wrap(
        {"semantics": "llvm22"}, nested))
    assert summaries(await session.open_and_wait(uri, DOC)) == LLVM22
    actions = await session.code_actions(uri)
    [fix_all] = [a for a in actions if a.kind == "source.fixAll.gpuAsync"]
    fixed = session.applied(fix_all, uri)
    assert fixed == check_fix(DOC, "llvm22") and fixed != check_fix(DOC)
    n = len(session.published_for(uri))
    session.change_configuration({"semantics": "original"}, nested=nested)
    await republished(session, uri, DEFAULT, n)


async def test_settings_invalid_semantics_one_warning_original_used(start_server, uri):
    session = await start_server("vscode", initialization_options={"semantics": "llvm23"})
    assert summaries(await session.open_and_wait(uri, DOC)) == DEFAULT
    assert any("'semantics' must be one of original, llvm22, sync-only" in m.message
               for m in session.warnings)


LAUNCH_DOC = """\
func.func @k(%n: index) {
  %a = gpu.alloc (%n) : memref<?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %n, %gy = %n, %gz = %n)
             threads(%tx, %ty, %tz) in (%sx = %n, %sy = %n, %sz = %n) {
    gpu.terminator
  }
  return
}
"""


async def test_settings_thread_launch_threads_inline_launches(start_server, uri):
    """`threadLaunch: true`: no launch-not-outlined warning, both GPU ops counted, the
    file-wide action gives `check --fix --thread-launch`'s text; off again, the warning is
    back."""
    from tests.e2e.lsp_session import check_fix

    session = await start_server("neovim", initialization_options={"threadLaunch": True})
    diagnostics = await session.open_and_wait(uri, LAUNCH_DOC)
    assert [(d.code, d.message) for d in diagnostics] == [
        ("sync-gpu-ops", "2 GPU ops in @k run synchronously")]
    actions = await session.code_actions(uri)
    [fix_all] = [a for a in actions if a.kind == "source.fixAll.gpuAsync"]
    assert session.applied(fix_all, uri) == check_fix(LAUNCH_DOC, thread_launch=True)
    n = len(session.published_for(uri))
    session.change_configuration({"threadLaunch": False})
    await session.wait_until(
        lambda: any("launch-not-outlined" in {d.code for d in p.diagnostics}
                    for p in session.published_for(uri)[n:]), "the launch warning again", 10)


THREADED = ("func.func @f(%n: index) {\n  %t0 = gpu.wait async\n"
            "  %a, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>\n  gpu.wait [%t1]\n"
            "  return\n}\n"
            "func.func @g(%n: index) {\n  %b = gpu.alloc (%n) : memref<?xf32>\n  return\n}\n")


async def test_settings_waits_on_hints_off_keeps_only_the_rewrite_preview(start_server, uri):
    """waitsOnHints: false (initializationOptions, then back on through
    didChangeConfiguration): the hints explaining threaded code go, the preview stays."""
    from tests.e2e.test_features import hints

    session = await start_server(initialization_options={"waitsOnHints": False})
    await session.open_and_wait(uri, THREADED)
    preview = ["+ %t0 = gpu.wait async;", "async [%t0] → %t1", "+ gpu.wait [%t1];"]
    assert [h.label for h in await hints(session, uri)] == preview
    session.change_configuration({"waitsOnHints": True})

    async def labels():
        return [h.label for h in await hints(session, uri)]

    deadline = asyncio.get_running_loop().time() + 10
    while len(await labels()) == len(preview) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    assert await labels() == ["waits on %t0 (gpu.wait)", "waits on %t1 (gpu.alloc)", *preview]
    # Not a boolean: one warning naming it, and the default (on).
    session.change_configuration({"waitsOnHints": "no"})
    await session.round_trip()
    await session.wait_until(lambda: session.warnings, "a warning", timeout=10)
    assert len(session.warnings) == 1 and "waitsOnHints" in session.warnings[0].message
    assert len(await labels()) == 5
