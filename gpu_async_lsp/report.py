"""CLI layer: how `check` reports what it found.

Findings as text (colored on a terminal), JSON, GitHub workflow commands or SARIF 2.1.0; the
statistics (`--statistics`), the functions `--fix` rewrote (`--show-fixes`) and the summary
line. It takes `FileResult`s, plain data as the worker processes return them, and checks
nothing itself; `cli.py` runs the command and calls it. What each code means comes from the
registry (`async_region.findings.RULES`), the JSON `url` and SARIF `helpUri` from its page,
`docs/codes.md`, shipped inside the package.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, NamedTuple

from gpu_async_lsp import __version__, regex_cache
from gpu_async_lsp.async_region.findings import CODES, CODES_PAGE, RULE, RULES, Rule, Severity
from gpu_async_lsp.async_region.suppression import QUICK_FIXABLE, SUPPRESSIBLE
from gpu_async_lsp.text import LineIndex

if TYPE_CHECKING:
    from pathlib import Path

PROG = "gpu-async-lsp"
OUTPUT_FORMATS = ("text", "json", "github", "sarif")
STATISTICS_FORMATS = ("text", "json")  # as ruff's --statistics: no SARIF or GitHub form
COLOR_CHOICES = ("auto", "always", "never")

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning",
               Severity.INFORMATION: "note", Severity.HINT: "note"}
GITHUB_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning",
                  Severity.INFORMATION: "notice"}  # hints are not annotated

# SGR codes, as compilers color their diagnostics (clang, rustc, ruff).
BOLD, RESET = "\x1b[1m", "\x1b[0m"
SEVERITY_COLOR = {"error": "\x1b[1;31m", "warning": "\x1b[1;33m", "information": "\x1b[1;34m",
                  "hint": "\x1b[1;36m", "note": "\x1b[1m"}
CODE_COLOR = "\x1b[35m"
FIXABLE_MARK = "\x1b[36m*\x1b[0m"


class FileResult:
    """What checking one file produced; only builtin types, so it pickles cheaply. (A plain
    class, as `check`'s other classes: no dataclass is made at its start, ~16 ms with the
    import of `dataclasses`.)"""

    display: str
    # Each finding: {"code", "severity" (int), "message", "start": (line, col), "end": (line,
    # col), "related": [(line, col, end_line, end_col, message), ...], "fix": None or
    # (title, [(line, col, end_line, end_col, new_text), ...])}; 1-based, code points. A fix
    # is what `--fix` would change for the finding, in the text as it was read.
    findings: list[dict]
    error: str | None  # an I/O or internal error line, already worded
    changed: bool  # --fix rewrote it (or --diff would)
    diff: str
    output: bytes | None  # for stdin with --fix: the whole buffer to write out
    # (function, line) of each function --fix rewrote (or would rewrite), the line in the
    # text the findings refer to (the fixed text with --fix or --diff)
    rewritten: list[tuple[str, int]]

    def __init__(self, display: str, findings: list[dict] | None = None,
                 error: str | None = None, changed: bool = False, diff: str = "",
                 output: bytes | None = None, rewritten: list[tuple[str, int]] | None = None):
        self.display = display
        self.findings = [] if findings is None else findings
        self.error = error
        self.changed = changed
        self.diff = diff
        self.output = output
        self.rewritten = [] if rewritten is None else rewritten

    def __eq__(self, other):
        if type(other) is not FileResult:
            return NotImplemented
        return self.__dict__ == other.__dict__

    __hash__ = None

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"FileResult({fields})"

    @property
    def error_count(self) -> int:
        return sum(1 for f in self.findings if f["severity"] == Severity.ERROR)


class ReportOptions(NamedTuple):
    output_format: str = "text"
    quiet: bool = False  # no summary, notes or progress: findings and errors only
    statistics: bool = False  # counts per code instead of the findings
    show_fixes: bool = False  # list the functions --fix rewrote (or would)
    color: bool = False  # text output only
    fix: bool = False
    diff: bool = False


def fix_title(function: str, rewritten: bool = True) -> str:
    """The name of a function's fix, as the server's code action calls it (`rewritten`: the
    async rewrite; else the edits that make its async ops lower as written)."""
    if not rewritten:
        return f"Make GPU ops in {function} lower with LLVM 22"
    return f"Make GPU ops in {function} asynchronous"


def finding_dicts(index: LineIndex, findings, fixes: dict | None = None) -> list[dict]:
    """The findings as FileResult stores them; `fixes`: a finding -> (its function, the edits
    --fix would make for it, whether they are its rewrite), offsets in `index`'s text."""
    out = []
    fixes = fixes or {}
    for f in findings:
        related = []
        for r in f.related:
            line, col = index.line_col_1based(r.start)
            end_line, end_col = index.line_col_1based(r.end)
            related.append((line, col, end_line, end_col, r.message))
        fix = fixes.get(f)
        if fix is not None:
            function, edits, rewritten = fix
            fix = (fix_title(function, rewritten),
                   [(*index.line_col_1based(e.start), *index.line_col_1based(e.end), e.new_text)
                    for e in edits])
        out.append({
            "code": f.code,
            "severity": int(f.severity),
            "message": f.message,
            "start": index.line_col_1based(f.start),
            "end": index.line_col_1based(f.end),
            "related": related,
            "fix": fix,
        })
    return out


