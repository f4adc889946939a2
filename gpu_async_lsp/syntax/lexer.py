"""Syntax layer: the fast scans that run before Lark.

Three steps, each one compiled regular expression run at C speed:

1. `split_chunks`: the `// -----` chunks of `mlir-opt -split-input-file` (a line that holds only
   the marker, after optional blanks);
2. `split_units`: the top-level ops of a chunk, and the children of container ops
   (`module`, `gpu.module`), found by brace depth and line starts, so that each function is
   parsed on its own: an error costs one op, and an edit re-parses one op;
3. `tokenize`: the raw tokens of one unit. MLIR types and attributes with a `<...>` body
   (`memref<?x4xf32, strided<[4, 1]>>`, `dense<...>`, `affine_map<...>`) are one token, as
   nothing inside them matters to the structure.

No lark, pygls or lsprotocol here.
"""

from __future__ import annotations

import re
from itertools import accumulate
from typing import NamedTuple

from gpu_async_lsp import regex_cache
from gpu_async_lsp.op_tables import KNOWN_OPS
from gpu_async_lsp.syntax import gpu_formats
from gpu_async_lsp.syntax.gpuscan import COMPILED as _GPU_SCAN_COMPILED
from gpu_async_lsp.syntax.gpuscan import FORMAT_CODE, gpu_line, next_line_starts_op
from gpu_async_lsp.syntax.linescan import COMPILED as _LINE_SCAN_COMPILED
from gpu_async_lsp.syntax.linescan import brace_scan, line_spans, plain_lines, trim_end
from gpu_async_lsp.syntax.patterns import (
    LINE_GAP,
    OPEN_STRING,
    RESULT_LIST,
    RESULT_LIST_LINES,
    SYMBOL_REF,
    UNFINISHED_LINE_ENDS,
    angle_body,
)
from gpu_async_lsp.syntax.patterns import (
    STRING as _STRING,
)

SPLIT_MARKER = regex_cache.compile(r"^[ \t]*// -----[ \t]*\r?$", re.MULTILINE)


_MARKER_TEXT = "// -----"


def split_chunks(text: str) -> list[tuple[int, int]]:
    """(start, end) of each chunk; markers belong to no chunk. The marker's text is looked
    for first (a literal search, several times faster than the line pattern over a big file
    that has none), and each occurrence checked against the whole line."""
    chunks = []
    pos = 0
    at = text.find(_MARKER_TEXT)
    last, line, tried = 0, 0, -1  # the previous occurrence, its line's start, a line tried
    while at >= 0:
        nl = text.rfind("\n", last, at)  # each stretch of text is looked at once
        if nl >= 0:
            line = nl + 1
        last = at
        if line != tried:
            tried = line
            m = SPLIT_MARKER.match(text, line)
            if m is not None:
                chunks.append((pos, m.start()))
                pos = m.end()
        at = text.find(_MARKER_TEXT, max(at + 1, pos))
    chunks.append((pos, len(text)))
    return chunks


# --- raw tokens --------------------------------------------------------------------------------

_BODY = angle_body(6)
_IDENT = r"[A-Za-z_][\w$.]*"
_SUFFIX_ID = r"(?:\d+|[A-Za-z_$.\-][\w$.\-]*)"

