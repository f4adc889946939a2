"""Build hook (hatchling): the modules of the per-line analysis compiled with Cython.

The Python of those modules is compiled as it is (no Cython types, annotations not used as
types): C calls in place of the interpreter's dispatch. The first analysis of 50k lines of
host code took ~20% less CPU time (stages measured in one process; whole runs are in
docs/benchmarks.md).
The extensions go into a package of their own, `gpu_async_lsp_compiled`, with a manifest of
the source each was built from; `gpu_async_lsp/_compiled.py` loads one only while its source
is unchanged (an edited module of an editable install is run as Python, not as what was
built from it before). Anything that fails here (no C compiler, no Cython,
GPU_ASYNC_LSP_PURE_PYTHON=1) builds a wheel of Python only, which works the same.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

# The modules a first analysis spends its time in (tokenizer, pre-lexer, parser, IR, the
# rewrite's walk, the analysis of units, positions). Others gain nothing worth the build.
MODULES = (
    "gpu_async_lsp.syntax.linescan",
    "gpu_async_lsp.syntax.gpuscan",
    "gpu_async_lsp.syntax.lexer",
    "gpu_async_lsp.syntax.prelex",
    "gpu_async_lsp.syntax.parser",
    "gpu_async_lsp.syntax.ir",
    "gpu_async_lsp.syntax.braces",
    "gpu_async_lsp.syntax.refs",
    "gpu_async_lsp.async_region.rewriter",
    "gpu_async_lsp.async_region.effects",
    "gpu_async_lsp.async_region.lowering",
    "gpu_async_lsp.async_region.lowerable",
    "gpu_async_lsp.async_region.findings",
    "gpu_async_lsp.async_region.suppression",
    "gpu_async_lsp.async_region.plan",  # the planned edits a fix renders (check --fix)
    "gpu_async_lsp.async_region.execute",
    "gpu_async_lsp.edits",  # a fix's edits sorted, checked and applied per block
    "gpu_async_lsp.ide.host",
    "gpu_async_lsp.ide.units",
    "gpu_async_lsp.ide.sharing",
    "gpu_async_lsp.ide.cache",  # three calls a unit on a first open (get, remember, cost)
    "gpu_async_lsp.text",
    "gpu_async_lsp.op_tables",
    "gpu_async_lsp.server.convert",
    "gpu_async_lsp.server.responses",
    "gpu_async_lsp.arenas",  # not per-line work: the allocator's arenas (arenas.pxd)
)


def _loader_module():
    """gpu_async_lsp/_compiled.py, read on its own (the hook runs without the package): the
    names and the source check the build must agree with."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "gpu_async_lsp" / "_compiled.py"
    spec = importlib.util.spec_from_file_location("_gpu_async_lsp_compiled_loader", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_loader = _loader_module()
PACKAGE, PURE_ENV, MANIFEST = _loader.PACKAGE, _loader.PURE_ENV, _loader.MANIFEST
source_crc = _loader.source_crc


def source_of(root: Path, module: str) -> Path:
    return root / (module.replace(".", "/") + ".py")


def build(root: Path, work: Path) -> dict[str, Path]:
    """Compile MODULES under `work`: {path in the wheel: built file}, the manifest included."""
    from Cython.Build import cythonize
    from setuptools import Distribution, Extension

    extensions = [Extension(m, [str(source_of(root, m))]) for m in MODULES]
    extensions = cythonize(
        extensions, build_dir=str(work / "c"), quiet=True, language_level=3,
        compiler_directives={"annotation_typing": False})
    distribution = Distribution({"ext_modules": extensions, "script_name": "setup.py"})
    command = distribution.get_command_obj("build_ext")
    command.build_lib = str(work / "lib")
    command.build_temp = str(work / "tmp")
    command.parallel = os.cpu_count() or 1
    command.ensure_finalized()
    command.run()
    out: dict[str, Path] = {}
    lines = []
    for module in MODULES:
        built = Path(command.get_ext_fullpath(module))
        relative = built.relative_to(work / "lib").as_posix()
        out[f"{PACKAGE}/{relative}"] = built
        source = _loader.source_of(str(source_of(root, module)))  # with its .pxd
        lines.append(f"{module} {source_crc(source)} {relative}")
    (work / MANIFEST).write_text("\n".join(lines) + "\n", "utf-8")
    out[f"{PACKAGE}/{MANIFEST}"] = work / MANIFEST
    return out


class CompiledModules(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel" or os.environ.get(PURE_ENV):
            return
        work = Path(tempfile.mkdtemp(prefix="gpu-async-lsp-build-"))
        self._work = work
        try:
            files = build(Path(self.root), work)
        except Exception as error:  # no compiler, no Cython: the Python modules are the build
            self.app.display_warning(f"gpu-async-lsp: modules not compiled ({error}); "
                                     "the wheel runs them as Python")
            return
        build_data["pure_python"] = False
        build_data["infer_tag"] = True
        for target, built in files.items():
            build_data["force_include"][str(built)] = target
        if version == "editable":  # the project's own forced files, which these would replace
            editable = build_data["force_include_editable"]
            editable.update(self.build_config.get_force_include())
            editable.update({str(built): target for target, built in files.items()})

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        work = getattr(self, "_work", None)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
