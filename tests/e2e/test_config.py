"""The configuration file of an open document (`[tool.gpu-async-lsp]` in pyproject.toml, or
gpu-async-lsp.toml), found from the document's folder upwards; client settings over it; read
again when the client reports a change (workspace/didChangeWatchedFiles) or the document is
opened again; an invalid file: one warning, the defaults."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types

from tests.e2e.test_settings import DEFAULT, DOC, HINT_H, IN_G, STRICT, republished, summaries

pytestmark = pytest.mark.asyncio(loop_scope="session")

IGNORE_WAIT = '[tool.gpu-async-lsp]\nignore = ["pre-existing-wait"]\n'
WITHOUT_WAIT = [HINT_H]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def document(folder: Path, name: str = "doc.mlir") -> str:
    """The URI of a document in `folder` (written there too, as an editor's file is)."""
    return write(folder / name, DOC).as_uri()


def watched(session, *paths: Path, kind=types.FileChangeType.Changed) -> None:
    session.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(
        [types.FileEvent(uri=p.as_uri(), type=kind) for p in paths]))


async def test_config_pyproject_ignore_hides_the_code(start_server, tmp_path):
    write(tmp_path / "pyproject.toml", IGNORE_WAIT)
    session = await start_server("vscode")
    uri = document(tmp_path / "test" / "gpu")
    assert summaries(await session.open_and_wait(uri, DOC)) == WITHOUT_WAIT


async def test_config_pyproject_without_table_is_passed_over(start_server, tmp_path):
    write(tmp_path / "pyproject.toml", IGNORE_WAIT)
    write(tmp_path / "sub" / "pyproject.toml", '[project]\nname = "x"\n')
    session = await start_server("neovim")
    uri = document(tmp_path / "sub")
    assert summaries(await session.open_and_wait(uri, DOC)) == WITHOUT_WAIT


async def test_config_nested_gpu_async_lsp_toml_wins(start_server, tmp_path):
    """The nearest file decides alone (no merging): the nested file's strict mode, and the
    wait the outer file ignores reported again; beside a pyproject.toml, gpu-async-lsp.toml
    wins."""
    write(tmp_path / "pyproject.toml", IGNORE_WAIT)
    write(tmp_path / "strict" / "gpu-async-lsp.toml", "strict = true\n")
    write(tmp_path / "both" / "pyproject.toml", IGNORE_WAIT)
    write(tmp_path / "both" / "gpu-async-lsp.toml", 'select = ["sync-gpu-ops"]\n')
    session = await start_server("vscode")
    assert summaries(await session.open_and_wait(document(tmp_path / "strict"), DOC)) == STRICT
    assert summaries(await session.open_and_wait(document(tmp_path), DOC)) == WITHOUT_WAIT
    assert summaries(await session.open_and_wait(document(tmp_path / "both"), DOC)) == [HINT_H]


async def test_config_client_setting_overrides_the_file(start_server, tmp_path):
    """A setting the client gives wins over the file's; one it does not give leaves the
    file's value (strict here); severity merges code by code."""
    write(tmp_path / "pyproject.toml",
          '[tool.gpu-async-lsp]\nstrict = true\nignore = ["pre-existing-wait"]\n'
          'severity = {sync-gpu-ops = "warning"}\n')
    session = await start_server("vscode", initialization_options={
        "gpuAsyncLsp": {"ignore": [], "severity": {"pre-existing-wait": "warning"}}})
    got = summaries(await session.open_and_wait(document(tmp_path), DOC))
    warning = 2
    assert got == sorted(d[:1] + (warning,) + d[2:] for d in STRICT)
    uri = document(tmp_path, "other.mlir")
    n = len(session.published_for(uri))
    session.open(uri, DOC)
    session.change_configuration({"strict": False, "ignore": None})
    await republished(session, uri, [HINT_H[:1] + (warning,) + HINT_H[2:]], n)


async def test_config_setting_the_client_stops_sending_goes_back_to_the_file(start_server,
                                                                            tmp_path):
    """What the editors do when the user removes a setting: the next didChangeConfiguration
    leaves the key out (VS Code: an empty section; Neovim: no key), and the file's value
    applies again."""
    write(tmp_path / "gpu-async-lsp.toml", "strict = true\n")
    session = await start_server("vscode", initialization_options={"strict": False})
    uri = document(tmp_path)
    assert summaries(await session.open_and_wait(uri, DOC)) == DEFAULT
    n = len(session.published_for(uri))
    session.change_configuration({})  # {"gpuAsyncLsp": {}}
    await republished(session, uri, STRICT, n)
    n = len(session.published_for(uri))
    session.change_configuration({"strict": False})
    await republished(session, uri, DEFAULT, n)
    n = len(session.published_for(uri))
    session.change_configuration({}, nested=False)
    await republished(session, uri, STRICT, n)


