# The C types of convert.py in its Cython build (tools/compiled_build.py): an augmenting .pxd,
# so that the .py stays plain Python. A first open formats every diagnostic with
# placed_diagnostic_text (122k at 500k lines of host code): its line and column numbers are C
# integers, formatted as such (no int object made for a sum, none formatted through Python).
cimport cython

@cython.locals(sl=Py_ssize_t, sc=Py_ssize_t, el=Py_ssize_t, ec=Py_ssize_t)
cpdef str placed_diagnostic_text(str uri, f, Py_ssize_t line, Py_ssize_t column, start, end,
                                 related, severity, dict tails=*)
