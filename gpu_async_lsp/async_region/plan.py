"""Analysis layer: the rewrite of one function as a plan over its blocks, rendered as edits.

The pass's callbacks change IR; here they change a plan of it. Each block becomes the list of
its ops with the ops the rewrite inserts between them (`NewOp`: `gpu.wait`, `async.await`,
`async.yield`), and each op the rewrite changes gets an `OpPlan` (dependencies put in front of
its list, a new token result, erased). Later phases (LLVM 22's `async.execute` callbacks) edit
that plan further: they may add a dependency in front of one already added, or erase a
`gpu.wait` inserted before. Only at the end is the plan rendered as text edits on the
original buffer: inserted ops on lines of their own before the next op that stays (or before
the block's `}`), with its indentation; changed ops edited inside their first line; erased
ops removed with their line. Every other byte stays.
"""

from __future__ import annotations

from gpu_async_lsp import regex_cache
from gpu_async_lsp.edits import TextEdit
from gpu_async_lsp.syntax import Block, Op

WAIT = "gpu.wait"
AWAIT = "async.await"
YIELD = "async.yield"
TOKEN_TYPE = "!gpu.async.token"
TOKEN_VALUE_TYPE = "!async.value<!gpu.async.token>"


def token_result(op: Op) -> str | None:
    """The name a use gives the op's `!gpu.async.token` result (its last result)."""
    if not op.results:
        return None
    last = op.results[-1]
    return last.name if last.count == 1 else f"{last.name}#{last.count - 1}"


def use_name(ref) -> str:
    """A use as written (`%x`, `%x#1`) of a ValueRef."""
    return ref.name if ref.index is None else f"{ref.name}#{ref.index}"


class NewOp:
    """An op the rewrite inserts. WAIT: `gpu.wait [deps]`, or `result = gpu.wait async
    [deps]`; AWAIT: `result = async.await deps[0] : !async.value<!gpu.async.token>`; YIELD:
    `async.yield deps : types` (an implicit terminator made explicit). (The plan's classes
    are plain, with slots, compared by identity: no dataclass is made at `check`'s start;
    extension types with C fields in the build, plan.pxd.)"""

    __slots__ = ("kind", "deps", "result", "types", "step")

    kind: str
    deps: list[str]
    result: str | None
    types: list[str]
    step: object  # the walk's record of it (a WaitStep), for previews

    def __init__(self, kind: str, deps: list[str] | None = None, result: str | None = None,
                 types: list[str] | None = None, step: object = None):
        self.kind = kind
        self.deps = [] if deps is None else deps
        self.result = result
        self.types = [] if types is None else types
        self.step = step

    def __repr__(self) -> str:
        return f"NewOp({self.kind!r}, {self.deps!r}, result={self.result!r})"

    def text(self) -> str:
        if self.kind == WAIT:
            head = f"{self.result} = gpu.wait async" if self.result else "gpu.wait"
            return head + (f" [{', '.join(self.deps)}]" if self.deps else "")
        if self.kind == AWAIT:
            return f"{self.result} = async.await {self.deps[0]} : {TOKEN_VALUE_TYPE}"
        if not self.deps:
            return "async.yield"
        return f"async.yield {', '.join(self.deps)} : {', '.join(self.types)}"


class OpPlan:
    """What happens to one op of the text: `front` dependencies go in front of its list
    (first first), a synchronous op made async gets `token` as its new last result, an erased
    op is removed; `replacements` rewrite some of its operand names (offsets, new name);
    `only`, when set, is its whole dependency list (lowerable.py: joined, or one per stream),
    in place of `front` and the list as written."""

    __slots__ = ("op", "front", "token", "erased", "replacements", "only")

    op: Op
    front: list[str]
    token: str | None
    erased: bool
    replacements: list[tuple[int, int, str]]
    only: list[str] | None

    def __init__(self, op: Op, front: list[str] | None = None, token: str | None = None,
                 erased: bool = False, replacements: list[tuple[int, int, str]] | None = None,
                 only: list[str] | None = None):
        self.op = op
        self.front = [] if front is None else front
        self.token = token
        self.erased = erased
        self.replacements = [] if replacements is None else replacements
        self.only = only

    def __repr__(self) -> str:
        return f"OpPlan({self.op!r}, front={self.front!r}, token={self.token!r})"

    @property
    def dependencies(self) -> list[str]:
        """Its dependency list as the plan leaves it."""
        if self.only is not None:
            return self.only
        g = self.op.gpu
        written = [use_name(d) for d in g.deps] \
            if g is not None else []
        return self.front + written


class BlockPlan:
    """A block as the plan leaves it: its ops (Op) and the inserted ones (NewOp), in order."""

    __slots__ = ("block", "rbrace", "owner", "items")

    block: Block
    rbrace: int  # the `}` of its region
    owner: Op  # the op whose region holds it
    items: list

    def __init__(self, block: Block, rbrace: int, owner: Op, items: list | None = None):
        self.block = block
        self.rbrace = rbrace
        self.owner = owner
        self.items = [] if items is None else items

    def __repr__(self) -> str:
        return f"BlockPlan(owner={self.owner!r}, {len(self.items)} items)"


_new = tuple.__new__


def _edit(start: int, end: int, new_text: str) -> TextEdit:
    """A TextEdit made in C in the build (its class's __new__ is a Python-level call): a fix
    renders 8k per 10k lines of host code."""
    return _new(TextEdit, (start, end, new_text))


_INDENT = regex_cache.compile(r"[ \t]*")
# The comments of a text (group 1; a string is matched whole, so a `//` in it is none).
_COMMENT = regex_cache.compile(r'"(?:[^"\\\n]|\\.)*"|(//[^\n]*)')


