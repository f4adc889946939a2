"""Packaging and layering: the grammar ships in the wheel; layers import only what is below."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "gpu_async_lsp"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel `python -m build` makes of this checkout (built once for these tests)."""
    out = tmp_path_factory.mktemp("dist")
    proc = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (built,) = out.glob("gpu_async_lsp-*.whl")
    return built


def test_wheel_built_from_checkout_contains_grammar(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert "gpu_async_lsp/grammar/mlir.lark" in names
        shipped = zf.read("gpu_async_lsp/grammar/mlir.lark").decode()
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "gpu-async-lsp = gpu_async_lsp.cli:entry" in zf.read(entry_points).decode()
    assert shipped == (ROOT / "grammar" / "mlir.lark").read_text()


def test_wheel_ships_the_codes_page_that_check_links_to(wheel, tmp_path):
    with zipfile.ZipFile(wheel) as zf:
        assert zf.read("gpu_async_lsp/docs/codes.md").decode() == (
            ROOT / "docs" / "codes.md").read_text()
        zf.extractall(tmp_path / "site")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from gpu_async_lsp import report;"
            "print(report.docs_url('syntax'))")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "site")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    page = (tmp_path / "site" / "gpu_async_lsp" / "docs" / "codes.md").resolve()
    assert proc.stdout.strip() == page.as_uri() + "#syntax"


