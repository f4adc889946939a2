"""CLI layer: the `gpu-async-lsp` command (`check`, `tree`, `serve`).

Sits on top of the analysis and text layers; nothing imports it. How `check` prints what it
found is `report.py`'s. The language server is imported lazily, only by `serve`.

Where output goes:

- stdout carries only the product of the command: the findings in the chosen format (or
  their `--statistics`), or, when stdout carries text instead (`check --fix -` writes the
  rewritten buffer, `check --diff` writes the diff), nothing else: the findings then go to
  stderr.
- stderr carries the summary line, notes (a directory without `.mlir` files), the functions
  `--show-fixes` lists, I/O errors (`path: error: ...`), internal errors (`path: internal
  error: Type: message`) and the progress line (only when stderr is a terminal and many
  files are checked). `--quiet` leaves out the summary, the notes and the progress.

Exit status: 0 when no error-severity finding remains (warnings and hints never fail a run),
1 when some remain (or, with `--diff`, when there is a diff), 2 for usage and I/O errors;
`--exit-zero` turns 1 into 0.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import functools
import os
import stat
import sys
from typing import NamedTuple

from gpu_async_lsp import __version__, arenas, regex_cache
from gpu_async_lsp.async_region import analyze
from gpu_async_lsp.async_region.findings import SYNC_GPU_OPS
from gpu_async_lsp.async_region.lowering import (
    LLVM22_LOWERING,
    LOWERING_CODES,
    NO_LOWERING,
    fixed_by_lowering,
)
from gpu_async_lsp.async_region.rewriter import ORIGINAL, moved_findings
from gpu_async_lsp.async_region.suppression import suppress
from gpu_async_lsp.config import Config, ConfigError, Resolver, reported
from gpu_async_lsp.gcpause import gc_paused
from gpu_async_lsp.options import HelpFormatter, add_arguments, given_arguments
from gpu_async_lsp.parallel import analyze_in_shares, usable_cpus
from gpu_async_lsp.report import (
    COLOR_CHOICES,
    OUTPUT_FORMATS,
    PROG,
    STATISTICS_FORMATS,
    FileResult,
    Reporter,
    ReportOptions,
    finding_dicts,
    isatty,
    unified_diff,
    use_color,
)
from gpu_async_lsp.server import build_arg_parser as build_serve_parser
from gpu_async_lsp.syntax import build_parser_once, format_tree, parse_document
from gpu_async_lsp.text import UTF32, LineIndex, positions_of
from gpu_async_lsp.walk import STDIN, collect_files
from gpu_async_lsp.walk import display_path as _display_path
from gpu_async_lsp.walk import printable as _printable

# The options of `serve`; any of them first on the command line means `serve`
# (VS Code's client appends `--stdio`).
SERVE_OPTIONS = ("--stdio", "--tcp", "--host", "--port", "--log-file", "--log-level")
# The output formats that carry the edits of a fix.
FIX_FORMATS = ("json", "sarif")
# Below this many files a progress line is not worth the noise.
PROGRESS_MIN_FILES = 10

class CheckOptions(NamedTuple):
    fix: bool = False
    diff: bool = False
    strict: bool = False
    semantics: str = ORIGINAL
    thread_launch: bool = False
    # Which lowering the not-lowered findings are about (the command's default; the
    # library's `analyze` reports none unless asked).
    lowering: str = LLVM22_LOWERING
    # (code, severity or None: not reported) of each code, from the file's configuration;
    # empty: the defaults.
    severity: tuple = ()
    # Attach to each fixable finding the edits --fix would make (JSON `fix`, SARIF `fixes`,
    # --statistics' fixable marks); text output shows none of them.
    fix_details: bool = True
    # Processes one big buffer may be shared among (files checked in turn only: the workers of
    # a file pool do not fork again).
    buffer_jobs: int = 1
    # The line of each function the fix rewrites (--show-fixes lists them): counted in the
    # fixed text, 2.6 ms of a 50k-line fix's sequential end for 2,229 functions.
    rewritten_lines: bool = True


# -- helpers ----------------------------------------------------------------------------------

def _decode(data: bytes) -> tuple[str | None, str | None]:
    """(text, None) or (None, why it is not UTF-8)."""
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as e:
        return None, f"not valid UTF-8 (byte 0x{data[e.start]:02x} at offset {e.start})"


def _os_error(e: OSError) -> str:
    return e.strerror or type(e).__name__


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
    fd, tmp = _new_file_beside(directory, base)
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


def _new_file_beside(directory: str, base: str) -> tuple[int, str]:
    """A new file `.base.XXXXXXXX.tmp` in `directory`, created exclusively, readable and
    writable by its owner only (what tempfile.mkstemp makes, without importing tempfile and
    random: 5-8 ms of every --fix)."""
    for _ in range(100):
        tmp = os.path.join(directory, f".{base}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL
                           | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOFOLLOW", 0),
                           0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {base}")


# -- checking one buffer ----------------------------------------------------------------------

def check_text(text: str, display: str, options: CheckOptions) -> tuple[FileResult, str]:
    """Findings of `text` (of its fixed text with --fix/--diff) and the fixed text.

    A buffer with syntax errors is never rewritten: the fixed text is then the text itself.
    Without --fix/--diff, the `sync-gpu-ops` hint of each function the rewrite changes carries
    that function's edits (what --fix would do for it).
    """
    # What a file's check leaves is freed by reference counting (no cycles: tested), frozen
    # so that no collection traverses it on its way out.
    with gc_paused(freeze=True):
        findings, edits, rewritten, syntax_errors = _analyzed(text, options)
        # Comments hide findings of the text as written; --fix only moves what is left.
        findings = suppress(text, findings)
        if syntax_errors:
            rewritten = set()
        hints = [f for f in findings if f.code == SYNC_GPU_OPS and (f.start, f.end) in rewritten]
        lowering = [f for f in findings if f.code in LOWERING_CODES and fixed_by_lowering(f)]
        # Sorted already (each share of a big file sorted its own): --fix applies them,
        # moves the findings and the hints' lines.
        fixed, fixes, moved = text, {}, None
        if (options.fix or options.diff) and not syntax_errors and (rewritten or len(edits)):
            moved = edits.mover()
            fixed = edits.apply(text)
            findings = moved_findings(findings, rewritten, moved)
        elif options.fix_details:
            fixes = _fixes(text, hints, edits.to_list(), sorted(rewritten), lowering)
        if options.severity:  # the configuration's select, ignore and severity
            findings = reported(findings, dict(options.severity))
            if fixes:
                fixes = _same_fixes(fixes, findings)
        # A line index of the fixed text only for what remains to report (after --fix on
        # host code, nothing: 38 ms at 50k lines); the lines of the rewritten functions are
        # counted in one pass.
        index = LineIndex(fixed) if findings else None
        result = FileResult(display, finding_dicts(index, findings, fixes) if findings else [])
        if options.rewritten_lines:
            lines = positions_of(fixed, [moved(f.start) if moved else f.start for f in hints],
                                 UTF32)
            result.rewritten = [(f.function, line + 1) for f, (line, _) in zip(hints, lines)]
        _hold_until_next(findings, edits, moved, hints, lowering)
    result.changed = fixed != text
    if options.diff and result.changed:
        result.diff = unified_diff(text, fixed, display)
    return result, fixed


# What the check of the last file made (its edits, findings): freed when the next file's are
# made, never after the last one (the command ends with os._exit, `entry`). Freed on return
# from check_text, the 800k edits and 22k findings of a 500k-line fix took 35-45 ms before
# the fixed file was written.
_LAST_CHECKED: list = []


def _hold_until_next(*objects) -> None:
    _LAST_CHECKED[:] = objects


def _analyzed(text: str, options: CheckOptions) -> tuple:
    """`analyze_in_shares` with the options. A text with a syntax error is not rewritten:
    its not-lowered findings are then those of the text as written."""
    fixing = options.fix or options.diff
    found = analyze_in_shares(text, options.strict, options.buffer_jobs, options.semantics,
                              options.thread_launch, fix=fixing, lowering=options.lowering)
    if found[3] and fixing and options.lowering != NO_LOWERING:
        as_written = analyze_in_shares(text, options.strict, options.buffer_jobs,
                                       options.semantics, options.thread_launch,
                                       lowering=options.lowering)[0]
        found = (as_written, *found[1:])
    return found


def _same_fixes(fixes: dict, findings) -> dict:
    """`fixes` (finding -> fix) for `findings`, which may carry other severities now."""
    by_place = {(f.code, f.start, f.end): fix for f, fix in fixes.items()}
    return {f: by_place[key] for f in findings
            if (key := (f.code, f.start, f.end)) in by_place}


def _fixes(text: str, hints, edits, anchors: list[tuple[int, int]], lowering) -> dict:
    """Each hint, and each `lowering` finding that `--fix` removes, -> (its function, its
    function's edits, whether they are its rewrite). `edits` and `anchors` (the spans of the names of the functions that
    `--fix` changes) are sorted; the edits of a function lie in its body: after its anchor
    and before the next function's."""
    starts = [a[0] for a in anchors]
    by_anchor: dict[int, list] = {}
    for e in edits:
        i = bisect.bisect_right(starts, e.start) - 1
        if i >= 0:
            by_anchor.setdefault(i, []).append(e)
    out = {}
    rewritten = {(h.start, h.end) for h in hints}
    for f in [*hints, *lowering]:
        i = bisect.bisect_right(starts, f.start) - 1
        if i >= 0 and i in by_anchor and text[anchors[i][0]:anchors[i][1]] == f.function:
            out[f] = (f.function, by_anchor[i], anchors[i] in rewritten)
    return out


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
                result.rewritten = []
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




