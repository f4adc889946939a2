"""Syntax layer: the hook that feeds Lark the pre-lexer's tokens.

Its own module, imported when the parser is first built (parser.build_parser): Lark pickles the
lexer class into its grammar cache, which needs a class importable by name, and importing Lark
with the parser module cost every process 35 ms that most never need.
"""

from __future__ import annotations

from lark.lexer import Lexer


class TokenListLexer(Lexer):
    """Feeds Lark the coarse tokens the pre-lexer made (Lark's custom-lexer hook)."""

    def __init__(self, lexer_conf):
        pass

    def lex(self, tokens):
        return iter(tokens)
