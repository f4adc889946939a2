"""Syntax layer: regular-expression pieces shared by the lexer, the pre-lexer, the GPU formats,
the parser and the reference readers: each MLIR lexical form written once.

Loops are unrolled (`a*(?:b a*)*`) and possessive: one quantifier step per run, not per
character, and no backtracking state kept for them, so a million-character string or
`dense<...>` costs time in proportion to its length. (Each piece has at most one match from a
given start, so possessive quantifiers match what greedy ones would, in any context.)
"""

from __future__ import annotations

from gpu_async_lsp import regex_cache

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


# `%x`, `%arg0`, `%0`: an SSA name; `%v#1`: a use of one result of a group.
SSA_NAME = r"%[\w$.\-]+"
SSA_USE = SSA_NAME + r"(?:#\d+)?"
# A result of an op's result list, `%v` or `%v:2`; RESULT_RE reads (name, count).
RESULT = r"%[\w$.\-]++(?:[ \t]*+:[ \t]*+\d++)?+"  # SSA_NAME, possessive
RESULT_LIST = rf"{RESULT}(?:[ \t]*+,[ \t]*+{RESULT})*+"
# Blanks that may hold line breaks (no comments: a result list is read back from its text).
LINE_GAP = r"[ \t]*+(?:\r?\n[ \t]*+)*+"
# A result list as MLIR reads it, whitespace-insensitive: broken after a `,` over lines.
RESULT_LIST_LINES = rf"{RESULT}(?:[ \t]*+,{LINE_GAP}{RESULT})*+"
RESULT_RE = regex_cache.compile(r"(%[\w$.\-]+)(?:[ \t]*:[ \t]*(\d+))?")
# `@f`, `@"quoted name"`; a nested reference `@outer::@inner`.
SYMBOL_NAME = rf"@(?:[\w$.\-]+|{STRING})"
SYMBOL_REF = rf"{SYMBOL_NAME}(?:::{SYMBOL_NAME})*"
# A bare identifier (op and attribute names, keywords).
BARE_ID = r"[A-Za-z_][\w$.]*"

# How a line ends when the op on it goes on on the next line (a trailing `,` `(` `[` `=` `:`
# `<` or `->`): the lexer's line tokens, the unit splitter and the pre-lexer ask the same.
UNFINISHED_LINE_ENDS = (",", "(", "[", "=", ":", "<", "->")
