"""The Cython builds of the analysis's modules (tools/compiled_build.py), loaded in place of
their Python when the install has them and each was built from the source that is here now.

A module whose source changed since the build (an editable install being worked on) is run
as Python; so is every module with GPU_ASYNC_LSP_PURE_PYTHON=1 set, or without a build. The
two are the same code: tests/unit/test_compiled.py compares what both make of the corpus.
"""

from __future__ import annotations

import os
import sys
import zlib
from importlib.machinery import EXTENSION_SUFFIXES, ExtensionFileLoader, ModuleSpec

PACKAGE = "gpu_async_lsp_compiled"
PURE_ENV = "GPU_ASYNC_LSP_PURE_PYTHON"
# The build's manifest: a line per module, "module crc32-of-its-source built-file", its source
# as `source_of` reads it (no json, pathlib or hashlib here: `check`'s start imports nothing it
# does not use).
MANIFEST = "manifest.txt"

loaded: dict[str, str] = {}  # module -> the built file it was loaded from
_built: dict[str, str] = {}  # module -> its built file, if its source is unchanged
_found: set[str] = set()  # the extension suffixes the manifest has builds for


def source_crc(data: bytes) -> str:
    return f"{zlib.crc32(data):08x}"


def _cimported(source: bytes) -> list[str]:
    """The modules whose C declarations a module's .pxd (after the NUL in `source_of`'s
    bytes; only its lines are read) cimports."""
    found = []
    pxd = source.find(b"\0")
    if pxd < 0:
        return found
    for line in source[pxd + 1:].split(b"\n"):
        words = line.split()
        if len(words) >= 3 and words[0] == b"from" and words[2] == b"cimport" and (
                words[1].startswith(b"gpu_async_lsp.")):
            found.append(words[1].decode())
    return found


def source_of(path: str) -> bytes:
    """What a module's build is made from: its .py, the augmenting .pxd beside it (its C
    types in the build), if it has one, and the .pxd files of C declarations only that the
    .pxd cimports whole (`cimport gpu_async_lsp.syntax.fields as tf`: compiled into the
    build, their constants and inline functions change it as its own source does)."""
    with open(path, "rb") as f:
        data = f.read()
    pxd = path[:-3] + ".pxd"
    if os.path.isfile(pxd):
        with open(pxd, "rb") as f:
            declarations = f.read()
        data += b"\0" + declarations
        root = path[:path.rfind(os.sep + "gpu_async_lsp" + os.sep) + 1]
        for line in declarations.split(b"\n"):
            words = line.split()
            if len(words) >= 2 and words[0] == b"cimport" and words[1].startswith(
                    b"gpu_async_lsp."):
                header = os.path.join(root, *words[1].decode().split(".")) + ".pxd"
                with open(header, "rb") as f:
                    data += b"\0" + f.read()
    return data


class _Finder:
    """Finds the modules of `_built` (a meta path finder, before Python's own)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        where = _built.get(name)
        if where is None:
            return None
        loaded[name] = where
        spec = ModuleSpec(name, ExtensionFileLoader(name, where), origin=where)
        spec.has_location = True  # its __file__: the built file
        return spec


def install() -> None:
    """Put the finder of the built modules whose source is unchanged in front of Python's."""
    if os.environ.get(PURE_ENV) or _built:
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # holds gpu_async_lsp/
    # Beside the package (a wheel's install), else on the path (an editable install's
    # build, in site-packages while the package is the checkout's).
    for entry in (here, *sys.path):
        root = os.path.join(entry or ".", PACKAGE)
        if os.path.isfile(os.path.join(root, MANIFEST)):
            break
    else:
        return
    try:
        with open(os.path.join(root, MANIFEST), encoding="utf-8") as f:
            lines = f.read().splitlines()
        cimports: dict[str, list[str]] = {}
        for line in lines:
            module, crc, file = line.split()
            source = os.path.join(here, *module.split(".")) + ".py"
            built = os.path.join(root, *file.split("/"))
            data = source_of(source)
            same = source_crc(data) == crc
            # Built for this Python and platform: named with its full tag (a build copied
            # from another Python or platform is left alone).
            _found.add(file.split(".", 1)[-1])
            if same and built.endswith(EXTENSION_SUFFIXES[0]) and os.path.isfile(built):
                _built[module] = built
                cimports[module] = _cimported(data)
    except (OSError, ValueError):
        _built.clear()  # an unreadable build: Python only
        return
    # A build that cimports a module's types (parser.pxd: ir's Op) reads their C fields: run
    # as Python too where that module is (its Python class is not the type it was built
    # against: the build would read memory that is not there).
    stale = True
    while stale:
        stale = [m for m in _built if any(d not in _built for d in cimports[m])]
        for m in stale:
            del _built[m]
    if _built and not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


def describe() -> str:
    """Which build of the analysis's modules this process runs, in a line (the server's log:
    a platform-specific .vsix says whether it had one for the user's Python)."""
    if os.environ.get(PURE_ENV):
        return f"running the analysis as Python ({PURE_ENV} is set)"
    if _built:
        return f"running the analysis's {len(_built)} modules compiled for {_tag(EXTENSION_SUFFIXES[0])}"
    this = f"Python {sys.version_info[0]}.{sys.version_info[1]} ({_tag(EXTENSION_SUFFIXES[0])})"
    if _found:
        builds = ", ".join(sorted(_tag(s) for s in _found))
        return (f"running the analysis as Python (the same code, slower): the compiled modules "
                f"here are built for {builds}, not for {this} or not from these sources")
    return f"running the analysis as Python on {this}: this install has no compiled modules"


def _tag(suffix: str) -> str:
    """`cpython-311-x86_64-linux-gnu` of `.cpython-311-x86_64-linux-gnu.so`."""
    return suffix.strip(".").removesuffix(".so").removesuffix(".pyd")
