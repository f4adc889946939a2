-- gpu-async-lsp for Neovim 0.8+ without vim.lsp.config (which 0.11 added):
--
--   require('gpu_async_lsp').setup({
--     cmd = { 'gpu-async-lsp' },          -- or { '/path/to/venv/bin/python', '-m', 'gpu_async_lsp' }
--     strict = true,                      -- report blockers in every func.func
--     semantics = 'llvm22',               -- LLVM 22's pass, which accepts gpu.wait
--     thread_launch = true,               -- thread the token through inline gpu.launch
--     settings = { severity = { ['pre-existing-wait'] = 'warning' } },
--     codelens = true,                    -- false: no code lenses
--     inlay_hints = true,                 -- false: no inlay hints (they need 0.10+)
--     -- any other vim.lsp.start() config field (on_attach, capabilities, ...) is passed on
--   })
--
-- Each field is optional. The server gets only the settings given here: for the others the
-- repository's configuration file (gpu-async-lsp.toml, [tool.gpu-async-lsp] in
-- pyproject.toml) decides, else the server's defaults (strict off, semantics 'original',
-- thread_launch off).
--
-- Starts (or reuses) one client per project root for every buffer of filetype 'mlir'.
-- Works the same on 0.11+, where `vim.lsp.enable('gpu_async_lsp')` is the alternative.
local M = {}

local defaults = {
  name = 'gpu_async_lsp',
  cmd = { 'gpu-async-lsp' },
  filetypes = { 'mlir' },
  root_markers = { '.git' },
  settings = {},
}
-- Options of setup() itself, not passed on to vim.lsp.start().
local own = { strict = true, semantics = true, thread_launch = true, filetypes = true,
              root_markers = true,
              settings = true, codelens = true, inlay_hints = true }

local function supports(client, method, bufnr)
  if vim.fn.has('nvim-0.11') == 1 then
    return client:supports_method(method, bufnr)
  end
  return client.supports_method(method, { bufnr = bufnr })
end

local function keep_code_lenses_fresh(client, bufnr)
  if vim.lsp.codelens.enable then -- 0.12+: Neovim requests them again after each change
    vim.lsp.codelens.enable(true, { bufnr = bufnr })
    return
  end
  -- Before 0.12, as `:help vim.lsp.codelens.refresh()` suggests (TextChanged too, so that an
  -- undo or an applied lens updates the others at once).
  local group = vim.api.nvim_create_augroup('gpu_async_lsp.codelens', { clear = false })
  vim.api.nvim_clear_autocmds({ group = group, buffer = bufnr })
  local function refresh()
    vim.lsp.codelens.refresh({ bufnr = bufnr })
  end
  vim.api.nvim_create_autocmd({ 'BufEnter', 'CursorHold', 'InsertLeave', 'TextChanged' }, {
    group = group,
    buffer = bufnr,
    callback = refresh,
  })
  vim.api.nvim_create_autocmd('LspDetach', {
    group = group,
    buffer = bufnr,
    callback = function(args)
      if args.data and args.data.client_id == client.id then
        vim.api.nvim_clear_autocmds({ group = group, buffer = bufnr })
      end
    end,
  })
  refresh()
end

--- What a Neovim user expects of this server in `bufnr`, when the server offers it: code
--- lenses kept up to date (run one with vim.lsp.codelens.run()) and inlay hints shown (0.10+).
--- `opts.codelens = false` / `opts.inlay_hints = false` turn them off; unset fields come from
--- `vim.g.gpu_async_lsp` (a table with the same fields). Both configs call it from on_attach;
--- call it from your own on_attach if you replace theirs.
function M.on_attach(client, bufnr, opts)
  local global = vim.g.gpu_async_lsp
  opts = vim.tbl_extend('force', type(global) == 'table' and global or {}, opts or {})
  if opts.codelens ~= false and supports(client, 'textDocument/codeLens', bufnr) then
    keep_code_lenses_fresh(client, bufnr)
  end
  if opts.inlay_hints ~= false and vim.fn.has('nvim-0.10') == 1
      and supports(client, 'textDocument/inlayHint', bufnr) then
    vim.lsp.inlay_hint.enable(true, { bufnr = bufnr })
  end
end

