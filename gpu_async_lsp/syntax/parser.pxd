# The C types of parser.py in its Cython build (tools/compiled_build.py): an augmenting .pxd,
# so that the .py stays plain Python. The top-down reader of plain units keeps its place in the
# token list as C integers and calls its rules as C methods (one or more per op). The op of a
# whole line is made as the extension type it is (ir.pxd): its fields set as C fields.
cimport cython

cimport gpu_async_lsp.syntax.fields as tf
from gpu_async_lsp.syntax.ir cimport Op

cdef class _PlainParser:
    cdef public list tokens
    cdef public Py_ssize_t n
    cdef public Py_ssize_t at

    cpdef start(self)
    cpdef ops_until(self, list items, str stop, int depth)
    cpdef bint take(self, str kind, list into) except -1
    cpdef expect(self, str kind, list into)
    cpdef op(self, int depth)
    cpdef region(self, int depth)

# The offsets stay Python ints: the op keeps the token's own (typed, each would be boxed anew).
@cython.locals(op=Op)
cpdef Op _line_op(str src, t, str name)
cpdef object whole_line_unit(str text, list raw)
@cython.locals(op=Op, k=Py_ssize_t, j=Py_ssize_t, ops=list)
cpdef Op _region_op(str text, list raw, Py_ssize_t i, str name, Py_ssize_t close, list entries)
