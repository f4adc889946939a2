# The C types of lowerable.py in its Cython build (tools/compiled_build.py): an augmenting
# .pxd, so that the .py stays plain Python. `make_lowerable` visits every item of every block
# of a fix's plan (10k lines of host code: 8k): its per-block state and the streams of the
# function are extension types, the plan's classes those of plan.pxd, read as C fields.
cimport cython

# (Named apart: the .py imports the same classes, and a cimported name cannot be assigned.)
from gpu_async_lsp.async_region.plan cimport BlockPlan as PBlockPlan, NewOp as PNewOp, OpPlan as POpPlan
from gpu_async_lsp.syntax.ir cimport Op as IrOp, GpuSyntax as IrGpu

cdef class _BlockFix:
    cdef public str text
    cdef public dict plans
    cdef public object names
    cdef public set made
    cdef public _BlockStreams streams
    cdef public list items
    cdef public bint changed

    @cython.locals(op=IrOp, g=IrGpu, plan=POpPlan, made_async=bint, is_async=bint)
    cpdef item(self, item)
    cpdef new_op(self, PNewOp item)
    @cython.locals(new=PNewOp)
    cpdef list async_deps(self, IrOp op, list deps, POpPlan plan)
    @cython.locals(last=object)
    cpdef end_chain(self, list tokens)

cdef class _BlockStreams:
    cdef public set made
    cdef public dict root
    cdef public dict order
    cdef public set named

    cpdef bint ours(self, str token) except -1
    cpdef define(self, token, list deps, str name)
    @cython.locals(last=dict, kept=list, seen=set)
    cpdef list one_per_stream(self, list deps)
