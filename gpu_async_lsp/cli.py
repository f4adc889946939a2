"""CLI layer: the `gpu-async-lsp` command (`check`, `tree`, `serve`).

Sits on top of the analysis and text layers; nothing
imports it. The language server is imported lazily, only by `serve`.

Where output goes:

- stdout carries only the product of the command: the findings in the chosen format, or, when
  stdout carries text instead (`check --fix -` writes the rewritten buffer, `check --diff`
  writes the diff), nothing else: the findings then go to stderr.
- stderr carries the summary line, notes (a directory without `.mlir` files), I/O errors
  (`path: error: ...`), internal errors (`path: internal error: Type: message`) and the
  progress line (only when stderr is a terminal and many files are checked).

Exit status: 0 when no error-severity finding remains (warnings and hints never fail a run),
1 when some remain (or, with `--diff`, when there is a diff), 2 for usage and I/O errors.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import functools
import json
import os
import re
import stat
import sys
import tempfile
import urllib.parse

from gpu_async_lsp import __version__
from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.async_region.rewriter import ORIGINAL, findings_after_fix
from gpu_async_lsp.config import Config, ConfigError, Resolver, reported
from gpu_async_lsp.options import add_arguments, given_arguments
from gpu_async_lsp.parallel import analyze_in_shares
from gpu_async_lsp.server import build_arg_parser as build_serve_parser
from gpu_async_lsp.async_region.findings import CODES, DEFAULT_SEVERITY, Severity
from gpu_async_lsp.syntax import parse_document
from gpu_async_lsp.syntax.parser import gc_paused
from gpu_async_lsp.syntax.tree import format_tree
from gpu_async_lsp.text import LineIndex
from gpu_async_lsp.walk import STDIN, collect_files
from gpu_async_lsp.walk import display_path as _display_path
from gpu_async_lsp.walk import printable as _printable

PROG = "gpu-async-lsp"
OUTPUT_FORMATS = ("text", "json", "github", "sarif")
# The options of `serve`; any of them first on the command line means `serve`
# (VS Code's client appends `--stdio`).
SERVE_OPTIONS = ("--stdio", "--tcp", "--host", "--port", "--log-file", "--log-level")
# Below this many files a progress line is not worth the noise.
PROGRESS_MIN_FILES = 10

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning",
               Severity.INFORMATION: "note", Severity.HINT: "note"}
GITHUB_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning",
                  Severity.INFORMATION: "notice"}  # hints are not annotated
RULE_DESCRIPTIONS = {
    "pre-existing-wait": "A gpu.wait already in the function blocks the gpu-async-region rewrite.",
    "already-async": "An already asynchronous GPU op blocks the gpu-async-region rewrite.",
    "async-op-with-regions": "A GPU async op with regions blocks the gpu-async-region rewrite.",
    "launch-not-outlined": "gpu.launch must be outlined to gpu.launch_func before the rewrite.",
    "unsupported-form": "An op the rewrite cannot edit in place (e.g. generic form).",
    "syntax": "The MLIR text does not parse.",
    "sync-gpu-ops": "GPU ops in this function run synchronously; the rewrite can make them async.",
}


# -- plain data passed back from worker processes ---------------------------------------------

@dataclasses.dataclass
class FileResult:
    """What checking one file produced; only builtin types, so it pickles cheaply."""

    display: str
    # Each finding: {"code", "severity" (int), "message", "start": (line, col), "end": (line,
    # col), "related": [(line, col, end_line, end_col, message), ...]}; 1-based, code points.
    findings: list[dict] = dataclasses.field(default_factory=list)
    error: str | None = None  # an I/O or internal error line, already worded
    changed: bool = False  # --fix rewrote it (or --diff would)
    diff: str = ""
    output: bytes | None = None  # for stdin with --fix: the whole buffer to write out

    @property
    def error_count(self) -> int:
        return sum(1 for f in self.findings if f["severity"] == Severity.ERROR)


@dataclasses.dataclass(frozen=True)
class CheckOptions:
    fix: bool = False
    diff: bool = False
    strict: bool = False
    semantics: str = ORIGINAL
    thread_launch: bool = False
    # (code, severity or None: not reported) of each code, from the file's configuration;
    # empty: the defaults.
    severity: tuple = ()
    # Processes one big buffer may be shared among (files checked in turn only: the workers of
    # a file pool do not fork again).
    buffer_jobs: int = 1


# -- helpers ----------------------------------------------------------------------------------

def _decode(data: bytes) -> tuple[str | None, str | None]:
    """(text, None) or (None, why it is not UTF-8)."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return None, f"not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})"


