"""Lower MLIR GPU programs to executables and run them on a CUDA driver, real or fake.

Each program is taken in up to three forms: `written` (as it is), `rewritten` (what
`gpu-async-lsp check --fix` writes) and `reference` (what `mlir-opt-22`'s own
`gpu-async-region` pass makes of it). Each form is lowered with LLVM 22's
`gpu-lower-to-nvvm-pipeline` (kernels become PTX text the driver compiles), translated to LLVM
IR, compiled with `llc-22` and linked with `cc` against runtime/mgpu_runtime.c and MLIR's runner
utilities, then run: on the fake driver (fake/fake_cuda.c, which keeps each stream's work until
it is synchronized and reports misuse) or on the real one (`libcuda.so.1`).

The rewritten form must lower, run to exit status 0 with no `fake-cuda:` report, and print what
the other forms print where they ran. A written or reference form that does not lower is an
outcome, reported: LLVM 22's `gpu-to-llvm` leaves synchronous memory ops in the IR, silently,
and `mlir-translate` fails on them.

    python -m benchmarks.gpu.harness                      # fake driver, table
    python -m benchmarks.gpu.harness --driver cuda --time 5 --json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PROGRAMS = HERE / "programs"
# LLVM's CUDA integration tests, read where they lie at run time and never copied here.
DEFAULT_CORPUS = (ROOT.parent / "shared" / "corpus" / "upstream" / "mlir" / "test"
                  / "Integration" / "GPU" / "CUDA")

# The pass refuses an inline gpu.launch: the kernels are outlined first, as LLVM's CUDA tests
# do before it (outlining changes nothing else, and the lowering outlines the other forms).
REFERENCE_PASS = "--pass-pipeline=builtin.module(gpu-kernel-outlining,func.func(gpu-async-region))"
# The fake driver's exit status when it reported something (fake/fake_cuda.c): main finished.
FAKE_VIOLATION_STATUS = 3
TOOL_TIMEOUT_S = 120

# A finding of `check` that calls for a flag, for programs without a `// harness:` header.
FLAGS_BY_CODE = {
    "launch-not-outlined": ("--thread-launch",),
    "pre-existing-wait": ("--semantics", "llvm22"),
    "already-async": ("--semantics", "llvm22"),
}
HEADER = re.compile(r"^// harness:(.*)$", re.M)
ENTRY_POINT = re.compile(r"\bfunc\.func @main\(\)\s*\{")
# Ops that gpu-to-llvm must have converted; gpu.binary and gpu.launch_func are translated.
LEFT_GPU_OP = re.compile(r"^\s*(?:%[^=]*=\s*)?\"?gpu\.(?!binary\b|launch_func\b|module\b)(\w+)",
                         re.M)
# printMemref* prints the buffer's address: it differs between forms and runs.
ADDRESS = re.compile(r"base@ = 0x[0-9a-f]+")


class LoweringError(Exception):
    """A form that does not lower; its message is the first line of the error."""


@dataclass
class Program:
    name: str
    origin: str  # "own" (programs/) or "corpus"
    path: Path
    text: str
    flags: tuple[str, ...] | None  # None: read from check's findings


@dataclass
class Form:
    name: str
    lowered: bool = False
    error: str | None = None
    status: int | None = None  # the exit status of the first run
    stdout: str = ""
    reports: list[str] = field(default_factory=list)
    times_ms: list[float] = field(default_factory=list)
    stderr_tail: str = ""
    executable: str | None = None

    def completed(self) -> bool:
        """Main ran to its end: exit 0, or the fake driver's status for its reports."""
        return self.status in (0, FAKE_VIOLATION_STATUS)


@dataclass
class Result:
    program: str
    origin: str
    flags: list[str]
    verdict: str = "ok"  # ok, fail, skipped
    reasons: list[str] = field(default_factory=list)  # why it failed or was skipped
    notes: list[str] = field(default_factory=list)  # what the written program does itself
    forms: dict[str, Form] = field(default_factory=dict)


