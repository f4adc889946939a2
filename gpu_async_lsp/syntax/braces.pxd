# The C types of braces.py in its Cython build (tools/compiled_build.py): an augmenting .pxd,
# so that the .py stays plain Python. Every region's `{` is asked what it opens (each function
# of a file has one): its offsets are C integers, the characters read as such.
cimport cython

@cython.locals(j=Py_ssize_t, k=Py_ssize_t, n=Py_ssize_t)
cpdef bint opens_region(str text, Py_ssize_t brace, bint generic, bint in_parens,
                        resolve) except -1
@cython.locals(j=Py_ssize_t)
cpdef Py_ssize_t _before(str text, Py_ssize_t brace) except -1
