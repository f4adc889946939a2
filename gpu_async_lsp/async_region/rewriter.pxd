# The C types of rewriter.py in its Cython build (tools/compiled_build.py): an augmenting .pxd,
# so that the .py stays plain Python. The walker, the one piece of state the pass's callback
# keeps, is an extension type whose fields its rules read as C fields (a first open of 50k
# lines of host code visits 29k ops); the rules called per op are C methods, and take the op
# as the extension type it is (ir.pxd): its fields read as C fields. (Named apart: the .py
# imports `Op` through syntax's door, and a cimported name cannot be assigned.)
from gpu_async_lsp.syntax.ir cimport Op as IrOp

cpdef bint is_already_async(IrOp op) except -1

cdef class ThreadTokenWalker:
    cdef public str text
    cdef public object rw
    cdef public bint planning
    cdef public bint llvm22
    cdef public bint sync_only
    cdef public bint thread_launch
    cdef public bint lowers
    cdef public object live
    cdef public object names
    cdef public object current_token
    cdef public list blocks
    cdef public dict block_of
    cdef public dict plans
    cdef public list items
    cdef public object phases
    cdef public object effects

    cpdef visit(self, IrOp op)
    cpdef rewrite_async_op(self, IrOp op)
    cpdef bint editable(self, IrOp op) except -1
