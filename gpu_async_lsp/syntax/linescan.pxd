# The C declarations linescan.py uses in its Cython build (tools/compiled_build.py), beside its
# annotations (its C types): the GPU op's token is made by gpuscan's scan as a C call, and
# `chars.at` (chars.pxd, the name of linescan.py's import) reads a character from the
# string's buffer.
from gpu_async_lsp.syntax.gpuscan cimport gpu_line

cimport gpu_async_lsp.syntax.chars as chars
