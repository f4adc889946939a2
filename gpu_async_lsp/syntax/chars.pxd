# chars.py's names in the builds that cimport this (linescan, gpuscan): CPython's macros, a
# character read from the string's buffer (chars.py is their Python, for the modules run as
# Python).
cdef extern from "Python.h":
    int kind_of "PyUnicode_KIND" (object)
    void* data_of "PyUnicode_DATA" (object)
    Py_UCS4 at "PyUnicode_READ" (int, void*, Py_ssize_t)