def _os_error(e: OSError) -> str:
    return e.strerror or type(e).__name__


def _finding_dicts(text: str, findings) -> list[dict]:
    index = LineIndex(text)
    out = []
    for f in findings:
        related = []
        for r in f.related:
            line, col = index.line_col_1based(r.start)
            end_line, end_col = index.line_col_1based(r.end)
            related.append((line, col, end_line, end_col, r.message))
        out.append({
            "code": f.code,
            "severity": int(f.severity),
            "message": f.message,
            "start": index.line_col_1based(f.start),
            "end": index.line_col_1based(f.end),
            "related": related,
        })
    return out


_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")


def unified_diff(before: str, after: str, display: str) -> str:
    """`diff -u` of two texts, lines split at "\\n" only (a CR stays part of its line)."""
    out = []
    for line in difflib.unified_diff(_LINE.findall(before), _LINE.findall(after),
                                     f"a/{display}", f"b/{display}"):
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def write_atomically(path: str, data: bytes) -> None:
    """Replace the file at `path` (following symlinks) by `data`, keeping its mode and owner.

    The new content goes to a temporary file in the same directory, which then replaces the
    old one with `os.replace`, so a reader never sees half a file. No fsync, as formatters
    (ruff, black) do: the rename is what makes the write atomic, and an fsync per file cost
    more than the whole rewrite of a 50k-line file on these disks.
    """
    target = os.path.realpath(path)
    st = os.stat(target)
    directory, base = os.path.split(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{base}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
        with contextlib.suppress(OSError):
            os.chown(tmp, st.st_uid, st.st_gid)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


# -- checking one buffer ----------------------------------------------------------------------

def check_text(text: str, display: str, options: CheckOptions) -> tuple[FileResult, str]:
    """Findings of `text` (of its fixed text with --fix/--diff) and the fixed text.

    A buffer with syntax errors is never rewritten: the fixed text is then the text itself.
    """
    with gc_paused():
        findings, edits, rewritten, syntax_errors = analyze_in_shares(
            text, options.strict, options.buffer_jobs, options.semantics,
            options.thread_launch)
        fixed = text
        if (options.fix or options.diff) and not syntax_errors:
            fixed, findings = findings_after_fix(text, findings, edits, rewritten)
        if options.severity:
            findings = reported(findings, dict(options.severity))
        result = FileResult(display, _finding_dicts(fixed, findings))
    result.changed = fixed != text
    if options.diff and result.changed:
        result.diff = unified_diff(text, fixed, display)
    return result, fixed


def check_file(path: str, display: str, options: CheckOptions) -> FileResult:
    """Check (and with --fix rewrite) one file. Never raises: errors become `result.error`."""
    try:
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            return FileResult(display, error=f"{display}: error: {_os_error(e)}")
        text, why = _decode(data)
        if text is None:
            return FileResult(display, error=f"{display}: error: {why}")
        result, fixed = check_text(text, display, options)
        if options.fix and not options.diff and result.changed:
            try:
                write_atomically(path, fixed.encode("utf-8"))
            except OSError as e:
                result.error = f"{display}: error: cannot write: {_os_error(e)}"
        return result
    except Exception as e:  # any input must end in a message, never a traceback
        return FileResult(display, error=_internal_error(display, e))


def check_stdin(data: bytes, display: str, options: CheckOptions) -> FileResult:
    """Check a buffer read from stdin; with --fix (no --diff) `output` is the whole buffer."""
    echo = options.fix and not options.diff
    try:
        text, why = _decode(data)
        if text is None:
            return FileResult(display, error=f"{display}: error: {why}",
                              output=data if echo else None)
        result, fixed = check_text(text, display, options)
        if echo:
            result.output = fixed.encode("utf-8")
        return result
    except Exception as e:
        return FileResult(display, error=_internal_error(display, e),
                          output=data if echo else None)


def _internal_error(display: str, e: BaseException) -> str:
    return f"{display}: internal error: {type(e).__name__}: {e}"


# -- reporting --------------------------------------------------------------------------------

def _github_escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_escape_property(s: str) -> str:
    return _github_escape_data(s).replace(":", "%3A").replace(",", "%2C")


def _sarif_uri(display: str) -> str:
    path = display.replace(os.sep, "/")
    if os.path.isabs(display):
        return "file://" + urllib.parse.quote(path)
    return urllib.parse.quote(path)


def _sarif_region(start, end) -> dict:
    return {"startLine": start[0], "startColumn": start[1],
            "endLine": end[0], "endColumn": end[1]}


class Reporter:
    """Prints results in input order as they arrive; json and sarif print once, at the end."""

    def __init__(self, fmt: str, stream, err, diff_stream):
        self.fmt = fmt
        self.out = stream
        self.err = err
        self.diff_stream = diff_stream
        self.json_items: list[dict] = []
        self.sarif_results: list[dict] = []
        self.notifications: list[dict] = []

    def error_line(self, line: str) -> None:
        print(line, file=self.err)
        if self.fmt == "sarif":
            self.notifications.append({"level": "error", "message": {"text": line}})

    def add(self, r: FileResult) -> None:
        if self.fmt == "text":
            for f in r.findings:
                label = Severity(f["severity"]).label
                (line, col) = f["start"]
                print(f"{r.display}:{line}:{col}: {label}: {f['message']} [{f['code']}]",
                      file=self.out)
                for rl, rc, _el, _ec, msg in f["related"]:
                    print(f"{r.display}:{rl}:{rc}: note: {msg}", file=self.out)
        elif self.fmt == "github":
            for f in r.findings:
                command = GITHUB_COMMAND.get(Severity(f["severity"]))
                if command is None:
                    continue
                props = ",".join(f"{k}={_github_escape_property(str(v))}" for k, v in (
                    ("file", r.display), ("line", f["start"][0]), ("col", f["start"][1]),
                    ("endLine", f["end"][0]), ("endColumn", f["end"][1]),
                    ("title", f"gpu-async {f['code']}")))
                print(f"::{command} {props}::{_github_escape_data(f['message'])}", file=self.out)
        elif self.fmt == "json":
            for f in r.findings:
                self.json_items.append({
                    "file": r.display,
                    "code": f["code"],
                    "severity": Severity(f["severity"]).label,
                    "message": f["message"],
                    "location": {"line": f["start"][0], "column": f["start"][1]},
                    "end_location": {"line": f["end"][0], "column": f["end"][1]},
                })
        else:
            uri = _sarif_uri(r.display)
            for f in r.findings:
                result = {
                    "ruleId": f["code"],
                    "ruleIndex": CODES.index(f["code"]),
                    "level": SARIF_LEVEL[Severity(f["severity"])],
                    "message": {"text": f["message"]},
                    "locations": [{"physicalLocation": {
                        "artifactLocation": {"uri": uri},
                        "region": _sarif_region(f["start"], f["end"]),
                    }}],
                }
                if f["related"]:
                    result["relatedLocations"] = [
                        {"id": i, "message": {"text": msg}, "physicalLocation": {
                            "artifactLocation": {"uri": uri},
                            "region": _sarif_region((rl, rc), (el, ec)),
                        }}
                        for i, (rl, rc, el, ec, msg) in enumerate(f["related"])
                    ]
                self.sarif_results.append(result)
        if r.diff:
            self.diff_stream.write(r.diff)

    def finish(self, success: bool) -> None:
        if self.fmt == "json":
            json.dump(self.json_items, self.out, indent=2, ensure_ascii=False)
            print(file=self.out)
        elif self.fmt == "sarif":
            json.dump(self.sarif_log(success), self.out, indent=2, ensure_ascii=False)
            print(file=self.out)

    def sarif_log(self, success: bool) -> dict:
        rules = [{
            "id": code,
            "name": "".join(w.capitalize() for w in code.split("-")),
            "shortDescription": {"text": RULE_DESCRIPTIONS[code]},
            "defaultConfiguration": {"level": SARIF_LEVEL[DEFAULT_SEVERITY[code]]},
        } for code in CODES]
        invocation = {"executionSuccessful": success}
        if self.notifications:
            invocation["toolExecutionNotifications"] = self.notifications
        return {
            "$schema": SARIF_SCHEMA,
            "version": "2.1.0",
            "runs": [{
                "tool": {"driver": {
                    "name": PROG,
                    "version": __version__,
                    "informationUri": "https://mlir.llvm.org/docs/Passes/#-gpu-async-region",
                    "rules": rules,
                }},
                "invocations": [invocation],
                "columnKind": "unicodeCodePoints",
                "results": self.sarif_results,
            }],
        }


# -- check ------------------------------------------------------------------------------------

def _warm_up() -> None:
    """Build the parser once before forking workers, so each worker inherits it."""
    analyze("func.func @f() {\n  return\n}\n")


def _run_sequential(files, displays, options, on_result, progress):
    for i, (f, d, o) in enumerate(zip(files, displays, options, strict=True)):
        on_result(i, check_file(f, d, o))
        progress(i + 1)


def _run_parallel(files, displays, options, jobs, on_result, progress):
    """Check files in worker processes (each with its own options); call on_result(i,
    result) in any order."""
    from concurrent.futures import ProcessPoolExecutor, as_completed  # only for many files

    _warm_up()
    try:
        pool = ProcessPoolExecutor(max_workers=min(jobs, len(files)))
    except (OSError, NotImplementedError):  # no working multiprocessing here: check in turn
        _run_sequential(files, displays, options, on_result, progress)
        return
    with pool:
        futures = {pool.submit(check_file, f, d, o): i
                   for i, (f, d, o) in enumerate(zip(files, displays, options, strict=True))}
        for done, fut in enumerate(as_completed(futures), 1):
            i = futures[fut]
            try:
                result = fut.result()
            except Exception as e:  # a worker died or could not pickle its result
                result = FileResult(displays[i], error=_internal_error(displays[i], e))
            on_result(i, result)
            progress(done)


def run_check(args, stdin, stdout, stderr) -> int:
    options = CheckOptions(fix=args.fix, diff=args.diff)
    paths = args.paths or ([STDIN] if args.stdin_filename else ["."])
    if STDIN in paths and len(paths) > 1:
        print(f"{PROG} check: error: '-' (stdin) cannot be combined with other paths",
              file=stderr)
        return 2
    try:  # each file's configuration, before anything is checked
        resolver = Resolver(config_file=args.config, isolated=args.isolated,
                            overrides=given_arguments(args),
                            extend_exclude=tuple(args.extend_exclude or ()))
        if paths == [STDIN]:
            options = _configured(options, resolver.config_for(args.stdin_filename or STDIN))
        else:
            found = collect_files(paths, respect_gitignore=args.respect_gitignore,
                                  exclusions=resolver.exclusions,
                                  force_exclude=args.force_exclude)
            each = [_configured(options, resolver.config_for(f)) for f in found[0]]
    except ConfigError as e:
        print(e, file=stderr)
        return 2
    # When stdout carries text (the diff, or the fixed buffer from stdin), findings go to stderr.
    stdout_carries_text = options.diff or (options.fix and paths == [STDIN])
    reporter = Reporter(args.output_format, stderr if stdout_carries_text else stdout, stderr,
                        diff_stream=stdout)
    if paths == [STDIN]:
        display = _printable(args.stdin_filename) if args.stdin_filename else STDIN
        try:
            data = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode()
        except OSError as e:
            print(f"{display}: error: cannot read stdin: {_os_error(e)}", file=stderr)
            return 2
        result = check_stdin(data, display, options)
        if result.output is not None:
            _write_bytes(stdout, result.output)
        results = [result]
        if result.error:
            reporter.error_line(result.error)
        reporter.add(result)
        io_failed = bool(result.error)
    else:
        results, io_failed = _check_paths(found, each, args.jobs, reporter, stderr)

    reporter.finish(success=not io_failed)
    _summary(results, options, stderr)
    if io_failed:
        return 2
    errors_left = sum(r.error_count for r in results)
    if errors_left or (options.diff and any(r.changed for r in results)):
        return 1
    return 0


@functools.cache
def _configured(options: CheckOptions, config: Config) -> CheckOptions:
    """`options` with what a file's configuration says."""
    return dataclasses.replace(options, strict=config.strict, semantics=config.semantics,
                               thread_launch=config.thread_launch,
                               severity=tuple(config.severities().items()))


def _check_paths(found, options, jobs, reporter, stderr) -> tuple[list[FileResult], bool]:
    """Check the files found (collect_files), each with its options; report each result in
    input order."""
    files, errors, notes = found
    for line in notes:
        print(line, file=stderr)
    for line in errors:
        reporter.error_line(line)
    io_failed = bool(errors)
    displays = [_display_path(f) for f in files]
    results: list[FileResult] = []
    pending: dict[int, FileResult] = {}
    show_progress = len(files) >= PROGRESS_MIN_FILES and _isatty(stderr)

    def on_result(i: int, result: FileResult) -> None:
        nonlocal io_failed
        pending[i] = result
        while len(results) in pending:
            r = pending.pop(len(results))
            results.append(r)
            if r.error:
                io_failed = True
                if show_progress:
                    stderr.write("\r\x1b[K")
                reporter.error_line(r.error)
            reporter.add(r)

    def progress(done: int) -> None:
        if show_progress:
            stderr.write(f"\rchecked {done}/{len(files)} files")
            stderr.flush()

    if jobs > 1 and len(files) > 1:
        _run_parallel(files, displays, options, jobs, on_result, progress)
    else:
        options = [dataclasses.replace(o, buffer_jobs=jobs) for o in options]
        _run_sequential(files, displays, options, on_result, progress)
    if show_progress:
        stderr.write("\r\x1b[K")
    return results, io_failed


def _summary(results: list[FileResult], options: CheckOptions, stderr) -> None:
    counts = {s: 0 for s in Severity}
    for r in results:
        for f in r.findings:
            counts[Severity(f["severity"])] += 1
    n = len(results)
    parts = [f"checked {n} file{'s' if n != 1 else ''}"]
    found = ", ".join(f"{c} {s.label}{'s' if c != 1 else ''}"
                      for s, c in counts.items() if c)
    parts.append(found or "no findings")
    changed = sum(1 for r in results if r.changed)
    if changed:
        verb = "would rewrite" if options.diff else "rewrote"
        parts.append(f"{verb} {changed} file{'s' if changed != 1 else ''}")
    unreadable = sum(1 for r in results if r.error)
    if unreadable:
        parts.append(f"{unreadable} could not be checked")
    print("; ".join(parts), file=stderr)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _write_bytes(stream, data: bytes) -> None:
    stream.flush()
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:
        stream.write(data.decode("utf-8", "surrogateescape"))


# -- tree -------------------------------------------------------------------------------------

def run_tree(args, stdin, stdout, stderr) -> int:
    path = args.file
    display = _display_path(path)
    try:
        if path == STDIN:
            data = stdin.buffer.read() if hasattr(stdin, "buffer") else stdin.read().encode()
        else:
            with open(path, "rb") as f:
                data = f.read()
    except OSError as e:
        print(f"{display}: error: {_os_error(e)}", file=stderr)
        return 2
    try:
        text, why = _decode(data)
        if text is None:
            print(f"{display}: error: {why}", file=stderr)
            return 2
        with gc_paused():
            doc = parse_document(text)
        stdout.write(format_tree(doc))
        index = LineIndex(text)
        errors = doc.errors
        for e in errors:
            line, col = index.line_col_1based(e.start)
            print(f"{display}:{line}:{col}: error: {e.message} [syntax]", file=stderr)
        return 1 if errors else 0
    except Exception as e:
        print(_internal_error(display, e), file=stderr)
        return 2


# -- serve ------------------------------------------------------------------------------------

def run_serve(argv: list[str], stderr) -> int:
    """Hand over to the language server: `gpu_async_lsp.server.main(argv)`."""
    from gpu_async_lsp import server

    return server.main(argv)


# -- argument parsing -------------------------------------------------------------------------

def _jobs(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="MLIR's gpu-async-region rewrite, applied to .mlir source text: a language "
                    "server (the default) and a checker for CI.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{check,tree,serve}")

    check = sub.add_parser(
        "check", help="report what blocks the rewrite; with --fix apply it",
        description="Check .mlir files (directories are searched recursively; '-' reads "
                    "stdin). Findings go to stdout, the summary and errors to stderr. "
                    "Exit status: 0 no error remains, 1 errors remain (or --diff has a diff), "
                    "2 usage or I/O error.")
    check.add_argument("paths", nargs="*", metavar="PATH",
                       help="files, directories or '-' (default: '.', or stdin with "
                            "--stdin-filename)")
    check.add_argument("--fix", action="store_true",
                       help="rewrite every function that can be rewritten, in place (on stdin: "
                            "write the whole buffer to stdout, findings to stderr)")
    check.add_argument("--diff", action="store_true",
                       help="print the unified diff --fix would apply (to stdout, findings to "
                            "stderr) and write nothing; exit 1 if there is a diff")
    add_arguments(check)
    configs = check.add_mutually_exclusive_group()
    configs.add_argument("--config", metavar="PATH",
                         help="read the options of every file from this file (a "
                              "pyproject.toml's [tool.gpu-async-lsp] table) instead of "
                              "finding each file's own")
    configs.add_argument("--isolated", action="store_true",
                         help="ignore every configuration file")
    check.add_argument("--respect-gitignore", action=argparse.BooleanOptionalAction,
                       default=True,
                       help="skip what .gitignore and .ignore files exclude when walking "
                            "directories (default); --no-respect-gitignore walks everything")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply the exclude patterns to the files named too (as pre-commit "
                            "names every file)")
    check.add_argument("--output-format", choices=OUTPUT_FORMATS, default="text",
                       help="text (default), json, github (workflow commands; hints are "
                            "omitted) or sarif (2.1.0)")
    check.add_argument("--stdin-filename", metavar="NAME",
                       help="the name to report for the buffer read from stdin")
    check.add_argument("--jobs", "-j", type=_jobs, default=os.cpu_count() or 1, metavar="N",
                       help="files checked in parallel (default: all cores)")

    tree = sub.add_parser("tree", help="print the op tree as the parser sees it",
                          description="One op per line, two spaces per nesting level; syntax "
                                      "errors to stderr (exit 1).")
    tree.add_argument("file", metavar="FILE", help="a .mlir file or '-' for stdin")

    sub.add_parser("serve", parents=[build_serve_parser(add_help=False)],
                   help="run the language server (the default)",
                   description="Serve LSP over stdio (or TCP).")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0].split("=", 1)[0] in SERVE_OPTIONS:
        argv = ["serve", *argv]
    stdin, stdout, stderr = sys.stdin, sys.stdout, sys.stderr
    try:
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as e:  # --help, --version, usage errors
            return e.code if isinstance(e.code, int) else int(e.code is not None) * 2
        if args.command == "serve":
            return run_serve(argv[1:], stderr)
        try:
            if args.command == "check":
                return run_check(args, stdin, stdout, stderr)
            return run_tree(args, stdin, stdout, stderr)
        except (BrokenPipeError, KeyboardInterrupt):
            raise
        except Exception as e:  # a bug outside one file's processing: still no traceback
            print(f"{PROG}: internal error: {type(e).__name__}: {e}", file=stderr)
            return 2
    except BrokenPipeError:
        # `check ... | head`: the reader left; say nothing more (Python docs, "SIGPIPE").
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stdout.fileno())
        return 1
    except KeyboardInterrupt:
        return 130


def entry() -> None:
    """The `gpu-async-lsp` command: `main`, then exit without tearing the heap down.

    A 50k-line file leaves millions of IR objects; freeing them one by one at interpreter
    exit took longer than writing the fixed file (0.8 s of 2.7 s). Output is flushed first;
    the language server (a long-lived process) exits normally.
    """
    code = main()
    if sys.argv[1:2] in (["check"], ["tree"]):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    sys.exit(code)
