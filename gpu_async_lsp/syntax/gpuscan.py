# cython: boundscheck=False, wraparound=False
"""Syntax layer: the fast path of the exactly modeled GPU ops (`gpu_formats.WHOLE_OP`) written
for C.

`op_spans(text, code, pos, end)` is what `WHOLE_OP[name].match(text, pos, end)` finds, read
character by character (`code`: FORMAT_CODE[name]): the async clause, the operands of the
op's assembly format, the end of its line, and no next line that goes on with the op. Its C
types are declared in gpuscan.pxd (an augmenting .pxd: this file stays plain Python, as the
install without Cython runs it), and only the compiled build uses it (`COMPILED`): the
tokenizer run as Python matches the regular expressions, which is faster than these loops
run by the interpreter. tests/unit/test_gpuscan.py holds both builds to the expressions on
the corpora, generated host code and random text.

The expressions are possessive or atomic almost everywhere, so a greedy reading finds what
they find; the one place they backtrack is a launch_func's kernel symbol (`[\\w$.\\-]+`
gives characters back when `blocks` or `clusters` follows inside the name), read here the
same way (`_launch`). `\\w` and `\\d` are Unicode's, as `re` reads them in a str pattern.
"""

from __future__ import annotations

# Characters read from the string's buffer in the build (chars.pxd, cimported by
# gpuscan.pxd as this import's name); as Python, by index (chars.py).
import gpu_async_lsp.syntax.chars as chars

try:
    import cython

    COMPILED = cython.compiled
except ImportError:  # no Cython: Python
    COMPILED = False

WAIT, ALLOC, DEALLOC, MEMCPY, MEMSET, LAUNCH_FUNC = range(6)
# Op name -> its format's code (the names of gpu_formats.FORMATS).
FORMAT_CODE = {"gpu.wait": WAIT, "gpu.alloc": ALLOC, "gpu.dealloc": DEALLOC,
               "gpu.memcpy": MEMCPY, "gpu.memset": MEMSET, "gpu.launch_func": LAUNCH_FUNC}
_GOES_ON_WORDS = ("loc", "args", "blocks", "threads", "clusters", "dynamic_shared_memory_size")


