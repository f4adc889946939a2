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
from typing import NamedTuple

SPLIT_MARKER = re.compile(r"^[ \t]*// -----[ \t]*\r?$", re.MULTILINE)


def split_chunks(text: str) -> list[tuple[int, int]]:
    """(start, end) of each chunk; markers belong to no chunk."""
    chunks = []
    pos = 0
    for m in SPLIT_MARKER.finditer(text):
        chunks.append((pos, m.start()))
        pos = m.end()
    chunks.append((pos, len(text)))
    return chunks


# --- raw tokens --------------------------------------------------------------------------------

_STRING = r'"(?:[^"\\\n]|\\.)*"'
_BODY_ATOM = r'(?:[^<>"\-]|-(?!>)|->|' + _STRING + r")"


def _angle_body(depth: int) -> str:
    inner = _BODY_ATOM if depth == 0 else f"(?:{_BODY_ATOM}|{_angle_body(depth - 1)})"
    return f"<{inner}*>"


_BODY = _angle_body(6)
_IDENT = r"[A-Za-z_][\w$.]*"
_SUFFIX_ID = r"(?:\d+|[A-Za-z_$.\-][\w$.\-]*)"
_SYMBOL_ONE = rf'@(?:[A-Za-z_$.][\w$.\-]*|{_STRING})'

# Each match takes the blanks before its token (group `ws`), so that finditer does not retry
# every alternative at each blank; the alternatives come in order of frequency in host code.
TOKEN_RE = re.compile(
    r"(?P<ws>[ \t\r\n]*)(?:"
    + "|".join(
        [
            rf"(?P<value>%{_SUFFIX_ID}(?:#\d+)?)",
            rf"(?P<bare>{_IDENT})(?P<blob>{_BODY})?",
            r"(?P<punct>[(){}\[\]<>=,:*+?|])",
            r"(?P<comment>//[^\n]*)",
            rf"(?P<symbol>{_SYMBOL_ONE}(?:::{_SYMBOL_ONE})*)",
            r"(?P<arrow>->)",
            r"(?P<number>0x[0-9A-Fa-f]+|-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)",
            rf"(?P<string>{_STRING})",
            r'(?P<badstring>"[^\n]*)',
            rf"(?P<caret>\^{_SUFFIX_ID})",
            rf'(?P<bang>!(?:{_IDENT}|{_STRING})(?:{_BODY})?)',
            rf"(?P<hash>#{_IDENT}(?:{_BODY})?)",
            r"(?P<meta>\{-#.*?#-\})",
            r"(?P<minus>-)",
            r"(?P<err>\S)",
        ]
    )
    + ")",
    re.DOTALL,
)


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
    new = tuple.__new__  # skips NamedTuple's Python-level __new__: this loop is hot
    first = True  # a unit starts on its own line
    for m in TOKEN_RE.finditer(text, start, end):
        kind = m.lastgroup
        if kind == "ws":  # trailing blanks
            continue
        s = m.end(1)
        line_start = first or "\n" in m.group(1)
        if kind == "comment":
            first = first or line_start
            continue
        e = m.end()
        tok = text[s:e]
        if kind == "punct" or kind == "minus":
            kind = tok
        elif kind == "blob" and not tok.endswith(">"):
            kind = "bare"
        append(new(RawToken, (kind, s, e, tok, line_start)))
        first = False
    return out


# --- units ---------------------------------------------------------------------------------------

_SCAN_RE = re.compile(
    r'(?P<comment>//[^\n]*)|(?P<string>"(?:[^"\\\n]|\\.)*")|(?P<meta>\{-#.*?#-\})'
    r"|(?P<open>\{)|(?P<close>\})|(?P<line>\n[ \t\r]*(?=[^\s/]|/(?!/)))",
    re.DOTALL,
)

_OP_START_RE = re.compile(
    r'(?:%[\w$.\-]+(?:[ \t]*:[ \t]*\d+)?[ \t]*(?:,[ \t]*%[\w$.\-]+(?:[ \t]*:[ \t]*\d+)?[ \t]*)*=)'
    r"|\"[^\"\n]*\"[ \t]*\("
    r"|[A-Za-z_][\w$]*\.[\w$.]*"
    r"|(?:module|func)\b"
    r"|[#!][A-Za-z_][\w$.]*[ \t]*="
    r"|\{-#"
)

_CONTAINER_RE = re.compile(r"(?:builtin\.module|module|gpu\.module)\b")


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
    return _split(text, start, end, 0)


def _split(text: str, start: int, end: int, level: int) -> list[Unit]:
    starts: list[int] = []
    depth = 0
    match = _OP_START_RE.match
    first = _BLANKS_RE.match(text, start, end).end()
    if first < end:
        starts.append(first)
    for m in _SCAN_RE.finditer(text, first, end):
        kind = m.lastgroup
        if kind == "open":
            depth += 1
        elif kind == "close":
            depth = max(0, depth - 1)
        elif kind == "line" and depth == 0:
            s = m.end()
            if s < end and match(text, s) and not _continues(text, starts[-1], m.start()):
                starts.append(s)
    units = []
    for s, e in zip(starts, starts[1:] + [end]):
        e = _trim_end(text, s, e)
        if e <= s:
            continue
        region = None
        if level < 64 and _CONTAINER_RE.match(text, s):
            region = _container_region(text, s, e)
        if region is not None:
            children = _split(text, region[0] + 1, region[1], level + 1)
            units.append(Unit(s, e, region, children))
        else:
            units.append(Unit(s, e, None, []))
    return units


def _continues(text: str, unit_start: int, line_break: int) -> bool:
    """Does the line before `line_break` end inside an unfinished op (`,` `(` `=` `->` `:`)?"""
    line_begin = text.rfind("\n", unit_start, line_break) + 1
    line = text[line_begin:line_break]
    cut = _comment_start(line)
    if cut is not None:
        line = line[:cut]
    line = line.rstrip()
    return line.endswith((",", "(", "[", "=", "->", ":", "<"))


def _comment_start(line: str) -> int | None:
    """Index of `//` starting a comment in `line` (not inside a string), or None."""
    if "//" not in line:
        return None
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
            return i
        i += 1
    return None


_BLANKS_RE = re.compile(r"(?:[ \t\r\n]+|//[^\n]*)*")


def _trim_end(text: str, s: int, e: int) -> int:
    """End of the unit's last token (blank lines and trailing comments belong to no unit)."""
    seg = text[s:e]
    # Comments may hold quotes; strip whole trailing comment lines and blanks only.
    while True:
        stripped = seg.rstrip()
        last_nl = stripped.rfind("\n")
        last_line = stripped[last_nl + 1 :]
        if last_line.lstrip().startswith("//"):
            seg = stripped[: last_nl + 1] if last_nl >= 0 else ""
            continue
        return s + len(stripped)


def _container_region(text: str, s: int, e: int) -> tuple[int, int] | None:
    """(`{`, `}`) of a container op's body: the brace pair that closes at the unit's end."""
    if e <= s or text[e - 1] != "}":
        return None
    depth = 0
    close = e - 1
    for m in _SCAN_RE.finditer(text, s, e):
        kind = m.lastgroup
        if kind == "open":
            if depth == 0:
                candidate = m.start()
            depth += 1
        elif kind == "close":
            depth -= 1
            if depth < 0:
                return None
            if depth == 0 and m.start() == close:
                return candidate, close
    return None
