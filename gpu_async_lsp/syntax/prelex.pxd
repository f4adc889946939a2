# The C types of prelex.py in its Cython build (tools/compiled_build.py): an augmenting .pxd,
# so that the .py stays plain Python. The pre-lexer's state, its frames and itself, are
# extension types whose fields the rules read and write as C fields (slots read through the
# type's dictionary were a third of the pre-lexer's time); the rules that take a frame are C
# functions. The Python of prelex.py is the same code, with the same classes.
cimport cython

cimport gpu_async_lsp.syntax.fields as tf

cdef class _Frame:
    cdef public object dialect
    cdef public bint top
    cdef public Py_ssize_t paren
    cdef public Py_ssize_t attr_depth
    cdef public Py_ssize_t attr_open
    cdef public Py_ssize_t attr_paren
    cdef public Py_ssize_t angle
    cdef public Py_ssize_t angle_at
    cdef public bint in_op
    cdef public int mode
    cdef public object op_name
    cdef public bint generic
    cdef public bint label
    cdef public bint deps_seen
    cdef public bint after_region

cdef class PreLexer:
    cdef public str text
    cdef public list raw
    cdef public list out
    cdef public list frames
    cdef public object known
    cdef public Py_ssize_t body_start
    cdef public Py_ssize_t body_end
    cdef public list pending

    @cython.locals(i=Py_ssize_t, f=_Frame, line=bint)
    cpdef list run(self)
    cpdef flush(self)
    cpdef extend_body(self, Py_ssize_t start, Py_ssize_t end)
    cpdef flush_ops(self)
    cpdef op_ends_after_region(self, Py_ssize_t i, t, _Frame f)
    cpdef bint whole_line_op(self, Py_ssize_t i, t, _Frame f) except -1
    cpdef Py_ssize_t line(self, Py_ssize_t i, t, _Frame f) except? -1
    cpdef op_from_line(self, Py_ssize_t i, t, _Frame f)
    cpdef Py_ssize_t token(self, Py_ssize_t i, t, _Frame f) except? -1
    cpdef Py_ssize_t body_token(self, Py_ssize_t i, t, _Frame f) except? -1

cpdef object _packable(list raw, Py_ssize_t i, _Frame f)
cpdef bint _starts_op_line(u, _Frame f) except -1
cpdef object _resolve(str text, _Frame f)
cpdef _emit_name(t, str qualified, _Frame f, list out)
cpdef _count_paren(_Frame f, t)
cpdef bint _continues(list raw, Py_ssize_t i) except -1
@cython.locals(n=Py_ssize_t)
cpdef object whole_line_region(str text, list raw)
@cython.locals(k=str)
cpdef bint _opens_line_region(str text, list raw, Py_ssize_t i, str qualified) except -1
@cython.locals(n=Py_ssize_t, close=Py_ssize_t, kind=str, qualified=object, bare=str)
cpdef Py_ssize_t _region_entries(str text, list raw, Py_ssize_t i, dialect, int depth,
                                 list entries) except? -2
@cython.locals(k=Py_ssize_t, c=Py_UCS4)
cpdef list result_values(str text, Py_ssize_t start, Py_ssize_t end)