@dataclass
class Tools:
    mlir_opt: str
    mlir_translate: str
    llc: str
    objcopy: str
    cc: str
    llvm_lib: Path

    @staticmethod
    def find() -> Tools:
        """The LLVM 22 tools and cc on PATH; SystemExit naming what is missing."""
        names = ["mlir-opt-22", "mlir-translate-22", "llc-22", "llvm-objcopy-22", "cc"]
        paths = {name: shutil.which(name) for name in names}
        missing = [name for name, path in paths.items() if path is None]
        if missing:
            raise SystemExit(f"harness: not found on PATH: {', '.join(missing)} "
                             "(apt-get install mlir-22-tools llvm-22 gcc)")
        # /usr/bin/mlir-opt-22 links to /usr/lib/llvm-22/bin/mlir-opt: the runner utils are
        # in that tree's lib.
        llvm_lib = Path(paths["mlir-opt-22"]).resolve().parents[1] / "lib"
        return Tools(*(paths[name] for name in names), llvm_lib)


@dataclass
class Libraries:
    fake_driver: Path
    runtime: Path
    entry: Path


def run_tool(argv: list[str], stdin: str | None = None,
             cwd: Path | None = None) -> subprocess.CompletedProcess:
    """Runs a tool; in the form's folder when `cwd` is given, so that its messages name
    `input.mlir`, not a temporary path."""
    return subprocess.run(argv, input=stdin, capture_output=True, text=True, cwd=cwd,
                          timeout=TOOL_TIMEOUT_S, check=False)


def first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0] if lines else "(no message)"


def build_libraries(tools: Tools, build: Path) -> Libraries:
    """The fake driver and the runtime as shared libraries, and the entry point's object."""
    libs = Libraries(build / "libfake_cuda.so", build / "libmgpu_runtime.so", build / "entry.o")
    commands = [
        [tools.cc, "-O2", "-shared", "-fPIC", "-o", str(libs.fake_driver),
         str(HERE / "fake" / "fake_cuda.c"), "-lpthread"],
        [tools.cc, "-O2", "-shared", "-fPIC", "-o", str(libs.runtime),
         str(HERE / "runtime" / "mgpu_runtime.c"), "-ldl", "-lpthread"],
        [tools.cc, "-O2", "-c", "-o", str(libs.entry), str(HERE / "runtime" / "entry.c")],
    ]
    for argv in commands:
        proc = run_tool(argv)
        if proc.returncode != 0:
            raise SystemExit(f"harness: {' '.join(argv)} failed:\n{proc.stderr}")
    return libs


# ---- programs ----

def header_flags(text: str) -> tuple[str, ...] | None:
    match = HEADER.search(text)
    return tuple(match.group(1).split()) if match else None


def own_programs() -> list[Program]:
    return [Program(p.stem, "own", p, p.read_text(encoding="utf-8"),
                    header_flags(p.read_text(encoding="utf-8")))
            for p in sorted(PROGRAMS.glob("*.mlir"))]


def corpus_programs(folder: Path) -> list[Program]:
    """LLVM's CUDA tests as they are: their RUN and CHECK lines are comments to every tool."""
    programs = []
    for path in sorted(folder.glob("*.mlir")):
        text = path.read_text(encoding="utf-8")
        programs.append(Program(f"{folder.name.lower()}/{path.stem}", "corpus", path, text,
                                header_flags(text)))
    return programs


# ---- the three forms ----

def check_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "gpu_async_lsp", "check", *args, "-"]


def flags_from_findings(text: str) -> tuple[str, ...]:
    """The flags the findings of a plain `check` ask for (launch-not-outlined: thread the
    launch; a pre-existing wait or async op: LLVM 22's semantics)."""
    proc = run_tool(check_command("--output-format", "json"), text)
    if proc.returncode not in (0, 1):
        return ()
    flags: list[str] = []
    for finding in json.loads(proc.stdout or "[]"):
        for flag in FLAGS_BY_CODE.get(finding["code"], ()):
            if flag not in flags:
                flags.append(flag)
    return tuple(flags)


def rewritten(text: str, flags: tuple[str, ...]) -> str:
    """`check --fix` on stdin writes the whole fixed buffer to stdout; exit 1 means findings
    remain, which is not a failure of the fix."""
    proc = run_tool(check_command("--fix", *flags), text)
    if proc.returncode not in (0, 1):
        raise LoweringError(f"check --fix failed: {first_line(proc.stderr)}")
    return proc.stdout


def reference(tools: Tools, text: str) -> str:
    proc = run_tool([tools.mlir_opt, REFERENCE_PASS, "-"], text)
    if proc.returncode != 0:
        raise LoweringError(f"gpu-async-region fails: {first_line(proc.stderr)}")
    return proc.stdout


# ---- lowering ----