class Renderer:
    """Text edits of a plan, on `text`."""

    __slots__ = ("text", "edits")

    def __init__(self, text: str):
        self.text = text
        self.edits: list[TextEdit] = []

    def _eol(self, offset: int) -> str:
        nl = self.text.find("\n", offset)
        return "\r\n" if nl > 0 and self.text[nl - 1] == "\r" else "\n"

    def _line_start(self, offset: int) -> int:
        return self.text.rfind("\n", 0, offset) + 1

    def block(self, plan: BlockPlan, plans: dict[int, OpPlan]) -> None:
        pending: list[NewOp] = []
        last: Op | None = None
        for item in plan.items:
            if isinstance(item, NewOp):
                pending.append(item)
                continue
            op_plan = plans.get(id(item))
            if op_plan is not None and op_plan.erased:
                self.erase(item)
                continue
            for new in pending:
                self.insert_before(item, new.text())
            pending = []
            if op_plan is not None:
                self.op(op_plan)
            last = item
        for new in pending:
            self.insert_at_block_end(plan, last, new.text())

    def insert_before(self, op: Op, statement: str) -> None:
        """`statement` on its own line before `op`, with the op's indentation."""
        start = op.start
        line_start = self._line_start(start)
        indent = self.text[line_start:start]
        if indent.strip(" \t"):
            # The op shares its line with text before it: keep to that line.
            self.edits.append(_edit(start, start, f"{statement} "))
            return
        self.edits.append(_edit(start, start, f"{statement}{self._eol(start)}{indent}"))

    def insert_at_block_end(self, plan: BlockPlan, last: Op | None, statement: str) -> None:
        """`statement` at the end of a block (its terminator is implicit), before the `}`,
        indented like the block's last op."""
        rbrace = plan.rbrace
        line_start = self._line_start(rbrace)
        if self.text[line_start:rbrace].strip(" \t"):
            self.edits.append(_edit(rbrace, rbrace, f"{statement} "))
            return
        if last is None and plan.block.ops:
            last = plan.block.ops[-1]
        if last is not None:
            indent = _INDENT.match(self.text, self._line_start(last.start)).group()
        else:
            indent = self.text[line_start:rbrace] + "  "
        self.edits.append(_edit(line_start, line_start,
                                   f"{indent}{statement}{self._eol(line_start)}"))

    def erase(self, op: Op) -> None:
        """Remove `op`, with its line(s) when it stands alone on them. Comments stay: one
        after the op keeps its line, ones between the op's own lines stay as lines of their
        own, with the op's indentation (nothing the user wrote is lost)."""
        text = self.text
        line_start = self._line_start(op.start)
        nl = text.find("\n", op.end)
        line_end = len(text) if nl < 0 else nl + 1
        rest = text[op.end:line_end].strip()
        inner = [c for c in _COMMENT.findall(text, op.start, op.end) if c]
        alone = not text[line_start:op.start].strip(" \t")
        if alone and not rest and not inner:
            self.edits.append(_edit(line_start, line_end, ""))
        elif alone and (not rest or rest.startswith("//")):
            indent = text[line_start:op.start]
            kept = [c.rstrip() for c in inner]
            if rest:
                kept.append(rest)
            eol = self._eol(op.start)
            self.edits.append(_edit(op.start, line_end, eol.join(
                [kept[0], *(indent + c for c in kept[1:])]) + (eol if nl >= 0 else "")))
        else:
            self.edits.append(_edit(op.start, op.end, ""))

    def op(self, plan: OpPlan) -> None:
        """The edits inside a changed op: new result, `async`, dependencies in front."""
        op, g = plan.op, plan.op.gpu
        edits = self.edits
        for start, end, name in plan.replacements:
            edits.append(_edit(start, end, name))
        if g is None:
            return
        if plan.only is not None:
            self.whole_list(plan)
            return
        front = ", ".join(plan.front)
        if plan.token is not None:
            self.new_token(plan)
            if g.deps_open is not None:
                edits.append(_edit(g.deps_open, g.deps_open, "async "))
            else:
                edits.append(_edit(op.name_end, op.name_end, f" async [{front}]"))
                return
        if not plan.front:
            return
        if g.deps_open is not None:
            sep = ", " if g.deps else ""
            edits.append(_edit(g.deps_open + 1, g.deps_open + 1, f"{front}{sep}"))
        else:
            at = g.async_kw[1] if g.async_kw is not None else op.name_end
            edits.append(_edit(at, at, f" [{front}]"))

    def new_token(self, plan: OpPlan) -> None:
        """The token of an op made async, as its last result."""
        op = plan.op
        if op.results:
            self.edits.append(_edit(op.results_end, op.results_end, f", {plan.token}"))
        else:
            self.edits.append(_edit(op.start, op.start, f"{plan.token} = "))

    def whole_list(self, plan: OpPlan) -> None:
        """The edits of an op whose dependency list is `plan.only` as a whole (and, made
        async, its new token and `async`)."""
        op, g = plan.op, plan.op.gpu
        edits = self.edits
        deps = ", ".join(plan.only)
        if plan.token is not None:
            self.new_token(plan)
        if g.deps_open is not None:
            if plan.token is not None:
                edits.append(_edit(g.deps_open, g.deps_open, "async "))
            if deps:
                edits.append(_edit(g.deps_open + 1, g.deps_close - 1, deps))
            else:  # the list goes, with the blanks before it
                start = g.deps_open
                while start > op.name_end and self.text[start - 1] in " \t":
                    start -= 1
                edits.append(_edit(start, g.deps_close, ""))
            return
        if not deps and plan.token is None:
            return
        at = g.async_kw[1] if g.async_kw is not None else op.name_end
        keyword = " async" if plan.token is not None else ""
        edits.append(_edit(at, at, f"{keyword} [{deps}]"))
