"""Analysis layer: the token-threading rewrite of MLIR's `-gpu-async-region` pass, planned as
text edits on the original buffer.

Follows mlir/lib/Dialect/GPU/Transforms/AsyncRegionRewriter.cpp (`ThreadTokenCallback`): every
block of a host `func.func` is handled on its own and starts with no `current_token`; for each
op of the block, in order:

1. `gpu.launch` is an error (`replace with gpu.launch_func first`);
2. a pre-existing `gpu.wait` is an error (the original pass refused them);
3. an op implementing `gpu::AsyncOpInterface` that is already async, or has regions, is an
   error; otherwise `rewrite_async_op` makes it depend on `current_token` (created by a
   `gpu.wait async` if there is none) and return a new token, which becomes `current_token`;
4. any other op, if there is a `current_token` and it `is_terminator` or `has_side_effects`,
   gets a `gpu.wait [current_token]` inserted before it (`create_wait_op`), after which there
   is no current token. A block whose terminator is elided in the text (the implicit
   `scf.yield`) gets that `gpu.wait` at its end, before the `}`.

A function is rewritten only if nothing blocks it. The edits only touch the rewritten ops' first
lines and insert new lines; every other byte stays (docs/ARCHITECTURE.md, "Invariants").
"""

from __future__ import annotations

import operator
import threading
from typing import NamedTuple

from gpu_async_lsp import regex_cache
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.effects import has_side_effects
from gpu_async_lsp.async_region.execute import has_execute, run_phases
from gpu_async_lsp.async_region.findings import Finding, Related, Severity, op_error
from gpu_async_lsp.async_region.lowerable import PlainPlan, make_lowerable, plain_plan
from gpu_async_lsp.async_region.lowering import (
    LLVM22_LOWERING,
    NO_LOWERING,
    is_host_shared,
    memory_ops,
    rewritten_findings,
    stream_hazards,
)
from gpu_async_lsp.async_region.lowering import as_written as lowering_as_written
from gpu_async_lsp.async_region.plan import WAIT, BlockPlan, NewOp, OpPlan, Renderer, token_result
from gpu_async_lsp.edits import SortedEdits, TextEdit, apply_edits
from gpu_async_lsp.op_tables import is_async_interface_op, is_terminator
from gpu_async_lsp.syntax import Block, Document, Op, parse_document
from gpu_async_lsp.syntax.patterns import SSA_NAME, STRING

TOKEN_TYPE = "!gpu.async.token"
_RENDERING = threading.RLock()

# Which pass the rewrite follows: the 2020 pass (refuses pre-existing `gpu.wait`s and async ops)
# or LLVM 22's, which threads the current token into them.
ORIGINAL = "original"
LLVM22 = "llvm22"
# The original pass's threading of the synchronous ops only, where a pre-existing `gpu.wait`
# or async op is left as written and synchronized before like a host op with side effects:
# the hand-written streams stay apart (LLVM 22's threading chains them together).
SYNC_ONLY = "sync-only"
SEMANTICS = (ORIGINAL, LLVM22, SYNC_ONLY)
PASS_SEMANTICS = (ORIGINAL, LLVM22)  # those of an MLIR pass (the differential tests' reference)
HOST_FUNCTION = "func.func"
DEVICE_CONTAINERS = frozenset({"gpu.module", "gpu.func"})


def is_already_async(op: Op) -> bool:
    """The op has the `async` keyword, or (generic form) a `!gpu.async.token` result."""
    if op.gpu is not None and op.gpu.async_kw is not None:
        return True
    return bool(op.result_types and TOKEN_TYPE in op.result_types)


class NameAllocator:
    """Fresh `%t0`, `%t1`, ... skipping every SSA name already used in the function
    (text[start:end]). The set of those names is collected only when the text holds a name
    like a candidate at all (most functions hold no `%t<N>`: one scan at C speed says so)."""

    __slots__ = ("text", "start", "end", "used", "taken", "next")

    def __init__(self, text: str, start: int, end: int):
        self.text, self.start, self.end = text, start, end
        self.used: set[str] | None = None  # the function's names, once collected
        self.taken: set[str] = set()  # what fresh() gave out
        self.next = 0

    def _is_free(self, name: str) -> bool:
        if name in self.taken:
            return False
        if self.used is None:
            self.used = _used_names(self.text, self.start, self.end) \
                if _CANDIDATE.search(self.text, self.start, self.end) else frozenset()
        return name not in self.used

    def fresh(self) -> str:
        name = f"%t{self.next}"
        self.next += 1
        while not self._is_free(name):
            name = f"%t{self.next}"
            self.next += 1
        self.taken.add(name)
        return name


