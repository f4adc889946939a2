"""Syntax layer: attribute and type aliases used in a chunk and defined nowhere in it.

`#map` and `!ty` (no dialect prefix, no `<...>` body) name aliases that a top-level line
`#map = ...` / `!ty = ...` of the same `// -----` chunk defines; MLIR's parser rejects a use
of one that none defines (`undefined symbol alias id 'map'`), wherever it stands. Location
aliases may be defined after their use (`loc(#loc3)`, `#loc3 = loc(...)` at the end), so any
definition in the chunk counts. One scan of the text for candidate uses (C speed); only those
are looked at again (comments and strings hold `#map` often: `// CHECK: #map`).

No lark, pygls or lsprotocol here.
"""

from __future__ import annotations

from gpu_async_lsp import regex_cache
from gpu_async_lsp.syntax.ir import SyntaxIssue

# A definition: the name, then `=` (on its line or a later one). Lenient (a use followed by `=`
# would pass as one, and hide nothing but findings), and literal-first, as below.
_DEFINITION_RES = tuple(regex_cache.compile(sigil + r"[A-Za-z_][\w$.]*+(?=[ \t\r\n]*+=(?![=>]))")
                        for sigil in "#!")
# A sigil not after a name character, a bare identifier with no dot (`!llvm.ptr` is a dialect
# type) and no `<` after it (`#gpu<...>` is a dialect attribute). One pattern per sigil: a
# pattern that starts with a literal is searched for at memchr speed (a character class,
# fifteen times slower: 10 ms over 50k lines).
_USE_RES = tuple(regex_cache.compile(sigil + r"(?<![\w$.#!%@^\"].)[A-Za-z_][\w$]*+(?![\w$.<\"])")
                 for sigil in "#!")


def undefined_aliases(text: str, chunks: list[tuple[int, int]]) -> list[SyntaxIssue]:
    """The first use in each chunk (start, end) of `text` of each alias the chunk does not
    define."""
    out: list[SyntaxIssue] = []
    for start, end in chunks:
        _undefined(text, start, end, out)
    return out


def _undefined(text: str, start: int, end: int, out: list[SyntaxIssue]) -> None:
    # The names used, collected in C; only those no line defines are looked at one by one.
    used = set()
    for pattern in _USE_RES:
        used.update(pattern.findall(text, start, end))
    if not used:
        return
    for pattern in _DEFINITION_RES:
        used.difference_update(pattern.findall(text, start, end))
    found = []
    for pattern in _USE_RES:
        context = _Context(text)
        for m in pattern.finditer(text, start, end):
            name = m.group()
            if name in used and not context.inside(m.start()):
                used.discard(name)  # reported once
                found.append(SyntaxIssue(f"undefined symbol alias id '{name[1:]}'", m.start(),
                                         m.end()))
    out.extend(sorted(found, key=lambda issue: issue.start))


_SPECIAL = regex_cache.compile(r'["\\/]')


class _Context:
    """Whether positions of a text, asked in increasing order, lie in a `//` comment or a
    string of their line. Each line is read once from its start to the last position asked
    (a long line with many candidates costs its length, not its square)."""

    __slots__ = ("text", "line_end", "at", "in_string", "in_comment")

    def __init__(self, text: str):
        self.text = text
        self.line_end = -1  # where the line read so far ends
        self.at = 0  # read up to here
        self.in_string = self.in_comment = False

    def inside(self, pos: int) -> bool:
        text = self.text
        if pos > self.line_end:  # a line of its own
            nl = text.find("\n", pos)
            self.line_end = len(text) if nl < 0 else nl
            self.at = text.rfind("\n", 0, pos) + 1
            self.in_string = self.in_comment = False
        if not self.in_comment:
            self._read_to(pos)
        return self.in_comment or self.in_string

    def _read_to(self, pos: int) -> None:
        text, i = self.text, self.at
        while True:
            m = _SPECIAL.search(text, i, pos)
            if m is None:
                break
            j = m.start()
            c = text[j]
            if self.in_string:
                if c == "\\":
                    i = j + 2  # an escaped character
                    continue
                if c == '"':
                    self.in_string = False
            elif c == '"':
                self.in_string = True
            elif text.startswith("//", j):
                self.in_comment = True
                return
            i = j + 1
        self.at = max(i, pos)
