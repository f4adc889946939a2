# cython: annotation_typing=True, boundscheck=False, wraparound=False
"""Syntax layer: the line match of the tokenizer (`lexer.LINE_RE`) written for C.

`line_spans(text, pos, end)` is what `LINE_RE.match(text, pos, end)` finds (None where it does
not match), read character by character. It is typed for Cython (the annotations of this module
are C types in its build, tools/compiled_build.py) and used only by that build
(`COMPILED`): the tokenizer of the Python modules runs the regular expression, which is
faster than this loop run by the interpreter. tests/unit/test_linescan.py holds both to the
expression on the corpora, generated host code and random lines.

Matched (as LINE_RE, from patterns.py):
  blank and comment-only lines, blanks;
  optionally a result list (`%a, %b:2`) with `=` (not `==`, `=>`) and blanks;
  the op name `[A-Za-z_][\\w$.]*`, then anything but `{}"` a line break or `/`;
  optionally `{`, blanks, a `//` comment; the line break (`\\r?\\n`) or the end.
`\\w` and `\\d` are Unicode's, as `re` reads them in a str pattern (`str.isalnum`, `_`;
`str.isdecimal`).
"""

from __future__ import annotations

try:
    import cython

    COMPILED = cython.compiled
except ImportError:  # no Cython: Python (the annotations are never evaluated)
    COMPILED = False


def line_spans(text: str, pos: cython.Py_ssize_t, end: cython.Py_ssize_t):
    """What `LINE_RE.match(text, pos, end)` finds, flat: (match end, results start, results
    end, name start, name end, rest start, rest end, brace), -1 for a group that took no
    part (`flat`); or None. One function, its loops inline (a call of a Python-level helper
    per character would cost more than it saves), one tuple (the match's spans as tuples of
    tuples cost more than the scan)."""
    i: cython.Py_ssize_t
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
    i = pos
    # Blank and comment-only lines, each taken whole or not at all.
    while True:
        j = i
        while j < end and (text[j] == " " or text[j] == "\t"):
            j += 1
        if j + 1 < end and text[j] == "/" and text[j + 1] == "/":
            while j < end and text[j] != "\n":
                j += 1
        elif j < end and text[j] == "\r":
            j += 1
        if j < end and text[j] == "\n":
            i = j + 1
        else:
            break
    while i < end and (text[i] == " " or text[i] == "\t"):
        i += 1
    if i < end and text[i] == "%":
        # RESULT_LIST: results `%[\w$.\-]++(?:[ \t]*+:[ \t]*+\d++)?+` joined by `,` and
        # blanks; then `=` (not `==`, `=>`) and blanks. Else no match (no op name at `%`).
        res_start = i
        j = i  # the start of the result to read
        while True:
            k = j + 1
            while k < end:
                c = text[k]
                if not (c == "_" or c.isalnum() or c == "$" or c == "." or c == "-"):
                    break
                k += 1
            if k == j + 1:  # `%` alone: no result here
                if j == res_start:
                    return None
                break
            res_end = k
            while k < end and (text[k] == " " or text[k] == "\t"):
                k += 1
            if k < end and text[k] == ":":  # a result group's size, if digits follow
                k += 1
                while k < end and (text[k] == " " or text[k] == "\t"):
                    k += 1
                if k < end and text[k].isdecimal():
                    while k < end and text[k].isdecimal():
                        k += 1
                    res_end = k
            k = res_end
            while k < end and (text[k] == " " or text[k] == "\t"):
                k += 1
            if k >= end or text[k] != ",":
                break
            k += 1
            while k < end and (text[k] == " " or text[k] == "\t"):
                k += 1
            if k >= end or text[k] != "%":
                break
            j = k
        k = res_end
        while k < end and (text[k] == " " or text[k] == "\t"):
            k += 1
        if k >= end or text[k] != "=" or (
                k + 1 < end and (text[k + 1] == "=" or text[k + 1] == ">")):
            return None
        i = k + 1
        while i < end and (text[i] == " " or text[i] == "\t"):
            i += 1
    if i >= end:
        return None
    c = text[i]
    if not (c == "_" or ("A" <= c <= "Z") or ("a" <= c <= "z")):
        return None
    name_start = i
    i += 1
    while i < end:
        c = text[i]
        if not (c == "_" or c.isalnum() or c == "$" or c == "."):
            break
        i += 1
    rest_start = i
    while i < end:
        c = text[i]
        if c == "{" or c == "}" or c == '"' or c == "\n" or c == "/":
            break
        i += 1
    rest_end = i
    if i < end and text[i] == "{":
        brace = i
        i += 1
        while i < end and (text[i] == " " or text[i] == "\t"):
            i += 1
    if i + 1 < end and text[i] == "/" and text[i + 1] == "/":
        while i < end and text[i] != "\n":
            i += 1
    if i < end:  # `\r?\n`, else the end
        if text[i] == "\r" and i + 1 < end and text[i + 1] == "\n":
            i += 1
        if text[i] != "\n":
            return None
        i += 1
    return (i, res_start, res_end, name_start, rest_start, rest_start, rest_end, brace)


def flat(m) -> tuple:
    """A LINE_RE match as `line_spans` gives it."""
    (_, line_end), (res_start, res_end), (name_start, name_end), (rest_start, rest_end), \
        (brace, _) = m.regs
    return (line_end, res_start, res_end, name_start, name_end, rest_start, rest_end, brace)
