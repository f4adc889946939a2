"""Syntax layer: regular-expression pieces shared by the lexer and the GPU formats.

Loops are unrolled (`a*(?:b a*)*`): one quantifier step per run, not per character, so a
million-character string or `dense<...>` costs neither backtracking state nor time.
"""

from __future__ import annotations

STRING = r'"[^"\\\n]*(?:\\.[^"\\\n]*)*"'
_BODY_CHARS = r'[^<>"\-]*'


def angle_body(depth: int) -> str:
    """A balanced `<...>` body nested up to `depth` levels; `->` and strings inside are skipped."""
    special = r"-(?!>)|->|" + STRING + ("" if depth == 0 else "|" + angle_body(depth - 1))
    return f"<{_BODY_CHARS}(?:(?:{special}){_BODY_CHARS})*>"
