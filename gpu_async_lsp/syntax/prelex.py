"""Syntax layer: classify raw tokens into the coarse terminals of grammar/mlir.lark.

MLIR text has no statement separator: an op ends where the next one starts. MLIR's own parser
knows every op's custom syntax; we cannot, so this pass recovers op boundaries the way the text
shows them. A new op starts, at paren depth 0 inside a region, on a line whose first token is
a result list (`%a, %b:2 =`), a generic op name (`"d.op"(`), a dotted op name, a bare name that
resolves to a known op through the default dialect of the enclosing op (`return` in a
func.func is `func.return`; `module` is `builtin.module`), or a block label (`^bb1(...):`),
unless the line before it ends in the middle of something (`,`, `(`, `=`, `->`, ...). Right
after a region's `{` or a block label, the next token must start an op.

A `{` opens a region or an attribute dictionary; the tokens around it decide (after
`attributes` or `<` it is a dictionary, before a block label or an op it is a region).

Runs of tokens that do not matter to the structure become one BODY token that carries its SSA
uses and symbol references. The ops of GPUOps.td that the rewrite edits are passed on token by
token, so that the grammar checks their assembly format exactly.

No lark, pygls or lsprotocol here: the tokens are this module's `Token`, which Lark takes
as they are when a unit needs its parser (most units of host code never do, and a process
that meets none does not import Lark at all).
"""

from __future__ import annotations

import gpu_async_lsp.syntax.fields as tf
from gpu_async_lsp import regex_cache
from gpu_async_lsp.op_tables import (
    ASYNC_INTERFACE_OPS,
    DEFAULT_DIALECT,
    KNOWN_OPS,
    TERMINATOR_OPS,
)
from gpu_async_lsp.syntax.braces import opens_region
from gpu_async_lsp.syntax.gpu_formats import EXACT_GPU_OPS, VALUE_RE
from gpu_async_lsp.syntax.ir import ValueRef
from gpu_async_lsp.syntax.lexer import RawToken, tokenize
from gpu_async_lsp.syntax.patterns import RESULT_RE, UNFINISHED_LINE_ENDS

# The keywords of the GPU formats modeled token by token.
GPU_KEYWORDS = {
    "async": "KW_ASYNC",
    "host_shared": "KW_HOST_SHARED",
    "dynamic_shared_memory_size": "KW_DYNAMIC_SHARED_MEMORY_SIZE",
}
_FINE_PUNCT = {"(": "LPAR", ")": "RPAR", "[": "LSQB", "]": "RSQB", "<": "LANGLE", ">": "RANGLE",
               ",": "COMMA", ":": "COLON", "=": "EQUAL"}
# Text of the `}` token that closes a container op's body when its children are parsed apart.
CONTAINER_CLOSE = ""
# Raw-token kinds that leave an op unfinished: the ends of UNFINISHED_LINE_ENDS (`->` is the
# kind "arrow"), and a `{` (nothing ends an op with an opening brace).
_CONTINUATION = frozenset({"arrow" if e == "->" else e for e in UNFINISHED_LINE_ENDS} | {"{"})

# Ops whose short form names the op of their body in braces right after the op name
# (`linalg.map { arith.negf } ins(...) outs(...)`): LLVM builds that body itself, so the
# braces hold no region of the text (linalg's printShortForm / parseDstStyleOp).
SHORT_FORM_OPS = frozenset({"linalg.map", "linalg.reduce"})

# Ops whose custom parser (function_interface_impl::parseFunctionOp) rejects a body of no
# block: `func.func @f() {` then `}` (with named arguments the entry block holds them).
_FUNCTION_OPS = frozenset({"func.func", "async.func"})

# What cannot follow a `{`: MLIR's region starts with an op or a block label, its attribute
# dictionary with an entry's name or its `}`. (Not `[`: a custom format may take `{[` for a
# list, transform's `ops{["linalg.matmul"]}`; a dictionary's unclosed `[` is caught at its `}`.)
_NO_BRACE_START = frozenset({"{", "(", "<", ")", "]", ">", "=", ",", ":", "arrow"})

# Body modes of the op being read.
_BODY = 0  # merge into BODY tokens
_FINE = 1  # exact GPU op: token by token
_DEPS = 2  # async clause of another AsyncOpInterface op, then _BODY


class Token(str):
    """A coarse terminal for the parser: its text, its grammar terminal (`type`) and its span
    in the text. Has what Lark reads of a token (`type`, `start_pos`, `end_pos` and the
    line/column fields its end-of-input token borrows) without importing Lark; compares and
    hashes as its text."""

    __slots__ = ("type", "start_pos", "end_pos")

    def __new__(cls, type_: str, value: str, start_pos: int | None = None,
                end_pos: int | None = None):
        self = str.__new__(cls, value)
        self.type = type_
        self.start_pos = start_pos
        self.end_pos = end_pos
        return self

    @property
    def value(self) -> str:
        return str.__str__(self)

    # Lark's end-of-input token copies these; offsets are all this parser uses.
    line = column = end_line = end_column = None

    def __reduce__(self):  # the subclasses' slots too (a forked worker's results cross a pipe)
        state = {k: getattr(self, k) for c in type(self).__mro__[:-2]
                 for k in getattr(c, "__slots__", ()) if hasattr(self, k)}
        return (_token, (type(self), str.__str__(self)), state)

    def __setstate__(self, state: dict) -> None:
        for k, v in state.items():
            setattr(self, k, v)

    def __repr__(self) -> str:
        return f"Token({self.type!r}, {str.__str__(self)!r})"


def _token(cls: type, value: str) -> Token:
    return str.__new__(cls, value)


class PrelexError(Exception):
    def __init__(self, message: str, start: int, end: int):
        super().__init__(message)
        self.message = message
        self.start = start
        self.end = end


class BodyToken(Token):
    """A merged run of text [start_pos, end_pos) of `src`; the builder reads its SSA uses,
    symbols and successors from the text when it needs them."""

    __slots__ = ("src",)


class OpsToken(Token):
    """A run of whole ops, one per line (LineTokens and GpuLineTokens); `entries` holds
    (item, fully qualified op name) for each. The builder makes their Ops."""

    __slots__ = ("entries", "src")


