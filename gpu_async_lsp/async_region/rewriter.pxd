# The C types of rewriter.py in its Cython build (tools/compiled_build.py): an augmenting .pxd,
# so that the .py stays plain Python. The walker, the one piece of state the pass's callback
# keeps, is an extension type whose fields its rules read as C fields (a first open of 50k
# lines of host code visits 29k ops); the rules called per op are C methods, and take the op
# as the extension type it is (ir.pxd): its fields read as C fields. (Named apart: the .py
# imports `Op` through syntax's door, and a cimported name cannot be assigned.)
cimport cython

from gpu_async_lsp.syntax.ir cimport Op as IrOp

# The plan the walk builds (plan.pxd; named apart, as Op): its op plans and inserted ops made
# and filled in as extension types, their fields C fields.
from gpu_async_lsp.async_region.plan cimport BlockPlan as PBlockPlan, NewOp as PNewOp, OpPlan as POpPlan

cdef class NameAllocator:
    cdef public str text
    cdef public object start
    cdef public object end
    cdef public object used
    cdef public set taken
    cdef public Py_ssize_t next

    cpdef bint _is_free(self, str name) except -1
    cpdef str fresh(self)

cpdef bint is_already_async(IrOp op) except -1

# What the rewrite does to one function: filled in by the walk (its sync ops, blockers, steps)
# through C fields.
cdef class FunctionRewrite:
    cdef public IrOp func
    cdef public str name
    cdef public list sync_ops
    cdef public list blockers
    cdef public str semantics
    cdef public bint thread_launch
    cdef public list serialized
    cdef public bint has_wait
    cdef public str lowering
    cdef public object _steps
    cdef public object _text
    cdef public object _walker
    cdef public object _edits
    cdef public object _memory_ops
    cdef public object _plain
    cdef public object _plain_edits

cdef class ThreadTokenWalker:
    cdef public str text
    cdef public FunctionRewrite rw
    cdef public bint planning
    cdef public bint llvm22
    cdef public bint sync_only
    cdef public bint thread_launch
    cdef public bint lowers
    cdef public object live
    cdef public NameAllocator names
    cdef public object current_token
    cdef public list blocks
    cdef public dict block_of
    cdef public dict plans
    cdef public list items
    cdef public object phases
    cdef public object effects

    @cython.locals(stack=list, frame=list, ops=list, index=Py_ssize_t, bplan=PBlockPlan, op=IrOp)
    cpdef visit_blocks(self, IrOp func)
    cpdef visit(self, IrOp op)
    @cython.locals(plan=POpPlan)
    cpdef rewrite_async_op(self, IrOp op)
    @cython.locals(found=POpPlan)
    cpdef POpPlan plan(self, IrOp op)
    cpdef add_async_dependency(self, IrOp op, token, POpPlan plan=*)
    @cython.locals(new=PNewOp)
    cpdef PNewOp create_wait_op(self, list deps, bint fresh=*)
    @cython.locals(plan=PBlockPlan)
    cpdef PBlockPlan block_plan(self, block, region, IrOp owner)
    cpdef bint editable(self, IrOp op) except -1