def test_grammar_found_from_installed_wheel_parses(wheel, tmp_path):
    """Install the wheel's files apart from the checkout and parse with them."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    code = ("import gpu_async_lsp, sys; from gpu_async_lsp.syntax.parser import grammar_text;"
            "assert gpu_async_lsp.__file__.startswith(sys.argv[1]);"
            "from gpu_async_lsp.syntax import parse_document;"
            "d = parse_document('func.func @f() {\\n  return\\n}\\n');"
            "assert not d.errors; print(len(grammar_text()))")
    proc = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {str(site)!r});"
                           + code, str(site)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout) > 1000


def test_wheel_carries_the_compiled_modules_and_its_install_loads_them(wheel, tmp_path):
    """Built with a C compiler (CI's), the wheel holds the analysis's modules compiled, with
    the manifest of their sources; its files, installed apart, load them."""
    import os

    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        if "gpu_async_lsp_compiled/manifest.txt" not in names:
            if os.environ.get("CI"):
                pytest.fail("the wheel has no compiled modules")
            pytest.skip("no compiled modules in this wheel (no C compiler?)")
        manifest = zf.read("gpu_async_lsp_compiled/manifest.txt").decode().splitlines()
        zf.extractall(tmp_path / "site")
    assert all(f"gpu_async_lsp_compiled/{line.split()[2]}" in names for line in manifest)
    code = ("import sys; sys.path.insert(0, sys.argv[1]);"
            "import gpu_async_lsp.syntax.lexer as lexer, gpu_async_lsp._compiled as c;"
            "print(len(c._built), lexer.__file__)")
    env = {k: v for k, v in os.environ.items() if k != "GPU_ASYNC_LSP_PURE_PYTHON"}
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "site")], env=env,
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    count, where = proc.stdout.split()
    assert int(count) == len(manifest)
    assert where.startswith(str(tmp_path / "site" / "gpu_async_lsp_compiled"))


def test_grammar_builds_with_lark_strict_mode():
    from gpu_async_lsp.syntax.parser import build_parser

    build_parser(strict=True)  # raises on any LALR conflict or terminal collision


# Which package modules each layer may import (docs/ARCHITECTURE.md, "Code map").
ALLOWED = {
    "regex_cache": set(),
    "op_tables": set(),
    "text": set(),
    "edits": set(),
    "gcpause": set(),
    "arenas": set(),
    "syntax": {"syntax", "op_tables"},
    "async_region": {"async_region", "syntax", "op_tables", "edits", "text"},
    "parallel": {"async_region", "syntax", "edits"},
    "ide": {"ide", "async_region", "syntax", "edits", "text", "op_tables", "parallel",
            "gcpause"},
    "walk": set(),
    "options": {"async_region", "walk"},
    "config": {"async_region", "options", "walk"},
    "server": {"server", "ide", "async_region", "syntax", "edits", "text", "op_tables",
               "options", "config", "gcpause", "arenas"},
    "report": {"async_region", "text"},
    "cli": {"async_region", "syntax", "edits", "text", "parallel", "server", "op_tables",
            "options", "config", "walk", "report", "gcpause", "arenas"},
}
# The compiled-pattern cache imports nothing of the package; every layer but walk may use it.
EVERYWHERE = {"regex_cache"}
THIRD_PARTY = {"lark": {"syntax"}, "pygls": {"server", "cli"}, "lsprotocol": {"server", "cli"},
               "pathspec": {"walk"}}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _layer(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if _layer(p) in ALLOWED)


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_layering_module_imports_only_layers_below(path):
    layer = _layer(path)
    for name in _imports(path):
        top = name.split(".")[0]
        if top == "gpu_async_lsp":
            parts = name.split(".")
            if len(parts) == 1:
                continue
            allowed = ALLOWED[layer] | {layer} | (EVERYWHERE if layer != "walk" else set())
            assert parts[1] in allowed, f"{layer} imports {name}"
        elif top in THIRD_PARTY:
            assert layer in THIRD_PARTY[top], f"{layer} imports {name}"


# The modules of syntax/ that code outside it may import from (vocabulary, not stages;
# `fields`: the indexes by which the package's named tuples are read, and the C read of one).
SYNTAX_PUBLIC_MODULES = {"patterns", "navigation", "fields"}


def _syntax_exports() -> set[str]:
    tree = ast.parse((PACKAGE / "syntax" / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError("syntax/__init__.py has no __all__")


OUTSIDE_SYNTAX = [p for p in MODULES if _layer(p) != "syntax"]


@pytest.mark.parametrize("path", OUTSIDE_SYNTAX,
                         ids=[str(p.relative_to(PACKAGE)) for p in OUTSIDE_SYNTAX])
def test_layering_code_outside_syntax_uses_its_doors_only(path):
    """syntax/ is used through the names its __init__ exports (and its vocabulary modules):
    the IDE layer once called five parsing stages by name, and any private name imported
    from outside pins a stage that should be free to change."""
    exports = _syntax_exports()
    wrong = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[:2] != ["gpu_async_lsp", "syntax"]:
                continue
            if len(parts) == 2:
                wrong += [a.name for a in node.names
                          if a.name not in exports and a.name not in SYNTAX_PUBLIC_MODULES]
            elif parts[2] not in SYNTAX_PUBLIC_MODULES:
                wrong += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            wrong += [a.name for a in node.names
                      if a.name.startswith("gpu_async_lsp.syntax.")
                      and a.name.split(".")[2] not in SYNTAX_PUBLIC_MODULES]
    assert not wrong, f"{path.name} imports syntax internals: {wrong}"


def test_syntax_exports_exist():
    import gpu_async_lsp.syntax as syntax

    assert all(hasattr(syntax, name) for name in _syntax_exports())


def test_release_workflow_builds_every_platform_the_bundler_knows():
    """.github/workflows/release-vscode.yml builds a .vsix for each vsce target that
    editors/vscode/bundle.py can bundle compiled modules for, on a runner of that platform,
    and the universal one."""
    import importlib.util

    import yaml

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("vsix_bundle", root / "editors/vscode/bundle.py")
    bundle = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bundle)
    workflow = yaml.safe_load((root / ".github/workflows/release-vscode.yml").read_text())
    matrix = workflow["jobs"]["platform"]["strategy"]["matrix"]["include"]
    assert sorted(m["target"] for m in matrix) == sorted(bundle.TARGETS.values())
    for m in matrix:  # a runner of the target's OS and architecture
        system = m["target"].split("-")[0]
        assert m["os"].startswith({"linux": "ubuntu", "darwin": "macos", "win32": "windows"}[system])
    assert "npm run package" in str(workflow["jobs"]["universal"]["steps"])
