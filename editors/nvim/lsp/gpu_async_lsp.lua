-- gpu-async-lsp for Neovim 0.11+: put editors/nvim on 'runtimepath', then
--
--   vim.lsp.enable('gpu_async_lsp')
--
-- Override any field with vim.lsp.config (merged into this table), e.g. a server installed in a
-- virtual environment that is not on $PATH:
--
--   vim.lsp.config('gpu_async_lsp', { cmd = { '/path/to/venv/bin/gpu-async-lsp' } })
--   -- or: cmd = { '/path/to/venv/bin/python', '-m', 'gpu_async_lsp' }
--
-- and strict mode (report blockers in every func.func, as the pass would fail):
--
--   vim.lsp.config('gpu_async_lsp', { settings = { gpuAsyncLsp = { strict = true } } })
--
-- and which pass the diagnostics and the rewrite follow: 'original' (the default) or 'llvm22',
-- LLVM 22's, which threads the token through a pre-existing gpu.wait instead of refusing it:
--
--   vim.lsp.config('gpu_async_lsp', { settings = { gpuAsyncLsp = { semantics = 'llvm22' } } })
--
-- The server gets only the settings given that way; for the others the repository's
-- configuration file (gpu-async-lsp.toml, [tool.gpu-async-lsp] in pyproject.toml) decides,
-- else the server's defaults.
--
-- Code lenses and inlay hints are turned on in each buffer the server attaches to; to keep
-- either off, set before the first .mlir buffer opens:
--
--   vim.g.gpu_async_lsp = { codelens = false, inlay_hints = false }
--
-- (An on_attach of your own given to vim.lsp.config replaces the one below: call
-- require('gpu_async_lsp').on_attach(client, bufnr) from it to keep them.)
---@type vim.lsp.Config
return {
  cmd = { 'gpu-async-lsp' },
  filetypes = { 'mlir' },
  root_markers = { '.git' },
  -- No `settings` of its own: the user's (under "gpuAsyncLsp") go to the server as
  -- initializationOptions (below) and with workspace/didChangeConfiguration after start-up.
  -- A default sent here would win over the repository's configuration file.
  --
  -- One source of truth: initializationOptions are built from `settings`, so the first analysis
  -- already uses the user's values (no flash of non-strict results). None given: none sent (an
  -- empty Lua table would go out as the JSON array [], not as an object).
  before_init = function(params, config)
    local s = config.settings and config.settings.gpuAsyncLsp
    if type(s) == 'table' and next(s) ~= nil then
      params.initializationOptions =
        vim.tbl_deep_extend('force', params.initializationOptions or {}, s)
    end
  end,
  -- Code lenses kept fresh and inlay hints on (lua/gpu_async_lsp/init.lua, same directory).
  on_attach = function(client, bufnr)
    require('gpu_async_lsp').on_attach(client, bufnr)
  end,
}
