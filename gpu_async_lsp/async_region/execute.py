"""Analysis layer: LLVM 22's two `async.execute` phases of `-gpu-async-region`, on the plan
the ThreadTokenCallback walk made (plan.py).

Follows `DeferWaitCallback` and `SingleTokenUseCallback` of
mlir/lib/Dialect/GPU/Transforms/AsyncRegionRewriter.cpp:

- **DeferWait.** When every user of an `async.execute`'s token is an `async.execute` or an
  `async.await`, a synchronous `gpu.wait` that is the last op with side effects of its body
  is erased; its dependencies become extra `!async.value<!gpu.async.token>` results (yielded
  by the body), and each user of the token waits on them instead: after an `async.await`, new
  `async.await`s of them, then before the next op that is a terminator or has side effects a
  `gpu.wait` of them (or, if that op is a GPU async op, they join its dependencies, each in
  front in turn); in a dependent `async.execute`, new operands (`%r as %arg`) and the same
  before its body's first such op. A `gpu.wait` so inserted at the end of an execute body
  is deferred in turn.
- **SingleTokenUse.** A token result used more than once is yielded once more per extra use,
  and uses move to the new results, as LLVM 22 moves them: it changes uses while iterating
  over them, so only one use moves whatever their number, the second in use-list order.

Use-list order matters for that, so it is modelled: MLIR puts a new use in front of its value's
list (parsed uses end up in reverse order of creation, and the parser creates an op after the
ops of its regions), replacing all uses of a value (what cloning an `async.execute` to add
results does to every result) reverses the list, and operands appended to an execute past its
storage's capacity move its operands to new storage, each in front of its list again.
"""

from __future__ import annotations

from typing import NamedTuple

from gpu_async_lsp import regex_cache
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.effects import has_side_effects
from gpu_async_lsp.async_region.plan import (
    AWAIT,
    TOKEN_TYPE,
    TOKEN_VALUE_TYPE,
    WAIT,
    YIELD,
    BlockPlan,
    NewOp,
    Renderer,
)
from gpu_async_lsp.edits import TextEdit
from gpu_async_lsp.op_tables import is_async_interface_op, is_terminator
from gpu_async_lsp.syntax import Op
from gpu_async_lsp.syntax.patterns import STRING

EXECUTE = "async.execute"


class NotInPlace(Exception):
    """A construct the phases would have to change but that cannot be edited in place."""


# -- the text of async.execute and async.yield ----------------------------------------------

_OPEN = {"(": ")", "[": "]", "<": ">", "{": "}"}
# What nests in MLIR text: strings (skipped whole), `->` (not a closing `>`), brackets.
_NESTING = regex_cache.compile(rf"{STRING}|->|[()\[\]<>{{}}]|(?P<sep>[,:])")


def _split_top(text: str, start: int, end: int, sep: str = ",") -> list[tuple[int, int]]:
    """Spans of the pieces of text[start:end] between top-level `sep`s (brackets and strings
    nest), blanks trimmed."""
    pieces, depth, piece = [], [], start
    for m in _NESTING.finditer(text, start, end):
        c = m.group()
        if c in _OPEN:
            depth.append(_OPEN[c])
        elif depth and c == depth[-1]:
            depth.pop()
        elif c == sep and not depth:
            pieces.append((piece, m.start()))
            piece = m.end()
    pieces.append((piece, end))
    out = []
    for s, e in pieces:
        while s < e and text[s] in " \t\r\n":
            s += 1
        while e > s and text[e - 1] in " \t\r\n":
            e -= 1
        if s < e:
            out.append((s, e))
    return out


