"""Test helper: MLIR texts laid out again, and cut up, the ways a user's files may be.

MLIR is whitespace-insensitive: any two tokens of an op may stand on different lines. `relayout`
breaks lines at random token boundaries (never inside a string, a comment, a `<...>` body or
file metadata) and indents the new lines at random; `cut_variants` cuts a text at random line
boundaries and appends unmatched brackets. Whether a variant means what the original meant (or
is rejected) is for `mlir-opt-22` to say: the tests that use these run it on every variant.

The token scan here is written apart from the product's lexer on purpose: a test that found
token boundaries with the code under test could not see that code's mistakes.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from tests.differential.mlir_reference import reprint

_ID = r"[A-Za-z_][\w$.]*"
_STRING = r'"(?:[^"\\\n]|\\.)*"'
# Tokens after which an angle body `<...>` belongs to the token (`memref<...>`, `#gpu<...>`).
_TOKEN_RE = re.compile(
    r"(?P<comment>//[^\n]*)"
    r"|(?P<meta>\{-#.*?#-\})"
    rf"|(?P<string>{_STRING})"
    rf"|(?P<symbol>@(?:[\w$.\-]+|{_STRING})(?:::@(?:[\w$.\-]+|{_STRING}))*)"
    r"|(?P<value>[%^][\w$.\-]+(?:#\d+)?)"
    rf"|(?P<word>[#!]?(?:{_ID}|{_STRING}))"
    r"|(?P<number>-?(?:0x[0-9A-Fa-f]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?))"
    r"|(?P<punct>->|\.\.\.|::|[^\s])",
    re.DOTALL,
)


def _angle_end(text: str, i: int) -> int:
    """The end of the balanced `<...>` body starting at text[i] == '<' (strings and `->`,
    `>=`, `<=` inside skipped); -1 if it does not close."""
    depth = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == '"':
            m = re.compile(_STRING).match(text, i)
            if m is None:
                return -1
            i = m.end()
            continue
        if c == "-" and text.startswith("->", i):
            i += 2
            continue
        if c in "<>" and text.startswith("=", i + 1):
            i += 2
            continue
        if c == "<":
            depth += 1
        elif c == ">":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


def tokens(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of each token of `text`, comments included (kind "comment")."""
    out = []
    pos, n = 0, len(text)
    while pos < n:
        c = text[pos]
        if c in " \t\r\n\f\v":
            pos += 1
            continue
        m = _TOKEN_RE.match(text, pos)
        kind, end = m.lastgroup, m.end()
        if kind == "word" and end < n and text[end] == "<":
            close = _angle_end(text, end)
            if close > 0:
                end = close
        out.append((pos, end, kind))
        pos = end
    return out


def boundaries(text: str) -> list[int]:
    """Offsets between two tokens on one line where a line break may go (after the first
    token's end, before any blanks): never next to a comment, never in a line that holds a
    `// -----` marker."""
    toks = tokens(text)
    out = []
    for (_, end, kind), (start, _, next_kind) in zip(toks, toks[1:]):
        if kind == "comment" or next_kind == "comment":
            continue
        if "\n" in text[end:start]:
            continue
        out.append(end)
    return out


def relayout(text: str, rng: random.Random, rate: float | None = None) -> str:
    """`text` with line breaks (and random indentation) at a random share of its token
    boundaries (`rate`, else chosen at random per text)."""
    if rate is None:
        rate = rng.choice((0.05, 0.15, 0.4))
    newline = "\r\n" if "\r\n" in text else "\n"
    pieces = []
    last = 0
    places = boundaries(text)
    chosen = {at for at in places if rng.random() < rate}
    if places and not chosen:
        chosen.add(rng.choice(places))  # at least one break
    for at in places:
        if at not in chosen:
            continue
        gap_end = at
        while gap_end < len(text) and text[gap_end] in " \t":
            gap_end += 1
        pieces.append(text[last:at])
        pieces.append(newline + rng.choice(("", " ", "  ", "    ", "\t", "          ")))
        last = gap_end
    pieces.append(text[last:])
    return "".join(pieces)


_UNMATCHED = ("{", "(", "[", "<", "}")


@dataclass(frozen=True)
class Cut:
    text: str
    prefix: bool  # the lines before the cut (else those after it)
    lines: int  # how many lines of the original it keeps


def cut_variants(text: str, rng: random.Random, count: int = 2) -> list[Cut]:
    """`count` variants of `text` cut at a random line boundary (the lines before it, or those
    after it), each sometimes followed by a line of 1-3 unmatched brackets."""
    lines = text.splitlines(keepends=True)
    out = []
    for _ in range(count):
        prefix = rng.random() < 2 / 3
        if len(lines) < 2:
            kept = lines
        else:
            a = rng.randrange(1, len(lines))
            kept = lines[:a] if prefix else lines[a:]
        variant = "".join(kept)
        if rng.random() < 0.6:
            if variant and not variant.endswith("\n"):
                variant += "\n"
            brackets = [rng.choice(_UNMATCHED) for _ in range(rng.randint(1, 3))]
            while "{}" in "".join(brackets):  # unmatched: no `{ }` (an empty dictionary)
                brackets = [rng.choice(_UNMATCHED) for _ in range(len(brackets))]
            variant += " ".join(brackets) + "\n"
        out.append(Cut(variant, prefix, len(kept)))
    return out


def laid_out(text: str, seed: int) -> str:
    """The layout pass of the differential generators: the program of every odd seed broken
    at random token boundaries (its own random stream, so the program stays the seed's)."""
    if seed % 2 == 0:
        return text
    return relayout(text, random.Random(f"layout {seed}"))


def meaning_changed(programs: list, printed: list) -> list[str]:
    """The seeds of the laid-out programs (`.seed`, `.text` laid out, `.written` as generated)
    whose text mlir-opt-22 does not read as the program written (`printed`: each program's
    text reprinted). At least a third of the programs must have been laid out."""
    laid = [(p, r) for p, r in zip(programs, printed) if p.text != p.written]
    assert len(laid) >= len(programs) // 3
    written = reprint([p.written for p, _ in laid])
    return [f"seed {p.seed}" for (p, r), w in zip(laid, written) if r.output != w.output]
