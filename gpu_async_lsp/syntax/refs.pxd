# The C types of refs.py in its Cython build (tools/compiled_build.py): an augmenting .pxd, so
# that the .py stays plain Python. The IR's small values are extension types with C fields, as
# Op (ir.pxd); fields stay Python objects (an int field would be boxed anew at each read).

cdef class IRValue:
    pass

cdef class ValueRef(IRValue):
    cdef public object name
    cdef public object start
    cdef public object end
    cdef public object index
    cdef public object count

cdef class SymbolRef(IRValue):
    cdef public object path
    cdef public object start
    cdef public object end
