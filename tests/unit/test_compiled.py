"""The Cython builds of the analysis's modules (tools/compiled_build.py, gpu_async_lsp/_compiled.py):
loaded where the install has them and their sources are unchanged; what they make is what the
Python makes, on the corpus and on generated host code."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import pytest

from gpu_async_lsp import _compiled
from tests.corpora import CORPORA, require_corpus
from tools.compiled_build import MODULES, source_crc

ROOT = Path(__file__).resolve().parents[2]

IN_CI = bool(os.environ.get("CI"))


def _needs_build():
    if not _compiled._built:
        if IN_CI:  # .ci/run installs with a C compiler: the build must be there
            pytest.fail("no compiled build of the analysis's modules was loaded")
        pytest.skip("this install has no compiled build (no C compiler at install time?)")


def test_every_module_of_the_build_is_loaded_compiled():
    """CI's install compiles them all, and the modules the analysis imports are the built ones
    (a module loaded as Python would show in its __file__)."""
    _needs_build()
    import importlib

    assert set(_compiled._built) == set(MODULES)
    for module in MODULES:
        loaded = importlib.import_module(module)
        assert loaded.__file__ == _compiled._built[module], module
        assert not loaded.__file__.endswith(".py")


_DIGEST = textwrap.dedent("""
    import glob, hashlib, sys
    import gpu_async_lsp._compiled as c
    from gpu_async_lsp.syntax.parser import parse_document
    from gpu_async_lsp.async_region import analyze
    from gpu_async_lsp.ide.host import Analyzer
    sys.path.insert(0, sys.argv[1])
    from benchmarks.gen_host import generate
    h = hashlib.sha256()
    def dump(op):
        g = op.gpu
        return (op.name, op.name_start, op.name_end, op.start, op.end, op.generic,
                [(v.name, v.start, v.end, v.index, v.count) for v in op.results], op.results_end,
                [(v.name, v.start, v.end) for v in op.explicit_uses], list(op.spans),
                [(s.path, s.start, s.end) for s in op.explicit_symbols],
                op.symbol_name and (op.symbol_name.path, op.symbol_name.start, op.symbol_name.end),
                g and (g.async_kw, g.deps_open, g.deps_close, [(v.name, v.start) for v in g.deps]),
                op.result_types,
                [[(b.label and b.label.name, [(a.name, a.start) for a in b.args],
                   [dump(o) for o in b.ops], b.start, b.end) for b in r.blocks]
                 for r in op.regions])
    texts = [generate(3000, seed=s) for s in range(3)]
    texts += [open(f, encoding="utf-8", errors="replace").read() for f in sys.argv[2:]]
    for text in texts:
        doc = parse_document(text)
        for chunk in doc.chunks:
            h.update(repr([dump(o) for o in chunk.ops]).encode())
            h.update(repr(chunk.errors).encode() + repr(chunk.aliases).encode())
        a = analyze(text)
        h.update(repr(a.findings).encode())
        if not a.has_syntax_errors:
            h.update(a.fixed_text().encode())
        served = Analyzer().analyze(text, 1, encoding="utf-16")
        h.update(repr([(u.base, u.result.findings, u.result.positions("utf-16"))
                       for u in served.units]).encode())
    print(len(c._built), h.hexdigest())
""")


def _digest(files: list[str], pure: bool) -> tuple[int, str]:
    env = dict(os.environ)
    env.pop(_compiled.PURE_ENV, None)
    if pure:
        env[_compiled.PURE_ENV] = "1"
    proc = subprocess.run([sys.executable, "-c", _DIGEST, str(ROOT), *files], env=env,
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    built, digest = proc.stdout.split()
    return int(built), digest


def test_compiled_and_python_make_the_same_ir_findings_and_fixes():
    """The same IR (every field), syntax errors, findings, fixed text and placed findings of
    the server's analysis, from the build and from the Python (GPU_ASYNC_LSP_PURE_PYTHON=1), on
    generated host code and the corpora of real MLIR."""
    _needs_build()
    files = []
    for corpus, (folder, _) in CORPORA.items():
        require_corpus(corpus)
        files += sorted(str(f) for f in folder.rglob("*.mlir"))
    built, compiled = _digest(files, pure=False)
    none, python = _digest(files, pure=True)
    assert (built, none) == (len(MODULES), 0)
    assert compiled == python


def _fake_package(root: Path, modules: dict[str, tuple[bytes, bytes | None, bytes]],
                  suffix: str | None = None) -> None:
    """In `root`, a package of modules (name: its .py now, its .pxd now or None, what its
    build was made from as `source_of` reads it) and a build manifest of them."""
    pkg = root / "gpu_async_lsp"
    built = root / _compiled.PACKAGE / "gpu_async_lsp"
    pkg.mkdir(parents=True)
    built.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_compiled.py").write_text((ROOT / "gpu_async_lsp" / "_compiled.py").read_text())
    lines = []
    for name, (source, pxd, built_from) in modules.items():
        (pkg / f"{name}.py").write_bytes(source)
        if pxd is not None:
            (pkg / f"{name}.pxd").write_bytes(pxd)
        file = name + (suffix or EXTENSION_SUFFIXES[0])
        (built / file).write_bytes(b"not really a build")
        lines.append(f"gpu_async_lsp.{name} {source_crc(built_from)} gpu_async_lsp/{file}")
    (root / _compiled.PACKAGE / _compiled.MANIFEST).write_text("\n".join(lines) + "\n")


def _probe(root: Path) -> subprocess.CompletedProcess:
    """A fresh Python with `root` on its path installs the loader and prints what it loads."""
    probe = ("import sys; sys.path.insert(0, sys.argv[1]); import gpu_async_lsp._compiled as c;"
             "c.install(); print(sorted(c._built))")
    env = dict(os.environ)
    env.pop(_compiled.PURE_ENV, None)
    return subprocess.run([sys.executable, "-c", probe, str(root)], capture_output=True,
                          text=True, timeout=60, env=env, cwd=root)


def _fake_install(tmp_path: Path, edited: bool, suffix: str | None = None,
                  pxd: tuple[bytes, bytes] | None = None) -> str:
    """A package with one module and a build manifest of it, in a folder of its own; with
    `pxd`, the module has a .pxd: (the one it was built with, the one there now)."""
    source = b"VALUE = 'python'\n"
    built_from = source if pxd is None else source + b"\0" + pxd[0]
    _fake_package(tmp_path, {"mod": (source + (b"# edited\n" if edited else b""),
                                     None if pxd is None else pxd[1], built_from)}, suffix)
    return _probe(tmp_path).stdout.strip()


def test_a_build_is_used_only_while_its_source_is_the_one_it_was_built_from(tmp_path):
    """An edited module of an editable install runs as Python, not as its stale build."""
    assert _fake_install(tmp_path / "same", edited=False) == "['gpu_async_lsp.mod']"
    assert _fake_install(tmp_path / "edited", edited=True) == "[]"


def test_a_build_is_used_only_while_its_pxd_is_the_one_it_was_built_with(tmp_path):
    """A module's augmenting .pxd (its C types) counts with its source."""
    types = b"cdef class C:\n    cdef public int x\n"
    assert _fake_install(tmp_path / "same", False, pxd=(types, types)) == "['gpu_async_lsp.mod']"
    assert _fake_install(tmp_path / "edited", False, pxd=(types, types + b"# x\n")) == "[]"