# An SSA name, or a comment or string (matched only to be skipped: `// %t0` is no name).
_SSA_NAME = regex_cache.compile(rf'//[^\n]*+|{STRING}|({SSA_NAME})')


_CANDIDATE = regex_cache.compile(r"%t[0-9]")


def _used_names(text: str, start: int, end: int) -> set[str]:
    """Every SSA name written in text[start:end] (results, operands, block arguments)."""
    names = set(_SSA_NAME.findall(text, start, end))
    names.discard("")
    return names


_INDENT = regex_cache.compile(r"[ \t]*")
_LIVE = "%<current>"  # a token is current (a walk that does not plan: no name is given out)


class AsyncStep(NamedTuple):
    """`rewrite_async_op`: `op` gets `async [dependency]` and returns `token`; when no token
    was current, `dependency` comes from a `gpu.wait async` inserted before `op`."""

    op: Op
    dependency: str
    token: str
    fresh_wait: bool


class ThreadStep(NamedTuple):
    """LLVM 22's `ThreadTokenCallback` on an op that has a token of its own (a pre-existing
    `gpu.wait`, or a GPU op that is already async): `dependency` is added to its list (None
    when none is current, or when it is there already; from a `gpu.wait async` inserted
    before the op when `fresh_wait`), and its own `token` becomes current (None: a
    synchronous `gpu.wait`, after which no token is current)."""

    op: Op
    dependency: str | None
    token: str | None
    fresh_wait: bool


# Why a host synchronization goes before an op (the pass's condition, in its own terms).
TERMINATOR = "terminator"
SIDE_EFFECTS = "side-effects"
BLOCK_END = "block-end"  # the block's terminator is elided in the text
HAND_WRITTEN = "hand-written"  # sync-only: a pre-existing gpu.wait or async op follows


class WaitStep(NamedTuple):
    """`create_wait_op`: a `gpu.wait [token]` inserted at `offset`, before `before` (None at
    the end of a block whose terminator is implicit)."""

    token: str
    offset: int
    before: Op | None
    reason: str


