# cython: annotation_typing=True, boundscheck=False, wraparound=False
"""Syntax layer: the lexer's scans of a line and of braces, written for C.

`line_spans(text, pos, end)` is what `LINE_RE.match(text, pos, end)` finds (None where it does
not match), read character by character; `brace_scan(text, start, end)` is what the splitter's
brace expressions find (`lexer._braces`), and `trim_end(text, s, e)` where its unit ends
(`lexer.trimmed_end`); `close_line(text, pos, end)` where a line of only `}`
has its `}` (`lexer._CLOSE_LINE_RE`), and `plain_lines` the tokenizer's loop over the lines
these scans tokenize alone. All are typed for Cython (the annotations of this
module are C types in its build, tools/compiled_build.py) and used only by that build
(`COMPILED`): the lexer of the Python modules runs the regular expressions, which are faster
than these loops run by the interpreter. tests/unit/test_linescan.py holds them to the
Python on the corpora, generated host code and random text.

Matched (as LINE_RE, from patterns.py):
  blank and comment-only lines, blanks;
  optionally a result list (`%a, %b:2`) with `=` (not `==`, `=>`) and blanks;
  the op name `[A-Za-z_][\\w$.]*`, then anything but `{}"` a line break or `/`;
  optionally `{`, blanks, a `//` comment; the line break (`\\r?\\n`) or the end.
`\\w` and `\\d` are Unicode's, as `re` reads them in a str pattern (`str.isalnum`, `_`;
`str.isdecimal`).
"""

from __future__ import annotations

# Characters read from the string's buffer in the build (chars.pxd, cimported by
# linescan.pxd as this import's name); as Python, by index (chars.py).
import gpu_async_lsp.syntax.chars as chars
from gpu_async_lsp.syntax.gpuscan import gpu_line  # a C call in the build (linescan.pxd)

try:
    import cython

    COMPILED = cython.compiled
except ImportError:  # no Cython: Python (the annotations are never evaluated)
    COMPILED = False


