# The C types of gpuscan.py in its Cython build (tools/compiled_build.py): an augmenting .pxd,
# so that the .py stays plain Python. Helpers are C functions that cannot raise: `text` is a
# str, and every index is kept inside [0, end) with end <= len(text); its characters are read
# from its buffer (`chars.at`: chars.pxd, the name of gpuscan.py's import).
cimport cython

cimport gpu_async_lsp.syntax.chars as chars

cdef Py_ssize_t WAIT, ALLOC, DEALLOC, MEMCPY, MEMSET, LAUNCH_FUNC

@cython.locals(async_start=Py_ssize_t, deps_open=Py_ssize_t, deps_close=Py_ssize_t,
               i=Py_ssize_t, j=Py_ssize_t, k=Py_ssize_t, ops_end=Py_ssize_t,
               line_end=Py_ssize_t, kind=int, data=cython.p_void)
cpdef op_spans(str text, Py_ssize_t code, Py_ssize_t pos, Py_ssize_t end)
@cython.locals(line_end=Py_ssize_t, async_start=Py_ssize_t, deps_open=Py_ssize_t,
               deps_close=Py_ssize_t, ops_start=Py_ssize_t, ops_end=Py_ssize_t)
cpdef gpu_line(str text, Py_ssize_t code, str name, Py_ssize_t name_start, Py_ssize_t name_end,
               Py_ssize_t res_start, Py_ssize_t res_end, Py_ssize_t end, op_words,
               token_class)
@cython.locals(i=Py_ssize_t, j=Py_ssize_t, k=Py_ssize_t, c=Py_UCS4, dotted=bint, kind=int,
               data=cython.p_void)
cpdef bint next_line_starts_op(str text, Py_ssize_t pos, Py_ssize_t end, op_words) except -1

@cython.locals(j=Py_ssize_t, k=Py_ssize_t, kind=int, data=cython.p_void)
cdef Py_ssize_t _alloc(str text, Py_ssize_t i, Py_ssize_t end) noexcept
cdef Py_ssize_t _dealloc(str text, Py_ssize_t i, Py_ssize_t end) noexcept
cdef Py_ssize_t _copy(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(j=Py_ssize_t, k=Py_ssize_t, done=Py_ssize_t, at=Py_ssize_t,
               part_end=Py_ssize_t, names=list, kind=int, data=cython.p_void)
cdef Py_ssize_t _launch(str text, Py_ssize_t i, Py_ssize_t end)
@cython.locals(j=Py_ssize_t, k=Py_ssize_t)
cdef Py_ssize_t _launch_rest(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(j=Py_ssize_t, k=Py_ssize_t, kind=int, data=cython.p_void)
cdef Py_ssize_t _args(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(kind=int, data=cython.p_void)
cdef Py_ssize_t _dims_after(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(kind=int, data=cython.p_void)
cdef Py_ssize_t _colon_type(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(kind=int, data=cython.p_void)
cdef Py_ssize_t _comma(str text, Py_ssize_t i, Py_ssize_t end) noexcept
cdef Py_ssize_t _next_value(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(c=Py_UCS4, k=Py_ssize_t, kind=int, data=cython.p_void)
cdef Py_ssize_t _type(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(c=Py_UCS4, kind=int, data=cython.p_void)
cdef Py_ssize_t _angle(str text, Py_ssize_t i, Py_ssize_t end, int depth) noexcept
@cython.locals(c=Py_UCS4, kind=int, data=cython.p_void)
cdef Py_ssize_t _string(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(k=Py_ssize_t, kind=int, data=cython.p_void)
cdef Py_ssize_t _symbol_part(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(j=Py_ssize_t, kind=int, data=cython.p_void)
cdef Py_ssize_t _values(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(k=Py_ssize_t, kind=int, data=cython.p_void)
cdef Py_ssize_t _value(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(k=Py_ssize_t, kind=int, data=cython.p_void)
cdef Py_ssize_t _value_name(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(j=Py_ssize_t, kind=int, data=cython.p_void)
cdef Py_ssize_t _blank_lines(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(kind=int, data=cython.p_void)
cdef Py_ssize_t _eol(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(k=Py_ssize_t, c=Py_UCS4, word=str, kind=int, data=cython.p_void)
cdef bint _goes_on(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(kind=int, data=cython.p_void)
cdef Py_ssize_t _nl(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(c=Py_UCS4, kind=int, data=cython.p_void)
cdef Py_ssize_t _blanks(str text, Py_ssize_t i, Py_ssize_t end) noexcept
@cython.locals(n=Py_ssize_t, k=Py_ssize_t, kind=int, data=cython.p_void)
cdef bint _starts(str text, Py_ssize_t i, Py_ssize_t end, str word) noexcept
cdef bint _word(Py_UCS4 c) noexcept
cdef bint _is_symbol_char(Py_UCS4 c) noexcept
cdef bint _digit(Py_UCS4 c) noexcept