class ResultsToken(Token):
    """A result list `%a, %b:2 =`; `values` are its ValueRefs."""

    __slots__ = ("values",)


class _Frame:
    """A region (or the unit's top level): where ops start."""

    __slots__ = ("dialect", "paren", "in_op", "mode", "op_name", "generic", "top", "attr_depth",
                 "label", "deps_seen", "after_region", "attr_open", "attr_paren", "angle", "angle_at")

    def __init__(self, dialect: str | None, top: bool):
        self.dialect = dialect
        self.top = top
        self.paren = 0  # ( and [ depth inside the current op
        self.attr_depth = 0  # { } depth of attribute dictionaries inside a BODY run
        self.attr_open = -1  # offset of the `{` that took attr_depth from 0 to 1
        self.attr_paren = 0  # ( and [ depth inside attribute dictionaries
        self.angle = 0  # `<` punctuation (properties `<{...}>`) not closed by `>` yet
        self.angle_at = -1  # offset of the `<` that took `angle` from 0 to 1
        self.in_op = False
        self.mode = _BODY
        self.op_name: str | None = None
        self.generic = False
        self.label = False  # reading a block label's argument list
        self.deps_seen = False  # the `[` of an async clause was read
        self.after_region = False  # the last token closed a region of the current op

    def begin(self, op_name: str | None = None, mode: int = _BODY, generic: bool = False,
              label: bool = False) -> None:
        """A new op (or block label, or alias) starts in this frame."""
        if self.angle:
            raise _unclosed_angle(self)
        self.in_op = True
        self.paren = 0
        self.attr_depth = 0
        self.attr_paren = 0
        self.op_name = op_name
        self.generic = generic
        self.mode = mode
        self.label = label
        self.deps_seen = False


def prelex(text: str, raw: list, dialect: str | None = None) -> list[Token]:
    """Coarse tokens of one unit (items from `lexer.tokenize_lines`). Raises PrelexError for
    unbalanced structure. `raw` is used up: items already read are overwritten (`_splice`)."""
    return PreLexer(text, raw, dialect).run()


def whole_line_region(text: str, raw: list) -> list | None:
    """The ops of a unit of the commonest shape, decided by the rules the pre-lexer would apply
    to it (`run`) without running it: one op on one line (no results, a dotted name, operands)
    whose line ends in a `{` that opens its region (`body_token`), and in that region, up to
    the `}` that closes it (the unit's last item), a whole op on each line (`whole_line_op`:
    `_packable`'s rules, in the region's frame) or an op of the same kind as the first (with
    results or not) whose region is of the same shape (`op_from_line`, then `body_token`).
    The region's entries: (index of the line item, qualified name, None) for a whole-line op,
    (index, name, (index of its `}`, its region's entries)) for an op with a region. None for
    any other unit. What the pre-lexer makes of such a unit is always the op's OP_NAME, BODY,
    LBRACE_REGION, OPS tokens of runs of lines, [RESULTS] OP_NAME BODY LBRACE_REGION ...
    RBRACE of the inner ops, RBRACE (parser.whole_line_unit builds its IR from the entries):
    a function of host code costs a loop over its lines, not the pre-lexer's frames and tokens
    and the plain parser's reading of them."""
    n = len(raw)
    if n < 4:
        return None
    head = raw[0]
    close = raw[n - 1]
    if (tf.at(close, tf.KIND) != "}" or not tf.at(close, tf.LINE_START)
            or tf.at(head, tf.KIND) != "line" or tf.at(head, tf.RESULTS_START) >= 0):
        return None
    name = tf.at(head, tf.TEXT)
    if "." not in name or not _opens_line_region(text, raw, 0, name):
        return None
    entries: list = []
    if _region_entries(text, raw, 2, DEFAULT_DIALECT.get(name), 0, entries) != n - 1:
        return None
    return entries


_WHOLE_LINE_DEPTH = 32  # regions nested deeper: the pre-lexer (and the plain parse's limit)


def _opens_line_region(text: str, raw: list, i: int, qualified: str) -> bool:
    """Is raw[i] a line item of an op `qualified` in custom form read as one BODY run, whose
    line ends in a `{` that opens its region and that holds a line item first?"""
    t = raw[i]
    if (tf.at(t, tf.KIND) != "line" or tf.at(t, tf.LINE_CONT) or tf.at(t, tf.LINE_DEPTH)
            or tf.at(t, tf.END) <= tf.at(t, tf.NAME_END)
            or qualified in EXACT_GPU_OPS or qualified in _ASYNC_OTHER or i + 2 >= len(raw)):
        return False
    brace = raw[i + 1]
    if tf.at(brace, tf.KIND) != "{" or tf.at(brace, tf.LINE_START):
        return False
    k = tf.at(raw[i + 2], tf.KIND)
    if k != "line" and k != "gpuline":
        return False
    inner = DEFAULT_DIALECT.get(qualified)
    resolve = _RESOLVERS.get(inner)
    if resolve is None:
        resolve = _RESOLVERS[inner] = _resolver(inner)
    return opens_region(text, tf.at(brace, tf.START), False, False, resolve)


def _region_entries(text: str, raw: list, i: int, dialect: str | None, depth: int,
                    entries: list) -> int:
    """The entries of the region whose first item is raw[i], in a frame of `dialect`
    (whole_line_region); the index of its closing `}`, or -1 where it is of another shape."""
    n = len(raw)
    while i < n:
        t = raw[i]
        kind = tf.at(t, tf.KIND)
        if kind == "}":
            # Closes the region where the op before ended (its line, or its region's `}`).
            return i if tf.at(t, tf.LINE_START) else -1
        if kind == "line":
            if tf.at(t, tf.LINE_DEPTH) or tf.at(t, tf.LINE_CONT):
                return -1
        elif kind != "gpuline":  # (a GpuLineToken's depth is 0, its line never goes on)
            return -1
        qualified = tf.at(t, tf.TEXT)
        if kind == "line" and "." not in qualified:
            bare = qualified
            qualified = qualify_op_name(bare, dialect)
            if qualified is None:
                if tf.at(t, tf.RESULTS_START) < 0:
                    return -1
                qualified = f"{dialect}.{bare}" if dialect else bare  # _fallback_name
        if i + 1 < n and tf.at(raw[i + 1], tf.KIND) == "{":  # an op with a region
            if depth >= _WHOLE_LINE_DEPTH or not _opens_line_region(text, raw, i, qualified):
                return -1
            inner: list = []
            close = _region_entries(text, raw, i + 2, DEFAULT_DIALECT.get(qualified),
                                    depth + 1, inner)
            if close < 0:
                return -1
            entries.append((i, qualified, (close, inner)))
            i = close + 1
            continue
        if kind == "line" and (qualified in EXACT_GPU_OPS or qualified in _ASYNC_OTHER):
            return -1
        # `_packable` also asks that the next item start an op (`_starts_op_line`) or close
        # the region: each is asked that as it is read (a line item that starts none, or any
        # other item but a `}`, returns -1), so none is asked twice.
        entries.append((i, qualified, None))
        i += 1
    return -1


