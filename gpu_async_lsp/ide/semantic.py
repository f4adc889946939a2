"""IDE layer: semantic tokens (highlighting from the server, for every client).

Each leaf unit is scanned once per position encoding and its tokens kept with its result
(`UnitResult.memo`): op names (dialect and op), SSA values (definitions marked, values of type
`!gpu.async.token` marked), block labels, `@symbols`, types, attribute names, keywords,
strings, numbers, comments. The text between units (comments between functions, container
headers, `// -----`) is scanned on each request; it is short. A scan reads the text, not the
parse: a unit with a syntax error keeps its tokens; the parse adds what the text alone does
not say (which values are tokens, which words are op names).

The LSP encoding is relative (each token's line and start from the previous token's), so a
unit's tokens are kept as the JSON text of all but its first one; only the first depends on
what came before it. A full request joins those texts; an edit rescans one unit.
"""

from __future__ import annotations

from gpu_async_lsp import regex_cache
from gpu_async_lsp.async_region.rewriter import is_already_async
from gpu_async_lsp.op_tables import is_async_interface_op
from gpu_async_lsp.syntax import OP_WORDS
from gpu_async_lsp.syntax.patterns import BARE_ID, SSA_NAME, STRING, SYMBOL_NAME
from gpu_async_lsp.text import UTF32, LineIndex

# The legend: indices are what the tokens carry.
TOKEN_TYPES = ["namespace", "macro", "function", "variable", "label", "type", "property",
               "keyword", "string", "number", "comment", "decorator"]
TOKEN_MODIFIERS = ["declaration", "asyncToken"]
NAMESPACE, OP, SYMBOL, VALUE, LABEL, TYPE, PROPERTY, KEYWORD, STRING_T, NUMBER, COMMENT, \
    ATTRIBUTE = range(len(TOKEN_TYPES))
DECLARATION, ASYNC_TOKEN = 1, 2  # modifier bits

_BUILTIN_TYPES = (r"(?:[su]?i[0-9]+|f(?:16|32|64|80|128)|bf16|tf32|f8E\w+|f[46]E\w+|index|none"
                  r"|memref|tensor|vector|complex|tuple)(?![\w$.])")
_ID = r"[A-Za-z_][\w$.\-]*"
_SCAN = regex_cache.compile(
    # What starts no token is skipped first, in one tight loop (else each alternative would
    # be tried at every blank and bracket).
    r"[^/\"%^@!#?\w\-]*+(?:"
    # To the end of the line as MLIR reads it ("\n"), a CRLF line's "\r" not included.
    r"(?P<comment>//(?:[^\r\n]++|\r(?!\n))*+)"
    rf"|(?P<string>{STRING})"
    rf"|(?P<value>{SSA_NAME})(?:#[0-9]+)?"
    r"|(?P<label>\^[\w$.\-]+)"
    rf"|(?P<symbol>{SYMBOL_NAME})"
    rf"|(?P<type>!{_ID}|(?<![\w$.%@#!^])(?:(?:[0-9]+|\?)?x)*{_BUILTIN_TYPES})"
    rf"|(?P<attr>#{_ID})"
    r"|(?P<number>(?<![\w$.])-?(?:0x[0-9A-Fa-f]+|[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?))"
    rf"|(?P<word>(?<![\w$.%@#!^\-]){BARE_ID}))"
)
# After a word: `=` (not `==`) makes it an attribute name.
_ASSIGN = regex_cache.compile(r"[ \t]*=(?!=)")
# A unit attribute or the last name in a dictionary: `{name}`, `{a = 1, name}`.
_UNIT_ATTR_AFTER = regex_cache.compile(r"[ \t]*[,}]")
_TOKEN_ARGUMENT = regex_cache.compile(rf"({SSA_NAME})[ \t]*:[ \t]*!gpu\.async\.token\b")
# only a result list before a word
_LINE_HEAD = regex_cache.compile(r"[ \t]*(?:%[^=\n]*=[ \t]*)?\Z")