def line_spans(text: str, pos: cython.Py_ssize_t, end: cython.Py_ssize_t, op_words=None,
               whole_ops=None, token_class=None, gpu_class=None):
    """What `LINE_RE.match(text, pos, end)` finds, flat: (match end, results start, results
    end, name start, name end, rest start, rest end, brace), -1 for a group that took no
    part (`flat`); or None. One function, its loops inline (a call of a Python-level helper
    per character would cost more than it saves), one tuple (the match's spans as tuples of
    tuples cost more than the scan).

    Given `token_class` (the tokenizer's LineToken), the line's token too, where the line is
    a plain op line: (token, match end, brace) (only what the tokenizer reads); else (None,
    match end, results start, results end, name start, name end, rest start, rest end,
    brace, name): the token is None where the tokenizer decides (`lexer.tokenize_lines`):
    a line that starts an op of `whole_ops` (the GPU ops read by
    their formats; `op_words`: the bare names that start one), and one whose rest holds a
    `.` or `return` (a second op may start there). Its end, whether the op goes on
    (UNFINISHED_LINE_ENDS) and its bracket depth are read here, not from slices of the line
    (a tuple and five strings a line fewer). Given `gpu_class` too (the tokenizer's
    GpuLineToken), the line of a GPU op that its format reads whole gives (its GpuLineToken,
    where it ends, -1), made by `gpuscan.gpu_line` as the tokenizer would make it from the
    spans (half the lines of host code: not a tuple of ten and a second call each)."""
    i: cython.Py_ssize_t
    kind: cython.int
    data: cython.p_void
    j: cython.Py_ssize_t
    k: cython.Py_ssize_t
    c: cython.Py_UCS4
    res_start: cython.Py_ssize_t = -1
    res_end: cython.Py_ssize_t = -1
    name_start: cython.Py_ssize_t
    rest_start: cython.Py_ssize_t
    rest_end: cython.Py_ssize_t
    brace: cython.Py_ssize_t = -1
    # Indexes stay in [0, end) with end <= len(text): the build reads characters unchecked.
    if end > len(text):
        end = len(text)
    if pos < 0:
        pos = 0
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    i = _line_content(kind, data, pos, end)
    if i < end and chars.at(kind, data, i) == "%":
        # RESULT_LIST: results `%[\w$.\-]++(?:[ \t]*+:[ \t]*+\d++)?+` joined by `,` and
        # blanks; then `=` (not `==`, `=>`) and blanks. Else no match (no op name at `%`).
        res_start = i
        j = i  # the start of the result to read
        while True:
            k = j + 1
            while k < end:
                c = chars.at(kind, data, k)
                # ASCII first (`isalnum` reads Unicode's tables for every character).
                if not (("a" <= c <= "z") or ("0" <= c <= "9") or ("A" <= c <= "Z") or c == "_"
                        or c == "$" or c == "." or c == "-" or (c > "\x7f" and c.isalnum())):
                    break
                k += 1
            if k == j + 1:  # `%` alone: no result here
                if j == res_start:
                    return None
                break
            res_end = k
            while k < end and (chars.at(kind, data, k) == " " or chars.at(kind, data, k) == "\t"):
                k += 1
            if k < end and chars.at(kind, data, k) == ":":  # a result group's size, if digits
                k += 1
                while k < end and (chars.at(kind, data, k) == " "
                                   or chars.at(kind, data, k) == "\t"):
                    k += 1
                if k < end and chars.at(kind, data, k).isdecimal():
                    while k < end and chars.at(kind, data, k).isdecimal():
                        k += 1
                    res_end = k
            k = res_end
            while k < end and (chars.at(kind, data, k) == " " or chars.at(kind, data, k) == "\t"):
                k += 1
            if k >= end or chars.at(kind, data, k) != ",":
                break
            k += 1
            while k < end and (chars.at(kind, data, k) == " " or chars.at(kind, data, k) == "\t"):
                k += 1
            if k >= end or chars.at(kind, data, k) != "%":
                break
            j = k
        k = res_end
        while k < end and (chars.at(kind, data, k) == " " or chars.at(kind, data, k) == "\t"):
            k += 1
        if k >= end or chars.at(kind, data, k) != "=" or (
                k + 1 < end and (chars.at(kind, data, k + 1) == "="
                                 or chars.at(kind, data, k + 1) == ">")):
            return None
        i = k + 1
        while i < end and (chars.at(kind, data, i) == " " or chars.at(kind, data, i) == "\t"):
            i += 1
    if i >= end:
        return None
    c = chars.at(kind, data, i)
    if not (c == "_" or ("A" <= c <= "Z") or ("a" <= c <= "z")):
        return None
    name_start = i
    i += 1
    while i < end:
        c = chars.at(kind, data, i)
        if not (("a" <= c <= "z") or ("0" <= c <= "9") or ("A" <= c <= "Z") or c == "_"
                or c == "." or c == "$" or (c > "\x7f" and c.isalnum())):
            break
        i += 1
    rest_start = i
    while i < end:
        c = chars.at(kind, data, i)
        if c == "{" or c == "}" or c == '"' or c == "\n" or c == "/":
            break
        i += 1
    rest_end = i
    if i < end and chars.at(kind, data, i) == "{":
        brace = i
        i += 1
        while i < end and (chars.at(kind, data, i) == " " or chars.at(kind, data, i) == "\t"):
            i += 1
    if i + 1 < end and chars.at(kind, data, i) == "/" and chars.at(kind, data, i + 1) == "/":
        while i < end and chars.at(kind, data, i) != "\n":
            i += 1
    if i < end:  # `\r?\n`, else the end
        if chars.at(kind, data, i) == "\r" and i + 1 < end and chars.at(kind, data, i + 1) == "\n":
            i += 1
        if chars.at(kind, data, i) != "\n":
            return None
        i += 1
    if token_class is None:
        return (i, res_start, res_end, name_start, rest_start, rest_start, rest_end, brace)
    # The line's token. `rest_start` is the name's end.
    name = text[name_start:rest_start]
    dotted: cython.bint = False
    for k in range(name_start, rest_start):
        if chars.at(kind, data, k) == ".":
            dotted = True
            break
    leave = (res_start >= 0 or dotted or name in op_words) and name in whole_ops
    if leave and gpu_class is not None:
        # A GPU op read by its format: its token here (`gpu_line`, a C call in the build),
        # not the spans the tokenizer would pass on to it (a tuple of nine, a second call).
        g = gpu_line(text, whole_ops[name], name, name_start, rest_start, res_start, res_end,
                     end, op_words, gpu_class)
        if g is not None:
            return (g[0], g[1], -1)
    depth: cython.Py_ssize_t = 0
    last: cython.Py_ssize_t = rest_start  # after the last character not blank (`rstrip`)
    if not leave:
        for k in range(rest_start, rest_end):
            c = chars.at(kind, data, k)
            if c == ".":
                leave = True
                break
            if c == "(" or c == "[":
                depth += 1
            elif c == ")" or c == "]":
                depth -= 1
            elif (c == "r" and k + 6 <= rest_end and chars.at(kind, data, k + 1) == "e"
                    and chars.at(kind, data, k + 2) == "t" and chars.at(kind, data, k + 3) == "u"
                    and chars.at(kind, data, k + 4) == "r" and chars.at(kind, data, k + 5) == "n"):
                # `return` in the rest (read here: a str.find with bounds is a Python call
                # from the build, one per line).
                leave = True
                break
            if not c.isspace():
                last = k + 1
    if leave:
        return (None, i, res_start, res_end, name_start, rest_start, rest_start, rest_end,
                brace, name)
    cont: cython.bint = False
    if brace < 0 and last > rest_start:
        c = chars.at(kind, data, last - 1)
        cont = (c == "," or c == "(" or c == "[" or c == "=" or c == ":" or c == "<"
                or (c == ">" and last - 2 >= rest_start and chars.at(kind, data, last - 2) == "-"))
    token = tuple.__new__(token_class, (
        "line", res_start if res_start >= 0 else name_start,
        last if last > rest_start else rest_start, name, True, name_start, rest_start,
        res_start, res_end, cont, depth))
    return (token, i, brace)


