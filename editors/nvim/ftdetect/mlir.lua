-- *.mlir is MLIR. Neovim's own filetype detection already says so in recent versions; this
-- makes older ones (0.8+) agree and is a no-op otherwise.
if vim.filetype and vim.filetype.add then
  vim.filetype.add({ extension = { mlir = 'mlir' } })
else
  vim.cmd([[autocmd BufRead,BufNewFile *.mlir setfiletype mlir]])
end