class FunctionRewrite:
    """What the rewrite does (or cannot do) to one func.func. A plain class with slots, its
    __init__ written out: a dataclass's is Python the build does not compile, run for every
    function of a first open (with six lists made by factories), and its class made at
    import was part of `check`'s start; an extension type in the build (rewriter.pxd), which
    the walk fills in through C fields. Compared by identity."""

    func: Op
    name: str  # `@f`
    sync_ops: list[Op]
    blockers: list[Finding]
    semantics: str
    thread_launch: bool  # an inline gpu.launch is threaded like any async op
    # The `gpu.wait async`s without dependencies (streams the text starts on its own) that
    # LLVM 22's threading makes depend on another chain: it serializes work the function
    # runs apart. Found by both walks (the one that does not plan tracks `_LIVE`).
    serialized: list[Op]
    # A `gpu.wait` is among the ops the walk visited (a superset of those `stream_hazards`
    # looks at): without one, no stream is destroyed, so there is no hazard to look for.
    has_wait: bool
    # LLVM22_LOWERING: the rewrite's output lowers with LLVM 22's gpu-to-llvm (lowerable.py;
    # host_shared allocs stay synchronous, no op gets two dependencies, no stream is
    # destroyed twice); NO_LOWERING: exactly the pass's.
    lowering: str
    # The walk's steps, in walk order; None after a walk that looked for findings only
    # (`analyze_function(plan=False)`: what a first publication needs), until the first
    # request for them or for the edits walks the function again, planning (`_text`: its
    # text for that walk).
    _steps: list[AsyncStep | WaitStep | ThreadStep] | None
    _text: str | None
    # The walk's plan until it is rendered: edits on first request (a code action, --fix).
    _walker: tuple | None  # (walker, phases)
    _edits: list[TextEdit] | None
    _memory_ops: list | None
    _plain: object  # PlainPlan | False
    _plain_edits: list[TextEdit] | None

    __slots__ = ("func", "name", "sync_ops", "blockers", "semantics", "thread_launch",
                 "serialized", "has_wait", "lowering", "_steps", "_text", "_walker", "_edits",
                 "_memory_ops", "_plain", "_plain_edits")

    def __init__(self, func: Op, name: str, sync_ops: list[Op] | None = None,
                 blockers: list[Finding] | None = None, semantics: str = ORIGINAL,
                 thread_launch: bool = False, serialized: list[Op] | None = None,
                 has_wait: bool = False, lowering: str = NO_LOWERING):
        self.func = func
        self.name = name
        self.sync_ops = [] if sync_ops is None else sync_ops
        self.blockers = [] if blockers is None else blockers
        self.semantics = semantics
        self.thread_launch = thread_launch
        self.serialized = [] if serialized is None else serialized
        self.has_wait = has_wait
        self.lowering = lowering
        self._steps = []
        self._text = None
        self._walker = None
        self._edits = None
        self._memory_ops = None
        self._plain = None
        self._plain_edits = None

    def __repr__(self) -> str:
        return (f"FunctionRewrite({self.name!r}, {len(self.sync_ops)} sync ops, "
                f"{len(self.blockers)} blockers)")

    @property
    def memory_ops(self) -> list[Op]:
        """The function's GPU memory ops (`lowering.memory_ops`), walked once."""
        if self._memory_ops is None:
            self._memory_ops = memory_ops(self.func)
        return self._memory_ops

    @property
    def steps(self) -> list[AsyncStep | WaitStep | ThreadStep]:
        """What the walk does to each op it changes (and each wait it inserts), in walk order."""
        if self._steps is None:
            self._walk_planning()
        return self._steps

    def _walk_planning(self) -> None:
        with _RENDERING:  # once, whichever thread asks first
            if self._steps is not None:
                return
            full = analyze_function(self._text, self.func, self.semantics, self.thread_launch,
                                    lowering=self.lowering)
            self._walker, self._text = full._walker, None
            self._steps = full._steps  # last: another thread reads steps once this is set

    @property
    def edits(self) -> list[TextEdit]:
        """The function's edits (also of a blocked function: what the rewrite would do)."""
        if self._edits is None:
            self._render()
        return self._edits

    def _render(self) -> tuple | None:
        """Render the edits; the plan they were rendered from, (walker, phases), to the
        caller that rendered them (None to any other), which may read it once: the plan is
        not kept (a rendered function in the server's cache holds its edits only)."""
        if self._steps is None:
            self._walk_planning()
        with _RENDERING:  # rendering edits the plan: once, whichever thread asks first
            if self._edits is not None:
                return None
            pending, self._walker = self._walker, None
            self._edits = pending[0].render(pending[1]) if pending is not None else []
            return pending

    @property
    def rewritable(self) -> bool:
        return bool(self.sync_ops) and not self.blockers

    @property
    def serializes(self) -> bool:
        return bool(self.serialized)

    def as_written_plan(self, text: str) -> PlainPlan | None:
        """With the lowering, the plan of the edits that make the function's async ops lower
        as written (lowerable.py), when the rewrite leaves it alone; None when it needs none.
        Made once."""
        if self.lowering != LLVM22_LOWERING or self.rewritable:
            return None
        if self._plain is None:
            func = self.func
            self._plain = plain_plan(text, func, NameAllocator(text, func.start, func.end)) \
                or False
        return self._plain or None

    def fix_edits(self, text: str) -> list[TextEdit]:
        """What `--fix` does to the function: the rewrite's edits, or (the rewrite leaves it
        alone) those that make it lower as written."""
        if self.rewritable:
            return self.edits
        plain = self.as_written_plan(text)
        if plain is None:
            return []
        if self._plain_edits is None:
            self._plain_edits = plain.render()
        return self._plain_edits

    @property
    def has_work(self) -> bool:
        return bool(self.sync_ops)