_LINE = regex_cache.compile(r"[^\n]*\n|[^\n]+\Z")


def unified_diff(before: str, after: str, display: str) -> str:
    """`diff -u` of two texts, lines split at "\\n" only (a CR stays part of its line)."""
    out = []
    import difflib

    for line in difflib.unified_diff(_LINE.findall(before), _LINE.findall(after),
                                     f"a/{display}", f"b/{display}"):
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


# -- the docs page --------------------------------------------------------------------------

@functools.cache
def codes_page() -> Path | None:
    """docs/codes.md: inside the installed package (the wheel ships it), else in the source
    checkout this package runs from; None if neither has it."""
    from pathlib import Path  # here: pathlib and urllib are 8 ms of every start

    here = Path(__file__).resolve().parent
    for candidate in (here / CODES_PAGE, here.parent / CODES_PAGE):
        if candidate.is_file():
            return candidate
    return None


def docs_url(code: str) -> str | None:
    """The absolute URI of the code's section of docs/codes.md (a `file:` URI: the project
    has no web site; SARIF's `helpUri` must be absolute)."""
    page = codes_page()
    return None if page is None else f"{page.as_uri()}#{code}"


def rule_markdown(rule: Rule) -> str:
    """The body of a code's section of docs/codes.md (and its SARIF `help`)."""
    facts = (f"Default severity: **{rule.severity.label}**. "
             f"Blocks the rewrite of its function: **{'yes' if rule.blocks else 'no'}**. "
             f"Fixed by `check --fix`: **{'yes' if rule.fixable else 'no'}**.")
    keep = ""
    if rule.code in SUPPRESSIBLE:
        quick_fix = (f" (the server's quick fix `Ignore {rule.code} here` adds it)"
                     if rule.code in QUICK_FIXABLE else "")
        keep = ("\n\nTo keep it as written: `// gpu-async-lsp: ignore[" + rule.code + "]` at "
                "the end of the op's first line or alone on the line above it" + quick_fix
                + ", or, for a whole "
                "repository, `ignore = [\"" + rule.code + "\"]` in its configuration "
                "(`check --ignore " + rule.code + "`). Hiding a finding changes nothing else"
                + (": its function is still not rewritten." if rule.blocks else "."))
    return (f"{rule.summary}\n\n{facts}\n\nMessage: `{rule.message}`\n\n{rule.meaning}\n\n"
            f"Example:\n\n```mlir\n{rule.example}```\n\nHow to resolve it: {rule.resolve}"
            f"{keep}\n")


# -- colors -------------------------------------------------------------------------------------

def use_color(choice: str, stream, environ=os.environ) -> bool:
    """--color: `always`, `never`, or `auto`: NO_COLOR (set and not empty) turns colors off,
    then FORCE_COLOR (set and not empty) on, then only a terminal other than TERM=dumb gets
    them (no-color.org; the order CPython 3.13 follows for its own colors)."""
    if choice != "auto":
        return choice == "always"
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR"):
        return True
    return isatty(stream) and environ.get("TERM") != "dumb"


def _paint(text: str, sgr: str, on: bool) -> str:
    return f"{sgr}{text}{RESET}" if on else text


# -- formats ------------------------------------------------------------------------------------

def _github_escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _github_escape_property(s: str) -> str:
    return _github_escape_data(s).replace(":", "%3A").replace(",", "%2C")