def nvvm_pipeline(chip: str, ptx: str) -> str:
    """LLVM 22's pipeline, emitting PTX text (`isa`): no ptxas needed here; the driver compiles
    it when the module is loaded."""
    return f"-gpu-lower-to-nvvm-pipeline=cubin-format=isa cubin-chip={chip} cubin-features=+ptx{ptx}"


def lower_to_llvm_dialect(tools: Tools, work: Path, pipeline: str) -> None:
    """input.mlir to lowered.mlir, in which no GPU op that needs converting may be left."""
    proc = run_tool([tools.mlir_opt, "input.mlir", pipeline, "-o", "lowered.mlir"], cwd=work)
    if proc.returncode != 0:
        raise LoweringError(f"mlir-opt: {first_line(proc.stderr)}")
    left = LEFT_GPU_OP.search((work / "lowered.mlir").read_text(encoding="utf-8"))
    if left:
        raise LoweringError(f"gpu-to-llvm left 'gpu.{left.group(1)}' in the IR: "
                            f"{left.group(0).strip()}")


def compile_object(tools: Tools, work: Path) -> Path:
    """lowered.mlir to LLVM IR, then an object whose `main` is renamed for runtime/entry.c."""
    steps = [
        ("mlir-translate", [tools.mlir_translate, "--mlir-to-llvmir", "lowered.mlir",
                            "-o", "program.ll"]),
        ("llc", [tools.llc, "-O2", "-filetype=obj", "-relocation-model=pic", "program.ll",
                 "-o", "program.o"]),
    ]
    for what, argv in steps:
        proc = run_tool(argv, cwd=work)
        if proc.returncode != 0:
            raise LoweringError(f"{what}: {first_line(proc.stderr)}")
    ll = (work / "program.ll").read_text(encoding="utf-8")
    if not re.search(r"^define void @main\(\)", ll, re.M):
        raise LoweringError("no `func.func @main()` without results to run")
    proc = run_tool([tools.objcopy, "--redefine-sym=main=_mlir_main", "program.o"], cwd=work)
    if proc.returncode != 0:
        raise LoweringError(f"llvm-objcopy: {first_line(proc.stderr)}")
    return work / "program.o"


def link(tools: Tools, libs: Libraries, obj: Path, exe: Path) -> None:
    lib_dirs = [libs.runtime.parent, tools.llvm_lib]
    argv = [tools.cc, "-o", str(exe), str(obj), str(libs.entry),
            *(f"-L{d}" for d in lib_dirs), "-lmgpu_runtime", "-lmlir_runner_utils",
            "-lmlir_c_runner_utils", *(f"-Wl,-rpath,{d}" for d in lib_dirs),
            "-ldl", "-lpthread", "-lm"]
    proc = run_tool(argv)
    if proc.returncode != 0:
        raise LoweringError(f"cc: {first_line(proc.stderr)}")


def lower(tools: Tools, libs: Libraries, text: str, work: Path, pipeline: str) -> Path:
    """An executable of `text`; LoweringError where some step fails."""
    work.mkdir(parents=True, exist_ok=True)
    (work / "input.mlir").write_text(text, encoding="utf-8")
    lower_to_llvm_dialect(tools, work, pipeline)
    exe = work / "program"
    link(tools, libs, compile_object(tools, work), exe)
    return exe


def form_texts(tools: Tools, program: Program,
               flags: tuple[str, ...]) -> dict[str, str | LoweringError]:
    """Each form's text, or the error that keeps it from being made."""
    texts: dict[str, str | LoweringError] = {"written": program.text}
    for name, make in (("rewritten", lambda: rewritten(program.text, flags)),
                       ("reference", lambda: reference(tools, program.text))):
        try:
            texts[name] = make()
        except LoweringError as error:
            texts[name] = error
    return texts


def build_program(tools: Tools, libs: Libraries, program: Program, build: Path,
                  pipeline: str) -> Result:
    """The program's forms, made and lowered (not run)."""
    flags = program.flags if program.flags is not None else flags_from_findings(program.text)
    result = Result(program.name, program.origin, list(flags))
    texts = form_texts(tools, program, flags)
    if texts["rewritten"] == program.text:
        result.notes.append("check --fix changes nothing here")
    for name, text in texts.items():
        form = result.forms[name] = Form(name)
        if isinstance(text, LoweringError):
            form.error = str(text)
            continue
        try:
            work = build / program.name.replace("/", "__") / name
            form.executable = str(lower(tools, libs, text, work, pipeline))
            form.lowered = True
        except LoweringError as error:
            form.error = str(error)
    return result