class ThreadTokenWalker:
    """The state of the pass's `ThreadTokenCallback` for one function: `current_token`. The
    walk builds the function's plan (plan.py): a BlockPlan per block, an OpPlan per op it
    changes; `render` turns it into edits."""

    def __init__(self, text: str, rewrite: FunctionRewrite, plan: bool = True):
        self.text = text
        self.rw = rewrite
        self.planning = plan  # False: blockers and sync ops only (find_blockers)
        self.llvm22 = rewrite.semantics == LLVM22
        self.sync_only = rewrite.semantics == SYNC_ONLY
        self.thread_launch = rewrite.thread_launch
        self.lowers = rewrite.lowering == LLVM22_LOWERING
        # Without planning, what stands for a current token (only LLVM 22's threading needs
        # to know whether one is: the streams it serializes; else none, and no op after a
        # GPU op is asked whether it has side effects).
        self.live = _LIVE if self.llvm22 else None
        self.names = NameAllocator(text, rewrite.func.start, rewrite.func.end)
        self.current_token: str | None = None
        self.blocks: list[BlockPlan] = []  # in the walk's order
        self.block_of: dict[int, BlockPlan] = {}  # id(Block) -> its plan
        self.plans: dict[int, OpPlan] = {}  # id(Op) -> its plan
        self.items: list = []  # of the block being visited
        self.phases = None  # LLVM 22's async.execute phases (execute.py), once run
        self.effects: dict[int, bool] = {}  # has_side_effects, per op of the function

    # -- the walk ---------------------------------------------------------------------------

    def visit_blocks(self, func: Op) -> None:
        """Visit every block of `func` on its own, ops in program order (an explicit stack:
        regions may nest thousands deep)."""
        # A frame: [ops, next index, its BlockPlan, current token of the block].
        stack = [[block.ops, 0, self.block_plan(block, region, func), None]
                 for region in reversed(func.regions) for block in reversed(region.blocks)]
        while stack:
            frame = stack[-1]
            ops, index, bplan = frame[0], frame[1], frame[2]
            if index == len(ops):
                stack.pop()
                if frame[3] is not None:
                    # The block's terminator is elided in the text: sync before the `}`.
                    step = WaitStep(frame[3], bplan.rbrace, None, BLOCK_END)
                    self.rw.steps.append(step)
                    bplan.items.append(NewOp(WAIT, [frame[3]], step=step))
                continue
            op = ops[index]
            frame[1] = index + 1
            self.current_token = frame[3]
            self.items = bplan.items
            self.visit(op)
            bplan.items.append(op)
            frame[3] = self.current_token
            if not op.regions or (op.name == "gpu.launch" and self.thread_launch):
                continue  # no blocks; a gpu.launch's body is device code: not walked
            # Each nested block starts with no current token.
            stack.extend([[inner.ops, 0, self.block_plan(inner, region, op), None]
                          for region in reversed(op.regions) for inner in reversed(region.blocks)])

    def find_blockers(self, func: Op) -> None:
        """The walk of visit_blocks (same order) that plans nothing: blockers and the ops to
        make asynchronous are found. No token is current, but in LLVM 22's semantics whether
        one would be (`_LIVE`), per block, for the streams its threading serializes."""
        stack = [[iter(block.ops), None] for region in reversed(func.regions)
                 for block in reversed(region.blocks)]
        thread_launch = self.thread_launch
        while stack:
            frame = stack[-1]
            op = next(frame[0], None)
            if op is None:
                stack.pop()
                continue
            self.current_token = frame[1]
            self.visit(op)
            frame[1] = self.current_token
            if op.regions and not (thread_launch and op.name == "gpu.launch"):
                stack.extend([iter(inner.ops), None] for region in reversed(op.regions)
                             for inner in reversed(region.blocks))

    def block_plan(self, block: Block, region, owner: Op) -> BlockPlan:
        plan = BlockPlan(block, region.rbrace, owner)
        self.blocks.append(plan)
        self.block_of[id(block)] = plan
        return plan

    def plan(self, op: Op) -> OpPlan:
        found = self.plans.get(id(op))
        if found is None:
            found = self.plans[id(op)] = OpPlan(op)
        return found

    def visit(self, op: Op) -> None:
        name = op.name
        if name == "gpu.launch" and not self.thread_launch:
            self.block(op, F.LAUNCH_NOT_OUTLINED, op_error(name, "replace with gpu.launch_func first"))
            return
        if name == "gpu.wait":
            self.rw.has_wait = True
            if self.llvm22:
                self.thread_into_wait(op)
            elif self.sync_only:
                self.synchronize_before(op)
            else:
                self.block(op, F.PRE_EXISTING_WAIT,
                           op_error(name, "unexpected pre-existing gpu.wait"))
            return
        if is_async_interface_op(name):
            self.rewrite_async_op(op)
            return
        if self.current_token is None:
            return
        if is_terminator(name) or has_side_effects(op, self.effects):
            if self.planning:
                reason = TERMINATOR if is_terminator(name) else SIDE_EFFECTS
                step = WaitStep(self.current_token, op.start, op, reason)
                self.rw.steps.append(step)
                self.create_wait_op([self.current_token]).step = step
            self.current_token = None

    def rewrite_async_op(self, op: Op) -> None:
        if is_already_async(op):
            if self.llvm22:
                self.thread_into_async_op(op)
            elif self.sync_only:
                self.synchronize_before(op)
            else:
                self.block(op, F.ALREADY_ASYNC, op_error(op.name, "is already async"))
            return
        # LLVM 22 clones the regions into the async op; a gpu.launch keeps its body (outlining
        # turns it into a gpu.launch_func that keeps the launch's async dependencies).
        if op.regions and not self.llvm22 and op.name != "gpu.launch":
            self.block(op, F.ASYNC_OP_WITH_REGIONS, op_error(op.name, "regions are not supported"))
            return
        if self.lowers and is_host_shared(op, self.text):
            return  # LLVM 22 lowers it synchronous only; it orders no GPU work: left as it is
        self.rw.sync_ops.append(op)
        if not self.editable(op):
            return
        if not self.planning:
            self.current_token = self.live  # LLVM 22's semantics: a token would be current
            return
        fresh = self.current_token is None
        if fresh:
            self.current_token = self.create_wait_op([], fresh=True).result
        dep = self.current_token
        token = self.names.fresh()
        self.rw.steps.append(AsyncStep(op, dep, token, fresh))
        plan = self.plan(op)
        plan.token = token
        self.add_async_dependency(op, dep, plan)
        self.current_token = token

    def synchronize_before(self, op: Op) -> None:
        """sync-only: a pre-existing `gpu.wait` or async op stays as written; the chain is
        synchronized before it, as before a host op with side effects. The program as
        written finished each synchronous op before it issued anything after it, and a
        synchronous op never waited for hand-written work issued before it: so every
        ordering it had is kept, and its hand-written streams stay apart."""
        if self.current_token is None or not self.planning:
            return
        step = WaitStep(self.current_token, op.start, op, HAND_WRITTEN)
        self.rw.steps.append(step)
        self.create_wait_op([self.current_token]).step = step
        self.current_token = None

    def editable(self, op: Op) -> bool:
        """Whether the op's custom form is there to edit; else an unsupported-form blocker."""
        if op.generic or op.gpu is None:
            self.block(op, F.UNSUPPORTED_FORM,
                       f"'{op.name}' op in generic form cannot be rewritten in place; "
                       "write it in its custom form" if op.generic else
                       f"'{op.name}' op cannot be rewritten in place")
            return False
        return True

    # -- LLVM 22: ops with a token of their own --------------------------------------------

    def thread_into_wait(self, op: Op) -> None:
        """A pre-existing `gpu.wait` gets the current token as a dependency; its own token
        (`gpu.wait async`) becomes current, or none is (a synchronous `gpu.wait`)."""
        if not self.editable(op):
            return
        if (self.current_token is not None and op.gpu.async_kw is not None
                and not op.gpu.deps):
            self.rw.serialized.append(op)  # a new stream of the text's, made to wait for a chain
        if not self.planning:
            self.current_token = self.live if (op.gpu.async_kw is not None
                                               and token_result(op) is not None) else None
            return
        dep = self.add_async_dependency(op, self.current_token)
        token = token_result(op) if op.gpu.async_kw is not None else None
        self.rw.steps.append(ThreadStep(op, dep, token, False))
        self.current_token = token

    def thread_into_async_op(self, op: Op) -> None:
        """An already-async GPU op depends on the current token too (a `gpu.wait async` makes
        one when there is none); its own token becomes current."""
        if not self.editable(op):
            return
        if not self.planning:
            self.current_token = self.live if token_result(op) is not None else None
            return
        fresh = self.current_token is None
        if fresh and self.lowers and op.gpu.deps:
            # A new stream would order nothing, and give the op a second dependency.
            token = token_result(op)
            self.rw.steps.append(ThreadStep(op, None, token, False))
            self.current_token = token
            return
        if fresh:
            self.current_token = self.create_wait_op([], fresh=True).result
        dep = self.add_async_dependency(op, self.current_token)
        token = token_result(op)
        self.rw.steps.append(ThreadStep(op, dep, token, fresh))
        self.current_token = token

    def add_async_dependency(self, op: Op, token: str | None,
                             plan: OpPlan | None = None) -> str | None:
        """`addAsyncDependency`: `token` in front of the op's dependency list, unless it is in
        it already; the dependency added, or None. (`plan`: the op's, when the caller has it.)"""
        if token is None:
            return None
        if plan is None:
            plan = self.plan(op)
        if token in plan.dependencies:
            return None
        plan.front.insert(0, token)
        return token

    # -- findings and inserted ops -------------------------------------------------------------

    def block(self, op: Op, code: str, message: str) -> None:
        self.rw.blockers.append(Finding(code, message, op.name_start, op.name_end,
                                        F.DEFAULT_SEVERITY[code], function=self.rw.name))

    def create_wait_op(self, deps: list[str], fresh: bool = False) -> NewOp:
        """`createWaitOp`: a `gpu.wait [deps]` (or, `fresh`, a `%tN = gpu.wait async`)
        before the op being visited."""
        new = NewOp(WAIT, list(deps), self.names.fresh() if fresh else None)
        self.items.append(new)
        return new

    def render(self, phases=None) -> list[TextEdit]:
        """The plan (and that of LLVM 22's phases) as the function's edits (once: rendering
        completes the plan)."""
        renderer = Renderer(self.text)
        if phases is not None:
            phases.render(renderer)
        for bplan in self.blocks:
            renderer.block(bplan, self.plans)
        return renderer.edits


