# The C types of convert.py in its Cython build (tools/compiled_build.py): an augmenting .pxd,
# so that the .py stays plain Python. A first open formats every diagnostic with
# placed_diagnostic_text (122k at 500k lines of host code): its line and column numbers are C
# integers, formatted as such (no int object made for a sum, none formatted through Python).
cimport cython

@cython.locals(sl=Py_ssize_t, sc=Py_ssize_t, el=Py_ssize_t, ec=Py_ssize_t)
cpdef str placed_diagnostic_text(str uri, f, Py_ssize_t line, Py_ssize_t column, start, end,
                                 related, severity, dict tails=*)

# unit_fragment writes a unit's diagnostics into one C buffer: its counters and numbers are C
# integers, the pieces copied from their UTF-8 (ASCII) form, each finding's fields read as the
# tuple's items (fields.pxd).
cimport gpu_async_lsp.syntax.fields as tf
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object, Py_ssize_t*) except NULL
    object PyUnicode_DecodeASCII(const char*, Py_ssize_t, const char*)

@cython.locals(n=Py_ssize_t, k=Py_ssize_t, size=Py_ssize_t, previous=Py_ssize_t,
               start=Py_ssize_t, end=Py_ssize_t, buf=cython.p_char, at=Py_ssize_t,
               length=Py_ssize_t, lines=Py_ssize_t, scanned=Py_ssize_t,
               line_start=Py_ssize_t, first=bint, o=Py_ssize_t, breaks=Py_ssize_t,
               sl=Py_ssize_t, sc=Py_ssize_t, el=Py_ssize_t, ec=Py_ssize_t, kept=list,
               side=Py_ssize_t, here=Py_ssize_t)
cpdef object unit_fragment(tuple findings, str source, str encoding, Py_ssize_t line,
                           Py_ssize_t column, dict severity, dict tails)
@cython.locals(size=Py_ssize_t, data=cython.p_const_char)
cdef Py_ssize_t _put(char* buf, Py_ssize_t at, str piece) except -1
@cython.locals(digits=Py_ssize_t, rest=Py_ssize_t, i=Py_ssize_t)
cdef Py_ssize_t _put_int(char* buf, Py_ssize_t at, Py_ssize_t value) noexcept