def test_a_build_is_used_only_while_the_declarations_it_cimports_whole_are_the_same(tmp_path):
    """A .pxd of C declarations only, cimported whole (fields.pxd: constants, inline
    functions), is compiled into the build that cimports it: editing it makes that build
    stale as editing the module would."""
    header = b"cdef enum:\n    NAME_END = 6\n"
    pxd = b"cimport gpu_async_lsp.hdr as hdr\n"

    def loaded(header_now: bytes) -> str:
        root = tmp_path / str(len(header_now))
        source = b"VALUE = 'python'\n"
        _fake_package(root, {"mod": (source, pxd, source + b"\0" + pxd + b"\0" + header)})
        (root / "gpu_async_lsp" / "hdr.pxd").write_bytes(header_now)
        return _probe(root).stdout.strip()

    assert loaded(header) == "['gpu_async_lsp.mod']"
    assert loaded(header.replace(b"6", b"16")) == "[]"


def test_a_build_that_cimports_a_module_run_as_python_is_run_as_python_too(tmp_path):
    """A build that cimports another module's types (parser.pxd: ir's Op) reads their C
    fields: where that module is edited (run as Python), its users are run as Python too
    (loaded beside the Python class, the build read memory that was not there: a crash)."""
    pxds = {"ir": b"cdef class Op:\n    cdef public object name\n",
            "parser": b"from gpu_async_lsp.ir cimport Op\n",
            "rewriter": b"from gpu_async_lsp.parser cimport f\n",
            "lexer": b"cimport cython\n"}

    def loaded(edited: set[str]) -> str:
        root = tmp_path / "-".join(sorted(edited) or ["none"])
        modules = {}
        for name, pxd in pxds.items():
            source = f"VALUE = {name!r}\n".encode()
            modules[name] = (source + (b"# edited\n" if name in edited else b""), pxd,
                             source + b"\0" + pxd)
        _fake_package(root, modules)
        return _probe(root).stdout.strip()

    every = "gpu_async_lsp.ir", "gpu_async_lsp.lexer", "gpu_async_lsp.parser", "gpu_async_lsp.rewriter"
    assert loaded(set()) == str(list(every))
    assert loaded({"ir"}) == "['gpu_async_lsp.lexer']"  # parser cimports ir, rewriter parser
    assert loaded({"parser"}) == "['gpu_async_lsp.ir', 'gpu_async_lsp.lexer']"
    assert loaded({"rewriter"}) == str(list(every[:3]))
    assert loaded({"lexer"}) == "['gpu_async_lsp.ir', 'gpu_async_lsp.parser', 'gpu_async_lsp.rewriter']"


def test_an_unreadable_manifest_leaves_python_running(tmp_path):
    """A manifest cut short, of garbage or not UTF-8: nothing is loaded, nothing fails."""
    for i, garbage in enumerate((b"gpu_async_lsp.mod\n", b"\xff\xfe\x00 x y\r\n", b"a b\n")):
        root = tmp_path / str(i)
        assert _fake_install(root, edited=False) == "['gpu_async_lsp.mod']"
        (root / _compiled.PACKAGE / _compiled.MANIFEST).write_bytes(garbage)
        run = _probe(root)
        assert (run.returncode, run.stdout.strip(), run.stderr) == (0, "[]", "")


def test_a_build_for_another_python_or_platform_is_not_loaded(tmp_path):
    """A build copied from elsewhere (another Python's ABI tag) is left alone: Python runs."""
    other = ".cpython-399-sparc-sunos.so"
    assert other not in EXTENSION_SUFFIXES
    assert _fake_install(tmp_path, edited=False, suffix=other) == "[]"


def test_the_build_lists_the_modules_it_compiles_from_sources_that_exist():
    for module in MODULES:
        assert (ROOT / (module.replace(".", "/") + ".py")).is_file(), module
    assert source_crc(b"x") == _compiled.source_crc(b"x") == f"{0x8cdc1683:08x}"