async def test_config_change_reported_by_the_client_republishes(start_server, tmp_path):
    """The server registers a watcher for configuration files; a change it is told of is
    read, and the documents under it are analysed again."""
    config = write(tmp_path / "gpu-async-lsp.toml", 'ignore = ["pre-existing-wait"]\n')
    session = await start_server("vscode")
    uri = document(tmp_path)
    assert summaries(await session.open_and_wait(uri, DOC)) == WITHOUT_WAIT
    await session.wait_until(lambda: any(
        r.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
        for r in session.client.registrations), "a watcher registration", 10)
    n = len(session.published_for(uri))
    config.write_text('ignore = ["sync-gpu-ops"]\n')
    watched(session, config)
    await republished(session, uri, [IN_G], n)
    n = len(session.published_for(uri))
    config.unlink()
    watched(session, config, kind=types.FileChangeType.Deleted)
    await republished(session, uri, DEFAULT, n)


async def test_config_reopened_document_reads_the_changed_file(start_server, tmp_path):
    """A client that watches nothing: opening a document looks at its file again."""
    config = write(tmp_path / "gpu-async-lsp.toml", 'ignore = ["pre-existing-wait"]\n')
    session = await start_server("neovim")
    uri = document(tmp_path)
    assert summaries(await session.open_and_wait(uri, DOC)) == WITHOUT_WAIT
    session.close(uri)
    await session.wait_cleared(uri)
    config.write_text("strict = true\n")
    assert summaries(await session.open_and_wait(uri, DOC, version=2)) == STRICT


@pytest.mark.parametrize("text, says", [
    ('[tool.gpu-async-lsp]\nstrict = "yes"\n', "invalid 'strict' in [tool.gpu-async-lsp]"),
    ("[tool.gpu-async-lsp]\nignore = [\n", "invalid TOML"),
    ('[tool.gpu-async-lsp]\nselect = ["no-such-code"]\n', "unknown finding code 'no-such-code'"),
    ("[tool.gpu-async-lsp]\nthreadLaunch = true\n", "unknown key 'threadLaunch'"),
], ids=["wrong_type", "bad_toml", "unknown_code", "unknown_key"])
async def test_config_invalid_file_one_warning_defaults(start_server, tmp_path, text, says):
    config = write(tmp_path / "pyproject.toml", text)
    session = await start_server("vscode")
    first, second = document(tmp_path), document(tmp_path, "second.mlir")
    assert summaries(await session.open_and_wait(first, DOC)) == DEFAULT
    assert summaries(await session.open_and_wait(second, DOC)) == DEFAULT
    for _ in range(3):
        session.replace(first, 0, 0, " ")
    watched(session, config)
    await session.wait_diagnostics(first)
    await session.round_trip()
    await asyncio.sleep(0.2)
    assert len(session.warnings) == 1, [m.message for m in session.warnings]
    message = session.warnings[0].message
    assert f"{config}: error: " in message and says in message


async def test_config_uri_no_file_can_have_gets_the_defaults(start_server):
    session = await start_server("minimal")
    for uri in ["file:///e2e/config/a%00b/doc.mlir", "untitled:Untitled-1.mlir"]:
        assert summaries(await session.open_and_wait(uri, DOC)) == DEFAULT
    assert session.warnings == []


async def test_config_files_kept_only_for_open_documents(start_server, tmp_path):
    """A day of folders: the configuration files of the folders no document is open in any
    more are let go on close (gpuAsyncLsp/statistics' configFiles)."""
    from tests.e2e.test_long_session import statistics

    session = await start_server("vscode")
    kept = document(tmp_path / "kept")
    write(tmp_path / "kept" / "gpu-async-lsp.toml", "strict = true\n")
    assert summaries(await session.open_and_wait(kept, DOC)) == STRICT
    for i in range(12):
        folder = tmp_path / f"visited{i}"
        write(folder / "pyproject.toml", IGNORE_WAIT)
        uri = document(folder)
        assert summaries(await session.open_and_wait(uri, DOC)) == WITHOUT_WAIT
        session.close(uri)
    # (the close is a notification: statistics, a request after it, is answered after it)
    stats = await statistics(session)
    assert stats["documents"] == 1 and stats["configFiles"] == 1
    session.close(kept)
    assert (await statistics(session))["configFiles"] == 0
