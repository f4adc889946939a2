# The C declarations linescan.py uses in its Cython build (tools/compiled_build.py), beside its
# annotations (its C types): the GPU op's token is made by gpuscan's scan as a C call.
from gpu_async_lsp.syntax.gpuscan cimport gpu_line
