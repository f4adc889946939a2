"""Tidy: the house rules a linter does not check (in the way of rust-analyzer's
`xtask/src/tidy.rs`).

- Every module-level and class-level name of the package is referenced somewhere other than
  where it is defined (the package, tests, tools, benchmarks, editors, the grammar,
  pyproject.toml): pyflakes sees unused imports and variables, not a function nobody calls.
  Names that a library calls by their name are listed in DYNAMIC, each with its reason.
- Every module of the package is on the code map of docs/ARCHITECTURE.md.
- An import inside a function is one of the deliberate lazy imports in LAZY (what each saves),
  not a way around an import circle: a circle is broken where it is (a module moved to where
  it belongs, or types under TYPE_CHECKING).
"""

from __future__ import annotations

import ast
import collections
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "gpu_async_lsp"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)

# Names referenced by a library through their name, never by our code.
DYNAMIC = {
    "lsp_text_document__did_change": "pygls dispatches textDocument/didChange to the protocol "
                                     "method of that name (server/protocol.py overrides it)",
    "lsp_exit": "pygls dispatches `exit` to the protocol method of that name",
    "lex": "Lark calls its lexer's `lex` (syntax/lark_lexer.py feeds it our tokens)",
    "end_column": "Lark reads a token's `end_column` (syntax/prelex.py's Token is Lark's)",
}

# Imports inside functions that are there on purpose: what each module costs at start-up
# (`python -X importtime`, milliseconds on the 2-core machine) or why it is loaded late.
LAZY = {
    "concurrent.futures": "`check` of several files only (4 ms)",
    "ctypes": "prctl, looked up by the server before it forks (2.5 ms)",
    "difflib": "--diff only",
    "importlib": "the grammar from a zipped package only (10 ms)",
    "io": "with pickle, in forked processes only",
    "json": "JSON and SARIF output only",
    "lark": "a unit the plain reader cannot take (most processes never import Lark)",
    "lark.exceptions": "with Lark",
    "logging": "the server's log set-up, after its arguments are read (3.5 ms)",
    "pathlib": "the grammar and the codes page, rarely read (4 ms)",
    "pathspec": "a directory walk with ignore files only",
    "pickle": "results that cross processes only (2 ms)",
    "tomllib": "a configuration file only (4 ms)",
    "urllib.parse": "SARIF only (2 ms)",
    "gpu_async_lsp": "the package's folder for the grammar (a compiled parser lies elsewhere); "
                     "`serve` imports the server, pygls and lsprotocol only when serving, and "
                     "the server's main builds it after its logging is set up",
    "gpu_async_lsp.server.handlers": "the server's main, after its logging is set up",
    "gpu_async_lsp.server.heap": "the server's main, before it starts threads (glibc's heap)",
    "gpu_async_lsp.server.protocol": "the server's main, at its exit",
    "gpu_async_lsp.syntax": "the server's main builds the parser before the first open",
    "gpu_async_lsp.syntax.lark_lexer": "with Lark",
}

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _searched_files() -> list[Path]:
    files = [ROOT / "grammar" / "mlir.lark", ROOT / "pyproject.toml"]
    for folder in ("gpu_async_lsp", "tests", "tools", "benchmarks", "editors", "scripts"):
        for path in (ROOT / folder).rglob("*"):
            parts = set(path.parts)
            if (path.is_file() and not parts & {"node_modules", "bundled", "__pycache__"}
                    and path.suffix in (".py", ".lark", ".lua", ".ts", ".js", ".mjs", ".json",
                                        ".toml", ".el", "")):
                files.append(path)
    return files


def _defined_names(tree: ast.Module):
    """(name, line) of every module-level and class-level definition (dunders left out)."""
    def walk(body):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                yield node.name, node.lineno
                if isinstance(node, ast.ClassDef):
                    yield from walk(node.body)
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for n in ast.walk(target):
                        if isinstance(n, ast.Name):
                            yield n.id, node.lineno

    for name, line in walk(tree.body):
        if not (name.startswith("__") and name.endswith("__")):
            yield name, line


def test_tidy_every_name_is_referenced():
    words = collections.Counter()
    for path in _searched_files():
        try:
            words.update(_WORD.findall(path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
    dead = [f"{path.relative_to(ROOT)}:{line} {name}" for path in MODULES
            for name, line in _defined_names(ast.parse(path.read_text(encoding="utf-8")))
            if words[name] <= 1 and name not in DYNAMIC]
    assert not dead, "defined and referenced nowhere (delete, or list in DYNAMIC with why):\n" \
        + "\n".join(dead)
    stale = [name for name in DYNAMIC if words[name] == 0]
    assert not stale, f"DYNAMIC lists names the package no longer defines: {stale}"


def test_tidy_every_module_is_on_the_code_map():
    code_map = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    missing = [str(path.relative_to(ROOT)) for path in MODULES
               if path.name not in ("__init__.py", "__main__.py")
               and f"`{path.name}`" not in code_map
               and f"{path.relative_to(PACKAGE).as_posix()}`" not in code_map]
    assert not missing, f"modules docs/ARCHITECTURE.md's code map does not name: {missing}"


def test_tidy_imports_inside_functions_are_deliberate():
    found = []
    for path in MODULES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for sub in ast.walk(node):
                if isinstance(sub, ast.ImportFrom):
                    modules = [sub.module]
                elif isinstance(sub, ast.Import):
                    modules = [a.name for a in sub.names]
                else:
                    continue
                found.extend(f"{path.relative_to(ROOT)}:{sub.lineno} {node.name}: import {m}"
                             for m in modules if m not in LAZY)
    assert not found, "imports inside functions not in LAZY (move them to the top, or break " \
        "the circle they hide):\n" + "\n".join(found)