class Analysis:
    document: Document
    findings: list[Finding]
    functions: list[FunctionRewrite]
    strict: bool

    def __init__(self, document: Document, findings: list[Finding],
                 functions: list[FunctionRewrite], strict: bool = False):
        # Written out, as FunctionRewrite's: one per unit of a first open.
        self.document = document
        self.findings = findings
        self.functions = functions
        self.strict = strict

    def __repr__(self) -> str:
        return f"Analysis({len(self.functions)} functions, {len(self.findings)} findings)"

    @property
    def has_syntax_errors(self) -> bool:
        return any(c.errors for c in self.document.chunks)

    def edits(self, functions: list[FunctionRewrite] | None = None) -> list[TextEdit]:
        """Edits of every rewritable function (or of the given ones); with the lowering, also
        those that make the others lower as written."""
        chosen = self.functions if functions is None else functions
        text = self.document.text
        return [e for fn in chosen for e in fn.fix_edits(text)]

    def fixed_text(self) -> str:
        return apply_edits(self.document.text, self.edits())

    def rewritten_anchors(self) -> set[tuple[int, int]]:
        """Spans of the `sync-gpu-ops` hints of the functions the rewrite changes (and, with
        the lowering, where that hint would be in the functions whose ops `--fix` makes lower
        as written): after the fix, no such hint is left."""
        text = self.document.text
        return {hint_anchor(fn.func) for fn in self.functions
                if fn.rewritable or fn.as_written_plan(text) is not None}

    def fix(self) -> tuple[str, list[Finding]]:
        """The text with every rewritable function rewritten, and the findings that remain in
        it (see `findings_after_fix`)."""
        return findings_after_fix(self.document.text, self.findings, self.edits(),
                                  self.rewritten_anchors())