def _sarif_uri(display: str) -> str:
    import urllib.parse

    path = display.replace(os.sep, "/")
    if os.path.isabs(display):
        return "file://" + urllib.parse.quote(path)
    return urllib.parse.quote(path)


def _sarif_region(start, end) -> dict:
    return {"startLine": start[0], "startColumn": start[1],
            "endLine": end[0], "endColumn": end[1]}


def _json_location(line_col) -> dict:
    return {"line": line_col[0], "column": line_col[1]}


def _json_item(display: str, f: dict) -> dict:
    fix = f["fix"]
    return {
        "file": display,
        "code": f["code"],
        "severity": Severity(f["severity"]).label,
        "message": f["message"],
        "location": _json_location(f["start"]),
        "end_location": _json_location(f["end"]),
        "related": [{"message": msg, "location": _json_location((rl, rc)),
                     "end_location": _json_location((el, ec))}
                    for rl, rc, el, ec, msg in f["related"]],
        "fix_available": fix is not None,
        "fix": None if fix is None else {
            "message": fix[0],
            "edits": [{"content": text, "location": _json_location((sl, sc)),
                       "end_location": _json_location((el, ec))}
                      for sl, sc, el, ec, text in fix[1]],
        },
        "url": docs_url(f["code"]),
    }


def _sarif_result(uri: str, f: dict) -> dict:
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
    if f["fix"] is not None:
        title, edits = f["fix"]
        replacements = []
        for sl, sc, el, ec, text in edits:
            replacement = {"deletedRegion": _sarif_region((sl, sc), (el, ec))}
            if text:  # no insertedContent: a deletion
                replacement["insertedContent"] = {"text": text}
            replacements.append(replacement)
        result["fixes"] = [{"description": {"text": title}, "artifactChanges": [
            {"artifactLocation": {"uri": uri}, "replacements": replacements}]}]
    return result


def sarif_rules() -> list[dict]:
    rules = []
    for rule in RULES:
        entry = {
            "id": rule.code,
            "name": "".join(w.capitalize() for w in rule.code.split("-")),
            "shortDescription": {"text": rule.summary},
            "fullDescription": {"text": rule.meaning},
            "help": {"text": f"{rule.meaning}\n\nHow to resolve it: {rule.resolve}",
                     "markdown": rule_markdown(rule)},
            "defaultConfiguration": {"level": SARIF_LEVEL[rule.severity]},
            "properties": {"blocksRewrite": rule.blocks, "fixable": rule.fixable},
        }
        url = docs_url(rule.code)
        if url is not None:
            entry["helpUri"] = url
        rules.append(entry)
    return rules


# -- the reporter -------------------------------------------------------------------------------

