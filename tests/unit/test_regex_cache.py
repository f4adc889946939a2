"""The compiled-pattern cache: what it builds is what `re.compile` builds, from a fresh file, a
kept one, a damaged one or none at all."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys

import pytest

from gpu_async_lsp import regex_cache

PACKAGE_MODULES = [
    "gpu_async_lsp.cli", "gpu_async_lsp.parallel", "gpu_async_lsp.server.server",
    "gpu_async_lsp.ide.features", "gpu_async_lsp.ide.semantic",
]


def package_patterns() -> list[re.Pattern]:
    """Every compiled pattern the package's modules hold at module level (the GPU op formats
    in their table too)."""
    for name in PACKAGE_MODULES:
        importlib.import_module(name)
    found = {}
    for name, module in list(sys.modules.items()):
        if not name.startswith("gpu_async_lsp"):
            continue
        for value in vars(module).values():
            values = value.values() if isinstance(value, dict) else [value]
            for v in values:
                if isinstance(v, re.Pattern):
                    found[(v.pattern, v.flags)] = v
    return list(found.values())


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    """The cache module reading and writing a file of its own, loaded from nothing."""
    path = tmp_path / "__pycache__" / "regex.test.cache"
    monkeypatch.setattr(regex_cache, "_PATH", str(path))
    monkeypatch.setattr(regex_cache, "_programs", None)
    monkeypatch.setattr(regex_cache, "_added", False)
    monkeypatch.setattr(regex_cache, "_used", set())
    return path


def reload_from_file(monkeypatch) -> None:
    """As a new process would: the programs read from the file again."""
    monkeypatch.setattr(regex_cache, "_programs", None)
    monkeypatch.setattr(regex_cache, "_added", False)
    monkeypatch.setattr(regex_cache, "_used", set())


def test_a_write_keeps_only_the_programs_the_run_used(fresh_cache, monkeypatch):
    """A pattern the package no longer has (an upgrade) leaves the file at the next write."""
    import marshal

    regex_cache.compile("old+pattern")
    regex_cache.save()
    reload_from_file(monkeypatch)
    regex_cache.compile("new+pattern")
    regex_cache.save()
    _, programs = marshal.loads(fresh_cache.read_bytes())
    assert set(programs) == {("new+pattern", 0)}


def test_the_package_compiles_dozens_of_patterns_through_the_cache():
    assert len(package_patterns()) >= 40


def test_every_package_pattern_from_a_kept_program_equals_re_compile(fresh_cache, monkeypatch):
    patterns = package_patterns()
    for p in patterns:  # first run: compiled, programs added
        assert regex_cache.compile(p.pattern, p.flags) == re.compile(p.pattern, p.flags)
    regex_cache.save()
    assert fresh_cache.is_file()
    reload_from_file(monkeypatch)
    for p in patterns:  # second run: every program from the file, none compiled again
        cached = regex_cache.compile(p.pattern, p.flags)
        # Pattern equality compares the flags, the pattern and the engine's program.
        assert cached == re.compile(p.pattern, p.flags)
        assert cached.groupindex == p.groupindex and cached.groups == p.groups
    assert regex_cache._added is False
    regex_cache.save()  # nothing new: the file is not written again
    assert not list(fresh_cache.parent.glob("*.tmp"))


def test_a_kept_program_matches_as_the_compiled_pattern(fresh_cache, monkeypatch):
    from gpu_async_lsp.syntax.lexer import LINE_RE

    text = "  %a, %b:2 = arith.addi %x, %y : i32 {\n"
    regex_cache.compile(LINE_RE.pattern, LINE_RE.flags)
    regex_cache.save()
    reload_from_file(monkeypatch)
    cached = regex_cache.compile(LINE_RE.pattern, LINE_RE.flags)
    assert regex_cache._added is False  # read from the file
    assert cached.match(text).groupdict() == LINE_RE.match(text).groupdict()


@pytest.mark.parametrize("content", [b"", b"\x00garbage", b"\xe3\x00\x00\x00", None])
def test_a_damaged_or_foreign_file_is_ignored(fresh_cache, monkeypatch, content):
    import marshal

    fresh_cache.parent.mkdir()
    if content is None:  # a file of another Python build: its key differs
        content = marshal.dumps((("other", "3.99"), {("a", 0): (32, [0], 0, {}, (None,))}))
    fresh_cache.write_bytes(content)
    p = re.compile(r"(?P<x>a+)b")
    assert regex_cache.compile(p.pattern) == p
    assert regex_cache._added is True
    regex_cache.save()  # replaced by a file of this Python
    reload_from_file(monkeypatch)
    assert regex_cache.compile(p.pattern) == p and regex_cache._added is False


def test_a_program_the_engine_refuses_is_compiled_again(fresh_cache, monkeypatch):
    p = re.compile(r"x(y)z")
    regex_cache.compile(p.pattern)
    key = (p.pattern, 0)
    flags, _code, groups, groupindex, indexgroup = regex_cache._programs[key]
    regex_cache._programs[key] = (flags, [999, 999], groups, groupindex, indexgroup)
    assert regex_cache.compile(p.pattern) == p


def test_an_unwritable_cache_path_is_no_error(tmp_path, monkeypatch):
    """A read-only install: compiled on every start, never an error."""
    blocker = tmp_path / "file"
    blocker.write_text("")  # a file where the folder should be
    monkeypatch.setattr(regex_cache, "_PATH", str(blocker / "__pycache__" / "regex.cache"))
    monkeypatch.setattr(regex_cache, "_programs", None)
    monkeypatch.setattr(regex_cache, "_added", False)
    assert regex_cache.compile("q+") == re.compile("q+")
    regex_cache.save()


def test_a_check_writes_the_cache_that_the_next_start_reads(tmp_path):
    """The command saves what its imports compiled; the next process compiles none of it."""
    env = dict(os.environ)
    code = ("import sys; from gpu_async_lsp import regex_cache as rc;"
            "rc._PATH = sys.argv[1];"
            "import gpu_async_lsp.cli, gpu_async_lsp.parallel;"
            "n = len(rc._programs); added = rc._added; rc.save(); print(n, added)")
    cache = str(tmp_path / "regex.cache")
    runs = [subprocess.run([sys.executable, "-c", code, cache], capture_output=True, text=True,
                           env=env, timeout=120) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr
    first, second = (r.stdout.split() for r in runs)
    assert int(first[0]) >= 40 and first[1] == "True"
    assert second == [first[0], "False"]


def test_each_python_build_keeps_its_own_file():
    """Two builds of one Python version running one install (a system Python and a venv's)
    name different files in the same folder: neither overwrites the other's programs (they
    did by turns, and each start of the other compiled its patterns again)."""
    code = ("import sys; sys.version = sys.argv[1];"
            "from gpu_async_lsp import regex_cache as rc; print(rc._PATH)")
    paths = [subprocess.run([sys.executable, "-c", code, version], capture_output=True,
                            text=True, timeout=60, check=True).stdout.strip()
             for version in (sys.version, sys.version + " (another build)")]
    assert paths[0] == regex_cache._PATH
    assert paths[1] != paths[0]
    assert os.path.dirname(paths[1]) == os.path.dirname(paths[0])
    assert all(os.path.basename(p).startswith(f"regex.{sys.implementation.cache_tag}-")
               for p in paths)