def op_spans(text: str, code: int, pos: int, end: int):
    """What WHOLE_OP's match at `pos` (just after the op's name) finds, flat: (match end,
    `async` start, `[` offset, just after `]`, operands start, operands end), -1 for a group
    that took no part (`flat`); or None."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    if end > len(text):
        end = len(text)
    if pos < 0 or pos > end:
        return None
    # custom<AsyncDependencies>: `async` (a word of its own), then `[%a, %b]`, each optional.
    async_start = -1
    deps_open = -1
    deps_close = -1
    i = _blanks(text, pos, end)
    if (_starts(text, i, end, "async") and not (i > 0 and _word(chars.at(kind, data, i - 1)))
            and not (i + 5 < end and _word(chars.at(kind, data, i + 5)))):
        async_start = i
        pos = i + 5
    i = _blanks(text, pos, end)
    if i < end and chars.at(kind, data, i) == "[":
        j = _blanks(text, i + 1, end)
        k = _values(text, j, end)
        if k >= 0:
            j = _blanks(text, k, end)
        if j < end and chars.at(kind, data, j) == "]":
            deps_open = i
            deps_close = j + 1
            pos = j + 1
    if code == WAIT:
        ops_end = pos
    elif code == ALLOC:
        ops_end = _alloc(text, pos, end)
    elif code == DEALLOC:
        ops_end = _dealloc(text, pos, end)
    elif code == MEMCPY or code == MEMSET:
        ops_end = _copy(text, pos, end)
    elif code == LAUNCH_FUNC:
        ops_end = _launch(text, pos, end)
    else:
        return None
    if ops_end < 0:
        return None
    line_end = _eol(text, ops_end, end)
    if line_end < 0 or _goes_on(text, line_end, end):
        return None
    return (line_end, async_start, deps_open, deps_close, pos, ops_end)


def gpu_line(text: str, code: int, name: str, name_start: int, name_end: int, res_start: int,
             res_end: int, end: int, op_words, token_class):
    """The tokenizer's GpuLineToken (of `token_class`) of the op `name` at text[name_start:
    name_end] (results at [res_start, res_end), -1 without), and where its line ends: where
    its format matches (op_spans) and the next line starts something new
    (next_line_starts_op); else None (the tokenizer reads it token by token). One call
    instead of three, and no tuple of spans, for each of the thousands of GPU ops a big
    file holds."""
    spans = op_spans(text, code, name_end, end)
    if spans is None:
        return None
    line_end, async_start, deps_open, deps_close, ops_start, ops_end = spans
    if not next_line_starts_op(text, line_end, end, op_words):
        return None
    return tuple.__new__(token_class, (
        "gpuline", res_start if res_start >= 0 else name_start, ops_end, name, True,
        name_start, name_end, res_start, res_end, async_start, deps_open, deps_close,
        ops_start, False, 0)), line_end


def next_line_starts_op(text: str, pos: int, end: int, op_words) -> bool:
    """What lexer._next_line_starts_op reads with _NEXT_OP_START_RE: after blank and comment
    lines, does the line at `pos` start something new (a result list and its `=`, a dotted
    name or one of `op_words`, a generic op's name, `}`, `^`, `{-#`, an alias, the end)?"""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    if end > len(text):
        end = len(text)
    if pos < 0 or pos > end:
        return False
    i = _blank_lines(text, pos, end)
    if i >= end:
        return True
    c = chars.at(kind, data, i)
    if c == "%":
        while True:  # results `%a:2`, joined by `,`
            k = _value_name(text, i, end)
            if k < 0:
                return False
            j = _blanks(text, k, end)
            if j < end and chars.at(kind, data, j) == ":":
                j = _blanks(text, j + 1, end)
                if j < end and _digit(chars.at(kind, data, j)):
                    while j < end and _digit(chars.at(kind, data, j)):
                        j += 1
                    k = j
            j = _blanks(text, k, end)
            if j < end and chars.at(kind, data, j) == ",":
                j = _blanks(text, j + 1, end)
                if j < end and chars.at(kind, data, j) == "%" and _value_name(text, j, end) >= 0:
                    i = j
                    continue
            j = _blanks(text, k, end)
            return j < end and chars.at(kind, data, j) == "=" and not (
                j + 1 < end and (chars.at(kind, data, j + 1) == "="
                                 or chars.at(kind, data, j + 1) == ">"))
    if c == "_" or ("A" <= c <= "Z") or ("a" <= c <= "z"):
        k = i + 1
        dotted = False
        while k < end:
            c = chars.at(kind, data, k)
            if c == ".":
                dotted = True
            elif not (_word(c) or c == "$"):
                break
            k += 1
        return dotted or text[i:k] in op_words
    if c == '"':  # a generic op's name: a dot before the string closes on its line
        dotted = False
        k = i + 1
        while k < end:
            c = chars.at(kind, data, k)
            if c == '"':
                return dotted
            if c == "\n":
                return False
            if c == ".":
                dotted = True
            k += 1
        return False
    if c == "}" or c == "^":
        return True
    if c == "{":
        return _starts(text, i, end, "{-#")
    if c == "#" or c == "!":
        k = i + 1
        if not (k < end and (chars.at(kind, data, k) == "_"
                             or ("A" <= chars.at(kind, data, k) <= "Z")
                             or ("a" <= chars.at(kind, data, k) <= "z"))):
            return False
        k += 1
        while k < end and (_word(chars.at(kind, data, k)) or chars.at(kind, data, k) == "$"
                           or chars.at(kind, data, k) == "."):
            k += 1
        k = _blanks(text, k, end)
        return k < end and chars.at(kind, data, k) == "="
    return False


def flat(m) -> tuple:
    """A WHOLE_OP match as `op_spans` gives it."""
    return (m.end(), m.start("async"), m.start("open"), m.end("close"), m.start("ops"),
            m.end("ops"))


# -- the formats: each returns the end of the operands (the end of the line follows), or -1 ----


def _alloc(text: str, i: int, end: int) -> int:
    """`host_shared`? `(%sizes)` `[%symbols]`? `:` type."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    j = _blanks(text, i, end)
    if _starts(text, j, end, "host_shared"):
        i = j + 11
    i = _blanks(text, i, end)
    if not (i < end and chars.at(kind, data, i) == "("):
        return -1
    i = _blanks(text, i + 1, end)
    k = _values(text, i, end)
    if k >= 0:
        i = _blanks(text, k, end)
    if not (i < end and chars.at(kind, data, i) == ")"):
        return -1
    i += 1
    j = _blanks(text, i, end)
    if j < end and chars.at(kind, data, j) == "[":
        k = _values(text, _blanks(text, j + 1, end), end)
        if k >= 0:
            k = _blanks(text, k, end)
            if k < end and chars.at(kind, data, k) == "]":
                i = k + 1
    return _colon_type(text, i, end)


def _dealloc(text: str, i: int, end: int) -> int:
    """`%memref` `:` type."""
    i = _value(text, _blanks(text, i, end), end)
    if i < 0:
        return -1
    return _colon_type(text, i, end)


def _copy(text: str, i: int, end: int) -> int:
    """`%a, %b : type, type` (gpu.memcpy and gpu.memset)."""
    i = _value(text, _blanks(text, i, end), end)
    if i < 0:
        return -1
    i = _next_value(text, i, end)
    if i < 0:
        return -1
    i = _colon_type(text, i, end)
    if i < 0:
        return -1
    i = _comma(text, i, end)
    if i < 0:
        return -1
    return _type(text, _blanks(text, i, end), end)


def _launch(text: str, i: int, end: int) -> int:
    """`<%stream : type>`? @kernel `clusters in (...)`? `blocks in (...)` `threads in (...)`
    (`:` type)? (`dynamic_shared_memory_size` %v)? (`args(%v : type, ...)`)?, the parts
    after the first on lines of their own or not.

    The kernel symbol's last name gives characters back, as `[\\w$.\\-]+` does, when the rest
    does not follow its longest reading: the rest is tried again where `blocks` or `clusters`
    starts inside a name of the symbol, from the last name's end backwards."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    j = _blanks(text, i, end)
    if j < end and chars.at(kind, data, j) == "<":
        k = _value(text, _blanks(text, j + 1, end), end)
        if k >= 0:
            k = _colon_type(text, k, end)
            if k >= 0:
                k = _blanks(text, k, end)
                if k < end and chars.at(kind, data, k) == ">":
                    i = k + 1
    i = _nl(text, i, end)
    if not (i < end and chars.at(kind, data, i) == "@"):
        return -1
    # The symbol's longest reading: `@name` or `@"string"`, then `::@...` as often as it goes.
    k = _symbol_part(text, i, end)
    if k < 0:
        return -1
    names = [(i, k)]  # each part's `@` and end
    while _starts(text, k, end, "::@"):
        j = _symbol_part(text, k + 2, end)
        if j < 0:
            break
        names.append((k + 2, j))
        k = j
    done = _launch_rest(text, k, end)
    if done >= 0:
        return done
    # Shorter readings, as the expression backtracks: a position inside a name (never in a
    # string), the last part's first and from its end backwards, where the rest can start
    # only with `blocks` or `clusters` (no blank can come between).
    for at, part_end in reversed(names):
        if chars.at(kind, data, at + 1) == '"':
            continue
        j = part_end - 1
        while j > at + 1:
            if _starts(text, j, end, "blocks") or _starts(text, j, end, "clusters"):
                done = _launch_rest(text, j, end)
                if done >= 0:
                    return done
            j -= 1
    return -1


def _launch_rest(text: str, i: int, end: int) -> int:
    """What follows the kernel symbol, to the end of the operands, or -1."""
    j = _nl(text, i, end)
    if _starts(text, j, end, "clusters"):
        k = _dims_after(text, j + 8, end)
        if k >= 0:
            i = k
    i = _nl(text, i, end)
    if not _starts(text, i, end, "blocks"):
        return -1
    i = _dims_after(text, i + 6, end)
    if i < 0:
        return -1
    i = _nl(text, i, end)
    if not _starts(text, i, end, "threads"):
        return -1
    i = _dims_after(text, i + 7, end)
    if i < 0:
        return -1
    k = _colon_type(text, i, end)
    if k >= 0:
        i = k
    j = _nl(text, i, end)
    if _starts(text, j, end, "dynamic_shared_memory_size"):
        k = _value(text, _blanks(text, j + 26, end), end)
        if k >= 0:
            i = k
    j = _nl(text, i, end)
    if _starts(text, j, end, "args"):
        k = _args(text, j + 4, end)
        if k >= 0:
            i = k
    return i if _eol(text, i, end) >= 0 else -1


def _args(text: str, i: int, end: int) -> int:
    """After `args`: `(%v : type, %w : type)` (each `, %w` may follow a line break)."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    i = _blanks(text, i, end)
    if not (i < end and chars.at(kind, data, i) == "("):
        return -1
    i = _blanks(text, i + 1, end)
    k = _value(text, i, end)
    if k >= 0:
        k = _colon_type(text, k, end)
    if k >= 0:
        i = k
        while True:
            j = _blanks(text, i, end)
            if not (j < end and chars.at(kind, data, j) == ","):
                break
            j = _value(text, _nl(text, j + 1, end), end)
            if j < 0:
                break
            j = _colon_type(text, j, end)
            if j < 0:
                break
            i = j
        i = _blanks(text, i, end)
    if i < end and chars.at(kind, data, i) == ")":
        return i + 1
    return -1


def _dims_after(text: str, i: int, end: int) -> int:
    """After `blocks`, `threads` or `clusters`: `in (%x, %y, %z)`."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    i = _blanks(text, i, end)
    if not _starts(text, i, end, "in"):
        return -1
    i = _blanks(text, i + 2, end)
    if not (i < end and chars.at(kind, data, i) == "("):
        return -1
    i = _value(text, _blanks(text, i + 1, end), end)
    if i < 0:
        return -1
    i = _next_value(text, i, end)
    if i < 0:
        return -1
    i = _next_value(text, i, end)
    if i < 0:
        return -1
    i = _blanks(text, i, end)
    if i < end and chars.at(kind, data, i) == ")":
        return i + 1
    return -1


# -- pieces ---------------------------------------------------------------------------------------


def _colon_type(text: str, i: int, end: int) -> int:
    """Blanks, `:`, blanks, a type."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    i = _blanks(text, i, end)
    if not (i < end and chars.at(kind, data, i) == ":"):
        return -1
    return _type(text, _blanks(text, i + 1, end), end)


def _comma(text: str, i: int, end: int) -> int:
    """Blanks and `,`: just after it."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    i = _blanks(text, i, end)
    return i + 1 if i < end and chars.at(kind, data, i) == "," else -1


def _next_value(text: str, i: int, end: int) -> int:
    """Blanks, `,`, blanks and an SSA use: just after it, or -1."""
    i = _comma(text, i, end)
    if i < 0:
        return -1
    return _value(text, _blanks(text, i, end), end)


def _type(text: str, i: int, end: int) -> int:
    """`!?[A-Za-z_][\\w$.]*+` and a `<...>` body nested up to 4 levels, if one closes."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    if i < end and chars.at(kind, data, i) == "!":
        i += 1
    if i >= end:
        return -1
    c = chars.at(kind, data, i)
    if not (c == "_" or ("A" <= c <= "Z") or ("a" <= c <= "z")):
        return -1
    i += 1
    while i < end:
        c = chars.at(kind, data, i)
        if not (_word(c) or c == "$" or c == "."):
            break
        i += 1
    if i < end and chars.at(kind, data, i) == "<":
        k = _angle(text, i, end, 3)
        if k >= 0:
            return k
    return i


def _angle(text: str, i: int, end: int, depth: int) -> int:
    """patterns.angle_body(depth) at text[i] (a `<`): skips `->`, `>=`, `<=` and strings,
    nests `<...>` while depth is left. Just after its `>`, or -1."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    i += 1
    while True:
        while i < end:
            c = chars.at(kind, data, i)
            if c == "<" or c == ">" or c == '"' or c == "-":
                break
            i += 1
        if i >= end:
            return -1
        c = chars.at(kind, data, i)
        if c == "-":
            i += 2 if i + 1 < end and chars.at(kind, data, i + 1) == ">" else 1
        elif c == ">":
            if i + 1 < end and chars.at(kind, data, i + 1) == "=":
                i += 2
            else:
                return i + 1
        elif c == "<":
            if i + 1 < end and chars.at(kind, data, i + 1) == "=":
                i += 2
            elif depth > 0:
                i = _angle(text, i, end, depth - 1)
                if i < 0:
                    return -1
            else:
                return -1
        else:
            i = _string(text, i, end)
            if i < 0:
                return -1


def _string(text: str, i: int, end: int) -> int:
    """patterns.STRING at text[i] (a `"`): just after its closing `"`, or -1."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    i += 1
    while i < end:
        c = chars.at(kind, data, i)
        if c == '"':
            return i + 1
        if c == "\n":
            return -1
        if c == "\\":
            if i + 1 < end and chars.at(kind, data, i + 1) != "\n":
                i += 2
                continue
            return -1
        i += 1
    return -1


def _symbol_part(text: str, i: int, end: int) -> int:
    """`@name` or `@"string"` at text[i]: its end, or -1."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    if not (i < end and chars.at(kind, data, i) == "@"):
        return -1
    i += 1
    if i < end and chars.at(kind, data, i) == '"':
        return _string(text, i, end)
    k = i
    while k < end and _is_symbol_char(chars.at(kind, data, k)):
        k += 1
    return k if k > i else -1


def _values(text: str, i: int, end: int) -> int:
    """`%a, %b` (one or more): just after the last, or -1."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    i = _value(text, i, end)
    if i < 0:
        return -1
    while True:
        j = _blanks(text, i, end)
        if not (j < end and chars.at(kind, data, j) == ","):
            return i
        j = _value(text, _blanks(text, j + 1, end), end)
        if j < 0:
            return i
        i = j


def _value(text: str, i: int, end: int) -> int:
    """An SSA use `%[\\w$.\\-]++(?:#\\d++)?+` at text[i]: its end, or -1."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    k = _value_name(text, i, end)
    if k < 0:
        return -1
    if k + 1 < end and chars.at(kind, data, k) == "#" and _digit(chars.at(kind, data, k + 1)):
        k += 2
        while k < end and _digit(chars.at(kind, data, k)):
            k += 1
    return k


def _value_name(text: str, i: int, end: int) -> int:
    """An SSA name `%[\\w$.\\-]++` at text[i]: its end, or -1."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    if not (i < end and chars.at(kind, data, i) == "%"):
        return -1
    k = i + 1
    while k < end and _is_symbol_char(chars.at(kind, data, k)):
        k += 1
    return k if k > i + 1 else -1


def _blank_lines(text: str, i: int, end: int) -> int:
    """Blank and comment-only lines (each whole, with its line break), then blanks."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    while True:
        j = _blanks(text, i, end)
        if j + 1 < end and chars.at(kind, data, j) == "/" and chars.at(kind, data, j + 1) == "/":
            while j < end and chars.at(kind, data, j) != "\n":
                j += 1
        if (j < end and chars.at(kind, data, j) == "\r" and j + 1 < end
                and chars.at(kind, data, j + 1) == "\n"):
            i = j + 2
        elif j < end and chars.at(kind, data, j) == "\n":
            i = j + 1
        else:
            return _blanks(text, i, end)


def _eol(text: str, i: int, end: int) -> int:
    """Blanks, a `//` comment, the line break (`\\r?\\n`) or the end: just after it, or -1."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    i = _blanks(text, i, end)
    if i + 1 < end and chars.at(kind, data, i) == "/" and chars.at(kind, data, i + 1) == "/":
        while i < end and chars.at(kind, data, i) != "\n":
            i += 1
    if i >= end:
        return i
    if chars.at(kind, data, i) == "\r" and i + 1 < end and chars.at(kind, data, i + 1) == "\n":
        return i + 2
    return i + 1 if chars.at(kind, data, i) == "\n" else -1


def _goes_on(text: str, i: int, end: int) -> bool:
    """gpu_formats._GOES_ON: after blank and comment lines, a line that starts with what the
    format may still hold (`[`, `{`, `:`, `(`, `<`, `loc`, a launch_func part)."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    i = _blank_lines(text, i, end)
    if i >= end:
        return False
    c = chars.at(kind, data, i)
    if c == "[" or c == "{" or c == ":" or c == "(" or c == "<":
        return True
    if not (c == "l" or c == "a" or c == "b" or c == "t" or c == "c" or c == "d"):
        return False
    for word in _GOES_ON_WORDS:
        if _starts(text, i, end, word):
            k = i + len(word)
            return not (k < end and _word(chars.at(kind, data, k)))
    return False


def _nl(text: str, i: int, end: int) -> int:
    """Blanks, and at most one line break with the blanks after it."""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    i = _blanks(text, i, end)
    if (i < end and chars.at(kind, data, i) == "\r" and i + 1 < end
            and chars.at(kind, data, i + 1) == "\n"):
        return _blanks(text, i + 2, end)
    if i < end and chars.at(kind, data, i) == "\n":
        return _blanks(text, i + 1, end)
    return i


def _blanks(text: str, i: int, end: int) -> int:
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    while i < end:
        c = chars.at(kind, data, i)
        if c != " " and c != "\t":
            break
        i += 1
    return i


def _starts(text: str, i: int, end: int, word: str) -> bool:
    """Does text[i:end] start with `word` (ASCII)?"""
    kind = chars.kind_of(text)
    data = chars.data_of(text)
    n = len(word)
    if i + n > end:
        return False
    k = 0
    while k < n:
        if chars.at(kind, data, i + k) != word[k]:
            return False
        k += 1
    return True


def _word(c) -> bool:
    """`\\w`: a Unicode letter or digit, or `_` (ASCII first: the Unicode tables are slow)."""
    if c <= "\x7f":
        return ("a" <= c <= "z") or ("A" <= c <= "Z") or ("0" <= c <= "9") or c == "_"
    return c.isalnum()


def _is_symbol_char(c) -> bool:
    """`[\\w$.\\-]`."""
    if c <= "\x7f":
        return (("a" <= c <= "z") or ("A" <= c <= "Z") or ("0" <= c <= "9") or c == "_"
                or c == "$" or c == "." or c == "-")
    return c.isalnum()


def _digit(c) -> bool:
    """`\\d`: a Unicode decimal digit."""
    if c <= "\x7f":
        return "0" <= c <= "9"
    return c.isdecimal()