class PreLexer:
    """The pre-lexer of one unit: a small set of named rules, applied to each item in turn.

    In the way of Lark's `Indenter` (a post-lexer that turns layout into tokens), it reads the
    items of `lexer.tokenize_lines` (whole lines and raw tokens) with a stack of `_Frame`s, one
    per open region, and emits grammar terminals. `run` tries the rules in this order; the
    first that takes the item consumes it:

    1. `op_ends_after_region`: the line after a region's `}` either goes on with the op's
       format or starts something new (it only updates the frame);
    2. `whole_line_op`: a line that is one whole op is packed into an OPS token;
    3. `line`: any other line item: an op starting on it, or a continuation of the op;
    4. `token`: a raw token: an op start, a block label's arguments, an async clause, a token
       of an exactly modeled GPU op, a `{` or `}`, or part of a BODY run.
    """

    __slots__ = ("text", "raw", "out", "frames", "known", "body_start", "body_end", "pending")

    def __init__(self, text: str, raw: list, dialect: str | None):
        self.text = text
        self.raw = raw
        self.out: list[Token] = []
        self.frames = [_Frame(dialect, True)]
        self.known = _ResultRun()
        self.body_start = -1  # the BODY run being merged: [body_start, body_end)
        self.body_end = -1
        self.pending: list = []  # whole one-line ops not yet emitted, as (item, qualified name)

    def run(self) -> list[Token]:
        raw = self.raw
        i = 0
        while i < len(raw):
            t = raw[i]
            f = self.frames[-1]
            if f.after_region:
                self.op_ends_after_region(i, t, f)
            kind = t.kind
            line = kind == "line" or kind == "gpuline"
            if line and self.whole_line_op(i, t, f):
                i += 1
                continue
            if self.pending:
                self.flush_ops()
            i = self.line(i, t, f) if line else self.token(i, t, f)
        return self.finish()

    # -- output ------------------------------------------------------------------------------

    def flush(self) -> None:
        """Emit the BODY run merged so far."""
        if self.body_start >= 0:
            b = BodyToken("BODY", "")
            b.start_pos = self.body_start
            b.end_pos = self.body_end
            b.src = self.text
            self.out.append(b)
            self.body_start = -1

    def extend_body(self, start: int, end: int) -> None:
        if self.body_start < 0:
            self.body_start = start
        self.body_end = end

    def flush_ops(self) -> None:
        """Emit the packed whole-line ops as one OPS token."""
        pending = self.pending
        t = OpsToken("OPS", "")
        t.start_pos = pending[0][0].start
        t.end_pos = pending[-1][0].end
        t.entries = list(pending)
        t.src = self.text
        self.out.append(t)
        pending.clear()

    def finish(self) -> list[Token]:
        """The end of the unit: every region closed, every `(` too."""
        self.flush()
        if self.pending:
            self.flush_ops()
        raw = self.raw
        for f in reversed(self.frames):
            if f.attr_depth:  # a `{` read as a dictionary's that nothing closed
                raise PrelexError("expected '}' to match this '{'", f.attr_open, f.attr_open + 1)
            if f.angle:
                raise _unclosed_angle(f)
        if len(self.frames) > 1:
            pos = raw[-1].end if raw else 0
            raise PrelexError("expected '}' to close the region", pos, pos)
        if self.frames[-1].paren:
            raise PrelexError("expected ')'", raw[-1].end, raw[-1].end)
        return self.out

    def splice_tokens(self, i: int, start: int, end: int) -> int:
        """Cut the line item raw[i] (text[start:end]) into raw tokens; their first index."""
        return _splice(self.raw, i, tokenize(self.text, start, end), self.known)

    # -- rules -------------------------------------------------------------------------------

    def op_ends_after_region(self, i: int, t, f: _Frame) -> None:
        """MLIR's parser goes on with an op's format after its region (`} else {`, `}` then
        `do {` on the next line); the op ends where something new starts
        (`_ends_after_region`)."""
        f.after_region = False
        if (t.line_start and f.paren == 0 and f.attr_depth == 0 and not f.label
                and _ends_after_region(self.text, self.raw, i, f, self.known)):
            f.in_op = False

    def whole_line_op(self, i: int, t, f: _Frame) -> bool:
        """A whole op on its line, followed by the start of another op (or the end of its
        block): MLIR has no statement separator, but here the next line says the op ended.
        Collected into one OPS token with its neighbours: the LALR parser takes the run at
        once."""
        qualified = _packable(self.raw, i, f)
        if qualified is None:
            return False
        self.flush()
        self.pending.append((t, qualified))
        f.begin(qualified)
        return True

    def unclosed_paren(self, i: int, f: _Frame) -> None:
        """A line that can only start an op while a `(` of the op before is still open: that
        op lacks its `)`, as MLIR reports it (`expected ')'`) at the end of the line before.
        An exactly modeled GPU op ends here instead (the grammar names the missing token)."""
        if f.mode != _FINE:
            self.flush()
            prev = self.raw[i - 1]
            raise PrelexError("expected ')'", prev.end, prev.end)
        f.paren = 0

    def line(self, i: int, t, f: _Frame) -> int:
        """A line item (LineToken or GpuLineToken) that is not a whole op: the start of an op
        whose operands go on, an op to read token by token, or a continuation line."""
        if f.paren and f.attr_depth == 0 and not f.label and (
                t.kind == "gpuline" or _midline_op(t.text, f)
                or (t.results_start >= 0 and "." in t.text and t.text in KNOWN_OPS)):
            self.unclosed_paren(i, f)
        if (f.paren == 0 and f.attr_depth == 0 and not f.label
                and (not f.in_op or not _continues(self.raw, i))):
            started = self.op_from_line(i, t, f)
            if started is not None:
                return started
        if f.mode != _BODY or f.label or f.attr_depth or f.angle:
            return self.splice_tokens(i, t.start, t.end)
        # A continuation line of the current op.
        self.extend_body(t.start, t.end)
        f.paren += t.depth
        if f.paren < 0:
            self.flush()
            raise PrelexError("unexpected ')'", t.start, t.end)
        return i + 1

    def op_from_line(self, i: int, t, f: _Frame) -> int | None:
        """An op starts on the line where the op before has ended: its result list and name
        (MLIR resolves a bare name through the default dialect, and after a result list falls
        back to `<dialect>.<name>`). None when the line continues the op before."""
        text = self.text
        if t.kind == "gpuline":
            if _goes_on(self.text, self.raw, i + 1, f, self.known):
                # Its format matched up to the line's end, but MLIR reads on over the line
                # break (`%e = gpu.wait` then `async`): token by token.
                return self.splice_tokens(i, t.start, t.end)
            self.flush()
            _emit_gpu_line(text, t, f, self.out)
            return i + 1
        if t.results_start >= 0:
            self.flush()
            self.out.append(_results(text, t.results_start, t.results_end))
            qualified = t.text if "." in t.text else (_resolve(t.text, f)
                                                      or _fallback_name(t.text, f))
        elif (qualified := _resolve(t.text, f)) is not None:
            self.flush()
        else:
            if not f.in_op:
                self.flush()
                raise _not_an_op(t.text, t.name_start, t.name_end)
            return None
        _emit_name(t, qualified, f, self.out)
        if f.mode != _BODY:
            # A GPU op that did not match its format: token by token.
            return self.splice_tokens(i, t.name_end, t.end)
        if t.end > t.name_end:
            if self.body_start < 0:
                self.body_start = _skip_blanks(text, t.name_end)
            self.body_end = t.end
        f.paren += t.depth
        return i + 1

    def token(self, i: int, t, f: _Frame) -> int:
        """A raw token: lexical errors, then the rules of op structure in order."""
        kind = t.kind
        if kind == "err":
            self.flush()
            raise PrelexError(f"unexpected character '{t.text}'", t.start, t.end)
        if kind == "badstring":
            self.flush()
            raise PrelexError("expected '\"' in string literal", t.start, t.end)
        raw = self.raw
        if (f.paren and f.attr_depth == 0 and not f.label and t.line_start
                and _strong_start(raw, i, f, self.known)):
            self.unclosed_paren(i, f)
        if f.paren == 0 and f.attr_depth == 0 and not f.label:
            started = self.op_start(i, t, f)
            if started is not None:
                return started
        if f.label:
            return self.block_label_args(i, t, f)
        if f.mode == _DEPS:
            if self.async_clause_continues(t, f):
                return self.async_clause(i, t, f)
            f.mode = _BODY
        if f.mode == _FINE and not (kind == "}" and f.paren == 0):
            return _fine_token(self.text, raw, i, f, self.out)
        return self.body_token(i, t, f)

    def op_start(self, i: int, t, f: _Frame) -> int | None:
        """Where the op before has ended (first token of a line or of a region, or a name MLIR
        lets start a second op on a line), a `}` closes the region and any op start (results,
        name, generic name, block label, alias, metadata) begins a new op."""
        raw = self.raw
        starts = not f.in_op or ((t.line_start or _midline_start(raw, i, f, self.known))
                                 and not _continues(raw, i))
        if not starts:
            return None
        if t.kind == "}":
            self.flush()
            _close_region(self.frames, t, self.out)
            return i + 1
        started = _start_op(self.text, raw, i, f, self.out, self.flush, self.known)
        if started is None and not f.in_op:
            self.flush()
            raise _not_an_op(t.text, t.start, t.end)
        return started

    def block_label_args(self, i: int, t, f: _Frame) -> int:
        """`^bb0(%a : i32, ...)` then `:`: the arguments are one BODY run, the `:` ends the
        label (MLIR's parseBlockArgumentList)."""
        if t.kind == ":" and f.paren == 0:
            self.flush()
            self.out.append(Token("COLON", ":", t.start, t.end))
            f.label = False
            f.in_op = False
            return i + 1
        _count_paren(f, t)
        self.extend_body(t.start, t.end)
        return i + 1

    @staticmethod
    def async_clause_continues(t, f: _Frame) -> bool:
        """custom<AsyncDependencies> of the other AsyncOpInterface ops: `async`? `[...]`?"""
        return bool(f.paren) or (t.kind == "[" and not f.deps_seen) or (
            t.kind == "bare" and t.text == "async" and not f.deps_seen)

    def async_clause(self, i: int, t, f: _Frame) -> int:
        """A token of the async clause, emitted as the grammar's async_deps terminals."""
        if t.kind == "[":
            f.deps_seen = True
        j = _fine_token(self.text, self.raw, i, f, self.out)
        if t.kind == "]" and not f.paren:
            f.mode = _BODY
        return j

    def named_arguments(self, brace: int) -> bool:
        """Does the op whose region opens at `brace` name arguments (`%a: i32`) before it? Its
        entry block then has them, and a body `{` `}` is a block (function_interface_impl)."""
        for tok in reversed(self.out):
            if tok.type == "OP_NAME":
                return "%" in self.text[tok.end_pos:brace]
        return False

    def body_token(self, i: int, t, f: _Frame) -> int:
        """A token of an op in custom syntax we cannot know: merged into its BODY run, except
        a `{` that opens a region (braces.opens_region decides) and the `}` that closes one."""
        kind = t.kind
        if kind == "{":
            if i + 1 < len(self.raw) and self.raw[i + 1].kind in _NO_BRACE_START:
                # Neither an op (a region) nor an entry (a dictionary) starts so.
                self.flush()
                u = self.raw[i + 1]
                raise PrelexError(f"expected an operation or an attribute name, found "
                                  f"'{u.text[:40]}'", u.start, u.end)
            if (f.attr_depth or not _opens_region(self.text, self.raw, i, f)
                    or (f.op_name in SHORT_FORM_OPS and self.body_start < 0
                        and self.out[-1].type == "OP_NAME")):
                if not f.attr_depth:
                    f.attr_open = t.start
                f.attr_depth += 1  # a brace of an attribute dictionary: part of the body
            else:
                self.flush()
                if (f.op_name in _FUNCTION_OPS and not f.generic and i + 1 < len(self.raw)
                        and self.raw[i + 1].kind == "}" and not self.named_arguments(t.start)):
                    raise PrelexError("expected non-empty function body", t.start, t.end)
                self.out.append(Token("LBRACE_REGION", "{", t.start, t.end))
                # MLIR pushes the owner's OpAsmOpInterface::getDefaultDialect(), "" for others.
                self.frames.append(_Frame(DEFAULT_DIALECT.get(f.op_name or ""), False))
                return i + 1
        elif kind == "}":
            if f.attr_depth:
                f.attr_depth -= 1  # closes an attribute dictionary: part of the body
                if f.attr_paren and not f.attr_depth:
                    self.flush()
                    raise PrelexError("expected ')' or ']' before '}'", t.start, t.end)
            else:
                self.flush()
                if f.paren:
                    raise PrelexError("expected ')' before '}'", t.start, t.end)
                _close_region(self.frames, t, self.out)
                return i + 1
        if f.attr_depth == 0:
            _count_paren(f, t)
        elif kind == "(" or kind == "[":
            f.attr_paren += 1
        elif kind == ")" or kind == "]":
            f.attr_paren -= 1
        self.extend_body(t.start, t.end)
        return i + 1


