-- With vim.lsp.enable('gpu_async_lsp') (Neovim 0.11+), a server command that is not an
-- executable is skipped without a word: say so once, when an MLIR buffer opens.
if vim.g.loaded_gpu_async_lsp then
  return
end
vim.g.loaded_gpu_async_lsp = true
vim.api.nvim_create_autocmd('FileType', {
  group = vim.api.nvim_create_augroup('gpu_async_lsp_check', { clear = true }),
  pattern = 'mlir',
  callback = function()
    require('gpu_async_lsp').check_enabled_cmd()
  end,
})
