# The C types of ir.py in its Cython build (tools/compiled_build.py): an augmenting .pxd, so
# that the .py stays plain Python. Op is an extension type there: its __init__ sets C fields
# (setting 16 slots through the type's dictionary was most of the cost of the 31k ops of a
# 50k-line first open). Fields stay Python objects (an int field would be boxed anew at each
# read), `generic` a C flag.

cdef class Op:
    cdef public object name
    cdef public object name_start
    cdef public object name_end
    cdef public object start
    cdef public object end
    cdef public bint generic
    cdef public object results
    cdef public object results_end
    cdef public object explicit_uses
    cdef public object explicit_symbols
    cdef public object spans
    cdef public object src
    cdef public object symbol_name
    cdef public object regions
    cdef public object gpu
    cdef public object result_types