local function root_dir(bufnr, markers)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local dir = name ~= '' and vim.fs.dirname(name) or (vim.uv or vim.loop).cwd()
  local found = vim.fs.find(markers, { path = dir, upward = true })[1]
  return found and vim.fs.dirname(found) or dir
end

--- The vim.lsp.start() config for a buffer (exposed for tests and custom autocommands).
function M.client_config(opts, bufnr)
  opts = vim.tbl_deep_extend('force', defaults, opts or {})
  -- setup{ strict = ..., semantics = ..., thread_launch = ... } win over the same fields in
  -- `settings`. Nothing else is added: a setting the server does not get is the repository
  -- configuration file's.
  local server_settings = vim.tbl_deep_extend('force', opts.settings or {},
                                              { strict = opts.strict, semantics = opts.semantics,
                                                threadLaunch = opts.thread_launch })
  local config = {}
  for k, v in pairs(opts) do
    if not own[k] then
      config[k] = v
    end
  end
  local user_on_attach = opts.on_attach
  config.on_attach = function(client, buf)
    M.on_attach(client, buf, { codelens = opts.codelens, inlay_hints = opts.inlay_hints })
    local callbacks = type(user_on_attach) == 'table' and user_on_attach or { user_on_attach }
    for _, callback in ipairs(callbacks) do
      callback(client, buf)
    end
  end
  config.root_dir = opts.root_dir or root_dir(bufnr, opts.root_markers)
  -- The server reads the same object from initializationOptions (before the first analysis)
  -- and from workspace/didChangeConfiguration (sent from `settings`). None given: neither is
  -- sent (an empty Lua table would go out as the JSON array [], not as an object).
  if next(server_settings) ~= nil then
    config.init_options = server_settings
    config.settings = { gpuAsyncLsp = server_settings }
  end
  return config
end

--- Start the server for every 'mlir' buffer, now and from now on. Calling it again replaces
--- the options (for buffers opened afterwards).
local told = false

--- Whether `cmd` can start: true, or false after one vim.notify saying why and what to do
--- (once a session: Neovim itself says nothing for vim.lsp.enable, or a raw spawn error).
function M.check_cmd(cmd)
  if type(cmd) ~= 'table' or type(cmd[1]) ~= 'string' or vim.fn.executable(cmd[1]) == 1 then
    return true -- a function cmd (an RPC client of its own) is the user's to check
  end
  if not told then
    told = true
    vim.notify(('gpu-async-lsp: cannot start the language server: `%s` is not an executable '
      .. '(not installed, or not on PATH). Install it (`pip install -e .` in a clone of '
      .. 'gpu-async-lsp, or `bash scripts/demo` there, then use .venv/bin/gpu-async-lsp) or '
      .. 'set `cmd` in your gpu_async_lsp config. See :help gpu_async_lsp.'):format(cmd[1]),
      vim.log.levels.ERROR)
  end
  return false
end

--- For vim.lsp.enable('gpu_async_lsp') (0.11+): check the resolved config's cmd when an
--- MLIR buffer opens (plugin/gpu_async_lsp.lua calls this).
function M.check_enabled_cmd()
  local lsp = vim.lsp
  if not lsp.config then
    return
  end
  local enabled
  if lsp.is_enabled then
    enabled = lsp.is_enabled('gpu_async_lsp')
  else
    enabled = lsp._enabled_configs ~= nil and lsp._enabled_configs['gpu_async_lsp'] ~= nil
  end
  if enabled then
    local config = lsp.config['gpu_async_lsp']
    M.check_cmd(config and config.cmd)
  end
end

function M.setup(opts)
  opts = opts or {}
  local filetypes = opts.filetypes or defaults.filetypes
  local group = vim.api.nvim_create_augroup('gpu_async_lsp', { clear = true })
  local function start(bufnr)
    if vim.bo[bufnr].buftype ~= '' then
      return
    end
    local config = M.client_config(opts, bufnr)
    if M.check_cmd(config.cmd) then
      vim.lsp.start(config, { bufnr = bufnr })
    end
  end
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = filetypes,
    callback = function(args)
      start(args.buf)
    end,
  })
  -- Buffers that already have the filetype (setup() called late, e.g. from a plugin manager).
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and vim.tbl_contains(filetypes, vim.bo[bufnr].filetype) then
      start(bufnr)
    end
  end
end

return M