def findings_after_fix(text: str, findings: list[Finding], edits: list[TextEdit],
                       rewritten: set[tuple[int, int]]) -> tuple[str, list[Finding]]:
    """Apply `edits`; the findings that remain are all but the hints of the rewritten functions
    (anchored at `rewritten`), their offsets moved past the edits.

    Re-analyzing the fixed text would cost a second parse and, in strict mode, report the
    `gpu.wait`s the rewrite itself inserted."""
    ordered = SortedEdits.of(edits)
    return ordered.apply(text), moved_findings(findings, rewritten, ordered.mover())


def moved_findings(findings: list[Finding], rewritten: set[tuple[int, int]],
                   moved) -> list[Finding]:
    """The findings that remain after the fix (all but the hints of the rewritten functions,
    anchored at `rewritten`), their offsets `moved` past the edits (`SortedEdits.mover`)."""
    remaining = []
    for f in findings:
        if f.code == F.SYNC_GPU_OPS and (f.start, f.end) in rewritten:
            continue
        remaining.append(f._replace(
            start=moved(f.start), end=_moved_end(moved, f.start, f.end),
            related=tuple(Related(moved(r.start), _moved_end(moved, r.start, r.end), r.message)
                          for r in f.related)))
    return remaining


def _moved_end(moved, start: int, end: int) -> int:
    """Where the span [start, end) ends after the edits: after its last character, not after
    text inserted right behind it (`async [%t]` after an op's name is not the name)."""
    return moved(end - 1) + 1 if end > start else moved(end)


