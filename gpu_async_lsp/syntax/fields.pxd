# fields.py's names in the builds that cimport this (parser, prelex, convert): a token's field read as
# the tuple's item in C (checked: a tuple holding that many items, else Python's indexing and
# its error), and the fields' indexes as C constants (tests/unit/test_lexer.py holds them to
# the tokens' named tuples).
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE

cdef extern from "Python.h":
    bint PyTuple_Check(object)

cdef enum:
    KIND = 0
    START = 1
    END = 2
    TEXT = 3
    LINE_START = 4
    NAME_START = 5
    NAME_END = 6
    RESULTS_START = 7
    RESULTS_END = 8
    LINE_CONT = 9
    LINE_DEPTH = 10
    ASYNC_START = 9
    DEPS_OPEN = 10
    DEPS_CLOSE = 11
    OPERANDS_START = 12
    FINDING_CODE = 0
    FINDING_MESSAGE = 1
    FINDING_START = 2
    FINDING_END = 3
    FINDING_SEVERITY = 4
    FINDING_RELATED = 5

cdef inline object at(object t, Py_ssize_t i):
    if PyTuple_Check(t) and 0 <= i < PyTuple_GET_SIZE(t):
        return <object>PyTuple_GET_ITEM(t, i)
    return t[i]
