"""Bundle the language server into the extension, as ruff-vscode and Microsoft's
vscode-python-tools-extension-template do: `pip install --target bundled/libs` of this
repository's package and its dependencies (pygls, lsprotocol, lark, pathspec and theirs: all
pure Python), plus the LICENSE. Run by `npm run bundle` (part of `vscode:prepublish`, so
`npm run package` does it) with the Python that runs this script:

    python3 bundle.py

Two kinds of bundle:

- universal (the default): the server's modules as Python only, so one .vsix serves every
  platform and every Python >= 3.11;
- platform-specific (`GPU_ASYNC_VSIX_TARGET=linux-x64`, set by `npm run package:linux-x64`, or
  `--target`): also the analysis's modules compiled with Cython for that platform, one build
  per CPython minor version (the Python running this script, and each of
  `GPU_ASYNC_VSIX_PYTHONS` / `--python`, interpreters of the same platform). Not one abi3
  (Limited API) build: Cython's Limited-API build of these modules ran `check --fix` of 50k
  lines in 674 ms, slower than their Python (563 ms) and than the full-API build (515 ms).
  The builds share one manifest (gpu_async_lsp/_compiled.py): an interpreter loads the build
  tagged with its own extension suffix, and any other interpreter runs the Python modules,
  which are the same code (the server says which it runs in its log).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LIBS = HERE / "bundled" / "libs"
COMPILED = "gpu_async_lsp_compiled"  # gpu_async_lsp/_compiled.py's PACKAGE
MANIFEST = "manifest.txt"
# vsce's targets this script can build for, by (sys.platform, machine) of the building Python.
TARGETS = {
    ("linux", "x86_64"): "linux-x64", ("linux", "aarch64"): "linux-arm64",
    ("darwin", "x86_64"): "darwin-x64", ("darwin", "arm64"): "darwin-arm64",
    ("win32", "AMD64"): "win32-x64", ("win32", "ARM64"): "win32-arm64",
}


def _pip_install(python: str, target: Path, pure: bool) -> None:
    # Not editable, no bytecode (the user's interpreter writes its own), only wheels' files.
    env = {**os.environ}
    env.pop("GPU_ASYNC_LSP_PURE_PYTHON", None)
    if pure:
        env["GPU_ASYNC_LSP_PURE_PYTHON"] = "1"
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    "--no-compile", "--no-warn-script-location", "--target", str(target),
                    str(ROOT)], check=True, env=env)


def _this_target() -> str | None:
    return TARGETS.get((sys.platform, platform.machine()))


def _add_build(python: str) -> str:
    """Compile the modules with another interpreter (a wheel of this repository, built by
    pip) and add its extensions and manifest lines to the bundle's: its extension suffix."""
    with tempfile.TemporaryDirectory(prefix="gpu-async-vsix-") as tmp:
        env = {k: v for k, v in os.environ.items() if k != "GPU_ASYNC_LSP_PURE_PYTHON"}
        subprocess.run([python, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check",
                        "--no-deps", "--wheel-dir", tmp, str(ROOT)], check=True, env=env)
        wheel = next(Path(tmp).glob("*.whl"))
        with zipfile.ZipFile(wheel) as z:
            names = [n for n in z.namelist() if n.startswith(f"{COMPILED}/")]
            if f"{COMPILED}/{MANIFEST}" not in names:
                raise SystemExit(f"{python}: its wheel has no compiled modules ({wheel.name})")
            lines = z.read(f"{COMPILED}/{MANIFEST}").decode().splitlines()
            for name in names:
                if name != f"{COMPILED}/{MANIFEST}":
                    (LIBS / name).parent.mkdir(parents=True, exist_ok=True)
                    (LIBS / name).write_bytes(z.read(name))
    manifest = LIBS / COMPILED / MANIFEST
    known = manifest.read_text("utf-8").splitlines()
    manifest.write_text("\n".join([*known, *(x for x in lines if x not in known)]) + "\n", "utf-8")
    return lines[0].split()[2].split(".", 1)[1].removesuffix(".so")


def _strip(folder: Path) -> None:
    """The extensions without their debugging information (on Linux: 2-3 MB each with it, a
    .vsix of 12 MB instead of 3)."""
    strip = shutil.which("strip")
    if sys.platform.startswith("linux") and strip:
        for built in folder.rglob("*.so"):
            subprocess.run([strip, "--strip-unneeded", str(built)], check=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default=os.environ.get("GPU_ASYNC_VSIX_TARGET", ""),
                    help="a vsce target (linux-x64, ...): bundle compiled modules for it")
    ap.add_argument("--python", action="append",
                    default=os.environ.get("GPU_ASYNC_VSIX_PYTHONS", "").split(),
                    help="another interpreter to compile the modules for (repeatable)")
    args = ap.parse_args(argv)
    if sys.version_info < (3, 11):
        print(f"bundle.py needs Python >= 3.11 (this is {sys.version.split()[0]})", file=sys.stderr)
        return 2
    if args.target and args.target != _this_target():
        print(f"bundle.py: a {args.target} bundle needs a Python of that platform "
              f"(this one is {sys.platform} {platform.machine()}: {_this_target()})",
              file=sys.stderr)
        return 2
    if LIBS.exists():
        shutil.rmtree(LIBS)
    LIBS.mkdir(parents=True)
    _pip_install(sys.executable, LIBS, pure=not args.target)
    # Console scripts point at the interpreter that built the bundle: not the user's.
    shutil.rmtree(LIBS / "bin", ignore_errors=True)
    for cache in list(LIBS.rglob("__pycache__")):
        shutil.rmtree(cache, ignore_errors=True)
    if not (LIBS / "gpu_async_lsp" / "cli.py").exists():
        print(f"the bundle lacks gpu_async_lsp ({LIBS})", file=sys.stderr)
        return 1
    builds = []
    if args.target:
        if not (LIBS / COMPILED / MANIFEST).is_file():
            print(f"bundle.py: the modules were not compiled for {args.target} "
                  "(no C compiler or Cython?)", file=sys.stderr)
            return 1
        builds.append(sysconfig.get_config_var("EXT_SUFFIX").strip(".").removesuffix(".so"))
        for python in args.python:
            builds.append(_add_build(python))
        _strip(LIBS / COMPILED)
    shutil.copyfile(ROOT / "LICENSE", HERE / "LICENSE")
    names = sorted(p.name for p in LIBS.iterdir() if not p.name.endswith(".dist-info"))
    print(f"bundled into {LIBS.relative_to(HERE)}: {', '.join(names)}")
    if builds:
        print(f"compiled modules for {args.target}: {', '.join(builds)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
