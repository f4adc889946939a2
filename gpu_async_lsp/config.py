"""Configuration layer: the settings of a file from the configuration files of its repository.

As ruff finds its settings: from the folder of the file upwards, the first folder that has a
configuration decides, and only that one file is read (no merging of several):

- `gpu-async-lsp.toml`, the options at its top level; it wins over a `pyproject.toml` beside it;
- `pyproject.toml` with a `[tool.gpu-async-lsp]` table; a `pyproject.toml` without that table
  is passed over (the search goes on upwards).

Keys are the registry's (options.py). A file is checked strictly: an unknown key, a value of
the wrong type, an unknown finding code or severity is a `ConfigError` naming the file and the
key (`path: error: ...`). `exclude` patterns are relative to the folder of the file that holds
them. Files are read with `tomllib` and cached by their stamp and content; the folders by the file
they resolved to, so a repository walk reads each configuration once.

Used by `check` (cli.py, through `Resolver`) and by the language server (`Finder`); imports no
pygls and no lsprotocol.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from typing import NamedTuple

from gpu_async_lsp.async_region.findings import CODES, Finding, Severity
from gpu_async_lsp.async_region.lowering import LLVM22_LOWERING
from gpu_async_lsp.async_region.rewriter import ORIGINAL
from gpu_async_lsp.options import BY_KEY, BY_SETTING, OptionError, severities
from gpu_async_lsp.walk import Patterns

CONFIG_FILE = "gpu-async-lsp.toml"
PYPROJECT = "pyproject.toml"
TOOL = "gpu-async-lsp"
TABLE = f"[tool.{TOOL}]"
# In one folder, in precedence order.
CONFIG_NAMES = (CONFIG_FILE, PYPROJECT)


class ConfigError(Exception):
    """An invalid configuration file; `str()` is the one line to show (`path: error: ...`)."""

    def __init__(self, path: str, message: str):
        super().__init__(f"{path}: error: {message}")
        self.path = path
        self.message = message


class Config(NamedTuple):
    """The resolved options of a file, and the configuration file they come from (None:
    the defaults). Fields are named as the registry's options (`thread-launch` ->
    `thread_launch`); `severity` holds the overrides only, in code order."""

    path: str | None = None
    semantics: str = ORIGINAL
    strict: bool = False
    thread_launch: bool = False
    lowering: str = LLVM22_LOWERING
    select: tuple[str, ...] = CODES
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    severity: tuple[tuple[str, Severity], ...] = ()

    @property
    def folder(self) -> str | None:
        """Where the file's `exclude` patterns are relative to."""
        return os.path.dirname(self.path) if self.path is not None else None

    @property
    def rules(self) -> tuple[bool, str, bool, str]:
        """What decides the analysis itself: (strict, semantics, thread_launch, lowering)."""
        return self.strict, self.semantics, self.thread_launch, self.lowering

    def with_values(self, values: Mapping[str, object]) -> Config:
        """These options replaced by `values` (by file key, normalized as Option.parse gives
        them); a severity table is merged code by code."""
        changes = {}
        for key, value in values.items():
            if key == "severity":
                merged = dict(self.severity)
                merged.update(value)
                value = tuple((code, merged[code]) for code in CODES if code in merged)
            changes[BY_KEY[key].field] = value
        return self._replace(**changes)

    def severities(self) -> dict[str, Severity | None]:
        """Each code's severity as reported; None: not selected, or ignored."""
        return severities(self.select, self.ignore, self.severity)

    def exclusions(self) -> Patterns | None:
        if not self.exclude or self.folder is None:
            return None
        return Patterns(self.folder, self.exclude)


DEFAULTS = Config()


def reported(findings, table: Mapping[str, Severity | None]) -> list[Finding]:
    """The findings a severity table lets through, each with its severity there."""
    out = []
    for f in findings:
        level = table.get(f.code, f.severity)
        if level is not None:
            out.append(f if level == f.severity else f._replace(severity=level))
    return out


# -- reading one file -------------------------------------------------------------------------

def _stamp(st: os.stat_result) -> tuple:
    return st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev


def _values(path: str, table: dict, where: str) -> dict[str, object]:
    """The options of a table, checked."""
    values = {}
    for key, value in table.items():
        option = BY_KEY.get(key)
        if option is None:
            known = ", ".join(BY_KEY)
            hint = ""
            setting = BY_SETTING.get(key)
            if setting is not None and setting.key is not None and setting.key != key:
                hint = f"; in a file it is {setting.key!r}"
            raise ConfigError(path, f"unknown key {key!r}{where}{hint} (keys: {known})")
        try:
            values[key] = option.parse(value)
        except OptionError as e:
            raise ConfigError(path, f"invalid {key!r}{where}: {e}") from None
    return values