# Each match takes the blanks before its token (group `ws`), so that finditer does not retry
# every alternative at each blank; the alternatives come in order of frequency in host code.
# One of them matches wherever a match is tried, so that finditer never retries at the next
# character (a long run of blanks before a form feed cost its square): `odd` takes a blank
# other than ` \t\r\n` (form feed, U+2028, ...), which the token loops drop together with the
# blanks before it, as they were dropped when nothing matched there.
_TOKEN_ALTERNATIVES = [
    rf"(?P<value>%{_SUFFIX_ID}(?:#\d+)?)",
    # A dotted name takes no `<...>` body: builtin types and attributes have no dot, dialect
    # ones a sigil (`!llvm.ptr<1>`); it is an op name (`vector.reduction<add>`).
    r"(?P<dotted>[A-Za-z_][\w$]*+\.[\w$.]*+)",
    rf"(?P<bare>{_IDENT})(?P<blob>{_BODY})?",
    r"(?P<meta>\{-#.*?#-\})",
    r"(?P<punct>[(){}\[\]<>=,:*+?|]|\.\.\.)",  # `...`: a variadic signature's ellipsis
    r"(?P<comment>//[^\n]*)",
    rf"(?P<symbol>{SYMBOL_REF})",
    r"(?P<arrow>->)",
    r"(?P<number>0x[0-9A-Fa-f]+|-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)",
    rf"(?P<string>{_STRING})",
    r'(?P<badstring>"[^\n]*)',
    rf"(?P<caret>\^{_SUFFIX_ID})",
    rf'(?P<bang>!(?:{_IDENT}|{_STRING})(?:{_BODY})?)',
    rf"(?P<hash>#{_IDENT}(?:{_BODY})?)",
    r"(?P<minus>-)",
    r"(?P<err>\S)",
    r"(?P<odd>\s)",
    r"(?P<eof>\Z)",
]


def _token_re(alternatives: list[str]) -> re.Pattern:
    return regex_cache.compile(r"(?P<ws>[ \t\r\n]*+)(?:" + "|".join(alternatives) + ")", re.DOTALL)


TOKEN_RE = _token_re(_TOKEN_ALTERNATIVES)
# After a `{-#` that found no `#-}` up to the end of the scan: no later one can find one.
# Compiled on first use (6 ms of every process start, for text that few files hold).
_TOKEN_NO_META_RE: re.Pattern | None = None


def _no_meta_re() -> re.Pattern:
    global _TOKEN_NO_META_RE
    if _TOKEN_NO_META_RE is None:
        _TOKEN_NO_META_RE = _token_re(
            [a for a in _TOKEN_ALTERNATIVES if not a.startswith("(?P<meta>")])
    return _TOKEN_NO_META_RE


def _unclosed_meta(text: str, m: re.Match) -> bool:
    """Is the punctuation of this TOKEN_RE match a `{-#` that found no `#-}`?"""
    return text.startswith("{-#", m.end(1))


class RawToken(NamedTuple):
    kind: str  # a TOKEN_RE group name; for punct, the character itself
    start: int
    end: int
    text: str
    line_start: bool  # first token on its line


def tokenize(text: str, start: int = 0, end: int | None = None) -> list[RawToken]:
    """Raw tokens of text[start:end], comments dropped."""
    end = len(text) if end is None else end
    out: list[RawToken] = []
    append = out.append
    first = True  # a unit starts on its own line
    scan = TOKEN_RE
    pos = start
    while True:
        for m in scan.finditer(text, pos, end):
            kind = m.lastgroup
            if kind == "eof" or kind == "ws":  # trailing blanks
                return out
            if kind == "odd":
                continue
            line_start = first or "\n" in m.group(1)
            if kind == "comment":
                first = first or line_start
                continue
            append(_raw_token(text, m, kind, line_start))
            first = False
            if kind == "punct" and scan is TOKEN_RE and _unclosed_meta(text, m):
                scan = _no_meta_re()
                pos = m.end()
                break
        else:
            return out


def _raw_token(text: str, m: re.Match, kind: str, line_start: bool) -> RawToken:
    """The RawToken of a TOKEN_RE match (punctuation is its own kind)."""
    s = m.end(1)
    e = m.end()
    tok = text[s:e]
    if kind == "punct" or kind == "minus":
        kind = tok
    elif kind == "dotted" or (kind == "blob" and not tok.endswith(">")):
        kind = "bare"
    return tuple.__new__(RawToken, (kind, s, e, tok, line_start))


# --- lines ---------------------------------------------------------------------------------------

