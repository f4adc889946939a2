# C of linescan.py's Cython build beyond its annotations (tools/compiled_build.py): an
# augmenting .pxd, so that the .py stays plain Python. brace_scan of a text stored one byte a
# character (ASCII and Latin-1: PEP 393's 1-byte kind, what nearly every MLIR file is) finds
# the next `{`, `}`, `/` and `"` with memchr (a stream per character, each found once), not by
# reading every character: 20 MB of host code in ~10 ms, not ~50. The same rules as
# brace_scan's loop (tests/unit/test_linescan.py holds both to the brace expressions).
from cpython.unicode cimport PyUnicode_1BYTE_DATA, PyUnicode_KIND
from libc.string cimport memchr


cdef inline bint _latin1(str text) noexcept:
    return PyUnicode_KIND(text) == 1


cdef inline Py_ssize_t _next_byte(const unsigned char *data, unsigned char b, Py_ssize_t i,
                                  Py_ssize_t end) noexcept:
    """The index of the first `b` in data[i:end], or end."""
    cdef const void *p
    if i >= end:
        return end
    p = memchr(data + i, b, <size_t>(end - i))
    return end if p == NULL else <Py_ssize_t>(<const unsigned char *>p - data)


cdef inline tuple _brace_scan_latin1(str text, Py_ssize_t start, Py_ssize_t end):
    cdef const unsigned char *data = PyUnicode_1BYTE_DATA(text)
    cdef Py_ssize_t i = start, k, string_end = -1
    cdef Py_ssize_t at_open = -1, at_close = -1, at_slash = -1, at_quote = -1
    cdef bint strings = True, metadata = True
    cdef unsigned char c
    cdef list deltas = [], offsets = []
    while True:
        # The next of each character at or after i: each stream moves forward only.
        if at_open < i:
            at_open = _next_byte(data, 0x7B, i, end)
        if at_close < i:
            at_close = _next_byte(data, 0x7D, i, end)
        if at_slash < i:
            at_slash = _next_byte(data, 0x2F, i, end)
        if at_quote < i:
            at_quote = _next_byte(data, 0x22, i, end)
        i = at_open
        if at_close < i:
            i = at_close
        if at_slash < i:
            i = at_slash
        if at_quote < i:
            i = at_quote
        if i >= end:
            return deltas, offsets
        c = data[i]
        if c == 0x7B:  # {
            if metadata and i + 2 < end and data[i + 1] == 0x2D and data[i + 2] == 0x23:
                k = text.find("#-}", i + 3, end)
                if k >= 0:
                    i = k + 3
                    continue
                metadata = False  # never closed: a brace, and no metadata after it
            deltas.append(1)
            offsets.append(i)
        elif c == 0x7D:  # }
            deltas.append(-1)
            offsets.append(i)
        elif c == 0x2F:  # /
            if i + 1 < end and data[i + 1] == 0x2F:
                i = _next_byte(data, 0x0A, i, end)  # the comment's line break, or end
                continue
        elif strings or i >= string_end:  # a `"` (one before string_end opens nothing)
            strings = True
            k = i + 1  # where the string stops: its `"`, a line break, a `\` at end, end
            while k < end:
                c = data[k]
                if c == 0x22 or c == 0x0A:
                    break
                if c == 0x5C:
                    if k + 1 >= end:
                        break
                    k += 1
                k += 1
            if k > end:
                k = end
            if k < end and data[k] == 0x22:
                i = k + 1  # a closed string
                continue
            strings = False  # open: no `"` before where it stops opens a string
            string_end = k
        i += 1
