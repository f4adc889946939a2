"""Syntax layer: regular-expression pieces shared by the lexer and the GPU formats.

Loops are unrolled (`a*(?:b a*)*`) and possessive: one quantifier step per run, not per
character, and no backtracking state kept for them, so a million-character string or
`dense<...>` costs time in proportion to its length. (Each piece has at most one match from a
given start, so possessive quantifiers match what greedy ones would, in any context.)
"""

from __future__ import annotations

STRING = r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"'
# What a string that does not close runs over: up to the end of its line (or of the text).
OPEN_STRING = r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+'
_BODY_CHARS = r'[^<>"\-]*+'


def angle_body(depth: int) -> str:
    """A balanced `<...>` body nested up to `depth` levels; `->` (`affine_map<(d0) -> (d0)>`),
    the comparisons `>=` and `<=` (`affine_set<(d0) : (d0 - 1 >= 0)>`, which MLIR's affine
    parser reads as tokens, not brackets) and strings inside are skipped."""
    special = (r"-(?!>)|->|>=|<=|" + STRING
               + ("" if depth == 0 else "|" + angle_body(depth - 1)))
    return f"<{_BODY_CHARS}(?:(?:{special}){_BODY_CHARS})*+>"