# Most lines of MLIR host code are one simple op: `%r = dialect.op operands : types`, maybe a
# `{` opening its region at the end, maybe a comment. Such a line is one LineToken, matched at
# C speed; only its op name and result list are looked at. Any other line (strings, block
# labels, `}`, attribute dictionaries, generic ops, the ops that are modeled exactly) is cut
# into raw tokens.
_BLANK_LINES = r"(?:[ \t]*+(?://[^\n]*+)?\r?\n)*+[ \t]*+"  # blank and comment-only lines


def _line_re(results: str, gap: str) -> re.Pattern:
    return regex_cache.compile(
        _BLANK_LINES
        + rf"(?:(?P<res>{results})[ \t]*+=(?![=>]){gap})?"
        r"(?P<name>[A-Za-z_][\w$.]*+)"  # possessive: `rest` would take what it gave back
        r"(?P<rest>[^{}\"\n/]*+)"
        r"(?P<brace>\{)?[ \t]*+(?://[^\n]*+)?(?:\r?\n|\Z)"
    )


LINE_RE = _line_re(RESULT_LIST, r"[ \t]*+")
# MLIR ignores line breaks inside an op's head too: a result list broken after a `,` (`%lo,`
# then `%hi = arith.mului_extended ...`), the op name on the line after `=`. Tried where
# LINE_RE fails on a line that starts with a result; _RESULTS_RUN_RE first finds where the run
# of results ends, so that the lines of a long run that is no result list (`%t,` per line in a
# dependency list) are read once, not once from each of them.
_LINE_BROKEN_HEAD_RE = _line_re(RESULT_LIST_LINES, LINE_GAP)
_RESULTS_RUN_RE = regex_cache.compile(
    rf"{_BLANK_LINES}{RESULT_LIST_LINES}[ \t]*+(?P<eq>=(?![=>]))?")


class LineToken(NamedTuple):
    """A whole line holding (the start of) one op in custom form."""

    kind: str  # always "line"
    start: int  # first result, or the op name
    end: int  # end of the line's last token
    text: str  # the op name as written
    line_start: bool  # always True
    name_start: int
    name_end: int
    results_start: int  # -1 without a result list
    results_end: int  # just after the last result
    cont: bool  # the line ends inside the op (`,` `(` `=` `->` ...)
    depth: int  # ( and [ opened minus closed on the line


class GpuLineToken(NamedTuple):
    """A GPU op of EXACT_GPU_OPS whose whole text matched its format in gpu_formats."""

    kind: str  # always "gpuline"
    start: int  # first result, or the op name
    end: int  # end of the op's last token
    text: str  # the op name
    line_start: bool  # always True
    name_start: int
    name_end: int
    results_start: int  # -1 without a result list
    results_end: int
    async_start: int  # -1 without the `async` keyword
    deps_open: int  # offset of `[`, -1 without a dependency list
    deps_close: int  # just after `]`
    operands_start: int  # the text after the async clause
    cont: bool  # always False
    depth: int  # always 0


# A dotted name or `return` inside a line, where MLIR may start a second op.
_MIDLINE_NAME_RE = regex_cache.compile(r"(?<![\w$.%@#!^\"\-])(?:[A-Za-z_][\w$]*\.[\w$.]+|return\b)")


def midline_op(rest: str) -> bool:
    """Does `rest` (a line after its op name) hold the name of another op?"""
    for m in _MIDLINE_NAME_RE.finditer(rest):
        name = m.group()
        if name in KNOWN_OPS or name == "return":
            return True
    return False