def _starts_op_line(u, f: _Frame) -> bool:
    """Does the line item `u` start an op in frame `f`?"""
    return (u.kind == "gpuline" or u.results_start >= 0 or "." in u.text
            or _resolve(u.text, f) is not None)


def _ends_after_region(text: str, raw: list, i: int, f: _Frame, known: _ResultRun) -> bool:
    """After the `}` of an op's region, does the line starting with raw[i] begin something new?

    MLIR's parser goes on with the op's format after a region (`else {`, `do {`, `case 2 {`,
    `{attr}`, `: type`, `loc(...)`, on the brace's line or the next). Those lines start with
    punctuation, `loc`, or a keyword that introduces another region (`_goes_on`); anything
    else starts the next op (or block label), or closes the enclosing region, as MLIR reads it
    after a format that ends with its region (`func.func`'s)."""
    t = raw[i]
    if t.text == "loc" and t.kind in ("line", "bare"):
        return False  # the op's trailing location, which MLIR reads after any format
    if not _goes_on(text, raw, i, f, known):
        return True
    # A word no op starts with: a keyword of the op's format if a region follows it.
    return t.kind in ("line", "bare") and not _keyword_before_region(text, raw, i, f, known)


def _keyword_before_region(text: str, raw: list, i: int, f: _Frame, known: _ResultRun) -> bool:
    """Does the bare word raw[i] open a region (`else {`, `case 2 {`) before it closes anything
    or something new starts (MLIR reads on over line breaks: `else` and `{` may be on lines of
    their own)?"""
    for j in range(i + 1, len(raw)):
        u = raw[j]
        if u.kind == "{":
            return True
        if u.kind == "}" or (u.line_start and not _goes_on(text, raw, j, f, known)):
            return False
    return False


