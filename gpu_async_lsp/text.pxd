# The C types of text.py in its Cython build (tools/compiled_build.py): an augmenting .pxd, so
# that the .py stays plain Python. positions_of places the findings of every unit of a first
# open (26k offsets at 50k lines of host code): its counters are C integers.
cimport cython

@cython.locals(n=Py_ssize_t, o=Py_ssize_t, line=Py_ssize_t, at=Py_ssize_t,
               line_start=Py_ssize_t, units=Py_ssize_t, breaks=Py_ssize_t,
               column=Py_ssize_t, ascii_text=bint, found=dict, out=list,
               ordered=bint, previous=Py_ssize_t, offset=Py_ssize_t)
cpdef list positions_of(str text, list offsets, str encoding=*)
