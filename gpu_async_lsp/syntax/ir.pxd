# The C types of ir.py in its Cython build (tools/compiled_build.py): an augmenting .pxd, so
# that the .py stays plain Python. Op and the other IR classes are extension types there:
# their __init__s set C fields (setting 16 slots through the type's dictionary was most of the
# cost of the 31k ops of a 50k-line first open). Fields stay Python objects (an int field
# would be boxed anew at each read), Op's `generic` a C flag.
from gpu_async_lsp.syntax.refs cimport IRValue

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

cdef class GpuSyntax(IRValue):
    cdef public object async_kw
    cdef public object deps_open
    cdef public object deps_close
    cdef public object deps

cdef class Block:
    cdef public object label
    cdef public object args
    cdef public object ops
    cdef public object start
    cdef public object end

cdef class Region:
    cdef public object lbrace
    cdef public object rbrace
    cdef public object blocks

cdef class Alias(IRValue):
    cdef public object name
    cdef public object start
    cdef public object end

cdef class SyntaxIssue(IRValue):
    cdef public object message
    cdef public object start
    cdef public object end

cdef class Chunk:
    cdef public object start
    cdef public object end
    cdef public object ops
    cdef public object aliases
    cdef public object errors

cdef class Document:
    cdef public object text
    cdef public object chunks