def _goes_on(text: str, raw: list, j: int, f: _Frame, known: _ResultRun) -> bool:
    """Does the item raw[j], first on its line, go on with the op before it? MLIR ignores line
    breaks between an op's tokens: a line goes on with the op unless it starts something
    (a result list and an op name, an op name, a generic op `"d.op"(`, a block label, a `}`,
    metadata, an alias), as MLIR's parser finds it there."""
    if j >= len(raw):
        return False
    u = raw[j]
    kind = u.kind
    if kind == "line" or kind == "gpuline":
        return not _starts_op_line(u, f)
    if kind == "caret":
        return not _label_start(text, raw, j)
    if kind == "}" or kind == "meta":
        return False
    if kind == "value":
        eq = _results_end(raw, j, known)
        return eq is None or not _names_op(raw, eq + 1)
    if kind == "bare":
        return _resolve(u.text, f) is None
    if kind == "string":
        return not _generic_start(raw, j, f)
    if kind in ("hash", "bang"):
        return not (f.top and j + 1 < len(raw) and raw[j + 1].kind == "=")
    return True


def _label_start(text: str, raw: list, i: int) -> bool:
    """Is the caret raw[i] a block label, `^bb1:` or `^bb1(%a : i32):`? Else it is a successor
    of the op before (`cf.br` then `^bb1(%c : i1)` on a line of its own). MLIR's block label
    is its name, an optional argument list, and a `:`. A line item inside the list (a line
    after one that ended in a type's `:`) is read token by token where the list may close in
    it. The scan stops at the next caret (no argument list holds one), so each token is read
    once or twice; an unclosed list is taken for a label and reported as one."""
    n = len(raw)
    if i + 1 >= n:
        return False
    kind = raw[i + 1].kind
    if kind == ":":
        return True
    if kind != "(":
        return False
    depth = 0
    for j in range(i + 1, n):
        u = raw[j]
        k = u.kind
        if k == "line" or k == "gpuline":
            if depth + u.depth > 0:
                depth += u.depth
                continue
            inner = tokenize(text, u.start, u.end)
            closed = _closing(inner, depth)
            if closed is not None:
                after = inner[closed + 1:closed + 2] or raw[j + 1:j + 2]
                return bool(after) and after[0].kind == ":"
            depth += u.depth
        elif k == "(":
            depth += 1
        elif k == ")":
            depth -= 1
            if depth == 0:
                return j + 1 < n and raw[j + 1].kind == ":"
        elif k == "caret":
            break
    return True


def _closing(tokens: list, depth: int) -> int | None:
    """The index of the `)` in `tokens` that brings `depth` open parentheses to 0, if any."""
    for j, u in enumerate(tokens):
        if u.kind == "(":
            depth += 1
        elif u.kind == ")":
            depth -= 1
            if depth == 0:
                return j
    return None


