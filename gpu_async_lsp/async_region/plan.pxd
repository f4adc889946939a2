# The C types of plan.py in its Cython build (tools/compiled_build.py): an augmenting .pxd, so
# that the .py stays plain Python. A fix plans every function it rewrites (10k lines of host
# code: 6k op plans, 2k inserted ops, 8k edits), and the walk, the lowering's fix, the
# renderer and the findings of the rewritten code read the plan's fields for each of them:
# extension types whose fields the modules that cimport them read as C fields. (The op is the
# IR's extension type, ir.pxd.)
cimport cython

from gpu_async_lsp.syntax.ir cimport Op as IrOp, GpuSyntax as IrGpu

cdef class NewOp:
    cdef public str kind
    cdef public list deps
    cdef public object result
    cdef public list types
    cdef public object step

cdef class OpPlan:
    cdef public IrOp op
    cdef public list front
    cdef public object token
    cdef public bint erased
    cdef public list replacements
    cdef public object only

cdef class BlockPlan:
    cdef public object block
    cdef public object rbrace
    cdef public object owner
    cdef public list items

cdef class Renderer:
    cdef public str text
    cdef public list edits

    cpdef str _eol(self, Py_ssize_t offset)
    cpdef Py_ssize_t _line_start(self, Py_ssize_t offset) except -1
    @cython.locals(pending=list, item=object, new=NewOp, op_plan=OpPlan)
    cpdef block(self, BlockPlan plan, dict plans)
    @cython.locals(op=IrOp)
    cpdef insert_before(self, IrOp op, str statement)
    @cython.locals(op=IrOp, g=IrGpu, edits=list)
    cpdef op(self, OpPlan plan)
    @cython.locals(op=IrOp)
    cpdef new_token(self, OpPlan plan)

cdef _edit(start, end, str new_text)
