-- gpu-async-lsp for Neovim 0.8+ without vim.lsp.config (which 0.11 added):
--
--   require('gpu_async_lsp').setup({
--     cmd = { 'gpu-async-lsp' },          -- or { '/path/to/venv/bin/python', '-m', 'gpu_async_lsp' }
--     strict = false,                     -- true: report blockers in every func.func
--     settings = { severity = { ['pre-existing-wait'] = 'warning' } },  -- optional
--     -- any other vim.lsp.start() config field (on_attach, capabilities, ...) is passed on
--   })
--
-- Starts (or reuses) one client per project root for every buffer of filetype 'mlir'.
-- Works the same on 0.11+, where `vim.lsp.enable('gpu_async_lsp')` is the alternative.
local M = {}

local defaults = {
  name = 'gpu_async_lsp',
  cmd = { 'gpu-async-lsp' },
  filetypes = { 'mlir' },
  root_markers = { '.git' },
  strict = false,
  settings = {},
}

local function root_dir(bufnr, markers)
  local name = vim.api.nvim_buf_get_name(bufnr)
  local dir = name ~= '' and vim.fs.dirname(name) or (vim.uv or vim.loop).cwd()
  local found = vim.fs.find(markers, { path = dir, upward = true })[1]
  return found and vim.fs.dirname(found) or dir
end

--- The vim.lsp.start() config for a buffer (exposed for tests and custom autocommands).
function M.client_config(opts, bufnr)
  opts = vim.tbl_deep_extend('force', defaults, opts or {})
  local server_settings = vim.tbl_deep_extend('force', opts.settings or {}, { strict = opts.strict })
  local config = {}
  for k, v in pairs(opts) do
    if k ~= 'strict' and k ~= 'filetypes' and k ~= 'root_markers' and k ~= 'settings' then
      config[k] = v
    end
  end
  config.root_dir = opts.root_dir or root_dir(bufnr, opts.root_markers)
  -- The server reads the same object from initializationOptions (before the first analysis)
  -- and from workspace/didChangeConfiguration (sent from `settings`).
  config.init_options = server_settings
  config.settings = { gpuAsyncLsp = server_settings }
  return config
end

--- Start the server for every 'mlir' buffer, now and from now on. Calling it again replaces
--- the options (for buffers opened afterwards).
function M.setup(opts)
  opts = opts or {}
  local filetypes = opts.filetypes or defaults.filetypes
  local group = vim.api.nvim_create_augroup('gpu_async_lsp', { clear = true })
  local function start(bufnr)
    if vim.bo[bufnr].buftype ~= '' then
      return
    end
    vim.lsp.start(M.client_config(opts, bufnr), { bufnr = bufnr })
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
