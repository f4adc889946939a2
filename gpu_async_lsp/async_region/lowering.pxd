# The C types of lowering.py in its Cython build (tools/compiled_build.py): an augmenting .pxd,
# so that the .py stays plain Python. What is asked of each memory op of each host function (a
# first open of 50k lines of host code asks it of 10k ops) takes the op as the extension type
# it is (ir.pxd): its fields read as C fields, and the calls are C calls. (Named apart: the .py
# imports `Op` through syntax's door.)
cimport cython

from gpu_async_lsp.syntax.ir cimport Block as IrBlock, Op as IrOp, Region as IrRegion

cpdef bint is_host_shared(IrOp op, str text) except -1
cpdef problem(IrOp op, str text, bint is_async, Py_ssize_t deps)
cpdef finding(IrOp op, str why, function=*)
@cython.locals(op=IrOp)
cpdef list as_written(str text, IrOp func, name=*, ops=*)
@cython.locals(op=IrOp, region=IrRegion, block=IrBlock, out=list, work=list)
cpdef list memory_ops(IrOp func)

# The findings of the code the rewrite leaves: the plan's classes (plan.pxd, named apart) read
# as C fields, for every item of every block of a fix's plan.
from gpu_async_lsp.async_region.plan cimport BlockPlan as PBlockPlan, NewOp as PNewOp, OpPlan as POpPlan
from gpu_async_lsp.syntax.ir cimport GpuSyntax as IrGpu

@cython.locals(streams=_Streams, bplan=PBlockPlan, new=PNewOp, op=IrOp, plan=POpPlan, g=IrGpu,
               is_async=bint)
cpdef list stream_hazards_after(list blocks, dict plans, name=*)

cdef class _Streams:
    cdef public object function
    cdef public dict root
    cdef public dict destroyed
    cdef public list found

    cpdef new_block(self)
    @cython.locals(root=dict, destroyed=dict, streams=list, seen=dict, k=Py_ssize_t)
    cpdef op(self, op, str name, list deps, token)
@cython.locals(blocks=list, uses=set, holders=set, bplan=PBlockPlan, new=PNewOp)
cpdef list rewritten_findings(str text, IrOp func, name, walker, phases, ops=*)
@cython.locals(out=list, op=IrOp, plan=POpPlan, g=IrGpu, written_async=bint, made_async=bint)
cpdef list after_rewrite(str text, IrOp func, dict plans, name=*, inserted_uses=*,
                         inserted_in=*, ops=*)
