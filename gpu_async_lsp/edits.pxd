# The C types of edits.py in its Cython build (tools/compiled_build.py): an augmenting .pxd, so
# that the .py stays plain Python. A fix's edits (8k per 10k lines of host code) are checked,
# flattened, summed and applied by one loop per block: its lists appended to in C (the
# offsets stay the edits' own int objects: typed, each would be boxed anew for the lists; a
# field read by index, `e[0]`, is slower in the build than by name: the class is a subclass).
cimport cython

cpdef bint _overlap(Py_ssize_t a_start, Py_ssize_t a_end, Py_ssize_t b_start,
                    Py_ssize_t b_end) except -1

@cython.locals(starts=list, ends=list, texts=list, shift=list, out=list, t=str)
cpdef _flat(list ordered, str text)