def plain_lines(text: str, pos: cython.Py_ssize_t, end: cython.Py_ssize_t, out: list,
                op_words, whole_ops, token_class, gpu_class, raw_class):
    """The tokenizer's loop over the lines the scan tokenizes alone (`lexer.tokenize_lines`),
    from `pos`: each plain op line's LineToken, each GPU op's GpuLineToken, a `{` that ends a
    line and a line of only `}` (`close_line`) appended to `out` as the tokenizer would append
    them, until a line the tokenizer decides or `end`. A C loop in the build: the tokenizer's
    loop paid a call from another module, a tuple and a test of the last token per line.
    Returns (where it stopped, that line's spans as `line_spans` gives them: its 10 with
    the token None, or None where they do not match)."""
    brace: cython.Py_ssize_t
    k: cython.Py_ssize_t
    spans: tuple
    new = tuple.__new__
    while pos < end:
        spans = line_spans(text, pos, end, op_words, whole_ops, token_class, gpu_class)
        if spans is None:
            k = close_line(text, pos, end)
            if k < 0:
                return pos, None
            out.append(new(raw_class, ("}", k, k + 1, "}", True)))
            pos = k + 1  # the rest of its line is read as the next line's start
            continue
        if spans[0] is None:
            return pos, spans
        out.append(spans[0])
        brace = spans[2]
        if brace >= 0:
            out.append(new(raw_class, ("{", brace, brace + 1, "{", False)))
        pos = spans[1]
    return pos, None


def close_line(text: str, pos: cython.Py_ssize_t, end: cython.Py_ssize_t) -> cython.Py_ssize_t:
    """Where the `}` of a line holding only `}` stands (after blank and comment lines), as
    `lexer._CLOSE_LINE_RE.match(text, pos, end)` finds it (the match's end minus one); -1
    where it does not match."""
    i: cython.Py_ssize_t
    j: cython.Py_ssize_t
    kind: cython.int
    data: cython.p_void
    if end > len(text):
        end = len(text)
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    i = _line_content(kind, data, pos if pos > 0 else 0, end)
    if i >= end or chars.at(kind, data, i) != "}":
        return -1
    j = i + 1  # then blanks, a comment, and the line break or the end
    while j < end and (chars.at(kind, data, j) == " " or chars.at(kind, data, j) == "\t"):
        j += 1
    if j + 1 < end and chars.at(kind, data, j) == "/" and chars.at(kind, data, j + 1) == "/":
        while j < end and chars.at(kind, data, j) != "\n":
            j += 1
    if j >= end or chars.at(kind, data, j) == "\n" or (
            chars.at(kind, data, j) == "\r" and j + 1 < end
            and chars.at(kind, data, j + 1) == "\n"):
        return i
    return -1


def _line_content(kind: cython.int, data: cython.p_void, pos: cython.Py_ssize_t,
                  end: cython.Py_ssize_t) -> cython.Py_ssize_t:
    """Where the first line from `pos` that holds more than blanks and a `//` comment has its
    first character after its blanks (blank and comment-only lines are each taken whole or
    not at all, as LINE_RE and _CLOSE_LINE_RE take them); `end` if there is none."""
    i: cython.Py_ssize_t = pos
    j: cython.Py_ssize_t
    while True:
        j = i
        while j < end and (chars.at(kind, data, j) == " " or chars.at(kind, data, j) == "\t"):
            j += 1
        if j + 1 < end and chars.at(kind, data, j) == "/" and chars.at(kind, data, j + 1) == "/":
            while j < end and chars.at(kind, data, j) != "\n":
                j += 1
        elif j < end and chars.at(kind, data, j) == "\r":
            j += 1
        if j < end and chars.at(kind, data, j) == "\n":
            i = j + 1
        else:
            break
    while i < end and (chars.at(kind, data, i) == " " or chars.at(kind, data, i) == "\t"):
        i += 1
    return i


def flat(m) -> tuple:
    """A LINE_RE match as `line_spans` gives it."""
    (_, line_end), (res_start, res_end), (name_start, name_end), (rest_start, rest_end), \
        (brace, _) = m.regs
    return (line_end, res_start, res_end, name_start, name_end, rest_start, rest_end, brace)


