"""CLI layer: which files `check` reads, from the paths it is given.

A file named on the command line is read (unless `force_exclude`: then the exclusions apply
to it too, as ruff's `--force-exclude`, for pre-commit, which names every file). A directory
is walked for `*.mlir` files, skipping (as ruff and ripgrep do):

- what `.gitignore` and `.ignore` files exclude: those of every folder walked, and of the
  folders above it up to the root of its git repository (the folder holding `.git`); a
  deeper file wins over a shallower one, `.ignore` over `.gitignore` in the same folder, the
  last matching line within a file (`!pattern` re-includes). Read whether or not git is
  used. `respect_gitignore=False` turns this off.
- what the `exclusions` of a folder (the `exclude` patterns of its configuration, and the
  command line's) match;
- `.git` itself. Hidden folders and `build*/` folders are walked like any other, unless a
  pattern skips them.

Patterns are gitignore's (pathspec's `GitIgnoreSpec`), matched against each entry's path
relative to the folder of the file that holds them. A folder named on the command line is
walked even when a pattern above it skips it; those patterns then do not apply inside it.

Imports nothing of the analysis; no pygls.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

STDIN = "-"
# In increasing precedence: `.ignore` wins over `.gitignore` (ripgrep's order).
IGNORE_FILES = (".gitignore", ".ignore")
GIT = ".git"


def printable(name: str) -> str:
    """A path as text that any UTF-8 stream can print (undecodable bytes become U+FFFD)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def display_path(path: str) -> str:
    return printable(os.path.normpath(path)) if path != STDIN else path


def invalid_pattern(pattern: str) -> str | None:
    """Why `pattern` is not a usable gitignore pattern, or None."""
    if not pattern.strip():
        return "empty pattern"
    try:
        _spec_type().from_lines([pattern])
    except (ValueError, re.error) as e:  # re.error: `[z-a]`, a range pathspec passes on
        return str(e)
    return None


def _spec_type():
    """pathspec's GitIgnoreSpec, imported on first use: its import is 27 ms of every start
    of the command, which needs it only for ignore files and exclude patterns."""
    from pathspec import GitIgnoreSpec

    return GitIgnoreSpec


def _compile(lines: Sequence[str]) -> GitIgnoreSpec:
    """The patterns of `lines`; lines git would not read as patterns are left out, as git
    leaves them."""
    try:
        return _spec_type().from_lines(lines)
    except (ValueError, re.error):
        return _spec_type().from_lines([line for line in lines
                                         if invalid_pattern(line) is None])


def _unanchored(line: str) -> bool:
    """A pattern that matches a name at any depth (no `/` but a trailing one)."""
    line = line.strip()
    if line.startswith("!"):
        line = line[1:]
    return bool(line) and not line.startswith("#") and "/" not in line.rstrip("/")


class Patterns:
    """Gitignore-style patterns, relative to the absolute folder `base`."""

    def __init__(self, base: str, lines: Sequence[str]):
        base = os.path.abspath(base)
        self.base = base
        self.lines = tuple(lines)
        self._prefix = base if base.endswith(os.sep) else base + os.sep
        self._spec = _compile(self.lines)
        # A path outside `base` (a path given on the command line elsewhere) can match only
        # the patterns that name an entry anywhere.
        self._anywhere = _compile([line for line in self.lines if _unanchored(line)])

    def covers(self, path: str) -> bool:
        """`path` (absolute) lies below `base`."""
        return path.startswith(self._prefix)

    def check(self, path: str, is_dir: bool) -> bool | None:
        """True: `path` (absolute) is matched; False: re-included by a `!` pattern; None:
        no pattern matches it."""
        if self.covers(path):
            rel, spec = path[len(self._prefix):], self._spec
        else:
            rel, spec = os.path.basename(path), self._anywhere
        if os.sep != "/":
            rel = rel.replace(os.sep, "/")
        return spec.check_file(rel + "/" if is_dir else rel).include

    def skips(self, path: str, is_dir: bool) -> bool:
        return self.check(path, is_dir) is True


def _read_ignore_files(folder: str, names=None) -> tuple[Patterns, ...]:
    """The patterns of `folder`'s ignore files, in increasing precedence (`names`: the
    folder's entries, when known)."""
    found = []
    for name in IGNORE_FILES:
        if names is not None and name not in names:
            continue
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                lines = f.read().splitlines()
        except OSError:  # none, a folder of that name, unreadable: no patterns
            continue
        found.append(Patterns(folder, lines))
    return tuple(found)