def tokenize_lines(text: str, start: int, end: int, op_words: frozenset[str]) -> list:
    """Tokens of text[start:end]: a LineToken or GpuLineToken for each simple line (or GPU op),
    RawTokens for everything else.

    `op_words` are the bare names that start an op without a dialect prefix (`return`): a line
    that starts with anything else and no result list continues the op before it."""
    out: list = []
    append = out.append
    new = tuple.__new__
    # The line match: LINE_RE's spans, by the scan written for C where it is compiled
    # (linescan.py; a quarter of this loop's time was the expression), else by LINE_RE.
    line_match = LINE_RE.match
    scanned = _LINE_SCAN_COMPILED
    # A GPU op's format: the scan written for C where it is compiled (gpuscan.py), else the
    # expression (gpu_formats.WHOLE_OP).
    whole_op_of = FORMAT_CODE.get if _GPU_SCAN_COMPILED else gpu_formats.WHOLE_OP.get
    whole_ops = FORMAT_CODE if _GPU_SCAN_COMPILED else gpu_formats.WHOLE_OP
    no_head_before = start  # a run of results read up to here ended in no op head
    pos = start
    fine = False  # inside an exactly modeled GPU op that did not match its format
    scan = TOKEN_RE  # _TOKEN_NO_META_RE once a `{-#` found no `#-}` before `end`
    line_first = 0  # index in `out` of the first token of the last line read token by token
    while pos < end:
        if out and out[-1].kind in _UNFINISHED_KINDS and not (
                out[-1].kind == ":" and line_first < len(out)
                and out[line_first].kind == "caret"):  # `^bb1(...):`, a block label
            # The line before ended inside an op (`%0 =`, `(`, `,`): this line goes on with it,
            # token by token, whatever it looks like (`linalg.matmul ...` after `%0` `=`).
            line_first = len(out)
            pos, scan = _fine_line(text, pos, end, out, scan)
            fine = fine or _names_gpu_op(out, line_first)
            continue
        if scanned and not fine:
            # The compiled scan tokenizes the plain lines from here itself (the LineToken of
            # a plain op line, the GpuLineToken of a GPU op line its format reads whole, a
            # `{` at a line's end, a line of only `}`), up to a line this loop decides.
            pos, spans = plain_lines(text, pos, end, out, op_words, whole_ops, LineToken,
                                     GpuLineToken, RawToken)
            if pos >= end:
                break
        else:
            spans = line_spans(text, pos, end) if scanned else None
        m = None if scanned else line_match(text, pos, end)
        if spans is None and m is None and pos >= no_head_before:
            run = _RESULTS_RUN_RE.match(text, pos, end)
            if run is not None:
                if run.group("eq"):
                    m = _LINE_BROKEN_HEAD_RE.match(text, pos, end)
                if m is None:
                    no_head_before = run.end()
        if spans is not None or m is not None:
            # Where _line_re's groups lie: the match's end, res, name, rest, brace.
            if spans is None:
                (_, line_end), (res_start, res_end), (name_start, name_end), \
                    (rest_start, rest_end), (brace, _) = m.regs
                name = text[name_start:name_end]
            elif len(spans) == 10:  # a line the scan left to this loop
                _, line_end, res_start, res_end, name_start, name_end, rest_start, rest_end, \
                    brace, name = spans
            else:
                line_end, res_start, res_end, name_start, name_end, rest_start, rest_end, \
                    brace = spans
                name = text[name_start:name_end]
            if res_start >= 0 or "." in name or name in op_words:  # it starts an op
                fine = False
                whole_op = whole_op_of(name)
                if whole_op is not None:
                    if _GPU_SCAN_COMPILED:  # the scan makes the token (gpuscan.gpu_line)
                        g = gpu_line(text, whole_op, name, name_start, name_end, res_start,
                                     res_end, end, op_words, GpuLineToken)
                    else:
                        g = _gpu_line(text, name_start, name_end, res_start, res_end,
                                      whole_op, end)
                        if g is not None and not _next_line_starts_op(text, g[1], end,
                                                                      op_words):
                            g = None
                    if g is not None:
                        append(g[0])
                        pos = g[1]
                        continue
                    # Off its format, or it goes on on the next line (`%e = gpu.wait` then
                    # `async`): token by token, with the lines that go on with it.
                    fine = True
            rest = text[rest_start:rest_end]
            if not fine and ("." in rest or "return" in rest) and midline_op(rest):
                fine = True  # a second op on the line: token by token (rare)
                line_first = len(out)
                pos, scan = _fine_line(text, pos, end, out, scan)
                fine = False
                continue
            if not fine:
                stripped = rest.rstrip()
                append(new(LineToken, (
                    "line", res_start if res_start >= 0 else name_start,
                    rest_start + len(stripped) if stripped else name_end, name, True,
                    name_start, name_end, res_start, res_end,
                    brace < 0 and stripped.endswith(UNFINISHED_LINE_ENDS),
                    # Most lines have no bracket: four `in` cost a third of four counts.
                    (rest.count("(") + rest.count("[") - rest.count(")") - rest.count("]"))
                    if "(" in rest or "[" in rest or ")" in rest or "]" in rest else 0,
                )))
                if brace >= 0:
                    append(new(RawToken, ("{", brace, brace + 1, "{", False)))
                pos = line_end
                continue
        else:
            c = _CLOSE_LINE_RE.match(text, pos, end)
            if c is not None:  # a line of only `}`: the commonest line of no op
                append(new(RawToken, ("}", c.end() - 1, c.end(), "}", True)))
                pos = c.end()
                continue
        line_first = len(out)
        pos, scan = _fine_line(text, pos, end, out, scan)
        fine = fine or _names_gpu_op(out, line_first)
    return out