def hint_anchor(func: Op) -> tuple[int, int]:
    """Where a function's `sync-gpu-ops` hint goes: its symbol, else its op name."""
    if func.symbol_name is not None:
        return func.symbol_name.start, func.symbol_name.end
    return func.name_start, func.name_end


def host_functions(doc: Document) -> list[Op]:
    """Every func.func outside device code (gpu.module / gpu.func), at any depth of modules,
    in text order."""
    stack = [op for chunk in doc.chunks for op in reversed(chunk.ops)]
    stack.reverse()
    work = list(reversed(stack))
    out = []
    while work:
        op = work.pop()
        if op.name in DEVICE_CONTAINERS:
            continue
        if op.name == HOST_FUNCTION:
            out.append(op)
            continue
        for region in reversed(op.regions):
            for block in reversed(region.blocks):
                work.extend(reversed(block.ops))
    return out


def analyze_function(text: str, func: Op, semantics: str = ORIGINAL,
                     thread_launch: bool = False, plan: bool = True,
                     lowering: str = NO_LOWERING) -> FunctionRewrite:
    """What the rewrite does to `func`. Without `plan`, its blockers and the ops it would make
    asynchronous only (a quarter of the work: what diagnostics need); the rest is walked on
    the first request for the function's steps or edits. LLVM 22's async.execute phases add
    blockers of their own from the plan: a function holding an async.execute is planned."""
    name = func.symbol_name.path[0] if func.symbol_name else "@<anonymous>"
    rw = FunctionRewrite(func, name, semantics=semantics, thread_launch=thread_launch,
                         lowering=lowering)
    if not plan and not (semantics == LLVM22 and has_execute(func)):
        rw._steps, rw._text = None, text
        ThreadTokenWalker(text, rw, plan=False).find_blockers(func)
        return rw
    walker = ThreadTokenWalker(text, rw)
    walker.visit_blocks(func)
    if semantics == LLVM22:
        run_phases(walker)
    if lowering == LLVM22_LOWERING:
        make_lowerable(text, walker.blocks, walker.plans, walker.names)
    # Kept to render on first use of rw.edits, without a reference cycle (what is kept must
    # be freed by reference counting: server/heap.py): the walk's memo and its links back to
    # the rewrite and to the phases (which refer to the walker) go.
    phases, walker.phases, walker.rw, walker.effects = walker.phases, None, None, None
    rw._walker = (walker, phases)
    return rw


def _plural(n: int, one: str, many: str) -> str:
    return one if n == 1 else many