def brace_scan(text: str, start: cython.Py_ssize_t, end: cython.Py_ssize_t):
    """The braces of text[start:end] outside comments, strings and file metadata, as
    `lexer._braces` finds them with its expressions: (deltas, offsets), +1 for each `{` and -1
    for each `}`, and where each stands. As those expressions read them: a comment is `//` to
    the line's end; a string is `"` to the next `"` unescaped, `\\` escaping any character
    and an unescaped line break leaving it open; metadata is `{-#` to the first `#-}`. A `"`
    that opens no closed string runs to where that open string stops (OPEN_STRING), and no
    `"` before there opens a string (braces and comments in between still count); a `{-#`
    that no `#-}` closes is a brace, and no metadata is looked for after it."""
    i: cython.Py_ssize_t
    k: cython.Py_ssize_t
    string_end: cython.Py_ssize_t = -1
    at_open: cython.Py_ssize_t = -1
    at_close: cython.Py_ssize_t = -1
    at_slash: cython.Py_ssize_t = -1
    at_quote: cython.Py_ssize_t = -1
    strings: cython.bint = True
    metadata: cython.bint = True
    c: cython.Py_UCS4
    deltas: list = []
    offsets: list = []
    if end > len(text):
        end = len(text)
    if start < 0:
        start = 0
    # From mark to mark: the next `{`, `}`, `/` and `"` are each found with str.find (memchr
    # for a text of 1-byte characters), a stream per character that only moves forward (each
    # is found again only once it is passed): 20 MB of host code in ~13 ms where reading
    # every character took ~50. What a comment, string or metadata runs over is jumped.
    i = start
    while True:
        if at_open < i:
            at_open = _found(text.find("{", i, end), end)
        if at_close < i:
            at_close = _found(text.find("}", i, end), end)
        if at_slash < i:
            at_slash = _found(text.find("/", i, end), end)
        if at_quote < i:
            at_quote = _found(text.find('"', i, end), end)
        i = min(at_open, at_close, at_slash, at_quote)
        if i >= end:
            return deltas, offsets
        c = text[i]
        if c == "{":
            if metadata and i + 2 < end and text[i + 1] == "-" and text[i + 2] == "#":
                k = text.find("#-}", i + 3, end)
                if k >= 0:
                    i = k + 3
                    continue
                metadata = False  # never closed: a brace, and no metadata after it
            deltas.append(1)
            offsets.append(i)
        elif c == "}":
            deltas.append(-1)
            offsets.append(i)
        elif c == "/":
            if i + 1 < end and text[i + 1] == "/":
                i = _found(text.find("\n", i, end), end)  # the comment's line break, or end
                continue
        elif strings or i >= string_end:  # a `"` (one before string_end opens nothing)
            strings = True
            k = _string_stop(text, i, end)
            if k < end and text[k] == '"':
                i = k + 1  # a closed string
                continue
            strings = False  # open: no `"` before where it stops opens a string
            string_end = k
        i += 1


def _found(k: cython.Py_ssize_t, end: cython.Py_ssize_t) -> cython.Py_ssize_t:
    """str.find's answer, `end` for none."""
    return end if k < 0 else k


def _string_stop(text: str, i: cython.Py_ssize_t, end: cython.Py_ssize_t) -> cython.Py_ssize_t:
    """Where the string whose `"` is at `i` stops: its closing `"`, or where it stops open (an
    unescaped line break, a `\\` at `end`, or `end`)."""
    k: cython.Py_ssize_t = i + 1
    c: cython.Py_UCS4
    while k < end:
        c = text[k]
        if c == '"' or c == "\n":
            return k
        if c == "\\":
            if k + 1 >= end:
                return k
            k += 1
        k += 1
    return end


def trim_end(text: str, s: cython.Py_ssize_t, e: cython.Py_ssize_t) -> cython.Py_ssize_t:
    """`lexer.trimmed_end`: the end of the last line of text[s:e] that holds more than blanks
    and a `//` comment, its trailing blanks left out (`str.isspace`, as `rstrip` reads
    them); `s` if there is none. Each line is read once, from the end."""
    end: cython.Py_ssize_t = e
    nl: cython.Py_ssize_t
    k: cython.Py_ssize_t
    j: cython.Py_ssize_t
    if end > len(text):
        end = len(text)
    while True:
        nl = end - 1
        while nl >= s and text[nl] != "\n":
            nl -= 1
        k = end
        while k > nl + 1 and text[k - 1].isspace():
            k -= 1
        j = nl + 1
        while j < k and text[j].isspace():
            j += 1
        if k > nl + 1 and not (j + 1 < k and text[j] == "/" and text[j + 1] == "/"):
            return k
        if nl < s:
            return s
        end = nl
