"""Syntax layer: a token's fields read by index, for the parser's reading of whole lines (and
a finding's, for the publication's).

The tokens of `lexer.tokenize_lines` are named tuples, whose fields the interpreter reads
through their class (a lookup and a descriptor call each; a first open reads ~13 per op).
The builds that cimport this module (`parser.pxd`, `prelex.pxd`, `convert.pxd`) read
`at(t, i)` as the tuple's item in C and the indexes as C constants (fields.pxd); run as
Python, the modules import these: `t[i]` and plain ints. tests/unit/test_lexer.py holds the
indexes to the named tuples' fields.
"""

from __future__ import annotations

from operator import getitem as at  # noqa: F401 (the build's is fields.pxd's)

# Every token (RawToken, LineToken, GpuLineToken).
KIND, START, END, TEXT, LINE_START = range(5)
# LineToken and GpuLineToken.
NAME_START, NAME_END, RESULTS_START, RESULTS_END = range(5, 9)
# LineToken only.
LINE_CONT, LINE_DEPTH = 9, 10
# GpuLineToken only.
ASYNC_START, DEPS_OPEN, DEPS_CLOSE, OPERANDS_START = range(9, 13)
# A finding (async_region.findings.Finding: a named tuple), read by the publication's
# formatting of each diagnostic (server/convert.py: ~8 reads per finding, 2.5k findings in a
# first open of 10k lines of host code).
FINDING_CODE, FINDING_MESSAGE, FINDING_START, FINDING_END, FINDING_SEVERITY = range(5)
FINDING_RELATED = 5
