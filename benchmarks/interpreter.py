"""Which Python runs our side of a benchmark, as the tables print it.

The same code runs ~15% faster on one CPython 3.11 than on another (docs/benchmarks.md,
"Which Python"): Debian's python3.11 has libpython linked into its executable (and is built
with profile-guided optimization), pyenv's default build loads it as a shared library, built
without. A ratio to the C++ tools is read with the interpreter it was measured on.
"""

from __future__ import annotations

import subprocess

# Run by the interpreter described: its version, its executable and where libpython lies in
# the running process (a shared library mapped from a file, or in the executable itself).
_PROBE = r"""
import platform, sys
shared = ""
try:
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if "/libpython" in path:
                shared = path
                break
except OSError:
    shared = "?"
kind = ("libpython shared (" + shared + ")" if shared and shared != "?"
        else "libpython in the executable" if not shared else "libpython: unknown")
print(f"{platform.python_implementation()} {platform.python_version()} at "
      f"{sys.executable}, {kind}")
"""


def describe(python: str) -> str:
    """One line about the interpreter `python` (a path or a command name)."""
    try:
        out = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True,
                             timeout=60, check=False)
    except (OSError, subprocess.SubprocessError) as e:
        return f"{python}: not run ({e})"
    line = out.stdout.strip()
    return line if out.returncode == 0 and line else f"{python}: exit {out.returncode}"


def of_command(cmd: list[str]) -> str | None:
    """The interpreter of a command line that runs a Python module (`python -m ...`, or a
    Python script), described; None for any other command."""
    if not cmd:
        return None
    head = cmd[0].rsplit("/", 1)[-1]
    if not head.startswith("python") and not (len(cmd) > 1 and cmd[1] == "-m"):
        return None
    return describe(cmd[0])
