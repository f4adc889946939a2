"""Syntax layer: parse MLIR text into the IR of `ir.py`, one unit at a time.

`parse_document(text)` splits the text into `// -----` chunks and units (top-level ops and the
children of modules, see `lexer.split_units`), walked by `iter_units`; each leaf unit's raw
tokens (`lexer.py`) go through the pre-lexer (`prelex.py`) and are read top-down by
`_PlainParser` when their stream is plain (all but a few units of real files: ops in custom
form, packed lines, generic ops, regions, block labels); a unit of any other shape, and every
syntax error, goes to Lark's LALR(1) parser over the grammar (`grammar/mlir.lark`). Both build
IR objects with the same callbacks (`_Builder`; no parse tree is kept). A syntax error is
reported at the offending token and costs only its own unit.

This is the only module that drives Lark. It must not import pygls, lsprotocol or the analysis.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, NamedTuple

import gpu_async_lsp.syntax.fields as tf
from gpu_async_lsp import regex_cache
from gpu_async_lsp.op_tables import DEFAULT_DIALECT, KNOWN_OPS, SYMBOL_OPS, is_symbol_op
from gpu_async_lsp.syntax import gpu_formats, refs
from gpu_async_lsp.syntax.aliases import undefined_aliases
from gpu_async_lsp.syntax.braces import OP_WORDS
from gpu_async_lsp.syntax.ir import (
    Alias,
    Block,
    Chunk,
    Document,
    GpuSyntax,
    Op,
    Region,
    SymbolRef,
    SyntaxIssue,
    ValueRef,
)
from gpu_async_lsp.syntax.lexer import (
    CONTAINER_NAME_RE,
    RawToken,
    Unit,
    split_chunks,
    split_units,
    tokenize,
    tokenize_lines,
)
from gpu_async_lsp.syntax.patterns import SSA_NAME, SYMBOL_NAME
from gpu_async_lsp.syntax.prelex import (
    CONTAINER_CLOSE,
    BodyToken,
    OpsToken,
    PrelexError,
    ResultsToken,
    Token,
    prelex,
    result_values,
    whole_line_region,
)

if TYPE_CHECKING:
    from lark import Lark

TOP_LEVEL_DIALECT = "builtin"  # MLIR's parser starts with `builtin` as the default dialect


def grammar_text() -> str:
    """grammar/mlir.lark (from an installed wheel or from a source checkout), with the rules of
    the GPU ops modeled exactly (gpu_formats.FORMATS) added. Read as a file next to the
    package; importlib.resources (21 ms of every process start to import) only for a
    package that is not on disk (a zip)."""
    from pathlib import Path  # here: only a process that builds the parser needs it

    import gpu_async_lsp  # its folder, not this module's: a compiled build lies elsewhere

    here = Path(gpu_async_lsp.__file__).resolve().parent
    for path in (here / "grammar" / "mlir.lark", here.parent / "grammar" / "mlir.lark"):
        if path.is_file():
            text = path.read_text("utf-8")
            break
    else:
        from importlib import resources

        text = resources.files("gpu_async_lsp").joinpath("grammar/mlir.lark").read_text("utf-8")
    return text + "\n" + gpu_formats.grammar_rules()


_TERMINAL_WORDS = {
    "RESULTS": "a result list", "CHECKED_OPERANDS": "operands", "COLON": "':'", "COMMA": "','",
    "EQUAL": "'='", "OP_NAME": "an operation name", "GENERIC_NAME": "an operation name",
    "BODY": "an operand", "LBRACE_REGION": "'{'", "RBRACE": "'}'",
    "BLOCK_LABEL": "a block label", "ALIAS_DEF": "an alias", "META": "metadata",
    "KW_ASYNC": "'async'", "KW_HOST_SHARED": "'host_shared'",
    "BLOCKS_DIMS": "'blocks in (%x, %y, %z)'", "THREADS_DIMS": "'threads in (%x, %y, %z)'",
    "CLUSTERS_DIMS": "'clusters in (%x, %y, %z)'", "KERNEL_ARGS": "'args(%v : type, ...)'",
    "KW_DYNAMIC_SHARED_MEMORY_SIZE": "'dynamic_shared_memory_size'", "VALUE": "an SSA value",
    "SYMBOL": "a symbol reference", "TYPE": "a type", "LPAR": "'('", "RPAR": "')'",
    "LSQB": "'['", "RSQB": "']'", "LANGLE": "'<'", "RANGLE": "'>'",
    "ATTR_DICT": "an attribute dictionary", "LOC": "a location", "$END": "end of input",
}
_CLOSERS = {"RPAR", "RSQB", "RBRACE", "RANGLE"}
_OP_STARTS = {"OP_NAME", "GENERIC_NAME", "GPU_ASYNC", *gpu_formats.EXACT_GPU_OPS.values()}


def _end(x) -> int:
    if isinstance(x, Token):
        return x.end_pos
    if isinstance(x, Op):
        return x.end
    if isinstance(x, Region):
        return x.rbrace + 1
    if isinstance(x, list):
        for y in reversed(x):
            if y is not None:
                return _end(y)
    return 0


def _value(t: Token | RawToken) -> ValueRef:
    s = t.text if isinstance(t, RawToken) else str(t)
    start = t.start if isinstance(t, RawToken) else t.start_pos
    end = t.end if isinstance(t, RawToken) else t.end_pos
    name, _, idx = s.partition("#")
    return ValueRef(name, start, end, int(idx) if idx else None)


def _symbol(t: Token | RawToken) -> SymbolRef:
    s = t.text if isinstance(t, RawToken) else str(t)
    start = t.start if isinstance(t, RawToken) else t.start_pos
    end = t.end if isinstance(t, RawToken) else t.end_pos
    return SymbolRef(tuple(s.split("::")), start, end)


_WORD_RE = regex_cache.compile(r"[^\s,()\[\]{}:=]+|\S")


def _flatten(items, out: list) -> list:
    for x in items:
        if isinstance(x, list):
            _flatten(x, out)
        elif x is not None:
            out.append(x)
    return out


_DEP_RE = regex_cache.compile(rf"({SSA_NAME})(?:#(\d+))?")
_BLANKS = regex_cache.compile(r"[ \t\r\n]*")
_ONE_SYMBOL = SYMBOL_NAME
# The name an op implementing SymbolOpInterface defines: its first symbol, after keywords and
# strings (`func.func private @f`, `llvm.mlir.global internal constant @g`, `memref.global
# "private" constant @g`), never one inside `attributes {...}` (`module attributes {x = @y}`
# names no module).
_SYMBOL_DEFINITION = regex_cache.compile(
    rf'(?:(?!attributes\b)(?:[A-Za-z_][\w$.\-]*|"[^"\\\n]*")[ \t\r\n]+)*({_ONE_SYMBOL})')
# Ops these tables do not know: a symbol right after the name or a visibility keyword.
_UNKNOWN_SYMBOL_DEFINITION = regex_cache.compile(
    rf'(?:(?:public|private|nested)[ \t]+)?({_ONE_SYMBOL})')


def _defined_symbol(name: str, src: str, start: int, end: int) -> SymbolRef | None:
    """The symbol the op `name` defines, looked for in src[start:end] (the text after its
    name): ops of SymbolOpInterface (op_tables.SYMBOL_OPS) define one; other known ops only
    refer to symbols (`func.call @f`)."""
    if is_symbol_op(name):
        m = _SYMBOL_DEFINITION.match(src, start, end)
    elif name not in KNOWN_OPS:
        m = _UNKNOWN_SYMBOL_DEFINITION.match(src, start, end)
    else:
        return None
    if m is None:
        return None
    return SymbolRef(tuple(m.group(1).split("::")), m.start(1), m.end(1))


# The start of an op in custom form: its results, then its dotted name.
_OP_HEAD = regex_cache.compile(
    r"[ \t\r\n]*(?:%[^=\n]*=[ \t]*)?([A-Za-z_][\w$]*\.[\w$.]+)[ \t\r\n]+")


def head_symbol(text: str) -> tuple[str, int, SymbolRef] | None:
    """For a unit that did not parse: the op name it starts with, where that name starts, and
    the symbol the op defines, read as for a parsed op (`func.func private @f`); None when
    it defines none."""
    m = _OP_HEAD.match(text)
    if m is None:
        return None
    symbol = _defined_symbol(m.group(1), text, m.end(), len(text))
    return (m.group(1), m.start(1), symbol) if symbol is not None else None


def _expand(items: list) -> list:
    """Ops and aliases, with each OPS token replaced by the Ops of its lines."""
    if not any(isinstance(x, OpsToken) for x in items):
        return items
    out = []
    append = out.append
    for x in items:
        if isinstance(x, OpsToken):
            src = x.src
            for item, name in x.entries:  # a loop, not a generator: 28k ops at 50k lines
                append(_line_op(src, item, name))
        else:
            append(x)
    return out


def _line_op(src: str, t, name: str) -> Op:
    """The Op of one whole line (a LineToken or GpuLineToken of lexer.py). Each of the token's
    fields is read once, by index (`fields.at`: a tuple's item in C in the build, where a
    named field is a lookup through its class: 31k ops at 50k lines)."""
    name_end, end = tf.at(t, tf.NAME_END), tf.at(t, tf.END)
    results_start = tf.at(t, tf.RESULTS_START)
    op = Op(name, tf.at(t, tf.NAME_START), name_end, tf.at(t, tf.START), end)
    op.src = src
    if results_start >= 0:
        results = op.results = result_values(src, results_start, tf.at(t, tf.RESULTS_END))
        op.results_end = results[-1].end
    if tf.at(t, tf.KIND) == "gpuline":
        g = GpuSyntax()
        async_start, deps_open = tf.at(t, tf.ASYNC_START), tf.at(t, tf.DEPS_OPEN)
        if async_start >= 0:
            g.async_kw = (async_start, async_start + 5)
        if deps_open >= 0:
            deps_close = tf.at(t, tf.DEPS_CLOSE)
            g.deps_open = deps_open
            g.deps_close = deps_close
            g.deps = [ValueRef(m.group(1), m.start(), m.end(), int(m.group(2)) if m.group(2) else None)
                      for m in _DEP_RE.finditer(src, deps_open + 1, deps_close - 1)]
            op.explicit_uses = list(g.deps)
        op.gpu = g
        operands_start = tf.at(t, tf.OPERANDS_START)
        if end > operands_start:
            op.spans = ((operands_start, end),)
    elif end > name_end:
        body = name_end + 1  # most ops: one blank after the name
        if src[name_end] != " " or src[body] in " \t\r\n":
            body = _BLANKS.match(src, name_end).end()
        op.spans = ((body, end),)
        if name in SYMBOL_OPS or name not in KNOWN_OPS:  # else it defines none (one look)
            op.symbol_name = _defined_symbol(name, src, body, end)
    return op


class _Builder:
    """Lark inline callbacks: build IR objects while the LALR parser reduces (Lark calls the
    method named after each rule; a plain object, so that defining it needs no Lark)."""

    def start(self, children):
        return _expand(children)

    def alias(self, c):
        name, _, body = c
        return Alias(str(name), name.start_pos, body.end_pos)

    @staticmethod
    def _with_results(op: Op, results) -> Op:
        if results is not None:
            op.results = results.values
            op.results_end = results.values[-1].end
            op.start = results.start_pos
        return op

    def _new_op(self, c, generic=False) -> Op:
        """An op from [RESULTS?, name, (BODY | Region | GpuSyntax)*] (no placeholders)."""
        results = None
        if isinstance(c[0], ResultsToken):
            results = c[0]
            c = c[1:]
        name_tok = c[0]
        op = Op(name_tok.value, name_tok.start_pos, name_tok.end_pos, name_tok.start_pos)
        op.generic = generic
        op.end = name_tok.end_pos
        tails = c[1:]
        if tails and isinstance(tails[0], GpuSyntax):
            g = op.gpu = tails[0]
            op.explicit_uses = list(g.deps)
            # An op may end with its dependency list (`gpu.create_csr async [%t0]`).
            if g.deps_close is not None:
                op.end = g.deps_close
            elif g.async_kw is not None:
                op.end = g.async_kw[1]
            tails = tails[1:]
        elif tails and not generic and isinstance(tails[0], BodyToken):
            first = tails[0]
            op.symbol_name = _defined_symbol(op.name, first.src, first.start_pos, first.end_pos)
        spans = []
        regions = []
        for t in tails:
            if isinstance(t, Region):
                regions.append(t)
                op.end = t.rbrace + 1
            else:
                spans.append((t.start_pos, t.end_pos))
                op.src = t.src
                op.end = t.end_pos
                if generic:
                    arrow = t.src.rfind("->", t.start_pos, t.end_pos)
                    if arrow >= 0:
                        op.result_types = t.src[arrow + 2:t.end_pos]
        if spans:
            op.spans = tuple(spans)
        if regions:
            op.regions = regions
        if results is not None:
            op.results = results.values
            op.results_end = results.values[-1].end
            op.start = results.start_pos
        return op

    def custom_op(self, c):
        return self._new_op(c)

    def generic_op(self, c):
        return self._new_op(c, generic=True)

    gpu_async_op = custom_op

    def region(self, c):
        lbrace, rbrace = c[0], c[-1]
        region = Region(lbrace.start_pos, rbrace.start_pos)
        region.blocks.extend(c[1:-1])
        return region

    def entry_block(self, c):
        c = _expand(c)
        return Block(None, [], c, c[0].start, c[-1].end)

    def block(self, c):
        label = c[0]
        if c[1].type == "COLON":
            args, colon, ops = None, c[1], _expand(c[2:])
        else:
            args, colon, ops = c[1], c[2], _expand(c[3:])
        return Block(_value(label),
                     list(refs.values_in(args.src, args.start_pos, args.end_pos))
                     if args is not None else [],
                     ops, label.start_pos, ops[-1].end if ops else colon.end_pos)

    def async_deps(self, c):
        g = GpuSyntax()
        deps = []
        for t in c:
            if t is None:
                continue
            if t.type == "KW_ASYNC":
                g.async_kw = (t.start_pos, t.end_pos)
            elif t.type == "LSQB":
                g.deps_open = t.start_pos
            elif t.type == "RSQB":
                g.deps_close = t.end_pos
            elif t.type == "VALUE":
                deps.append(_value(t))
        if deps:
            g.deps = deps
        return g

    def gpu_op(self, c):
        if len(c) <= 4 and isinstance(c[-1], BodyToken) and c[-1].type == "CHECKED_OPERANDS":
            return self._new_op(c)  # the fast path: name, async clause, checked operands
        results = None
        if isinstance(c[0], ResultsToken):
            results = c[0]
            c = c[1:]
        items = _flatten(c, [])
        name = items[0]
        op = Op(name.value, name.start_pos, name.end_pos, name.start_pos)
        op.gpu = items[1]
        uses, symbols, spans = list(op.gpu.deps), [], []
        end = name.end_pos
        for t in items[2:]:
            if isinstance(t, Token):
                end = t.end_pos
                if isinstance(t, BodyToken):
                    # A merged run of text: its references are read only when asked for.
                    spans.append((t.start_pos, t.end_pos))
                    op.src = t.src
                elif t.type == "VALUE":
                    uses.append(_value(t))
                elif t.type == "SYMBOL":
                    symbols.append(_symbol(t))
        if spans:
            op.spans = tuple(spans)
        if uses:
            op.explicit_uses = uses
        if symbols:
            op.explicit_symbols = symbols
        if op.gpu.deps_close:
            end = max(end, op.gpu.deps_close)
        if op.gpu.async_kw:
            end = max(end, op.gpu.async_kw[1])
        op.end = end
        return self._with_results(op, results)

    def _list(self, c):
        return _flatten(c, [])

    async_object = launch_dims = dynamic_shared = kernel_args = _list


for _format in gpu_formats.FORMATS:  # the operand rules of gpu_formats.grammar_rules()
    setattr(_Builder, gpu_formats.operand_rule(_format), _Builder._list)


_BUILDER = _Builder()
_local = threading.local()


def _lark() -> Lark:
    """One parser per thread (the builder is stateless, Lark's parser is reentrant per call)."""
    p = getattr(_local, "parser", None)
    if p is None:
        p = _shared_parser()
        _local.parser = p
    return p


_PARSER = None  # the process's Lark parser, built on first use
_PARSER_LOCK = threading.Lock()


def build_parser_once() -> None:
    """Build the process's parser now (e.g. before forking workers that will use it)."""
    _lark()


def _shared_parser() -> Lark:
    global _PARSER
    with _PARSER_LOCK:
        if _PARSER is None:
            _PARSER = build_parser()
        return _PARSER


def build_parser(strict: bool = False) -> Lark:
    """The Lark parser of the grammar. Lark is imported here, not with this module: units that
    `_plain_parse` reads need none of it (all of a 50k-line file of host code), and its import
    and the parser's build were 50 ms of every `check`."""
    from lark import Lark

    from gpu_async_lsp.syntax.lark_lexer import TokenListLexer

    # cache=True: Lark keeps the grammar analysis in a temporary file named by a hash of the
    # grammar and options (a fresh process then builds the parser in ~10 ms, not ~90 ms).
    return Lark(
        grammar_text(),
        parser="lalr",
        lexer=TokenListLexer,
        transformer=_Builder(),
        maybe_placeholders=False,
        strict=strict,
        cache=not strict,
    )


def _syntax_issue(err: Exception, fallback: int, text: str) -> SyntaxIssue:
    """The issue of Lark's UnexpectedInput `err`."""
    from lark.exceptions import UnexpectedToken

    tok = getattr(err, "token", None)
    if isinstance(err, UnexpectedToken) and tok is not None:
        expected = sorted(err.expected)
        if tok.type == "$END" or tok.start_pos is None:
            start = end = fallback
        else:
            start, end = tok.start_pos, tok.end_pos
            if isinstance(tok, BodyToken):
                # Point at the first offending word, not the whole merged run.
                word = _WORD_RE.match(text, start, end)
                end = word.end() if word else min(end, start + 1)
        if "COMMA" in expected and set(expected) & _CLOSERS:
            expected.remove("COMMA")  # "expected ')'", as MLIR says: a `,` is implied
        if set(expected) & _OP_STARTS and len(expected) > 4:
            what = "an operation"
        else:
            words = []
            for e in expected:
                w = _TERMINAL_WORDS.get(e, e)
                if w not in words:
                    words.append(w)
            what = ", ".join(words[:-1]) + (" or " if len(words) > 1 else "") + words[-1] if words else "nothing"
        found = "end of input" if tok.type == "$END" else f"'{text[start:end][:40]}'"
        return SyntaxIssue(f"expected {what}, found {found}", start, end)
    return SyntaxIssue(str(err).splitlines()[0], fallback, fallback)


class _NotPlain(Exception):
    """The token stream leaves the shapes `_plain_parse` reads: Lark parses it."""


_PLAIN_DEPTH = 200  # regions nested deeper than this: Lark (no recursion there)


def _plain_parse(tokens: list):
    """What Lark's parse of `tokens` returns, for the streams most units are: ops in custom
    form whose lines the pre-lexer packed, generic ops, top-level aliases and metadata, with
    regions and block labels (the grammar's `start`, `alias`, `custom_op`, `generic_op`,
    `region`, `entry_block` and `block` rules, read top-down with the builder's callbacks
    called in Lark's order and with Lark's children). Raises _NotPlain at the first token of
    another shape (an exactly modeled GPU op that did not match its format, an error: Lark then
    parses the unit and reports errors). Skips the LALR machinery: Lark's per-call and
    per-token work was half of parsing and building a unit of host code, and a unit of real
    IR that went to Lark cost ~0.6 ms (generic ops and aliases: 114 of 648 distinct units of
    50k lines of real IR, 20% of their analysis)."""
    return _PlainParser(tokens).start()


class _PlainParser:
    """The state of one `_plain_parse` (an object, not closures: what a parse leaves must be
    freed by reference counting, server/heap.py)."""

    __slots__ = ("tokens", "n", "at")

    def __init__(self, tokens: list):
        self.tokens = tokens
        self.n = len(tokens)
        self.at = 0

    def start(self):
        items: list = []
        self.ops_until(items, "$END", 0)
        return _BUILDER.start(items)

    def ops_until(self, items: list, stop: str, depth: int) -> None:
        """Ops and OPS runs until a token of type `stop` (any other, with "*"; not taken) or
        the end (only for "$END")."""
        tokens, n = self.tokens, self.n
        while self.at < n:
            t = tokens[self.at]
            kind = t.type
            if kind == "OPS":
                items.append(t)
                self.at += 1
            elif kind == "OP_NAME" or kind == "RESULTS" or kind == "GENERIC_NAME":
                items.append(self.op(depth))
            elif stop == "*":
                return
            elif kind == "ALIAS_DEF":  # the top level only (`start`)
                alias: list = []
                self.expect("ALIAS_DEF", alias)
                self.expect("EQUAL", alias)
                self.expect("BODY", alias)
                items.append(_BUILDER.alias(alias))
            elif kind == "META":
                items.append(t)
                self.at += 1
            else:
                raise _NotPlain
        if stop != "$END":
            raise _NotPlain

    def take(self, kind: str, into: list) -> bool:
        """The next token, appended to `into`, if it is of type `kind`."""
        if self.at < self.n and self.tokens[self.at].type == kind:
            into.append(self.tokens[self.at])
            self.at += 1
            return True
        return False

    def expect(self, kind: str, into: list) -> None:
        if not self.take(kind, into):
            raise _NotPlain

    def op(self, depth: int):
        c: list = []
        self.take("RESULTS", c)
        if self.take("GENERIC_NAME", c):  # `"d.op"(...)`: any run of BODY and regions
            tokens, n = self.tokens, self.n
            while self.at < n:
                kind = tokens[self.at].type
                if kind == "BODY":
                    c.append(tokens[self.at])
                    self.at += 1
                elif kind == "LBRACE_REGION":
                    c.append(self.region(depth + 1))
                else:
                    break
            return _BUILDER.generic_op(c)
        self.expect("OP_NAME", c)
        self.take("BODY", c)
        while self.at < self.n and self.tokens[self.at].type == "LBRACE_REGION":
            c.append(self.region(depth + 1))
            self.take("BODY", c)
        return _BUILDER.custom_op(c)

    def region(self, depth: int):
        if depth > _PLAIN_DEPTH:
            raise _NotPlain
        c: list = []
        self.expect("LBRACE_REGION", c)
        entry: list = []
        self.ops_until(entry, "*", depth)
        if entry:
            c.append(_BUILDER.entry_block(entry))
        block: list = []
        while self.take("BLOCK_LABEL", block):
            self.take("BODY", block)
            self.expect("COLON", block)
            self.ops_until(block, "*", depth)
            c.append(_BUILDER.block(block))
            block = []
        self.expect("RBRACE", c)
        return _BUILDER.region(c)


def whole_line_unit(text: str, raw: list) -> list | None:
    """The IR of a unit of the shape `prelex.whole_line_region` reads (an op whose region
    holds a whole op on each line, or ops of the same kind: most functions of host code), as
    `_plain_parse` builds it from the pre-lexer's tokens of it (`_Builder._new_op`, `region`,
    `entry_block`, `_line_op`); None for any other unit."""
    entries = whole_line_region(text, raw)
    if entries is None:
        return None
    return [_region_op(text, raw, 0, tf.at(raw[0], tf.TEXT), len(raw) - 1, entries)]


def _region_op(text: str, raw: list, i: int, name: str, close: int, entries: list) -> Op:
    """The op of line item raw[i] (results, name, one BODY run), its region's `{` raw[i + 1]
    and `}` raw[close], the region's ops from `entries` (whole_line_region's)."""
    ops = []
    for k in range(len(entries)):
        j, qualified, inner = entries[k]
        if inner is None:
            ops.append(_line_op(text, raw[j], qualified))
        else:
            ops.append(_region_op(text, raw, j, qualified, inner[0], inner[1]))
    t = raw[i]
    rbrace = tf.at(raw[close], tf.START)
    region = Region(tf.at(raw[i + 1], tf.START), rbrace)
    region.blocks.append(Block(None, [], ops, ops[0].start, ops[-1].end))
    name_start = tf.at(t, tf.NAME_START)
    name_end = tf.at(t, tf.NAME_END)
    body = _BLANKS.match(text, name_end).end()
    end = tf.at(t, tf.END)
    op = Op(name, name_start, name_end, name_start, rbrace + 1)
    op.symbol_name = _defined_symbol(name, text, body, end)
    op.spans = ((body, end),)
    op.src = text
    op.regions = [region]
    results_start = tf.at(t, tf.RESULTS_START)
    if results_start >= 0:
        results = op.results = result_values(text, results_start, tf.at(t, tf.RESULTS_END))
        op.results_end = results[-1].end
        op.start = results_start
    return op


def parse_unit_tokens(text: str, raw: list, dialect: str | None, fallback_end: int):
    """Parse one unit's tokens; returns (items, issue) where issue is None on success."""
    try:
        items = whole_line_unit(text, raw)
        if items is not None:
            return items, None
        tokens = prelex(text, raw, dialect)
        try:
            return _plain_parse(tokens), None
        except (_NotPlain, RecursionError):  # Lark's parse does not recurse
            pass
        return _lark_parse(tokens, fallback_end, text)
    except PrelexError as e:
        return [], SyntaxIssue(e.message, e.start, e.end)
    except RecursionError:
        start = raw[0].start if raw else fallback_end
        return [], SyntaxIssue("nesting too deep to parse", start, start + 1)


def _lark_parse(tokens: list, fallback_end: int, text: str):
    parser = _lark()  # imports Lark: from here on its exceptions are loaded
    from lark.exceptions import UnexpectedInput

    try:
        return parser.parse(tokens), None
    except UnexpectedInput as e:
        return [], _syntax_issue(e, fallback_end, text)


def parse_unit(text: str, dialect: str | None, start: int = 0,
               end: int | None = None) -> tuple[list, SyntaxIssue | None]:
    """Parse the leaf unit text[start:end] (the whole text by default) with `dialect` as the
    default dialect around it: (its items, ops and alias definitions at offsets in `text`;
    its syntax issue or None). An issue costs the unit's items."""
    if end is None:
        end = len(text)
    return parse_unit_tokens(text, tokenize_lines(text, start, end, OP_WORDS), dialect, end)


def _parse_header(text: str, unit: Unit, dialect: str | None):
    """Parse a container op's text up to its body's `{`, closed by a stand-in `}`."""
    lbrace, rbrace = unit.region
    raw = tokenize(text, unit.start, lbrace + 1)
    raw.append(RawToken("}", rbrace, rbrace + 1, CONTAINER_CLOSE, True))
    return parse_unit_tokens(text, raw, dialect, lbrace + 1)


# Containers whose bodies hold device code (the async rewrite looks at host code only).
DEVICE_CONTAINERS = frozenset({"gpu.module"})


class ContainerHeader(NamedTuple):
    """A container op's header (`gpu.module @kernels {`) as parsed, at offsets in the text."""

    name: str  # `builtin.module` (also for `module`), `gpu.module`
    symbol: str | None  # `@kernels`; None for an unnamed module or a header in error
    symbol_span: tuple[int, int] | None
    inner: str | None  # the default dialect of its body
    issue: SyntaxIssue | None
    items: list  # the header's parsed items (ops, aliases); empty if taken from a memo
    op: Op | None  # the container op, given a header that parses with its region


# A named tuple made from a tuple in C (its class's own __new__ is Python: a unit's visit
# cost twice as much).
_new = tuple.__new__


class UnitVisit(NamedTuple):
    """One unit met by `iter_units`, with what lies around it."""

    unit: Unit
    dialect: str | None  # the default dialect it is parsed with
    device: bool  # inside a gpu.module
    header: ContainerHeader | None  # a container's header; None for a leaf unit
    depth: int  # containers around it


def container_header(text: str, unit: Unit, dialect: str | None,
                     memo: dict | None = None) -> ContainerHeader:
    """The header of the container `unit`, parsed with `dialect` around it. With `memo` (a
    dict the caller keeps for one text), a header of the same text and dialect met before
    is not parsed again (a file of many `// -----` chunks repeats `module {` and
    `gpu.module @kernels {` hundreds of times); such a header comes without items or op."""
    key = None
    if memo is not None:
        key = (text[unit.start:unit.region[0] + 1], dialect)
        found = memo.get(key)
        if found is not None:
            span = found.symbol_span
            if span is None:
                return found
            return _new(ContainerHeader, (found.name, found.symbol,
                                          (span[0] + unit.start, span[1] + unit.start),
                                          found.inner, None, found.items, None))
    items, issue = _parse_header(text, unit, dialect)
    op = next((x for x in items if isinstance(x, Op)), None)
    if op is not None and not op.regions:
        op = None
    name = op.name if op is not None else CONTAINER_NAME_RE.match(text, unit.start).group()
    name = "builtin.module" if name == "module" else name
    ref = op.symbol_name if op is not None else None
    header = ContainerHeader(name, ref.path[0] if ref else None,
                             (ref.start, ref.end) if ref else None,
                             DEFAULT_DIALECT.get(name) if op is not None else dialect,
                             issue, items, op)
    # An issue may lie at the stand-in `}`, past the header's text: not kept.
    if key is not None and issue is None:
        span = header.symbol_span
        memo[key] = header._replace(
            items=[], op=None,
            symbol_span=(span[0] - unit.start, span[1] - unit.start) if span else None)
    return header


def iter_units(text: str, start: int, end: int, units: list[Unit] | None = None,
               memo: dict | None = None, share: LeafShare | None = None) -> list[UnitVisit]:
    """Every unit of the chunk text[start:end] (`units`: its `split_units`, if the caller has
    them) in text order, each container before its children, with the default dialect each
    is parsed with: `builtin` at the top, the one a container's op sets inside it (the
    outer one where its header does not parse). This is the one walk of containers: the
    parser, the server's analysis and the tests use it. `memo`: see `container_header`.
    `share`: only the leaf units in it (each leaf counted in text order on `share.index`),
    every container. A list, not a generator: resuming one per unit cost a first open 2 ms
    at 50k lines."""
    if units is None:
        units = split_units(text, start, end)
    out: list[UnitVisit] = []
    _visit_units(text, units, TOP_LEVEL_DIALECT, False, 0, memo, out, share)
    return out


def _visit_units(text: str, units: list[Unit], dialect: str | None, device: bool, depth: int,
                 memo: dict | None, out: list, share: LeafShare | None = None) -> None:
    for unit in units:
        if unit.region is None:
            if share is not None:  # the leaf's number: is it in [lo, hi)?
                i = share.index
                share.index = i + 1
                if i < share.lo or (share.hi is not None and i >= share.hi):
                    continue
            out.append(_new(UnitVisit, (unit, dialect, device, None, depth)))
            continue
        header = container_header(text, unit, dialect, memo)
        out.append(_new(UnitVisit, (unit, dialect, device, header, depth)))
        _visit_units(text, unit.children, header.inner,
                     device or header.name in DEVICE_CONTAINERS, depth + 1, memo, out, share)


class LeafShare:
    """Which leaf units (units that are not containers, counted in text order) to parse; the
    others are skipped. Lets several processes each parse a share of one big buffer. Given
    `counts` (the leaf units of each chunk of the layout, `leaf_counts`), a chunk that holds
    none of the share is skipped whole, container headers and all: a file of many `// -----`
    chunks is parsed in many small shares."""

    __slots__ = ("lo", "hi", "index", "counts")

    def __init__(self, lo: int = 0, hi: int | None = None, counts: list[int] | None = None):
        self.lo = lo
        self.hi = hi
        self.index = 0
        self.counts = counts

    def holds(self, a: int, b: int) -> bool:
        """Does a chunk of leaf units [a, b) hold any of the share? A chunk of none (a header,
        aliases) belongs to the share that holds its place, so that one share parses it."""
        if a == b:
            return self.lo <= a and (self.hi is None or a < self.hi)
        return b > self.lo and (self.hi is None or a < self.hi)


def _parse_units(text: str, units: list[Unit], chunk: Chunk, share: LeafShare) -> None:
    # outs[d]: where the ops of units at depth d go (a container's block, or the list its
    # own op went to when its header does not parse).
    # The walk visits only the leaf units of the share (and every container): a block of a
    # big file's check is a few dozen of its thousands of leaf units, and visiting all of
    # them cost each block 0.8 ms at 50k lines (64 blocks) and 8 ms at 500k.
    outs = [chunk.ops]
    for unit, dialect, _, header, depth in iter_units(text, chunk.start, chunk.end, units,
                                                      share=share):
        del outs[depth + 1:]
        out = outs[depth]
        if header is None:
            items, issue = parse_unit(text, dialect, unit.start, unit.end)
            if issue is not None:
                chunk.errors.append(issue)
            _take(items, chunk, out)
            continue
        if header.issue is not None:
            chunk.errors.append(header.issue)
        _take(header.items, chunk, out)
        container = header.op
        if container is None:
            outs.append(out)
            continue
        lbrace, rbrace = unit.region
        block = Block(None, [], [], lbrace + 1, rbrace)
        container.regions[-1].blocks = [block]
        container.end = rbrace + 1
        outs.append(block.ops)


def _take(items, chunk: Chunk, out_ops: list[Op]) -> None:
    for x in items:
        if isinstance(x, Op):
            out_ops.append(x)
        elif isinstance(x, Alias):
            chunk.aliases.append(x)


def parse_chunk(text: str, start: int, end: int, share: LeafShare | None = None,
                units: list[Unit] | None = None) -> Chunk:
    chunk = Chunk(start, end)
    if units is None:
        units = split_units(text, start, end)
    _parse_units(text, units, chunk, share or LeafShare())
    return chunk


def split_document(text: str) -> list[tuple[int, int, list[Unit]]]:
    """The chunks of `text` with their units."""
    return [(s, e, split_units(text, s, e)) for s, e in split_chunks(text)]


def parse_document(text: str, share: LeafShare | None = None,
                   layout: list[tuple[int, int, list[Unit]]] | None = None) -> Document:
    """Parse a whole buffer (or, with `share`, only some of its leaf units; `layout` is
    `split_document(text)` when the caller has it already). Never raises for any input.
    The whole buffer's chunks also report the aliases they use and do not define (a share's
    caller looks for those once, in the whole text: `aliases.undefined_aliases`)."""
    whole = share is None
    share = share or LeafShare()
    if layout is None:
        layout = split_document(text)
    chunks = []
    for k, (start, end, units) in enumerate(layout):
        if share.counts is not None:
            a = share.index
            b = a + share.counts[k]
            if not share.holds(a, b):
                share.index = b
                continue
        chunk = parse_chunk(text, start, end, share, units)
        if whole:
            chunk.errors.extend(undefined_aliases(text, [(start, end)]))
        chunks.append(chunk)
    return Document(text, chunks)


def leaf_counts(layout: list[tuple[int, int, list[Unit]]]) -> list[int]:
    """The number of leaf units of each chunk (for `LeafShare`)."""
    return [len(leaf_unit_sizes([chunk])) for chunk in layout]


def leaf_unit_sizes(layout: list[tuple[int, int, list[Unit]]]) -> list[int]:
    """The length of every leaf unit, in the order LeafShare counts them (an explicit stack:
    a recursive closure would be a reference cycle left for the collector)."""
    sizes: list[int] = []
    stack = [iter(units) for _, _, units in reversed(layout)]
    while stack:
        unit = next(stack[-1], None)
        if unit is None:
            stack.pop()
        elif unit.region is None:
            sizes.append(unit.end - unit.start)
        else:
            stack.append(iter(unit.children))
    return sizes