def _names_gpu_op(out: list, first: int) -> bool:
    """Do the raw tokens out[first:] name an exactly modeled GPU op (`= gpu.launch_func` on a
    line of its own)? Its lines that go on are then read token by token too."""
    whole_op_of = gpu_formats.WHOLE_OP.get
    return any(t.kind == "bare" and whole_op_of(t.text) is not None for t in out[first:])


# What may start the next op on the line at a position: a result list and its `=`, an op name
# (dotted, or a bare word the caller checks), a generic op's name, a block label, a `}`; or
# the end. Blank and comment lines before it are skipped.
_NEXT_OP_START_RE = regex_cache.compile(
    _BLANK_LINES + rf"(?:{RESULT_LIST}[ \t]*+=(?![=>])|(?P<word>[A-Za-z_][\w$.]*+)"
    r'|"[^"\n]*\.[^"\n]*"|[}^]|\{-#|[#!][A-Za-z_][\w$.]*+[ \t]*+=|\Z)')


def _next_line_starts_op(text: str, pos: int, end: int, op_words: frozenset[str]) -> bool:
    """Does the line at `pos` start something new (else it goes on with the op before)? The
    compiled build reads it as gpuscan.next_line_starts_op, held to this expression by tests."""
    if _GPU_SCAN_COMPILED:
        return next_line_starts_op(text, pos, end, op_words)
    m = _NEXT_OP_START_RE.match(text, pos, end)
    if m is None:
        return False
    word = m.group("word")
    return word is None or "." in word or word in op_words


# Raw-token kinds that end a line inside an op (UNFINISHED_LINE_ENDS; `->` is "arrow").
_UNFINISHED_KINDS = frozenset("arrow" if e == "->" else e for e in UNFINISHED_LINE_ENDS)

# A line that holds only `}` (after blank and comment lines); its end is left to the next line.
_CLOSE_LINE_RE = regex_cache.compile(
    r"(?:[ \t]*+(?://[^\n]*+)?\r?\n)*+[ \t]*+\}(?=[ \t]*+(?://[^\n]*+)?(?:\r?\n|\Z))")


def _gpu_line(text, name_start, name_end, res_start, res_end, whole_op, end):
    """A GpuLineToken and the start of the next line if the op named at text[name_start:
    name_end] (results at [res_start, res_end), -1 without) matches its assembly format
    (`whole_op`: its gpu_formats.WHOLE_OP), else None. The compiled build reads the format
    and makes the token in gpuscan.gpu_line."""
    g = whole_op.match(text, name_end, end)
    if g is None:
        return None
    return tuple.__new__(GpuLineToken, (
        "gpuline", res_start if res_start >= 0 else name_start, g.end("ops"),
        text[name_start:name_end], True, name_start, name_end, res_start, res_end,
        g.start("async"), g.start("open"), g.end("close"), g.start("ops"), False, 0,
    )), g.end()