class Reporter:
    """Prints results in input order as they arrive; json, sarif and the statistics print
    once, at the end, then the functions rewritten (--show-fixes) and the summary."""

    def __init__(self, options: ReportOptions, stream, err, diff_stream):
        self.options = options
        self.fmt = options.output_format
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

    def note(self, line: str) -> None:
        if not self.options.quiet:
            print(line, file=self.err)

    def add(self, r: FileResult) -> None:
        if r.diff:
            self.diff_stream.write(r.diff)
        if self.options.statistics:
            return
        if self.fmt == "text":
            self._text(r)
        elif self.fmt == "github":
            self._github(r)
        elif self.fmt == "json":
            self.json_items.extend(_json_item(r.display, f) for f in r.findings)
        else:
            uri = _sarif_uri(r.display)
            self.sarif_results.extend(_sarif_result(uri, f) for f in r.findings)

    def _text(self, r: FileResult) -> None:
        on = self.options.color
        path = _paint(r.display, BOLD, on)
        for f in r.findings:
            label = Severity(f["severity"]).label
            line, col = f["start"]
            print(f"{path}:{line}:{col}: {_paint(label, SEVERITY_COLOR[label], on)}: "
                  f"{f['message']} [{_paint(f['code'], CODE_COLOR, on)}]", file=self.out)
            note = _paint("note", SEVERITY_COLOR["note"], on)
            for rl, rc, _el, _ec, msg in f["related"]:
                print(f"{path}:{rl}:{rc}: {note}: {msg}", file=self.out)

    def _github(self, r: FileResult) -> None:
        for f in r.findings:
            command = GITHUB_COMMAND.get(Severity(f["severity"]))
            if command is None:
                continue
            props = ",".join(f"{k}={_github_escape_property(str(v))}" for k, v in (
                ("file", r.display), ("line", f["start"][0]), ("col", f["start"][1]),
                ("endLine", f["end"][0]), ("endColumn", f["end"][1]),
                ("title", f"gpu-async {f['code']}")))
            print(f"::{command} {props}::{_github_escape_data(f['message'])}", file=self.out)

    def finish(self, results: list[FileResult], success: bool) -> None:
        if self.options.statistics:
            self._statistics(results)
        elif self.fmt == "json":
            import json  # here: text output needs none of it

            json.dump(self.json_items, self.out, indent=2, ensure_ascii=False)
            print(file=self.out)
        elif self.fmt == "sarif":
            import json

            json.dump(self.sarif_log(success), self.out, indent=2, ensure_ascii=False)
            print(file=self.out)
        if self.options.show_fixes:
            self._show_fixes(results)
        if not self.options.quiet:
            print(summary(results, self.options), file=self.err)

    def _statistics(self, results: list[FileResult]) -> None:
        """As ruff's --statistics: one line per code found, `count<TAB>code<TAB>summary`,
        the most frequent first; `[*]` marks a code --fix fixes every finding of, `[ ]` the
        others (only when some code is fixable). JSON: a list of {code, summary, count,
        fixable}."""
        import json

        stats = statistics(results)
        if self.fmt == "json":
            json.dump(stats, self.out, indent=2, ensure_ascii=False)
            print(file=self.out)
            return
        if not stats:
            return
        on = self.options.color
        count_width = max(len(str(s["count"])) for s in stats)
        code_width = max(len(s["code"]) for s in stats)
        any_fixable = any(s["fixable"] for s in stats)
        for s in stats:
            mark = ""
            if any_fixable:
                mark = f"[{FIXABLE_MARK if on else '*'}] " if s["fixable"] else "[ ] "
            count = _paint(f"{s['count']:>{count_width}}", BOLD, on)
            code = _paint(f"{s['code']:<{code_width}}", CODE_COLOR, on)
            print(f"{count}\t{code}\t{mark}{s['summary']}", file=self.out)

    def _show_fixes(self, results: list[FileResult]) -> None:
        """`rewrote N functions in M files:` (or `would rewrite`), then `path:line: @f` for
        each; nothing when there is nothing to rewrite (as ruff's fix summary)."""
        rewritten = [(r.display, fn, line) for r in results for fn, line in r.rewritten]
        if not rewritten:
            return
        verb = "rewrote" if self.options.fix and not self.options.diff else "would rewrite"
        files = len({display for display, _, _ in rewritten})
        print(f"{verb} {_count(len(rewritten), 'function')} in {_count(files, 'file')}:",
              file=self.err)
        for display, fn, line in rewritten:
            print(f"  {display}:{line}: {fn}", file=self.err)

    def sarif_log(self, success: bool) -> dict:
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
                    "rules": sarif_rules(),
                }},
                "invocations": [invocation],
                "columnKind": "unicodeCodePoints",
                "results": self.sarif_results,
            }],
        }


def statistics(results: list[FileResult]) -> list[dict]:
    """Findings per code: [{code, summary, count, fixable}], the most frequent first, then in
    the registry's order; `fixable`: --fix would fix every one of them."""
    counts = {code: [0, 0] for code in CODES}
    for r in results:
        for f in r.findings:
            counts[f["code"]][0] += 1
            counts[f["code"]][1] += f["fix"] is not None
    stats = [{"code": code, "summary": RULE[code].summary, "count": n, "fixable": n == fixable}
             for code, (n, fixable) in counts.items() if n]
    stats.sort(key=lambda s: -s["count"])  # stable: the registry's order among equals
    return stats


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def summary(results: list[FileResult], options: ReportOptions) -> str:
    counts = {s: 0 for s in Severity}
    for r in results:
        for f in r.findings:
            counts[Severity(f["severity"])] += 1
    parts = [f"checked {_count(len(results), 'file')}"]
    found = ", ".join(_count(c, s.label) for s, c in counts.items() if c)
    parts.append(found or "no findings")
    changed = sum(1 for r in results if r.changed)
    if changed:
        verb = "would rewrite" if options.diff else "rewrote"
        parts.append(f"{verb} {_count(changed, 'file')}")
    unreadable = sum(1 for r in results if r.error)
    if unreadable:
        parts.append(f"{unreadable} could not be checked")
    return "; ".join(parts)


def isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