# ---- running ----

def driver_environment(driver: str, libs: Libraries) -> dict[str, str]:
    """The fake driver's runs also get deterministic host memory: the fake runs no kernel, so a
    buffer only a kernel writes prints what malloc left in it. glibc's perturb tunable fills
    what malloc returns with one byte (its thread cache, which skips that, is turned off)."""
    env = dict(os.environ)
    if driver == "fake":
        env["MGPU_CUDA_DRIVER"] = str(libs.fake_driver)
        env["GLIBC_TUNABLES"] = "glibc.malloc.tcache_count=0:glibc.malloc.perturb=165"
    else:
        env.pop("MGPU_CUDA_DRIVER", None)
    return env


def run_form(form: Form, env: dict[str, str], repeat: int, timeout_s: float) -> None:
    """Runs the executable `repeat` times; the first run's output and status are kept."""
    for i in range(repeat):
        start = time.perf_counter()
        try:
            proc = subprocess.run([form.executable], capture_output=True, text=True, env=env,
                                  timeout=timeout_s, check=False)
            status, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
        except subprocess.TimeoutExpired:
            status, stdout, stderr = None, "", f"timed out after {timeout_s} s"
        form.times_ms.append((time.perf_counter() - start) * 1000)
        if i == 0:
            form.status, form.stdout = status, ADDRESS.sub("base@ = 0x?", stdout)
            form.reports = [line for line in stderr.splitlines()
                            if line.startswith("fake-cuda:")]
            form.stderr_tail = "\n".join(stderr.splitlines()[-8:])
        if status != 0:
            break


# ---- verdicts ----

def own_reports(result: Result) -> list[str]:
    """The fake driver's reports on the rewritten form that the written form, run, did not
    get: those of the written program itself (a leak in LLVM's own tests) are not the
    rewrite's, and are noted instead."""
    new, old = result.forms["rewritten"], result.forms["written"]
    inherited = [r for r in new.reports if old.completed() and r in old.reports]
    if inherited:
        result.notes.append(f"the written form gets these reports too: {'; '.join(inherited)}")
    return [r for r in new.reports if r not in inherited]


def judge(result: Result, driver: str) -> None:
    """ok, fail (the rewritten form broke a rule) or skipped (no form lowers)."""
    forms = result.forms
    new = forms["rewritten"]
    if not any(f.lowered for f in forms.values()):
        result.verdict = "skipped"
        result.reasons.append(f"lowers in no form: {forms['written'].error}")
        return
    added = own_reports(result) if driver == "fake" else []
    finished = new.status == 0 or (new.status == FAKE_VIOLATION_STATUS and not added)
    rules = [
        (new.lowered, f"rewritten form does not lower: {new.error}"),
        (not new.lowered or finished,
         f"rewritten form exits with status {new.status}: {first_line(new.stderr_tail)}"),
        (not added, f"the fake driver reports on the rewritten form: {'; '.join(added[:3])}"),
    ]
    for other in ("written", "reference"):
        if new.completed() and forms[other].completed():
            rules.append((forms[other].stdout == new.stdout,
                          f"rewritten form prints other than the {other} form"))
    result.reasons += [why for ok, why in rules if not ok]
    result.verdict = "fail" if result.reasons else "ok"


# ---- output ----

def output_cell(result: Result, form: Form) -> str:
    """Whether this form printed what the rewritten one did (for it: what all others did)."""
    new = result.forms["rewritten"]
    others = [f for f in result.forms.values() if f is not new and f.completed()]
    if not form.completed() or not new.completed():
        return "-"
    if form is new:
        return "-" if not others else ("same" if all(f.stdout == new.stdout for f in others)
                                       else "differs")
    return "same" if form.stdout == new.stdout else "differs"


def table_rows(results: list[Result]) -> list[list[str]]:
    rows = [["program", "form", "lowered", "ran", "fake reports", "output", "median ms"]]
    for result in results:
        for form in result.forms.values():
            ran = ("-" if not form.lowered else "timed out" if form.status is None
                   else "yes" if form.status == 0 else f"exit {form.status}")
            median = f"{statistics.median(form.times_ms):.1f}" if form.times_ms else "-"
            lowered = "yes" if form.lowered else f"no: {form.error}"[:70]
            rows.append([result.program, form.name, lowered, ran,
                         str(len(form.reports)) if form.lowered else "-",
                         output_cell(result, form), median])
    return rows


