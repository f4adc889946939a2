"""Syntax layer: what a `{` opens, decided in one place.

In MLIR a `{` opens a region or an attribute dictionary, and the op's own parser knows which
(`parseOptionalAttrDict` or `parseRegion`, in the order of its assembly format). We do not know
every op's format, so the decision is taken from what MLIR's grammar allows after the brace,
as MLIR's parser would see it there:

- an attribute dictionary is `{` (attribute-entry (`,` attribute-entry)*)? `}`, an entry
  `name` or `name = value`, the name a bare identifier (dots allowed: `llvm.noalias`) or a
  string;
- a region is `{` block* `}`, its first op starting with a result list (`%r =`), a block label
  (`^bb0`), a generic op name (`"dialect.op"(`) or a custom op name (dotted, or a bare name
  that the owner's default dialect resolves: `return` in a `func.func`).

So `{ name =`, `{ name ,`, `{ "key" =` are dictionaries, and `{ %r`, `{ ^bb`, `{ "op"(` and
`{ dialect.op operands` regions, wherever the brace stands in the line structure (at the end
of a line, alone on a line, after a region). What is left: `{ name }` (a unit attribute, or a
region of one op: `{ gpu.return }`, `{ return }`) is a region when `name` is a known op or the
bare name of one;
`{}` is an empty dictionary, except `{` and `}` on different lines (an empty body, as
`gpu.module @m {` ... `}` is written); a `{` before a comment and then a line of its own
decides by that line. Positions decide first where the grammar leaves no choice: after `<`
(properties `<{...}>`), after `attributes`, `=`, `[` (a value) it is a dictionary; in generic
form regions come only inside `( ... )`, the dictionary after them.

The ops of GPUOps.td modeled exactly have no regions: there a `{` is their attr-dict
(prelex's `_fine_token`). No lark, pygls or lsprotocol here.
"""

from __future__ import annotations

from gpu_async_lsp import regex_cache
from gpu_async_lsp.op_tables import DEFAULT_DIALECT, KNOWN_OPS
from gpu_async_lsp.syntax.patterns import STRING

# Bare names that start an op through some default dialect (`return`, `yield`, `module`, ...).
OP_WORDS = frozenset(name.split(".", 1)[1] for name in KNOWN_OPS
                     if name.split(".", 1)[0] in set(DEFAULT_DIALECT.values()))

# Blanks, comments and line breaks before the first token after the brace; then that token and
# the punctuation after it (`=` not of `==`/`=>`).
_FIRST = regex_cache.compile(
    r"(?P<gap>(?:[ \t\r\n]++|//[^\n]*+)*+)"
    r"(?:(?P<close>\})|(?P<value>%)|(?P<caret>\^)|(?P<meta>\{-#)"
    rf"|(?P<string>{STRING})|(?P<name>[A-Za-z_][\w$.]*+))?"
)
_AFTER = regex_cache.compile(r"(?:[ \t\r\n]++|//[^\n]*+)*+(?P<p>=(?![=>])|[,}(:])?")

_DICT_BEFORE = "<=["  # the character before `{` when it is a value (`<{` properties, `= {`, `[{`)
_ATTRIBUTES = regex_cache.compile(r"(?<![\w$.%@#!^\-])attributes")  # the keyword, not `%attributes`


def _before(text: str, brace: int) -> int:
    """Offset just after the last non-blank character before `brace`."""
    j = brace
    while j > 0 and text[j - 1] in " \t\r\n":
        j -= 1
    return j


def opens_region(text: str, brace: int, generic: bool, in_parens: bool, resolve) -> bool:
    """Does the `{` at text[brace] open a region (rather than an attribute dictionary)?

    `generic`: the op is in generic form, `in_parens`: inside its `( ... )`; `resolve(name)`:
    the op a bare name at the start of the region would be (through the owner's default
    dialect), or None."""
    j = _before(text, brace)
    prev = text[j - 1] if j else ""
    if prev and prev in _DICT_BEFORE or (
            j >= 10 and text.endswith("attributes", 0, j) and _ATTRIBUTES.match(text, j - 10)):
        return False
    if generic:
        return in_parens
    # The commonest brace, a body's: blanks and line breaks, then a value or a block label
    # (`_FIRST` reads the same; each function of a file has one).
    n = len(text)
    k = brace + 1
    while k < n and text[k] in " \t\r\n":
        k += 1
    if k < n and (text[k] == "%" or text[k] == "^"):
        return True
    return by_first_token(text, brace, prev, resolve)


def by_first_token(text: str, brace: int, prev: str, resolve) -> bool:
    """`opens_region` of a `{` in custom form that no position decides (`prev`: the character
    before it, blanks skipped), from the first token after it and the punctuation after that."""
    m = _FIRST.match(text, brace + 1)
    if m.lastgroup is None or m.lastgroup == "gap":
        return m.end() >= len(text)  # a `{` at the end of the text: the parser reports it
    kind = m.lastgroup
    if kind == "close":
        # `({})` of generic form; `{` `}` on two lines: an empty region, as bodies are written.
        return prev == "(" or "\n" in m.group("gap")
    if kind in ("value", "caret", "meta"):
        return True
    punct = _AFTER.match(text, m.end()).group("p")
    if kind == "string":
        return punct == "("
    name = m.group("name")
    if punct in ("=", ","):
        return False
    if punct == "}":
        # A known op, or the bare name of one (`{ return }` where no default dialect makes it
        # an op: MLIR reads a region there and reports the op as unknown).
        return name in KNOWN_OPS or name in OP_WORDS or resolve(name) is not None
    # No dictionary entry goes on after its name with anything else: `{ dialect.op %x`,
    # `{ return %x : i32 }` (an op that the default dialect may not know: MLIR says so).
    return True