def _fine_line(text: str, pos: int, end: int, out: list, scan: re.Pattern):
    """Raw tokens of the line at `pos` (and of tokens that run on past it), matched with `scan`
    (TOKEN_RE or _TOKEN_NO_META_RE); the next position, and the pattern for the next lines."""
    append = out.append
    first = True
    while True:
        for m in scan.finditer(text, pos, end):
            kind = m.lastgroup
            if kind == "eof" or kind == "ws":
                return end, scan
            if kind == "odd":
                continue
            ws = m.group(1)
            if not first and "\n" in ws:
                return m.start(), scan
            if kind == "comment":
                continue
            append(_raw_token(text, m, kind, first))
            first = False
            if kind == "punct" and scan is TOKEN_RE and _unclosed_meta(text, m):
                scan = _no_meta_re()
                pos = m.end()
                break
        else:
            return end, scan


# --- units ---------------------------------------------------------------------------------------


def _brace_re(strings: bool, metadata: bool) -> re.Pattern:
    """Each match skips, in one possessive loop in C, everything that holds no brace for the
    split: characters other than `{}"/`, comments, lone `/`, closed strings and file
    metadata; then takes a brace, a `"` that opens no closed string, or the end. Comments and
    strings cost no match of their own (50k lines of real IR hold 15k comments). Without
    `strings` a `"` opens no string (the caller looks where it lies); without `metadata` a
    `{-#` is only a brace."""
    skipped = [r'[^{}"/]++', r"//[^\n]*+", r"/(?!/)"]
    if strings:
        skipped.append(_STRING)
    if metadata:
        skipped.append(r"\{-#.*?#-\}")
    return regex_cache.compile(
        "(?:" + "|".join(skipped) + r')*+(?:(?P<open>\{)|(?P<close>\})|(?P<quote>")|\Z)',
        re.DOTALL,
    )


_BRACE_RES = {(s, m): _brace_re(s, m) for s in (True, False) for m in (True, False)}
_OPEN_STRING_RE = regex_cache.compile(OPEN_STRING, re.DOTALL)


def _braces(text: str, start: int, end: int) -> tuple[list[int], list[int]]:
    """`braces_matched`, read by `linescan.brace_scan` where that is compiled (the expressions
    take 7-10 ms over 2 MB of host code, mostly counting the characters they skip; the scan
    4), and held to it by tests."""
    if _LINE_SCAN_COMPILED:
        return brace_scan(text, start, end)
    return braces_matched(text, start, end)


def braces_matched(text: str, start: int, end: int) -> tuple[list[int], list[int]]:
    """The braces of text[start:end] outside comments, strings and file metadata: +1 for each
    `{` and -1 for each `}`, and their offsets.

    Two cases would make a plain scan quadratic, and are read once each instead: a `{-#` that
    no `#-}` closes (none after it is closed either, so metadata is no longer looked for), and
    a `"` that no `"` closes: every `"` it runs over is escaped inside it and opens no string
    either, so strings are looked for again only after it (the text in between is scanned for
    braces and comments as before)."""
    deltas: list[int] = []
    offsets: list[int] = []
    add_delta, add_offset = deltas.append, offsets.append
    strings = metadata = True
    string_end = -1  # while `strings` is off: where the string that did not close stops
    pos = start
    while True:
        for m in _BRACE_RES[strings, metadata].finditer(text, pos, end):
            kind = m.lastgroup
            if kind == "open":
                at = m.end() - 1
                add_delta(1)
                add_offset(at)
                if metadata and text.startswith("{-#", at):
                    metadata = False  # metadata was tried here and found no `#-}`
                    pos = m.end()
                    break
            elif kind == "close":
                add_delta(-1)
                add_offset(m.end() - 1)
            elif kind == "quote":
                at = m.end() - 1
                if strings:
                    strings = False
                    string_end = _OPEN_STRING_RE.match(text, at, end).end()
                    pos = m.end()
                    break
                if at >= string_end:
                    strings = True
                    pos = at
                    break
        else:
            return deltas, offsets