def _names_op(raw: list, j: int) -> bool:
    """Is raw[j], right after a result list's `=`, an op name (bare, or a generic `"d.op"(`)?"""
    if j >= len(raw):
        return True  # the grammar reports the missing name
    k = raw[j].kind
    return k == "bare" or k == "line" or (
        k == "string" and j + 1 < len(raw) and raw[j + 1].kind == "(")


def _generic_start(raw: list, i: int, f: _Frame) -> bool:
    """Is the string raw[i] the name of an op in generic form, `"dialect.op"(%a, %b)`? Inside
    an op that may go on, a string is one of its operands unless it has a dialect prefix and
    a list of values only follows (MLIR's generic-operation): `emitc.call_opaque` then
    `"expf" (%6)`, `pdl.operation` then `"kernel.GD" (%a : !pdl.value)` go on with the op."""
    n = len(raw)
    if not (i + 1 < n and raw[i + 1].kind == "("):
        return False
    if not f.in_op:
        return True
    if "." not in raw[i].text:
        return False
    j = i + 2
    while j < n and (raw[j].kind == "value" or raw[j].kind == ","):
        j += 1
    return j < n and raw[j].kind == ")"


def _packable(raw: list, i: int, f: _Frame) -> str | None:
    """The qualified name of the op on line item raw[i] if it is a whole op on its line whose
    end is certain (the next item starts another op or closes the block); else None."""
    t = raw[i]
    if (f.paren or f.attr_depth or f.label or t.depth or t.cont
            or (f.in_op and _continues(raw, i))):
        return None
    # Each field read once: a token's field is a lookup through its class (31k ops at 50k
    # lines read these).
    kind, name = t.kind, t.text
    if kind == "gpuline":
        qualified = name
    elif "." in name:
        qualified = name
    elif t.results_start >= 0:
        qualified = _resolve(name, f) or _fallback_name(name, f)
    else:
        qualified = _resolve(name, f)
        if qualified is None:
            return None
    if kind == "line" and (qualified in EXACT_GPU_OPS or qualified in _ASYNC_OTHER):
        return None
    if i + 1 < len(raw):
        u = raw[i + 1]
        k = u.kind
        if k == "line" or k == "gpuline":
            if not _starts_op_line(u, f):
                return None
        elif not (k == "}" and u.line_start):
            return None
    return qualified


def _continues(raw: list, i: int) -> bool:
    """Does the token before raw[i] leave the op unfinished (a trailing `,` `(` `=` `->` ...)?"""
    if i == 0:
        return False
    p = raw[i - 1]
    return p.cont if p.kind == "line" else p.kind in _CONTINUATION


_BLANK_RE = regex_cache.compile(r"[ \t\r\n]*")


def _skip_blanks(text: str, pos: int) -> int:
    return _BLANK_RE.match(text, pos).end()


def result_values(text: str, start: int, end: int) -> list[ValueRef]:
    """The results of the result list text[start:end] (`%a, %b:2`, as the lexer's RESULT_LIST
    spans it)."""
    # One result, no `:N` (most ops): read by a loop the build makes C (two str.find calls
    # with bounds parse their arguments as Python calls: a fifth of this function).
    for k in range(start, end):
        c = text[k]
        if c == "," or c == ":":
            break
    else:
        return [ValueRef(text[start:end], start, end)]
    values = []
    for m in RESULT_RE.finditer(text, start, end):
        v = ValueRef(m.group(1), m.start(), m.end(1))
        if m.group(2):
            v.count = int(m.group(2))
            v.end = m.end()
        values.append(v)
    return values


def _results(text: str | None, start: int, end: int, raw: list | None = None) -> ResultsToken:
    """The RESULTS token of `%a, %b:2` (from the text, or from raw tokens)."""
    if raw is None:
        values = result_values(text, start, end)
    else:
        values = []
        for r in raw:
            if r.kind == "value":
                values.append(ValueRef(r.text, r.start, r.end))
            elif r.kind == "number":
                values[-1].count = int(r.text)
                values[-1].end = r.end
    t = ResultsToken("RESULTS", "")
    t.start_pos = start
    t.end_pos = end
    t.values = values
    return t


def _emit_gpu_line(text: str, t, f: _Frame, out: list) -> None:
    """An exactly modeled GPU op whose text matched its format: name, async clause, operands."""
    if t.results_start >= 0:
        out.append(_results(text, t.results_start, t.results_end))
    out.append(Token(EXACT_GPU_OPS[t.text], t.text, t.name_start, t.name_end))
    if t.async_start >= 0:
        out.append(Token("KW_ASYNC", "async", t.async_start, t.async_start + 5))
    if t.deps_open >= 0:
        out.append(Token("LSQB", "[", t.deps_open, t.deps_open + 1))
        first = True
        for m in VALUE_RE.finditer(text, t.deps_open + 1, t.deps_close - 1):
            if not first:
                out.append(Token("COMMA", ",", m.start(), m.start()))
            out.append(Token("VALUE", m.group(), m.start(), m.end()))
            first = False
        out.append(Token("RSQB", "]", t.deps_close - 1, t.deps_close))
    if t.end > t.operands_start or t.text != "gpu.wait":
        b = BodyToken("CHECKED_OPERANDS", "")
        b.start_pos = _skip_blanks(text, t.operands_start)
        b.end_pos = t.end
        b.src = text
        out.append(b)
    f.begin(t.text)


class _ResultRun:
    """The run of `%a, %b:2, ...` that `_results_end` read last, raw[lo:hi], and its answer.

    Every value token inside the run is one of its values, and the run read from there ends
    where it ended, with the same answer: a long run (operands one per line, or after an op
    name on a line of raw tokens) is read once, not once from each of its values."""

    __slots__ = ("lo", "hi", "end")

    def __init__(self):
        self.lo = self.hi = 0
        self.end: int | None = None


def _results_end(raw: list[RawToken], i: int, known: _ResultRun) -> int | None:
    """If raw[i:] is `%a(:N)?(, %b(:N)?)* =`, the index of `=`; else None."""
    n = len(raw)
    if i >= n or raw[i].kind != "value" or "#" in raw[i].text:
        return None
    if known.lo <= i < known.hi:
        return known.end
    start = i
    while True:
        if i >= n or raw[i].kind != "value" or "#" in raw[i].text:
            end = None
            break
        i += 1
        if i + 1 < n and raw[i].kind == ":" and raw[i + 1].kind == "number":
            i += 2
        if i < n and raw[i].kind == ",":
            i += 1
            continue
        end = i if i < n and raw[i].kind == "=" else None
        break
    known.lo, known.hi, known.end = start, i, end
    return end


