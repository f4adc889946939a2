"""Configuration layer: the one registry of what a user can set, and how each value is checked.

Each option has up to three names: its key in a configuration file (kebab-case, as ruff's
`pyproject.toml` keys), its client setting in the language server (camelCase, as VS Code's
settings), and its `check` flag. `config.py` (files), `server/settings.py` (client settings)
and `cli.py` (flags) take the names, the defaults and the validation from here; tests check the
README and the VS Code extension's `package.json` against it.

Imports no pygls and no lsprotocol.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NamedTuple

from gpu_async_lsp.async_region.findings import CODES, DEFAULT_SEVERITY, Severity
from gpu_async_lsp.async_region.lowering import LLVM22_LOWERING, LOWERINGS
from gpu_async_lsp.async_region.rewriter import ORIGINAL, SEMANTICS
from gpu_async_lsp.walk import invalid_pattern

BOOL = "bool"
CHOICE = "choice"
CODE_LIST = "codes"
GLOBS = "globs"
SEVERITY_TABLE = "severity"
MILLISECONDS = "milliseconds"

SEVERITY_NAMES = {"error": Severity.ERROR, "warning": Severity.WARNING,
                  "information": Severity.INFORMATION, "info": Severity.INFORMATION,
                  "hint": Severity.HINT}
# The names package.json offers (`info` is accepted too, as an alias).
SEVERITY_CHOICES = ("error", "warning", "information", "hint")
MAX_DEBOUNCE_MS = 10_000


class OptionError(ValueError):
    """A value of the wrong shape; the message says what was expected."""


class Option(NamedTuple):
    key: str | None  # in a configuration file; None: a setting of the server only
    setting: str | None  # the client setting; None: not a server setting
    flag: str | None  # of `check`; None: no flag
    kind: str
    default: object
    doc: str
    choices: tuple[str, ...] = ()
    in_editors: bool = True  # a setting the editors' configurations offer

    @property
    def name(self) -> str:
        """The key, else the setting: how messages name the option."""
        return self.key or self.setting

    @property
    def field(self) -> str:
        """The attribute that holds the value (`thread-launch` -> `thread_launch`)."""
        return self.name.replace("-", "_")

    def parse(self, value) -> object:
        """The value in its normalized form (tuples, Severity), or OptionError."""
        return _PARSERS[self.kind](self, value)


def _bool(option: Option, value) -> bool:
    if not isinstance(value, bool):
        raise OptionError(f"must be true or false, not {value!r}")
    return value


def _choice(option: Option, value) -> str:
    if value not in option.choices:
        raise OptionError(f"must be one of {', '.join(option.choices)}, not {value!r}")
    return value


def _strings(value, what: str) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise OptionError(f"must be a list of {what}, not {value!r}")
    return tuple(dict.fromkeys(value))


def _codes(option: Option, value) -> tuple[str, ...]:
    codes = _strings(value, "finding codes")
    for code in codes:
        if code not in CODES:
            raise OptionError(f"unknown finding code {code!r} (codes: {', '.join(CODES)})")
    return codes


def _globs(option: Option, value) -> tuple[str, ...]:
    patterns = _strings(value, "glob patterns")
    for pattern in patterns:
        why = invalid_pattern(pattern)
        if why is not None:
            raise OptionError(f"invalid pattern {pattern!r}: {why}")
    return patterns


def _severity_table(option: Option, value) -> tuple[tuple[str, Severity], ...]:
    if not isinstance(value, dict):
        raise OptionError("must be a table mapping finding codes to severities, "
                          f"not {value!r}")
    table = {}
    for code, level in value.items():
        if code not in CODES:
            raise OptionError(f"unknown finding code {code!r} (codes: {', '.join(CODES)})")
        if not isinstance(level, str) or level.lower() not in SEVERITY_NAMES:
            raise OptionError(f"severity of {code!r} must be one of "
                              f"{', '.join(SEVERITY_CHOICES)}, not {level!r}")
        table[code] = SEVERITY_NAMES[level.lower()]
    return tuple((code, table[code]) for code in CODES if code in table)


def _milliseconds(option: Option, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) \
            or not 0 <= value <= MAX_DEBOUNCE_MS:
        raise OptionError(f"must be a number of milliseconds (0-{MAX_DEBOUNCE_MS}), "
                          f"not {value!r}")
    return value


_PARSERS = {BOOL: _bool, CHOICE: _choice, CODE_LIST: _codes, GLOBS: _globs,
            SEVERITY_TABLE: _severity_table, MILLISECONDS: _milliseconds}

OPTIONS = (
    Option("semantics", "semantics", "--semantics", CHOICE, ORIGINAL,
           "which pass the rewrite follows: original (the 2020 pass, which refuses "
           "pre-existing gpu.wait and async ops) or llvm22 (LLVM 22's, which threads the token "
           "through them)", SEMANTICS),
    Option("strict", "strict", "--strict", BOOL, False,
           "report blockers in every func.func, as the pass would fail"),
    Option("thread-launch", "threadLaunch", "--thread-launch", BOOL, False,
           "thread the token through inline gpu.launch ops too (their kernel bodies stay as "
           "written) instead of reporting launch-not-outlined"),
    Option("lowering", "lowering", "--lowering", CHOICE, LLVM22_LOWERING,
           "which lowering the not-lowered findings are about: llvm22 (the GPU ops LLVM 22's "
           "gpu-to-llvm leaves unconverted) or none (no such findings)", LOWERINGS),
    Option("select", "select", "--select", CODE_LIST, CODES,
           "the finding codes to report (default: all)"),
    Option("ignore", "ignore", "--ignore", CODE_LIST, (),
           "finding codes not to report (taken from the selected ones)"),
    Option("exclude", None, "--exclude", GLOBS, (),
           "gitignore-style patterns of files and folders a directory walk skips (in a "
           "configuration file: relative to its folder; on the command line: to the current "
           "folder)"),
    Option("severity", "severity", None, SEVERITY_TABLE, (),
           "the severity of a finding code: error, warning, information or hint (only "
           "errors fail a check)"),
    Option(None, "debounce", None, MILLISECONDS, 0,
           "milliseconds to wait after a change before analysing it (for tests and slow "
           "machines)", in_editors=False),
    Option(None, "waitsOnHints", None, BOOL, True,
           "inlay hints explaining code that is asynchronous already"),
)
BY_KEY = {o.key: o for o in OPTIONS if o.key}
BY_SETTING = {o.setting: o for o in OPTIONS if o.setting}
FILE_OPTIONS = tuple(BY_KEY.values())  # the keys of a configuration file


def severities(select, ignore, overrides) -> dict[str, Severity | None]:
    """Each code's severity as reported: ruff's selection (`select`, all by default, less
    `ignore`) and the overrides of the defaults; None: not reported."""
    table = dict(DEFAULT_SEVERITY)
    table.update(overrides)
    chosen = set(select) - set(ignore)
    return {code: (table[code] if code in chosen else None) for code in CODES}


# -- command-line flags -------------------------------------------------------------------------

def _list_argument(option: Option):
    """argparse type of a comma-separated list flag: each item checked as in a file."""
    def parse(text: str) -> tuple[str, ...]:
        try:
            return option.parse([item.strip() for item in text.split(",") if item.strip()])
        except OptionError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return parse


class HelpFormatter(argparse.HelpFormatter):
    """argparse's help formatter, the terminal's width read through `os`: argparse asks
    `shutil`, whose import (with bz2, lzma and fnmatch) was 1.8 ms of every start of `check`,
    for the formatter it makes to check each argument added. Every parser of the command's
    (`cli.build_parser`, the server's) is made with it."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None):
        if width is None:
            width = _terminal_columns() - 2
        super().__init__(prog, indent_increment, max_help_position, width)


def _terminal_columns() -> int:
    """What `shutil.get_terminal_size().columns` says: $COLUMNS, else the width of the
    terminal stdout is, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `check` flags of the registry's options. None is their default, so that
    `given_arguments` tells the flags given (which override a configuration file) apart."""
    for option in OPTIONS:
        if option.flag is None:
            continue
        if option.kind == BOOL:
            parser.add_argument(option.flag, action=argparse.BooleanOptionalAction,
                                default=None, help=option.doc)
        elif option.kind == CHOICE:
            parser.add_argument(option.flag, choices=option.choices, default=None,
                                help=f"{option.doc} (default: {option.default})")
        else:
            metavar = "CODE[,CODE...]" if option.kind == CODE_LIST else "PATTERN[,PATTERN...]"
            parser.add_argument(option.flag, type=_list_argument(option), action="extend",
                                default=None, metavar=metavar, help=option.doc)
    exclude = BY_KEY["exclude"]
    parser.add_argument("--extend-exclude", type=_list_argument(exclude), action="extend",
                        default=None, metavar="PATTERN[,PATTERN...]",
                        help="patterns to skip besides those of the configuration files")


def given_arguments(args: argparse.Namespace) -> dict[str, object]:
    """The options given on the command line, by file key (lists joined)."""
    given = {}
    for option in OPTIONS:
        if option.flag is None:
            continue
        value = getattr(args, option.flag.lstrip("-").replace("-", "_"))
        if value is not None:
            given[option.key] = tuple(dict.fromkeys(value)) if isinstance(value, list) \
                else value
    return given
