"""Benchmark: `gpu-async-lsp check --fix` against `mlir-opt-22` running the pass, same run.

    python benchmarks/bench_check.py [--sizes 1000,10000,50000] [--repeat 5] [--kind host,wide]

For each size it generates a host-code file (benchmarks/gen_host.py; with `--kind wide`, real
IR of many dialects from ../shared/corpus-wide, benchmarks/gen_wide.py), then alternates runs of
both commands on copies of it and prints the median wall time of each, the ratio ours/theirs
and each one's peak resident memory (from wait4's rusage). The machines are shared and noisy:
read the ratio, not the absolute times. Targets: ratio <= 3 at 50k lines, our peak
memory < 400 MB.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_host import generate  # noqa: E402
from gen_wide import generate as generate_wide  # noqa: E402
from interpreter import describe  # noqa: E402

PIPELINE = "--pass-pipeline=builtin.module(func.func(gpu-async-region))"


def run(cmd: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB and exit status of one command."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,50000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--kind", default="host", help="host and/or wide, comma-separated")
    ap.add_argument("--python", default=sys.executable,
                    help="the interpreter that runs `gpu-async-lsp check` (default: this one; "
                         "it needs the package installed)")
    args = ap.parse_args()
    mlir_opt = shutil.which("mlir-opt-22")
    if mlir_opt is None:
        print("mlir-opt-22 not found: apt-get install mlir-22-tools", file=sys.stderr)
        return 2
    # An installed wheel has its bytecode compiled by pip; an editable checkout (and any
    # machine with PYTHONDONTWRITEBYTECODE set) would compile the sources on every run.
    where = "import gpu_async_lsp, os; print(os.path.dirname(gpu_async_lsp.__file__))"
    package = subprocess.run([args.python, "-c", where], capture_output=True, text=True,
                             check=False)
    if package.returncode != 0:
        print(f"{args.python} cannot import gpu_async_lsp: {package.stderr.strip()}",
              file=sys.stderr)
        return 2
    subprocess.run([args.python, "-m", "compileall", "-q", package.stdout.strip()], check=True)
    ours_cmd = [args.python, "-m", "gpu_async_lsp", "check", "--fix", "--jobs", str(os.cpu_count())]
    print(f"ours: {describe(args.python)}")
    print(f"{'kind':>5} {'lines':>7} {'ours s':>8} {'mlir-opt s':>10} {'ratio':>6} {'ours MB':>8} "
          f"{'mlir-opt MB':>11}")
    runs = [(kind.strip(), int(s)) for kind in args.kind.split(",") for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        for kind, size in runs:
            source = generate(size) if kind == "host" else generate_wide(size)
            # Real IR is split like -split-input-file's input: mlir-opt reads it so too.
            split = ["-split-input-file"] if kind == "wide" else []
            src = Path(tmp) / f"host{size}.mlir"
            src.write_text(source)
            ours, theirs, ours_mem, theirs_mem = [], [], [], []
            for _ in range(args.repeat):
                work = Path(tmp) / f"work{size}.mlir"
                work.write_text(source)
                w, m, code = run([*ours_cmd, str(work)])
                if code not in (0, 1):
                    print(f"gpu-async-lsp failed with exit {code}", file=sys.stderr)
                    return 1
                ours.append(w)
                ours_mem.append(m)
                w, m, code = run([mlir_opt, *split, PIPELINE, str(src), "-o", os.devnull])
                if code != 0 and kind == "host":  # real IR holds chunks the pass fails on
                    print(f"mlir-opt-22 failed with exit {code}", file=sys.stderr)
                    return 1
                theirs.append(w)
                theirs_mem.append(m)
            o, t = statistics.median(ours), statistics.median(theirs)
            print(f"{kind:>5} {size:>7} {o:>8.3f} {t:>10.3f} {o / t:>6.2f} {max(ours_mem):>8.0f} "
                  f"{max(theirs_mem):>11.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