def print_table(results: list[Result]) -> None:
    rows = table_rows(results)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    print()
    for result in results:
        flags = f" [{' '.join(result.flags)}]" if result.flags else ""
        reasons = f": {'; '.join(result.reasons)}" if result.reasons else ""
        print(f"{result.program}{flags}: {result.verdict}{reasons}")
        for note in result.notes:
            print(f"  note: {note}")


def as_json(results: list[Result], driver: str) -> str:
    def form_dict(form: Form) -> dict:
        d = asdict(form)
        d.pop("executable")
        return d

    return json.dumps({"driver": driver, "programs": [
        {**{k: v for k, v in asdict(r).items() if k != "forms"},
         "forms": {name: form_dict(f) for name, f in r.forms.items()}} for r in results]},
        indent=2)


# ---- main ----

def default_driver() -> str:
    return "cuda" if Path("/dev/nvidiactl").exists() else "fake"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.gpu.harness",
        description="Lower MLIR GPU programs in three forms (written, rewritten by "
                    "`gpu-async-lsp check --fix`, mlir-opt's gpu-async-region) and run them.")
    parser.add_argument("programs", nargs="*", metavar="NAME",
                        help="run only these programs (sync_roundtrip, cuda/two-modules, ...)")
    parser.add_argument("--driver", choices=["fake", "cuda"], default=default_driver(),
                        help="fake: fake/fake_cuda.c; cuda: libcuda.so.1 (default: cuda where "
                             "/dev/nvidiactl exists, else fake)")
    parser.add_argument("--time", type=int, default=1, metavar="N",
                        help="run each form N times, one at a time, and report the median")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--build-dir", type=Path,
                        help="keep the build here (default: a temporary folder)")
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS,
                        help="LLVM's mlir/test/Integration/GPU/CUDA folder (default: beside the "
                             "repository, when there)")
    parser.add_argument("--no-corpus", action="store_true", help="only programs/*.mlir")
    parser.add_argument("--chip", default="sm_90", help="the PTX target (default: sm_90)")
    parser.add_argument("--ptx", default="80",
                        help="the PTX ISA version, without the dot (default: 80, sm_90's first)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="programs built (and, without --time, run) in parallel")
    parser.add_argument("--run-timeout", type=float, default=60.0, metavar="S",
                        help="seconds one run may take")
    return parser.parse_args(argv)


def selected_programs(args: argparse.Namespace) -> list[Program]:
    programs = own_programs()
    if not args.no_corpus and args.corpus.is_dir():
        programs += corpus_programs(args.corpus)
    if args.programs:
        unknown = set(args.programs) - {p.name for p in programs}
        if unknown:
            raise SystemExit(f"harness: no such program: {', '.join(sorted(unknown))}")
        programs = [p for p in programs if p.name in args.programs]
    return programs


def skip_without_entry_point(program: Program) -> Result | None:
    if ENTRY_POINT.search(program.text):
        return None
    return Result(program.name, program.origin, [], "skipped",
                  ["no `func.func @main()` to run"])


def run_all(args: argparse.Namespace, build: Path) -> list[Result]:
    tools = Tools.find()
    libs = build_libraries(tools, build)
    programs = selected_programs(args)
    pipeline = nvvm_pipeline(args.chip, args.ptx)
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        results = list(pool.map(
            lambda p: skip_without_entry_point(p) or build_program(tools, libs, p, build,
                                                                   pipeline), programs))
    env = driver_environment(args.driver, libs)
    runnable = [f for r in results for f in r.forms.values() if f.lowered]
    # Timed runs go one at a time, so that they do not share the cores (or the GPU).
    workers = 1 if args.time > 1 else max(1, args.jobs)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda f: run_form(f, env, args.time, args.run_timeout), runnable))
    for result in results:
        if result.verdict != "skipped":
            judge(result, args.driver)
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.build_dir is not None:
        args.build_dir.mkdir(parents=True, exist_ok=True)
        results = run_all(args, args.build_dir.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="gpu-harness-") as tmp:
            results = run_all(args, Path(tmp))
    if args.json:
        print(as_json(results, args.driver))
    else:
        print_table(results)
    return 1 if any(r.verdict == "fail" for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