def _op_facts(ops) -> tuple[dict[int, int], set[int], set[str]]:
    """From the parse: op names (start -> end), where results are defined, and the names of
    values that are async tokens (the token results of async GPU ops)."""
    names: dict[int, int] = {}
    defined: set[int] = set()
    tokens: set[str] = set()
    stack = list(ops)
    while stack:
        op = stack.pop()
        names[op.name_start] = op.name_end
        for r in op.results:
            defined.add(r.start)
        for region in op.regions:
            for block in region.blocks:
                defined.update(arg.start for arg in block.args)
        if op.results and is_async_interface_op(op.name) and is_already_async(op):
            tokens.add(op.results[-1].name)  # its token is its last result
        for region in op.regions:
            for block in region.blocks:
                stack.extend(block.ops)
    return names, defined, tokens


def scan(text: str, start: int, end: int, ops=(), encoding: str = "utf-16") -> list[tuple]:
    """Tokens of text[start:end] as (line, column, length, type, modifiers), lines counted
    from the line of `start` and columns in `encoding` units from the start of their line
    (the first line's from `start`). `ops`: the parse of that text, if any."""
    op_names, defined, tokens = _op_facts(ops)
    for m in _TOKEN_ARGUMENT.finditer(text, start, end):
        tokens.add(m.group(1))
        defined.add(m.start(1))
    # Counting "\n"s gives LSP's lines and code points its columns unless a character is
    # wider than one unit of `encoding` or a lone "\r" ends a line: then a LineIndex says.
    lone_cr = "\r" in text and text.count("\r") != text.count("\r\n")
    index = LineIndex(text) if lone_cr or (encoding != UTF32 and not text.isascii()) else None
    origin = index.position(start, encoding) if index is not None else None
    out: list[tuple] = []
    append = out.append
    simple = _SIMPLE
    count = text.count
    line, at, line_start = 0, start, start
    for m in _SCAN.finditer(text, start, end):
        kind = m.lastgroup
        s, e = m.span(kind)
        if lone_cr:  # lines placed by the index; only where the line starts is needed
            nl = max(text.rfind("\n", at, s), text.rfind("\r", at, s))
            if nl >= 0:
                line_start = nl + 1
        elif count("\n", at, s):
            line += count("\n", at, s)
            line_start = text.rfind("\n", at, s) + 1
        at = s
        kind_id = simple.get(kind)
        mods = 0
        if kind_id is not None:
            if kind_id == TYPE and s in op_names:
                kind_id = None  # `memref.store`: the parse says it is an op name
        elif kind == "value":
            kind_id = VALUE
            mods = (DECLARATION if s in defined else 0) | (
                ASYNC_TOKEN if tokens and text[s:e] in tokens else 0)
        elif kind == "string":
            kind_id = OP if s in op_names else STRING_T
        if kind_id is None:  # a word: an op name (its dialect a namespace), a key, a keyword
            kind_id, dot = _word(text, s, e, line_start, op_names)
            if kind_id == OP:
                e = op_names.get(s, e)
                if dot > s:
                    if index is None:
                        append((line, s - line_start, dot - s, NAMESPACE, 0))
                    else:
                        _place(append, index, encoding, origin, s, dot, NAMESPACE, 0)
                    s = dot + 1
        if index is None:
            append((line, s - line_start, e - s, kind_id, mods))
        else:
            _place(append, index, encoding, origin, s, e, kind_id, mods)
    return out


def _word(text: str, s: int, e: int, line_start: int, op_names: dict) -> tuple[int, int]:
    """The token type of the word text[s:e], and for an op name where its dialect ends (the
    `.`; -1 if none): the parse names its ops; in unparsed text (a syntax error) a dotted
    word or op word heading its line is one. Else an attribute name (`key =`, or a unit
    attribute in a dictionary) or a keyword."""
    name_end = op_names.get(s)
    word = text[s:e]
    if name_end is None and ("." in word or word in OP_WORDS):
        if _LINE_HEAD.match(text, line_start, s) and not _ASSIGN.match(text, e):
            name_end = e
    if name_end is not None:
        return OP, text.find(".", s, name_end)
    if _ASSIGN.match(text, e) or (_UNIT_ATTR_AFTER.match(text, e) and word not in OP_WORDS
                                  and _after_dict_open(text, line_start, s)):
        return PROPERTY, -1
    return KEYWORD, -1