def parse_config(path: str, data: bytes, required: bool = False) -> Config | None:
    """The Config of a file's content; None for a `pyproject.toml` without the table (unless
    `required`). Raises ConfigError."""
    is_pyproject = os.path.basename(path) == PYPROJECT
    if is_pyproject and TOOL.encode() not in data and not required:
        return None  # not ours: not even parsed (a broken unrelated pyproject.toml is fine)
    try:
        import tomllib  # here: its import is 6 ms of every start, most runs read no file

        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise ConfigError(path, f"not valid UTF-8 (byte 0x{data[e.start]:02x} at offset "
                                f"{e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(path, f"invalid TOML: {e}") from None
    where = ""
    if is_pyproject:
        tool = document.get("tool")
        table = tool.get(TOOL) if isinstance(tool, dict) else None
        if table is None:
            if required:
                raise ConfigError(path, f"no {TABLE} table")
            return None
        if not isinstance(table, dict):
            raise ConfigError(path, f"{TABLE} must be a table, not {table!r}")
        where = f" in {TABLE}"
    else:
        table = document
    return DEFAULTS.with_values(_values(path, table, where))._replace(path=path)


def load(path: str) -> Config:
    """A configuration file named by the user (`check --config`): a `pyproject.toml` must
    have the table; any other name holds the options at its top level."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise ConfigError(path, e.strerror or type(e).__name__) from None
    # Errors name the path as given; `exclude` patterns need the folder wherever check runs.
    return parse_config(path, data, required=True)._replace(path=os.path.abspath(path))


# -- finding the file of a folder -------------------------------------------------------------

class Finder:
    """The configuration of each folder, found upwards. Folders are cached by the file they
    resolved to, files by their modification stamp (time, size, inode): a `fresh` lookup
    walks the folders again and reads the files whose stamp changed (`forget` one that
    changed within the stamp's resolution), parsing only a content it has not seen. The same
    content keeps giving the same Config (or the same ConfigError object: the server warns
    once per content)."""

    def __init__(self):
        self._folders: dict[str, str | None] = {}
        self._files: dict[str, tuple[tuple, bytes, Config | ConfigError | None]] = {}

    def find(self, folder: str, fresh: bool = False) -> Config:
        """The configuration that applies in `folder` (DEFAULTS when none does). Raises
        ConfigError for an invalid file."""
        folder = os.path.abspath(folder)
        visited = []
        path = None
        current = folder
        while True:
            if not fresh and current in self._folders:
                path = self._folders[current]
                break
            visited.append(current)
            path = next((c for c in (os.path.join(current, name) for name in CONFIG_NAMES)
                         if self._read(c) is not None), None)
            parent = os.path.dirname(current)
            if path is not None or parent == current:
                break
            current = parent
        for f in visited:
            self._folders[f] = path
        if path is None:
            return DEFAULTS
        result = self._read(path)
        if result is None:  # gone since: look again
            return self.find(folder, fresh=True)
        if isinstance(result, ConfigError):
            raise result
        return result

    def _read(self, path: str) -> Config | ConfigError | None:
        """The file's Config, its error, or None (no such file, or a pyproject.toml without
        our table)."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):  # ValueError: a NUL in a path from a URI
            return None
        if not stat.S_ISREG(st.st_mode):
            return None
        stamp = _stamp(st)
        cached = self._files.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[2]
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            data, result = b"", ConfigError(path, e.strerror or type(e).__name__)
        else:
            if cached is not None and cached[1] == data:
                result = cached[2]
            else:
                try:
                    result = parse_config(path, data)
                except ConfigError as e:
                    result = e
        self._files[path] = (stamp, data, result)
        return result

    def keep(self, folders) -> None:
        """Keep only what the lookups from `folders` (the open documents') go through: the
        server's cache stays bounded by what is open, however many folders a day visits."""
        needed: set[str] = set()
        for folder in folders:
            current = os.path.abspath(folder)
            while current not in needed:
                needed.add(current)
                current = os.path.dirname(current)
        self._folders = {f: p for f, p in self._folders.items() if f in needed}
        self._files = {p: v for p, v in self._files.items() if os.path.dirname(p) in needed}

    def holds(self, path: str) -> bool:
        """Is the file at `path` in the cache?"""
        return path in self._files

    def __len__(self) -> int:
        """How many files the cache holds."""
        return len(self._files)

    def forget(self, path: str | None = None) -> None:
        """The file at `path` (every file when None) may have changed, whatever its stamp
        says; every folder is resolved afresh."""
        for p in ([path] if path is not None else list(self._files)):
            if p in self._files:
                _, data, result = self._files[p]
                self._files[p] = (None, data, result)
        self._folders.clear()

# -- `check`: the configuration of each path --------------------------------------------------

class Resolver:
    """The configuration of each path `check` reads: found upwards from its folder, or the one
    file named with `--config`, or none with `--isolated`; the command line's values on top
    (`overrides`, by file key). An `exclude` there replaces the files' patterns,
    `extend_exclude` adds to them; both are relative to `cwd`."""

    def __init__(self, *, config_file: str | None = None, isolated: bool = False,
                 overrides: Mapping[str, object] | None = None,
                 extend_exclude: tuple[str, ...] = (), cwd: str | None = None):
        self.finder = Finder()
        self._fixed = load(config_file) if config_file else DEFAULTS if isolated else None
        self._overrides = dict(overrides or {})
        exclude = self._overrides.pop("exclude", None)
        cwd = os.path.abspath(cwd or os.getcwd())
        self._exclude = Patterns(cwd, exclude) if exclude is not None else None
        self._extend = Patterns(cwd, extend_exclude) if extend_exclude else None
        self._patterns: dict[Config, Patterns | None] = {}
        self._effective: dict[Config, Config] = {}

    def file_config(self, folder: str) -> Config:
        """The configuration file's values for the paths of `folder`. Raises ConfigError."""
        if self._fixed is not None:
            return self._fixed
        return self.finder.find(folder)

    def config_for(self, path: str) -> Config:
        """The values a file (or stdin named `path`) is checked with."""
        config = self.file_config(os.path.dirname(os.path.abspath(path)))
        effective = self._effective.get(config)
        if effective is None:
            effective = self._effective[config] = config.with_values(self._overrides)
        return effective

    def exclusions(self, folder: str) -> tuple[Patterns, ...]:
        """The patterns that skip entries of `folder` in a directory walk."""
        if self._exclude is not None:
            own = self._exclude
        else:
            config = self.file_config(folder)
            if config not in self._patterns:
                self._patterns[config] = config.exclusions()
            own = self._patterns[config]
        return tuple(p for p in (own, self._extend) if p is not None)