def _splice(raw: list, i: int, tokens: list, known: _ResultRun) -> int:
    """Put `tokens` in the place of the line item raw[i]; the index of the first of them.

    Of the items before raw[i], only raw[i - 1] is looked at again (and raw[0], by the parser
    after an error): when there are enough items between them, the tokens take their places,
    with raw[i - 1] moved in front of them. Inserting the tokens would move every item after
    them, and a long unit that is cut into raw tokens line by line would cost its square."""
    if not tokens:
        return i + 1  # nothing to read in it (`gpu.wait` alone): the item itself stays
    known.hi = 0  # raw changes: what was read of it is not known any more
    j = i + 1 - len(tokens)
    if j >= 2:
        raw[j - 1] = raw[i - 1]
        raw[j:i + 1] = tokens
        return j
    raw[i:i + 1] = tokens
    return i


def _resolve(text: str, f: _Frame) -> str | None:
    """Fully qualified name of a bare op name at an op position, or None if it is no op."""
    if "." in text:
        return text
    return qualify_op_name(text, f.dialect)


def _start_op(text: str, raw, i, f: _Frame, out: list, flush, known: _ResultRun) -> int | None:
    """Emit the start of the op at raw[i] (results and name); return the next index or None."""
    t = raw[i]
    kind = t.kind
    n = len(raw)
    j = i
    if kind == "value":
        eq = _results_end(raw, i, known)
        if eq is None or (f.in_op and not _names_op(raw, eq + 1)):
            return None  # an operand (`scf.for` then `%i = %c0 to ...` on the next line)
        flush()
        out.append(_results(None, raw[i].start, raw[eq - 1].end, raw[i:eq]))
        j = eq + 1
        f.begin()
        if j >= n:
            return j
        name = raw[j]
        if name.kind == "bare":
            _emit_name(name, name.text if "." in name.text else _resolve(name.text, f) or
                       _fallback_name(name.text, f), f, out)
            return j + 1
        if name.kind == "string" and j + 1 < n and raw[j + 1].kind == "(":
            _emit_generic(name, f, out)
            return j + 1
        return j  # the grammar reports the missing op name
    if kind == "bare":
        qualified = _resolve(t.text, f)
        if qualified is None:
            return None
        flush()
        _emit_name(t, qualified, f, out)
        return i + 1
    if kind == "string" and _generic_start(raw, i, f):
        flush()
        _emit_generic(t, f, out)
        return i + 1
    if kind == "caret" and not f.top and _label_start(text, raw, i):
        flush()
        out.append(Token("BLOCK_LABEL", t.text, t.start, t.end))
        f.begin(label=True)
        return i + 1
    if kind in ("hash", "bang") and f.top and i + 1 < n and raw[i + 1].kind == "=":
        flush()
        out.append(Token("ALIAS_DEF", t.text, t.start, t.end))
        out.append(Token("EQUAL", "=", raw[i + 1].start, raw[i + 1].end))
        f.begin()
        return i + 2
    if kind == "meta" and f.top:
        flush()
        out.append(Token("META", t.text, t.start, t.end))
        f.in_op = False
        return i + 1
    return None


def _fallback_name(text: str, f: _Frame) -> str:
    """Name of an unknown bare op after a result list: the default dialect's, as MLIR tries."""
    return f"{f.dialect}.{text}" if f.dialect else text


def _emit_name(t: RawToken, qualified: str, f: _Frame, out: list) -> None:
    exact = EXACT_GPU_OPS.get(qualified)
    if exact is not None:
        type_, mode = exact, _FINE
    elif qualified in _ASYNC_OTHER:
        type_, mode = "GPU_ASYNC", _DEPS
    else:
        type_, mode = "OP_NAME", _BODY
    if t.kind == "line":
        out.append(Token(type_, qualified, t.name_start, t.name_end))
    else:
        out.append(Token(type_, qualified, t.start, t.end))
    f.begin(qualified, mode)


def _emit_generic(t: RawToken, f: _Frame, out: list) -> None:
    out.append(Token("GENERIC_NAME", t.text[1:-1], t.start, t.end))
    f.begin(t.text[1:-1], generic=True)


def _fine_token(text: str, raw, i: int, f: _Frame, out: list) -> int:
    """Emit raw[i] of an exactly modeled GPU op; return the next index."""
    t = raw[i]
    kind = t.kind
    if kind == "value":
        out.append(Token("VALUE", t.text, t.start, t.end))
    elif kind == "symbol":
        out.append(Token("SYMBOL", t.text, t.start, t.end))
    elif kind == "bare":
        merged = _merge_launch_part(text, raw, i)
        if merged is not None:
            out.append(merged[0])
            return merged[1]
        if t.text == "loc" and i + 1 < len(raw) and raw[i + 1].kind == "(":
            j = _matching(raw, i + 1, "(", ")")
            out.append(Token("LOC", "loc", t.start, raw[j].end))
            return j + 1
        kw = GPU_KEYWORDS.get(t.text)
        out.append(Token(kw or "TYPE", t.text, t.start, t.end))
    elif kind in ("blob", "bang"):
        out.append(Token("TYPE", t.text, t.start, t.end))
    elif kind == "{":
        j = _matching(raw, i, "{", "}")
        out.append(Token("ATTR_DICT", "{", t.start, raw[j].end))
        return j + 1
    elif kind in _FINE_PUNCT:
        _count_paren(f, t)
        out.append(Token(_FINE_PUNCT[kind], t.text, t.start, t.end))
    else:
        # numbers, strings, `#attr`, `->`, `}`: no GPU format here takes them.
        out.append(Token("BODY", t.text, t.start, t.end))
    return i + 1


_DIMS_SHAPE = ("in", "(", "value", ",", "value", ",", "value", ")")
_DIMS_TERMINALS = {"blocks": "BLOCKS_DIMS", "threads": "THREADS_DIMS", "clusters": "CLUSTERS_DIMS"}