def _top_pairs(deltas: list[int], lo: int, hi: int) -> tuple[list[tuple[int, int]], int]:
    """The braces at depth 0 of deltas[lo:hi] as (index of `{`, index of its `}`), and the
    index of a last `{` at depth 0 that nothing closes (-1 if none). The depths are summed in
    C (itertools.accumulate) and the returns to depth 0 found by list.index: a module's body
    is thousands of braces, a few of them at depth 0. A `}` that closes nothing (depth below
    0) is skipped, as MLIR's parser reports it where it stands: then the braces are walked."""
    depths = list(accumulate(deltas[lo:hi]))
    if depths and min(depths) < 0:
        return _top_pairs_walked(deltas, lo, hi)
    pairs = []
    k, n = 0, len(depths)
    while k < n:
        try:
            z = depths.index(0, k)
        except ValueError:
            return pairs, lo + k  # the `{` at k is never closed
        pairs.append((lo + k, lo + z))
        k = z + 1
    return pairs, -1


def _top_pairs_walked(deltas: list[int], lo: int, hi: int) -> tuple[list, int]:
    """_top_pairs, one brace at a time (a `}` at depth 0 closes nothing and is skipped)."""
    pairs = []
    depth, open_i = 0, -1
    for i in range(lo, hi):
        if deltas[i] > 0:
            if depth == 0:
                open_i = i
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                pairs.append((open_i, i))
    return pairs, open_i if depth else -1


_OP_START = (
    rf"(?:{RESULT_LIST}[ \t]*=)"
    r"|\"[^\"\n]*\"[ \t]*\("
    r"|[A-Za-z_][\w$]*\.[\w$.]*"
    r"|(?:module|func)\b"
    r"|[#!][A-Za-z_][\w$.]*[ \t]*="
    r"|\{-#"
)
# A line break, the next line's indentation, and the start of an op there.
_LINE_OP_RE = regex_cache.compile(rf"\n[ \t\r]*(?={_OP_START})")

# The ops whose children are units of their own.
CONTAINER_NAME_RE = regex_cache.compile(r"(?:builtin\.module|module|gpu\.module)\b")


_new_tuple = tuple.__new__


class Unit(NamedTuple):
    """A piece of text parsed on its own: one op, or a container op whose children are units."""

    start: int
    end: int
    region: tuple[int, int] | None  # container ops: offsets of the body's `{` and `}`
    children: list[Unit]


def split_units(text: str, start: int, end: int) -> list[Unit]:
    """Top-level ops of text[start:end] and, recursively, the children of container ops.

    A unit starts on a line whose first token looks like the start of an op (a result list,
    a dotted or generic op name, `module`, an alias definition) at the brace depth of its
    parent; it ends where the next one starts. Text that does not fit (a stray `}`, garbage)
    stays inside the preceding unit, where the parser reports it.
    """
    return _split(text, start, end, 0, None, 0, 0)