# -- check ------------------------------------------------------------------------------------

def _warm_up() -> None:
    """Build the parser once before forking workers, so each worker inherits it (of many
    files, some need Lark)."""
    build_parser_once()
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
    options = CheckOptions(fix=args.fix, diff=args.diff,
                           fix_details=args.statistics or args.output_format in FIX_FORMATS,
                           rewritten_lines=args.show_fixes)
    paths = args.paths or ([STDIN] if args.stdin_filename else ["."])
    if STDIN in paths and len(paths) > 1:
        print(f"{PROG} check: error: '-' (stdin) cannot be combined with other paths",
              file=stderr)
        return 2
    if args.statistics and args.output_format not in STATISTICS_FORMATS:
        print(f"{PROG} check: error: --statistics needs --output-format text or json",
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
    findings_stream = stderr if stdout_carries_text else stdout
    report_options = ReportOptions(
        output_format=args.output_format, quiet=args.quiet, statistics=args.statistics,
        show_fixes=args.show_fixes, fix=options.fix, diff=options.diff,
        color=args.output_format == "text" and use_color(args.color, findings_stream))
    reporter = Reporter(report_options, findings_stream, stderr, diff_stream=stdout)
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

    reporter.finish(results, success=not io_failed)
    if io_failed:
        return 2
    errors_left = sum(r.error_count for r in results)
    if errors_left or (options.diff and any(r.changed for r in results)):
        return 0 if args.exit_zero else 1
    return 0


@functools.cache
def _configured(options: CheckOptions, config: Config) -> CheckOptions:
    """`options` with what a file's configuration says."""
    return options._replace(strict=config.strict, semantics=config.semantics,
                               thread_launch=config.thread_launch, lowering=config.lowering,
                               severity=tuple(config.severities().items()))


def _check_paths(found, options, jobs, reporter, stderr) -> tuple[list[FileResult], bool]:
    """Check the files found (collect_files), each with its options; report each result in
    input order."""
    files, errors, notes = found
    for line in notes:
        reporter.note(line)
    for line in errors:
        reporter.error_line(line)
    io_failed = bool(errors)
    displays = [_display_path(f) for f in files]
    results: list[FileResult] = []
    pending: dict[int, FileResult] = {}
    show_progress = (len(files) >= PROGRESS_MIN_FILES and not reporter.options.quiet
                     and isatty(stderr))

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
        options = [o._replace(buffer_jobs=jobs) for o in options]
        _run_sequential(files, displays, options, on_result, progress)
    if show_progress:
        stderr.write("\r\x1b[K")
    return results, io_failed


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

def run_serve(argv: list[str]) -> int:
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
        prog=PROG, formatter_class=HelpFormatter,
        description="MLIR's gpu-async-region rewrite, applied to .mlir source text: a language "
                    "server (the default) and a checker for CI.")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="{check,tree,serve}")

    check = sub.add_parser(
        "check", formatter_class=HelpFormatter,
        help="report what blocks the rewrite; with --fix apply it",
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
                            "stderr) and write nothing, also with --fix (as ruff); exit 1 if "
                            "there is a diff")
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
    check.add_argument("--statistics", action="store_true",
                       help="instead of the findings, count them per code (text or json)")
    check.add_argument("--show-fixes", action="store_true",
                       help="list on stderr the functions --fix rewrote (with --diff, or "
                            "without --fix: would rewrite)")
    check.add_argument("-q", "--quiet", action="store_true",
                       help="print findings and errors only: no summary line, notes or "
                            "progress")
    check.add_argument("--exit-zero", action="store_true",
                       help="exit 0 even when errors remain or --diff has a diff (usage and "
                            "I/O errors still exit 2)")
    check.add_argument("--color", choices=COLOR_CHOICES, default="auto",
                       help="color text output: auto (the default: on a terminal, unless "
                            "NO_COLOR is set; FORCE_COLOR forces it), always or never")
    check.add_argument("--stdin-filename", metavar="NAME",
                       help="the name to report for the buffer read from stdin")
    check.add_argument("--jobs", "-j", type=_jobs, default=usable_cpus(), metavar="N",
                       help="files checked in parallel, and processes sharing a big file "
                            "(default: the CPUs this process may use)")

    tree = sub.add_parser("tree", formatter_class=HelpFormatter,
                          help="print the op tree as the parser sees it",
                          description="One op per line, two spaces per nesting level; syntax "
                                      "errors to stderr (exit 1).")
    tree.add_argument("file", metavar="FILE", help="a .mlir file or '-' for stdin")

    sub.add_parser("serve", parents=[build_serve_parser(add_help=False)],
                   formatter_class=HelpFormatter,
                   help="run the language server (the default)",
                   description="Serve LSP over stdio (or TCP).")
    return parser


def main(argv: list[str] | None = None) -> int:
    arenas.populate_arenas()  # a process of this package's own: see arenas.py
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
            return run_serve(argv[1:])
        regex_cache.save()  # the patterns its imports compiled, for the next start
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
