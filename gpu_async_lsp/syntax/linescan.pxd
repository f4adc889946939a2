# The C declarations linescan.py uses in its Cython build (tools/compiled_build.py), beside its
# annotations (its C types): the GPU op's token is made by gpuscan's scan as a C call, and
# `chars.at` (chars.pxd, the name of linescan.py's import) reads a character from the
# string's buffer.
from gpu_async_lsp.syntax.gpuscan cimport gpu_line

cimport gpu_async_lsp.syntax.chars as chars

# The line scan and the loop of the tokenizer over plain lines (`plain_lines`) are C calls
# inside the module: one call, not one from the tokenizer's loop, per line.
cpdef line_spans(str text, Py_ssize_t pos, Py_ssize_t end, op_words=*, whole_ops=*,
                 token_class=*, gpu_class=*)
cpdef tuple plain_lines(str text, Py_ssize_t pos, Py_ssize_t end, list out, op_words,
                        whole_ops, token_class, gpu_class, raw_class)
cpdef Py_ssize_t close_line(str text, Py_ssize_t pos, Py_ssize_t end) except? -2
# The blank and comment-only lines both line scans skip: a C function of the module.
cdef Py_ssize_t _line_content(int kind, void *data, Py_ssize_t pos, Py_ssize_t end) noexcept