def _split(text: str, start: int, end: int, level: int, braces: list | None, lo: int,
           hi: int) -> list[Unit]:
    # Braces first (strings, comments and metadata skipped); op starts are looked for only in
    # the stretches at depth 0, so a module's body costs one brace scan, not one match a line.
    # The braces of the whole text are scanned once: a container's children are split with
    # braces[lo:hi], the braces inside its body (a module's body is most of a file).
    first = _BLANKS_RE.match(text, start, end).end()
    if first >= end:
        return []
    if braces is None:
        braces = _braces(text, first, end)
        lo, hi = 0, len(braces[0])
    offsets = braces[1]
    starts = [first]
    pairs: dict[int, tuple[int, int, int]] = {}  # `}` -> `{` and both indices, at depth 0
    stretch = first
    top, unclosed = _top_pairs(braces[0], lo, hi)
    for open_i, close_i in top:
        open_at, close_at = offsets[open_i], offsets[close_i]
        _op_starts(text, stretch, open_at, starts)
        pairs[close_at] = (open_at, open_i, close_i)
        stretch = close_at + 1
    if unclosed >= 0:
        _op_starts(text, stretch, offsets[unclosed], starts)
    else:
        _op_starts(text, stretch, end, starts)
    units = []
    for s, e in zip(starts, starts[1:] + [end]):
        e = _trim_end(text, s, e)
        if e <= s:
            continue
        pair = pairs.get(e - 1)
        if pair is not None and pair[0] > s and level < 64 and CONTAINER_NAME_RE.match(text, s):
            lbrace, open_i, close_i = pair
            children = _split(text, lbrace + 1, e - 1, level + 1, braces, open_i + 1, close_i)
            units.append(_new_tuple(Unit, (s, e, (lbrace, e - 1), children)))
        else:
            units.append(_new_tuple(Unit, (s, e, None, [])))  # the class's __new__ is Python
    return units


def _op_starts(text: str, start: int, end: int, starts: list[int]) -> None:
    """Append the offsets of lines in text[start:end] that start a new op."""
    for m in _LINE_OP_RE.finditer(text, start, end):
        s = m.end()
        if s > starts[-1] and not _continues(text, starts[-1], m.start()):
            starts.append(s)


def _continues(text: str, unit_start: int, line_break: int) -> bool:
    """Does the line before `line_break` end inside an unfinished op (`,` `(` `=` `->` `:`)?"""
    # The unit's own first line starts at the unit (not at the start of the text, which would
    # make every one-line unit cost the whole text before it).
    nl = text.rfind("\n", unit_start, line_break)
    line_begin = nl + 1 if nl >= 0 else unit_start
    line = text[line_begin:line_break].strip()
    if line.startswith("//"):  # a comment line (the commonest line before a function)
        return False
    cut = _comment_start(line)
    if cut is not None:
        line = line[:cut].rstrip()
    return line.endswith(UNFINISHED_LINE_ENDS)


def _comment_start(line: str) -> int | None:
    """Index of `//` starting a comment in `line` (not inside a string), or None."""
    if "//" not in line:
        return None
    return line_state(line)[0]


def line_state(line: str) -> tuple[int | None, bool]:
    """Where a `//` comment starts in `line` (not inside a string; None if none), and whether
    the line, read up to that comment or its end, ends inside a string."""
    in_str = False
    i = 0
    n = len(line)
    while i < n:
        c = line[i]
        if in_str:
            if c == "\\":
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == "/" and line.startswith("//", i):
            return i, False
        i += 1
    return None, in_str


# possessive: no state kept per line
_BLANKS_RE = regex_cache.compile(r"(?:[ \t\r\n]++|//[^\n]*+)*+")


def _trim_end(text: str, s: int, e: int) -> int:
    """`trimmed_end`, read by `linescan.trim_end` where that is compiled (a function of 50k
    lines of host code ends in blank and comment lines, four string slices each: 2-3 ms of
    the split that a first open waits for), and held to it by tests."""
    if _LINE_SCAN_COMPILED:
        return trim_end(text, s, e)
    return trimmed_end(text, s, e)


def trimmed_end(text: str, s: int, e: int) -> int:
    """End of the unit's last token (blank lines and trailing comments belong to no unit)."""
    # Comments may hold quotes; strip whole trailing comment lines and blanks only. Lines are
    # read backwards, each one once: a unit followed by many comment lines costs their length.
    end = e
    while True:
        nl = text.rfind("\n", s, end)
        line_start = nl + 1 if nl >= 0 else s
        line = text[line_start:end].rstrip()
        if line and not line.lstrip().startswith("//"):
            return line_start + len(line)
        if nl < 0:
            return s
        end = nl  # a blank or comment-only line, and the line break before it
