"""Compiled regular expressions kept from one run to the next, as Python keeps bytecode.

`re` compiles a pattern in pure Python (its parser and code generator) and hands the program
it made, a list of integers, to the C engine (`_sre.compile`). The package's patterns (the
lexer's line and token patterns, one per GPU op format, ...) took 40 ms of every start of
`check`, a third of its imports, each run compiling the same programs again. `compile()` is
`re.compile` with those programs kept in one file beside the package's bytecode
(`__pycache__/regex.<Python's cache tag>-<its build's hash>.cache`), read once per process
(under a millisecond).

Nothing here can change what a pattern matches: a program is kept only if the pattern the
engine builds from it is equal to `re.compile`'s (`Pattern.__eq__` compares the programs), and
the file is keyed by the exact Python build and `_sre.MAGIC`. Anything else (no file yet, a
file cut short or of another Python, a read-only install, a `re` without those internals)
falls back to `re.compile`: the cache only ever saves time. The file is written (to a new
name, then renamed over the old) by `save()` when the run compiled patterns it lacked, with the
programs that run used (so it never keeps those of patterns the package no longer has); it
may be deleted at any time.
"""

from __future__ import annotations

import marshal
import os
import re
import sys
import zlib

try:
    import _sre
    from re import _compiler, _parser
except ImportError:  # another Python's `re`: no cache
    _sre = _compiler = _parser = None

_FORMAT = 1
_KEY = (_FORMAT, sys.version, getattr(_sre, "MAGIC", None), getattr(_sre, "CODESIZE", None))
# Named by the exact build too, not only by the cache tag as bytecode is: two interpreters of
# one version (a system Python and a venv's, running one checkout) each keep a file of their
# own, where they overwrote one file by turns and each start of the other compiled its
# patterns again (~40 ms).
_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "__pycache__",
                     f"regex.{sys.implementation.cache_tag}-"
                     f"{zlib.crc32(repr(_KEY).encode()):08x}.cache")

_programs: dict | None = None  # (pattern, flags) -> _sre.compile's arguments after the pattern
_added = False  # programs made by this process that the file lacks
_used: set = set()  # keys this process compiled: what a write keeps (no stale programs)


def _load() -> dict:
    global _programs
    if _programs is None:
        _programs = {}
        try:
            with open(_PATH, "rb") as f:
                key, programs = marshal.loads(f.read())
            if key == _KEY and isinstance(programs, dict):
                _programs = programs
        except Exception:  # no file, or not one of ours: compile as `re` does
            pass
    return _programs


def compile(pattern: str, flags: int = 0) -> re.Pattern:
    """`re.compile(pattern, flags)`, its program read from the cache when kept there."""
    global _added
    flags = int(flags)
    if _sre is None:
        return re.compile(pattern, flags)
    programs = _load()
    key = (pattern, flags)
    _used.add(key)
    args = programs.get(key)
    if args is not None:
        try:
            return _sre.compile(pattern, *args)
        except Exception:  # a program this engine refuses: made again below
            del programs[key]
    compiled = re.compile(pattern, flags)
    try:
        args = _program(pattern, flags)
        if _sre.compile(pattern, *args) == compiled:
            programs[key] = args
            _added = True
    except Exception:  # `re`'s internals are not what this module knows: no cache
        pass
    return compiled


def _program(pattern: str, flags: int) -> tuple:
    """The arguments `re` passes to `_sre.compile` after the pattern (re/_compiler.py)."""
    parsed = _parser.parse(pattern, flags)
    # Plain ints: `re` names its opcodes with an int subclass, which marshal does not take.
    code = [int(x) for x in _compiler._code(parsed, flags)]
    groupindex = dict(parsed.state.groupdict)
    indexgroup = [None] * parsed.state.groups
    for name, i in groupindex.items():
        indexgroup[i] = name
    return (int(flags | parsed.state.flags), code, parsed.state.groups - 1, groupindex,
            tuple(indexgroup))


def save() -> None:
    """Write the programs this process added to the cache file (nothing when none)."""
    global _added
    if not _added or _programs is None:
        return
    _added = False
    tmp = f"{_PATH}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(_PATH), exist_ok=True)
        # Only what this process used: programs of patterns a new version no longer has go.
        data = marshal.dumps((_KEY, {k: v for k, v in _programs.items() if k in _used}))
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, _PATH)
    except (OSError, ValueError):  # a read-only install: compiled again next time
        try:
            os.unlink(tmp)
        except OSError:
            pass