_SIMPLE = {"comment": COMMENT, "label": LABEL, "symbol": SYMBOL, "type": TYPE,
           "number": NUMBER, "attr": ATTRIBUTE}


def _after_dict_open(text: str, line_start: int, s: int) -> bool:
    """Does the word at `s` follow `{` or `,` (blanks between)?"""
    before = text[line_start:s].rstrip()
    return before.endswith(("{", ","))


def _place(append, index, encoding, origin, s, e, kind_id, mods) -> None:
    """A token placed by the text's LineIndex (`origin`: the scan's start): line relative to
    the scan's first line, column and length in `encoding` units. A token over a lone "\r"
    (a line break to LSP, a blank to MLIR: a comment goes on) is sent as one per line."""
    ps = index.position(s, encoding)
    pe = index.position(e, encoding)
    for line in range(ps.line, pe.line + 1):
        start = ps.character if line == ps.line else 0
        end = pe.character if line == pe.line else index.position(index.line_end(line),
                                                                  encoding).character
        if end > start:
            column = start - (origin.character if line == origin.line else 0)
            append((line - origin.line, column, end - start, kind_id, mods))


def relative_data(tokens: list[tuple]) -> list[int]:
    """The LSP encoding of `tokens` (in text order), the first one relative to (0, 0)."""
    data: list[int] = []
    extend = data.extend
    prev_line, prev_col = 0, 0
    for line, col, length, kind, mods in tokens:
        if line != prev_line:
            extend((line - prev_line, col, length, kind, mods))
            prev_line = line
        else:
            extend((0, col - prev_col, length, kind, mods))
        prev_col = col
    return data


class Piece:
    """The tokens of one unit or gap: the first and last token (line and column relative to
    the piece's first line, as `scan` gives them) and the JSON text of the others' encoding."""

    __slots__ = ("first", "last", "rest")

    def __init__(self, tokens: list[tuple]):
        self.first = tokens[0] if tokens else None
        self.last = tokens[-1] if tokens else None
        data = relative_data(tokens)
        self.rest = ",".join(map(str, data[5:]))


def unit_piece(result, encoding: str) -> Piece:
    """The tokens of a unit, kept with its result."""
    key = ("semantic-tokens", encoding)
    piece = result.memo.get(key)
    if piece is None:
        piece = result.memo[key] = Piece(scan(result.source, 0, len(result.source), result.ops,
                                              encoding))
    return piece


def document_data(analysis, index: LineIndex, encoding: str, start: int = 0,
                  end: int | None = None, check=None) -> str:
    """The `data` of a SemanticTokens result for the document (or the pieces overlapping
    [start, end]), as JSON text of the integer list; `check()` is called now and then (it
    raises when the request is cancelled)."""
    text = analysis.text
    end = len(text) if end is None else end
    out: list[str] = []
    prev = [0, 0]  # absolute line and column of the last token written

    def place(piece: Piece, base_line: int, base_col: int) -> None:
        first = piece.first
        if first is None:
            return
        line = base_line + first[0]
        col = first[1] + (base_col if first[0] == 0 else 0)
        if line == prev[0]:
            head = f"0,{col - prev[1]},{first[2]},{first[3]},{first[4]}"
        else:
            head = f"{line - prev[0]},{col},{first[2]},{first[3]},{first[4]}"
        out.append(head if not piece.rest else head + "," + piece.rest)
        last = piece.last
        prev[0] = base_line + last[0]
        prev[1] = last[1] + (base_col if last[0] == 0 else 0)

    def gap(s: int, e: int) -> None:
        piece = text[s:e]
        if piece and not piece.isspace():
            base = index.position(s, encoding)
            place(Piece(scan(piece, 0, len(piece), (), encoding)), base.line, base.character)

    # Whole units and gaps: a range request may get tokens a little outside its range.
    pos = 0
    for n, unit in enumerate(analysis.units):
        if check is not None and n % 64 == 0:
            check()
        if unit.end < start:
            pos = unit.end
            continue
        gap(pos, unit.base)  # the text before the unit (a range may lie inside it)
        if unit.base > end:
            break
        base = index.position(unit.base, encoding)
        place(unit_piece(unit.result, encoding), base.line, base.character)
        pos = unit.end
    else:
        gap(pos, len(text))
    return ",".join(out)