def _merge_launch_part(text: str, raw, i: int):
    """`blocks in (%x, %y, %z)` or `args(%a : t, ...)` of gpu.launch_func as one token.

    The launch configuration is most of a launch_func's tokens and none of it matters to the
    rewrite; checking its shape here, at the token level, keeps the LALR parser's work per op
    small. Returns (token, next index) or None when the shape does not match (the grammar then
    reports the first token that is wrong)."""
    t = raw[i]
    n = len(raw)
    terminal = _DIMS_TERMINALS.get(t.text)
    if terminal is not None:
        for k, want in enumerate(_DIMS_SHAPE, 1):
            r = raw[i + k] if i + k < n else None
            if r is None or (r.kind != want if want in ("value", "(", ")", ",") else r.text != want):
                return None
        end = i + len(_DIMS_SHAPE)
    elif t.text == "args" and i + 1 < n and raw[i + 1].kind == "(":
        terminal = "KERNEL_ARGS"
        j = i + 2
        if j < n and raw[j].kind == ")":
            end = j
        else:
            while True:  # %v : type (, %v : type)*
                if not (j + 2 < n and raw[j].kind == "value" and raw[j + 1].kind == ":"
                        and raw[j + 2].kind in ("blob", "bare", "bang")):
                    return None
                j += 3
                if j < n and raw[j].kind == ",":
                    j += 1
                    continue
                if j < n and raw[j].kind == ")":
                    end = j
                    break
                return None
    else:
        return None
    tok = BodyToken(terminal, t.text)
    tok.start_pos = t.start
    tok.end_pos = raw[end].end
    tok.src = text
    return tok, end + 1


def _matching(raw, i: int, open_: str, close: str) -> int:
    depth = 0
    for j in range(i, len(raw)):
        k = raw[j].kind
        if k == open_:
            depth += 1
        elif k == close:
            depth -= 1
            if depth == 0:
                return j
    t = raw[i]
    raise PrelexError(f"expected '{close}' to match this '{open_}'", t.start, t.end)


def _opens_region(text: str, raw, i: int, f: _Frame) -> bool:
    """Does the `{` at raw[i] (in a BODY run) open a region? `braces.opens_region` decides;
    the stand-in `}` of a container op's body parsed apart (CONTAINER_CLOSE) closes a region."""
    if i + 1 < len(raw) and raw[i + 1].kind == "}" and raw[i + 1].text == CONTAINER_CLOSE:
        return True
    dialect = DEFAULT_DIALECT.get(f.op_name or "")
    resolve = _RESOLVERS.get(dialect)
    if resolve is None:
        resolve = _RESOLVERS[dialect] = _resolver(dialect)
    return opens_region(text, raw[i].start, f.generic, f.paren > 0, resolve)


def _resolver(dialect: str | None):
    return lambda name: qualify_op_name(name, dialect)


# A resolver per default dialect (DEFAULT_DIALECT's values: a few), not a closure per brace.
_RESOLVERS: dict = {}


def _count_paren(f: _Frame, t) -> None:
    """Track `(`/`[` depth inside the current op; a stray closer is an error at itself. A `<`
    outside a type or attribute (properties, `<{...}>`) must be closed before the op ends."""
    kind = t.kind
    if kind == "<":
        if not f.angle:
            f.angle_at = t.start
        f.angle += 1
    elif kind == ">":
        f.angle -= f.angle > 0
    elif kind == "(" or kind == "[":
        f.paren += 1
    elif kind == ")" or kind == "]":
        f.paren -= 1
        if f.paren < 0:
            raise PrelexError(f"unexpected '{t.text}'", t.start, t.end)


def _unclosed_angle(f: _Frame) -> PrelexError:
    return PrelexError("expected '>' to match this '<'", f.angle_at, f.angle_at + 1)


def _not_an_op(text: str, start: int, end: int) -> PrelexError:
    """Where an op must start and none does (MLIR's wording for an unknown bare name)."""
    if text[:1].isalpha() or text[:1] == "_":
        return PrelexError(f"custom op '{text}' is unknown", start, end)
    return PrelexError(f"expected an operation, found '{text[:40]}'", start, end)


def _close_region(frames: list[_Frame], t, out: list) -> None:
    """The `}` closing the innermost region (none is open at a unit's top level)."""
    if frames[-1].top:
        raise PrelexError("unexpected '}'", t.start, t.end)
    if frames[-1].angle:
        raise _unclosed_angle(frames[-1])
    out.append(Token("RBRACE", "}", t.start, t.end))
    frames.pop()
    frames[-1].after_region = True


def _strong_start(raw: list, i: int, f: _Frame, known: _ResultRun) -> bool:
    """raw[i] can only be the start of an op: `%r = dialect.op`, a known dotted op name, or a
    bare name that resolves to a terminator (`return`)."""
    t = raw[i]
    if t.kind == "bare":
        return _midline_op(t.text, f)
    if t.kind == "value":
        eq = _results_end(raw, i, known)
        if eq is None or eq + 1 >= len(raw):
            return False
        name = raw[eq + 1]
        return name.kind == "bare" and "." in name.text and name.text in KNOWN_OPS
    return False


def _midline_start(raw: list, i: int, f: _Frame, known: _ResultRun) -> bool:
    """An op that starts in the middle of a line (MLIR allows several ops on one line)."""
    t = raw[i]
    if t.kind == "bare":
        return _midline_op(t.text, f)
    return t.kind == "value" and _strong_start(raw, i, f, known)


def _midline_op(text: str, f: _Frame) -> bool:
    """MLIR allows several ops on one line: a known dotted op name, or a bare name that
    resolves to a terminator (`... : memref<4xf32> return }`), starts one there too."""
    if "." in text:
        return text in KNOWN_OPS
    qualified = qualify_op_name(text, f.dialect)
    return qualified is not None and qualified in TERMINATOR_OPS


def qualify_op_name(text: str, dialect: str | None) -> str | None:
    """A bare op name at an op position, resolved as MLIR's parser does: the name itself if
    an op has it, else `<default dialect>.<name>`; None if neither is a known op."""
    if text in KNOWN_OPS:
        return text
    if dialect:
        qualified = f"{dialect}.{text}"
        if qualified in KNOWN_OPS:
            return qualified
    return None


_ASYNC_OTHER = frozenset(ASYNC_INTERFACE_OPS) - set(EXACT_GPU_OPS)