def _matching(text: str, open_at: int, end: int) -> int:
    """Offset of the bracket closing the one at `open_at`."""
    stack = []
    for m in _NESTING.finditer(text, open_at, end):
        c = m.group()
        if c in _OPEN:
            stack.append(_OPEN[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                return m.start()
    raise NotInPlace("an unbalanced bracket")


def _skip_blanks(text: str, i: int, end: int) -> int:
    while i < end and text[i] in " \t\r\n":
        i += 1
    return i


class ExecuteSyntax(NamedTuple):
    """Where the parts of `async.execute [deps] (operands) -> types {` are."""

    deps_close: int | None  # offset of `]`
    operands: tuple[int, int] | None  # offsets of `(` and `)`
    types: list[str]  # the value result types, as written
    arrow_types: tuple[int, int] | None  # span of what follows `->`
    parenthesized: bool
    lbrace: int


def execute_syntax(text: str, op: Op) -> ExecuteSyntax:
    if op.generic or not op.regions:
        raise NotInPlace("an async.execute in generic form")
    end = op.regions[0].lbrace
    i = _skip_blanks(text, op.name_end, end)
    deps_close = operands = None
    if i < end and text[i] == "[":
        deps_close = _matching(text, i, end)
        i = _skip_blanks(text, deps_close + 1, end)
    if i < end and text[i] == "(":
        operands = (i, _matching(text, i, end))
        i = _skip_blanks(text, operands[1] + 1, end)
    types: list[str] = []
    arrow = None
    parenthesized = False
    if text.startswith("->", i):
        s = _skip_blanks(text, i + 2, end)
        e = end
        while e > s and text[e - 1] in " \t\r\n":
            e -= 1
        arrow = (s, e)
        parenthesized = text[s] == "("
        inner = (s + 1, _matching(text, s, end)) if parenthesized else (s, e)
        if parenthesized and text[inner[1] + 1:e].strip():
            raise NotInPlace("async.execute with attributes")
        types = [text[a:b] for a, b in _split_top(text, *inner)]
        i = e
    if text[i:end].strip():
        raise NotInPlace("async.execute with attributes")
    return ExecuteSyntax(deps_close, operands, types, arrow, parenthesized, end)


def yield_operands(text: str, op: Op) -> tuple[list[str], int, int]:
    """The operands of an `async.yield`, and where operands and types end (where new ones
    go)."""
    if op.generic:
        raise NotInPlace("an async.yield in generic form")
    pieces = _split_top(text, op.name_end, op.end, ":")
    if not pieces:
        return [], op.name_end, op.name_end
    if len(pieces) != 2:
        raise NotInPlace("an async.yield that does not read `operands : types`")
    (os_, oe), (_, te) = pieces
    return [text[a:b] for a, b in _split_top(text, os_, oe)], oe, te


# -- the model of uses -------------------------------------------------------------------------

class Use:
    """A use of a value: by an op of the text (`ref` is the ValueRef written there), by an
    inserted await (`new`), or as an operand added to an execute (`added`, its index).
    (Plain classes here, compared by identity: no dataclass is made at `check`'s start.)"""

    user: object  # Op or NewOp
    value: str  # the value it uses, as a use names it
    ref: object
    added: tuple | None  # (ExecutePlan, index)

    def __init__(self, user: object, value: str, ref: object = None,
                 added: tuple | None = None):
        self.user = user
        self.value = value
        self.ref = ref
        self.added = added

    def __repr__(self) -> str:
        return f"Use({self.user!r}, {self.value!r}, ref={self.ref!r}, added={self.added!r})"


class ExecutePlan:
    """What the phases add to one async.execute: results (their names) and operands
    (value, block argument); what its body yields additionally."""

    op: Op
    syntax: ExecuteSyntax
    results: list[str]  # every result as a use names it: the token, then the values
    value_types: list[str]  # of the values, as written or added
    new_results: list[str]
    new_operands: list[list[str]]  # [value, argument]
    yielded: list[str]  # every yielded value
    new_yielded: list[str]
    yield_op: Op | None
    yield_ends: tuple[int, int] | None  # where new operands and types go

    def __init__(self, op: Op, syntax: ExecuteSyntax, results: list[str],
                 value_types: list[str], new_results: list[str] | None = None,
                 new_operands: list[list[str]] | None = None, yielded: list[str] | None = None,
                 new_yielded: list[str] | None = None, yield_op: Op | None = None,
                 yield_ends: tuple[int, int] | None = None):
        self.op = op
        self.syntax = syntax
        self.results = results
        self.value_types = value_types
        self.new_results = [] if new_results is None else new_results
        self.new_operands = [] if new_operands is None else new_operands
        self.yielded = [] if yielded is None else yielded
        self.new_yielded = [] if new_yielded is None else new_yielded
        self.yield_op = yield_op
        self.yield_ends = yield_ends

    def __repr__(self) -> str:
        return f"ExecutePlan({self.op!r}, results={self.results!r})"


def _result_names(op: Op) -> list[str]:
    names = []
    for r in op.results:
        names.extend([r.name] if r.count == 1 else [f"{r.name}#{i}" for i in range(r.count)])
    return names


def _ref_name(ref) -> str:
    return ref.name if ref.index is None else f"{ref.name}#{ref.index}"


class ExecutePhases:
    """DeferWait, then SingleTokenUse, on the plan of one function (a ThreadTokenWalker)."""

    def __init__(self, walker):
        self.w = walker
        self.text = walker.text
        func = walker.rw.func
        self.executes = [op for op in _post_order(func) if op.name == EXECUTE]
        self.execs: dict[int, ExecutePlan] = {}
        # MLIR's parser creates an op after the ops of its regions, so the uses an op makes
        # come after those of the ops inside it: in post-order; each goes in front.
        self.uses: dict[str, list[Use]] = {}
        self.by_user: dict[int, list[Use]] = {}  # id(user) -> its uses, in operand order
        for op in _post_order(func):
            for ref in op.uses:
                self.new_use(Use(op, _ref_name(ref), ref))
        # How many operands each execute's storage holds before it must move them (MLIR's
        # OperandStorage: as many as it was created with).
        self.capacity = {id(op): len(self.by_user.get(id(op), [])) for op in self.executes}
        self.parent: dict[int, BlockPlan] = {}  # id(item) -> the block plan holding it
        for bplan in walker.blocks:
            for item in bplan.items:
                self.parent[id(item)] = bplan

    # -- the model ------------------------------------------------------------------------

    def plan_of(self, op: Op) -> ExecutePlan:
        found = self.execs.get(id(op))
        if found is None:
            syntax = execute_syntax(self.text, op)
            body = op.regions[0].blocks[0]
            yield_op = body.ops[-1] if body.ops and body.ops[-1].name == YIELD else None
            found = ExecutePlan(op, syntax, _result_names(op), list(syntax.types))
            if found.results and len(found.results) - 1 != len(syntax.types):
                raise NotInPlace("an async.execute whose results and types do not match")
            if yield_op is not None:
                found.yield_op = yield_op
                found.yielded, oe, te = yield_operands(self.text, yield_op)
                found.yield_ends = (oe, te)
            self.execs[id(op)] = found
        return found

    def new_use(self, use: Use) -> None:
        """A use created now: in front of its value's list."""
        self.uses.setdefault(use.value, []).insert(0, use)
        self.by_user.setdefault(id(use.user), []).append(use)

    def users(self, value: str) -> list:
        return [u.user for u in self.uses.get(value, [])]

    def all_users_execute_or_await(self, op: Op) -> bool:
        """`areAllUsersExecuteOrAwait` of the execute's token."""
        names = _result_names(op)
        if not names:
            return False
        users = self.users(names[0])
        return bool(users) and all(isinstance(u, Op) and u.name in (EXECUTE, AWAIT)
                                   for u in users)

    def body(self, op: Op) -> BlockPlan:
        return self.w.block_of[id(op.regions[0].blocks[0])]

    def is_erased(self, item) -> bool:
        plan = self.w.plans.get(id(item))
        return plan is not None and plan.erased

    def live_items(self, bplan: BlockPlan) -> list:
        return [x for x in bplan.items if not self.is_erased(x)]

    def side_effects(self, item) -> bool:
        if isinstance(item, NewOp):
            return item.kind != YIELD
        return has_side_effects(item, self.w.effects)

    @staticmethod
    def terminator(item) -> bool:
        return item.kind == YIELD if isinstance(item, NewOp) else is_terminator(item.name)

    def is_wait(self, item) -> bool:
        return (item.kind == WAIT) if isinstance(item, NewOp) else item.name == "gpu.wait"

    def has_token(self, item) -> bool:
        if isinstance(item, NewOp):
            return item.result is not None
        return item.gpu is not None and item.gpu.async_kw is not None

    def dependencies(self, item) -> list[str]:
        return list(item.deps) if isinstance(item, NewOp) else self.w.plan(item).dependencies

    def add_dependency(self, item, token: str) -> None:
        """`addAsyncDependency` on an op of the plan: in front, unless it is there."""
        if token in self.dependencies(item):
            return
        if isinstance(item, NewOp):
            item.deps.insert(0, token)
        else:
            self.w.plan(item).front.insert(0, token)

    # -- DeferWait ------------------------------------------------------------------------

    def run(self) -> None:
        worklist: list = []
        for op in self.executes:
            self.collect(op, worklist)
        i = 0
        while i < len(worklist):
            self.defer(worklist[i], worklist)
            i += 1
        for op in self.executes:
            self.single_token_use(op)

    def collect(self, op: Op, worklist: list) -> None:
        if not self.all_users_execute_or_await(op):
            return
        items = self.live_items(self.body(op))
        if items and not isinstance(items[-1], NewOp) and items[-1].name == YIELD:
            items = items[:-1]
        for item in reversed(items):
            if self.is_wait(item):
                if not self.has_token(item):
                    worklist.append(item)
                return
            if self.side_effects(item):
                return

    def defer(self, wait, worklist: list) -> None:
        bplan = self.parent[id(wait)]
        execute = bplan.owner
        dependencies = self.dependencies(wait)
        if isinstance(wait, NewOp):
            bplan.items.remove(wait)
            if wait.step is not None:  # the preview of that wait goes with it
                self.w.rw.steps.remove(wait.step)
        else:
            self.w.plan(wait).erased = True
        tokens = self.add_execute_results(execute, dependencies)
        for user in self.users(self.plan_of(execute).results[0]):
            self.add_dependency_after(tokens, user, worklist)

    def add_execute_results(self, op: Op, values: list[str]) -> list[str]:
        """`addExecuteResults`: the execute returns `values` too (its body yields them); the
        clone takes over every use of the old results, which reverses their use lists."""
        plan = self.plan_of(op)
        if not op.results:
            raise NotInPlace("an async.execute without results")
        # The clone's operands and the ops of its body are created anew: their uses go in
        # front of their values' lists, in the order the clone creates them.
        for use in self.clone_uses(op):
            lst = self.uses[use.value]
            lst.remove(use)
            lst.insert(0, use)
        for name in plan.results:
            if name in self.uses:
                self.uses[name].reverse()
        self.capacity[id(op)] = len(self.by_user.get(id(op), []))
        names = []
        for value in values:
            name = self.w.names.fresh()
            names.append(name)
            plan.results.append(name)
            plan.new_results.append(name)
            plan.value_types.append(TOKEN_VALUE_TYPE)
            plan.yielded.append(value)
            plan.new_yielded.append(value)
        return names

    def clone_uses(self, op: Op) -> list[Use]:
        """The uses a clone of `op` creates, in order: its operands (those written, then
        those added), then the ops of its regions in pre-order, each its operands first."""
        out = list(self.by_user.get(id(op), []))
        stack = [iter(self._items_in(op))]
        while stack:
            item = next(stack[-1], None)
            if item is None:
                stack.pop()
                continue
            if self.is_erased(item):
                continue
            out.extend(self.by_user.get(id(item), []))
            if not isinstance(item, NewOp):
                stack.append(iter(self._items_in(item)))
        return out

    def _items_in(self, op: Op):
        """The ops of `op`'s regions as the plan leaves them (inserted ones included)."""
        for region in op.regions:
            for block in region.blocks:
                bplan = self.w.block_of.get(id(block))
                if bplan is not None:
                    yield from bplan.items

    def add_dependency_after(self, tokens: list[str], user, worklist: list) -> None:
        """`addAsyncDependencyAfter`: the user of a deferred execute waits on `tokens`."""
        if user.name == AWAIT:
            bplan = self.parent[id(user)]
            at = bplan.items.index(user) + 1
            waited = []
            for k, token in enumerate(tokens):
                result = self.w.names.fresh()
                new = NewOp(AWAIT, [token], result)
                bplan.items.insert(at + k, new)
                self.parent[id(new)] = bplan
                self.new_use(Use(new, token))
                waited.append(result)
            at += len(tokens)
        else:  # an async.execute
            plan = self.plan_of(user)
            self.grow_operands(user, len(tokens))
            waited = []
            for token in tokens:
                argument = self.w.names.fresh()
                plan.new_operands.append([token, argument])
                self.new_use(Use(user, token, added=(plan, len(plan.new_operands) - 1)))
                waited.append(argument)
            bplan = self.body(user)
            at = 0
        items = bplan.items
        k = at
        while k < len(items) and (self.is_erased(items[k]) or not (
                self.terminator(items[k]) or self.side_effects(items[k]))):
            k += 1
        target = items[k] if k < len(items) else None
        if target is not None and (isinstance(target, NewOp) and target.kind == WAIT
                                   or not isinstance(target, NewOp)
                                   and is_async_interface_op(target.name)):
            for token in waited:
                self.add_dependency(target, token)
            return
        new = NewOp(WAIT, list(waited))
        items.insert(k, new)
        self.parent[id(new)] = bplan
        # Inserted before the block's last op (its terminator): deferred in turn.
        at_end = target is None or all(self.is_erased(x) for x in items[k + 2:])
        owner = bplan.owner
        if owner.name == EXECUTE and at_end and self.all_users_execute_or_await(owner):
            worklist.append(new)

    def grow_operands(self, op: Op, added: int) -> None:
        """`bodyOperandsMutable().append`: past the capacity of the op's operand storage,
        MLIR moves its operands to a new one (OperandStorage::resize), in order, and a moved
        operand goes in front of its value's use list; the new capacity is the next power of
        two above the old one plus two, or the new size if that is more."""
        uses = self.by_user.get(id(op), [])
        count = len(uses)
        capacity = self.capacity.get(id(op), count)
        if count + added <= capacity:
            return
        for use in uses:
            lst = self.uses[use.value]
            lst.remove(use)
            lst.insert(0, use)
        self.capacity[id(op)] = max(1 << (capacity + 2).bit_length(), count + added)

    # -- SingleTokenUse -------------------------------------------------------------------

    def single_token_use(self, op: Op) -> None:
        if id(op) not in self.execs and not self._multi(op, _result_names(op)):
            return  # nothing to change: its form need not be editable
        plan = self.plan_of(op)
        values = plan.results[1:]
        indices = [i for i, v in enumerate(values)
                   if len(self.uses.get(v, [])) > 1 and _is_token_value(plan.value_types[i])]
        for i in indices:
            value = plan.results[1 + i]
            count = len(self.uses[value]) - 1
            operand = plan.yielded[i] if i < len(plan.yielded) else None
            if operand is None:
                raise NotInPlace("an async.execute whose yield does not name its results")
            new = self.add_execute_results(op, [operand] * count)
            uses = self.uses[value]
            if len(uses) > 1:
                moved = uses.pop(1)  # only the first of the uses after the first moves
                moved.value = new[0]
                self.uses.setdefault(new[0], []).insert(0, moved)
                self.rename(moved, new[0])

    def _multi(self, op: Op, names: list[str]) -> bool:
        try:
            syntax = execute_syntax(self.text, op)
        except NotInPlace:
            return any(len(self.uses.get(v, [])) > 1 for v in names[1:])
        return any(len(self.uses.get(v, [])) > 1 and _is_token_value(t)
                   for v, t in zip(names[1:], syntax.types))

    def rename(self, use: Use, name: str) -> None:
        if isinstance(use.user, NewOp):
            use.user.deps[0] = name
        elif use.added is not None:
            plan, index = use.added
            plan.new_operands[index][0] = name
        else:
            ref = use.ref
            self.w.plan(use.user).replacements.append((ref.start, ref.end, name))

    # -- rendering ------------------------------------------------------------------------

    def render(self, renderer: Renderer) -> None:
        edits = renderer.edits
        for plan in self.execs.values():
            op, syntax = plan.op, plan.syntax
            if plan.new_results:
                edits.append(TextEdit(op.results_end, op.results_end,
                                      "".join(f", {n}" for n in plan.new_results)))
                added = ", ".join([TOKEN_VALUE_TYPE] * len(plan.new_results))
                if syntax.arrow_types is None:
                    many = len(plan.new_results) > 1
                    edits.append(TextEdit(syntax.lbrace, syntax.lbrace,
                                          f"-> ({added}) " if many else f"-> {added} "))
                elif syntax.parenthesized:
                    close = syntax.arrow_types[1] - 1
                    edits.append(TextEdit(close, close, f", {added}"))
                else:
                    s, e = syntax.arrow_types
                    edits.append(TextEdit(s, s, "("))
                    edits.append(TextEdit(e, e, f", {added})"))
                self.render_yield(plan, renderer)
            if plan.new_operands:
                pieces = ", ".join(f"{v} as {a}: {TOKEN_VALUE_TYPE}"
                                   for v, a in plan.new_operands)
                if syntax.operands is not None:
                    close = syntax.operands[1]
                    inner = self.text[syntax.operands[0] + 1:close].strip()
                    edits.append(TextEdit(close, close, f", {pieces}" if inner else pieces))
                else:
                    at = syntax.deps_close + 1 if syntax.deps_close is not None else op.name_end
                    edits.append(TextEdit(at, at, f" ({pieces})"))

    def render_yield(self, plan: ExecutePlan, renderer: Renderer) -> None:
        values = ", ".join(plan.new_yielded)
        types = ", ".join([TOKEN_TYPE] * len(plan.new_yielded))
        if plan.yield_op is None:
            body = self.body(plan.op)
            body.items.append(NewOp(YIELD, list(plan.new_yielded),
                                    types=[TOKEN_TYPE] * len(plan.new_yielded)))
            return
        before = len(plan.yielded) - len(plan.new_yielded)
        oe, te = plan.yield_ends
        if before == 0:
            renderer.edits.append(TextEdit(oe, oe, f" {values} : {types}"))
        else:
            renderer.edits.append(TextEdit(oe, oe, f", {values}"))
            renderer.edits.append(TextEdit(te, te, f", {types}"))


def _is_token_value(type_text: str) -> bool:
    return type_text.replace(" ", "") == TOKEN_VALUE_TYPE


def _post_order(func: Op) -> list[Op]:
    """The ops nested in `func` in post-order (an op after everything inside it), as MLIR's
    walk visits them."""
    out = []
    stack = [(op, False) for region in reversed(func.regions) for block in reversed(region.blocks)
             for op in reversed(block.ops)]
    while stack:
        op, done = stack.pop()
        if done:
            out.append(op)
            continue
        stack.append((op, True))
        stack.extend((child, False) for region in reversed(op.regions)
                     for block in reversed(region.blocks) for child in reversed(block.ops))
    return out


def has_execute(func) -> bool:
    """Does the function hold an async.execute (whose phases LLVM 22's pass runs)?"""
    return any(op.name == EXECUTE for op in func.walk())


def run_phases(walker) -> None:
    """DeferWait and SingleTokenUse on the walker's plan, or an unsupported-form blocker on
    the function when what they would change cannot be edited in place."""
    if not has_execute(walker.rw.func):
        return
    phases = ExecutePhases(walker)
    try:
        phases.run()
        walker.phases = phases
    except NotInPlace as why:
        func = walker.rw.func
        walker.rw.blockers.append(F.Finding(
            F.UNSUPPORTED_FORM, f"LLVM 22's async.execute phases would change {why}, which "
            "cannot be rewritten in place", func.name_start, func.name_end,
            F.DEFAULT_SEVERITY[F.UNSUPPORTED_FORM], function=walker.rw.name))