def analyze(source: str | Document, strict: bool = False,
            semantics: str = ORIGINAL, thread_launch: bool = False,
            plan: bool = True, lowering: str = NO_LOWERING, fixing: bool = False) -> Analysis:
    """Findings and planned edits for a buffer (or an already parsed document), with the
    rules of the `semantics` pass (ORIGINAL or LLVM22); with `thread_launch`, an inline
    `gpu.launch` is threaded like any other async op instead of blocking its function.
    Without `plan`, each function's steps and edits are walked on first use
    (`analyze_function`). With `lowering` (LLVM22_LOWERING), the host GPU ops LLVM 22's
    gpu-to-llvm would leave unconverted are findings too (`lowering.py`): as written, or
    with `fixing` (the caller applies the edits: --fix, --diff) in the functions the
    rewrite changes, as it leaves them (at offsets of `source`)."""
    doc = parse_document(source) if isinstance(source, str) else source
    text = doc.text
    findings: list[Finding] = [
        Finding(F.SYNTAX, e.message, e.start, e.end, Severity.ERROR)
        for chunk in doc.chunks for e in chunk.errors
    ]
    functions = []
    for func in host_functions(doc):
        rw = analyze_function(text, func, semantics, thread_launch, plan, lowering)
        functions.append(rw)
        if lowering != NO_LOWERING:
            findings.extend(_not_lowered(text, rw, fixing and plan))
        if rw.blockers and (strict or rw.has_work):
            related = tuple(
                Related(op.name_start, op.name_end, f"'{op.name}' would be made asynchronous")
                for op in rw.sync_ops
            )
            findings.extend(
                Finding(b.code, b.message, b.start, b.end, b.severity, related, b.function)
                for b in rw.blockers
            )
        if rw.rewritable:
            n = len(rw.sync_ops)
            start, end = hint_anchor(func)
            findings.append(_new(Finding, (
                F.SYNC_GPU_OPS,
                f"{n} GPU {_plural(n, 'op', 'ops')} in {rw.name} "
                f"{_plural(n, 'runs', 'run')} synchronously",
                start, end, Severity.HINT, _serialized_notes(rw), rw.name)))
    findings.sort(key=_FINDING_ORDER)
    return Analysis(doc, findings, functions, strict)


# The order of a unit's findings, (start, end, code), by index (a Finding is a named tuple): a
# key made in C, where a lambda was a call per finding.
_FINDING_ORDER = operator.itemgetter(2, 3, 0)
_new = tuple.__new__  # a Finding made in C (its class's __new__ is Python)


def _serialized_notes(rw: FunctionRewrite) -> tuple[Related, ...]:
    """Where the rewrite (LLVM 22's threading) makes a stream the function starts on its own
    wait for another chain: said with its hint, as the editor's quick fix says it."""
    if not rw.serialized:
        return ()
    return tuple([Related(op.name_start, op.name_end,
                          "this stream, started apart, is made to wait for the chain before "
                          "it (serialized); `--semantics sync-only` keeps it apart")
                  for op in rw.serialized])


def _not_lowered(text: str, rw: FunctionRewrite, fixing: bool) -> list[Finding]:
    """The function's `not-lowered` findings: as the rewrite leaves it when it is rewritten
    (`fixing`), else as written, with its `stream-hazard`s."""
    if fixing and rw.rewritable:
        pending = rw._render()
        if pending is not None:
            return rewritten_findings(text, rw.func, rw.name, *pending, rw.memory_ops)
    plain = rw.as_written_plan(text) if fixing else None
    if plain is not None:
        return rewritten_findings(text, rw.func, rw.name, plain, None, rw.memory_ops)
    return [*lowering_as_written(text, rw.func, rw.name, rw.memory_ops),
            *(stream_hazards(rw.func, rw.name) if rw.has_wait else ())]


def fix_text(text: str, semantics: str = ORIGINAL, thread_launch: bool = False) -> str:
    """The buffer with every rewritable function rewritten (unchanged if it has syntax errors)."""
    a = analyze(text, semantics=semantics, thread_launch=thread_launch)
    if a.has_syntax_errors:
        return text
    return a.fixed_text()
