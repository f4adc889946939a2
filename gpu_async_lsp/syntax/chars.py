"""Syntax layer: a string's characters read by index, for the scans written for C.

The builds of the scans that cimport this module (`linescan.pxd`, `gpuscan.pxd`)
read these names as CPython's own C macros (chars.pxd): `kind_of(text)` and `data_of(text)`
once per call, then each `at(kind, data, i)` a load from the string's buffer, where
`text[i]` is a call that looks at the string's kind each time. Run as Python, the scans
import these: the same reads through the str.
"""

from __future__ import annotations


def kind_of(text: str) -> int:
    """The build: the string's kind (bytes per character); here unused."""
    return 0


def data_of(text: str) -> str:
    """The build: the string's buffer; here the string."""
    return text


def at(kind: int, data: str, i: int) -> str:
    """The character at index `i` (0 <= i < len): the build reads it from the buffer."""
    return data[i]