def _repository_levels(root: str) -> list[tuple[Patterns, ...]]:
    """The ignore files above `root` (absolute) up to its repository's root, outermost
    first; none when no folder above holds `.git`."""
    if os.path.lexists(os.path.join(root, GIT)):
        return []
    levels = []
    folder = root
    while True:
        parent = os.path.dirname(folder)
        if parent == folder:
            return []  # not in a repository
        folder = parent
        levels.append(_read_ignore_files(folder))
        if os.path.lexists(os.path.join(folder, GIT)):
            return [level for level in reversed(levels) if level]


Exclusions = Callable[[str], Sequence[Patterns]]


class _Walk:
    """One directory walk: the ignore files met on the way and the patterns that a folder
    given explicitly sets aside (they skip it, or a folder between theirs and it)."""

    def __init__(self, root: str, respect_gitignore: bool, exclusions: Exclusions | None):
        self.root = root
        self.respect_gitignore = respect_gitignore
        self.exclusions = exclusions
        self._set_aside: dict[Patterns, bool] = {}

    def applies(self, patterns: Patterns) -> bool:
        known = self._set_aside.get(patterns)
        if known is None:
            known = False
            folder = self.root
            while patterns.covers(folder):
                if patterns.skips(folder, True):
                    known = True
                    break
                parent = os.path.dirname(folder)
                if parent == folder:
                    break
                folder = parent
            self._set_aside[patterns] = known
        return not known

    def levels_at(self, folder: str, names: set[str], outer: tuple) -> tuple:
        if not self.respect_gitignore:
            return outer
        own = _read_ignore_files(folder, names)
        return outer + (own,) if own else outer

    def skipped(self, path: str, is_dir: bool, levels: tuple, excluded: Sequence[Patterns]
                ) -> bool:
        for patterns in excluded:
            if patterns.skips(path, is_dir) and self.applies(patterns):
                return True
        for level in reversed(levels):  # the deepest first; in it, .ignore first
            for patterns in reversed(level):
                decision = patterns.check(path, is_dir)
                if decision is not None and self.applies(patterns):
                    return decision
        return False


def walk_mlir(directory: str, *, respect_gitignore: bool = True,
              exclusions: Exclusions | None = None) -> list[str]:
    """Every `*.mlir` file under `directory` that no pattern skips, at any depth, sorted by
    path components.

    A directory named x.mlir is descended into, not read; FIFOs, sockets and devices are
    skipped (reading a FIFO would block); a dangling symlink is kept, so that it is reported;
    symlinks to directories are not followed (as `os.walk`). Unreadable directories are
    passed over.
    """
    root = os.path.abspath(directory)
    walk = _Walk(root, respect_gitignore, exclusions)
    outer = tuple(_repository_levels(root)) if respect_gitignore else ()
    found = []
    stack = [(directory, root, outer)]
    while stack:
        path, absolute, levels = stack.pop()
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError:
            continue
        levels = walk.levels_at(absolute, {entry.name for entry in entries}, levels)
        excluded = walk.exclusions(absolute) if walk.exclusions else ()
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if not is_dir and not name.endswith(".mlir"):
                continue
            if is_dir and (name == GIT or entry.is_symlink()):
                continue
            entry_path = os.path.join(absolute, name)
            if walk.skipped(entry_path, is_dir, levels, excluded):
                continue
            if is_dir:
                stack.append((entry.path, entry_path, levels))
            elif _readable_kind(entry.path):
                found.append(entry.path)
    found.sort(key=lambda p: os.path.relpath(p, directory).split(os.sep))
    return found


def _readable_kind(path: str) -> bool:
    """A regular file, or a path that cannot be stat'ed (reported when read)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return True


def _excluded(path: str, exclusions: Exclusions) -> bool:
    """A named file that its folder's exclusions match (itself, or a folder it is in)."""
    path = os.path.abspath(path)
    return any(p.skips(path, False) for p in exclusions(os.path.dirname(path)))


def collect_files(paths: list[str], *, respect_gitignore: bool = True,
                  exclusions: Exclusions | None = None, force_exclude: bool = False
                  ) -> tuple[list[str], list[str], list[str]]:
    """(files in order without repeats, error lines, notes) for the paths given. A file
    named is in whatever the patterns say, unless `force_exclude` (then the exclusions apply
    to it; ignore files do not)."""
    files: list[str] = []
    errors: list[str] = []
    notes: list[str] = []
    seen: set[str] = set()
    for p in paths:
        if os.path.isdir(p):
            found = walk_mlir(p, respect_gitignore=respect_gitignore, exclusions=exclusions)
            if not found:
                notes.append(f"{display_path(p)}: note: no .mlir files found")
        elif os.path.lexists(p):
            if force_exclude and exclusions is not None and _excluded(p, exclusions):
                continue
            found = [p]
        else:
            errors.append(f"{display_path(p)}: error: No such file or directory")
            continue
        for f in found:
            key = os.path.normpath(f)
            if key not in seen:
                seen.add(key)
                files.append(f)
    return files, errors, notes
