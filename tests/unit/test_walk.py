"""walk.py: which `.mlir` files a directory walk finds, under .gitignore/.ignore files and
exclude patterns, and which files `collect_files` keeps."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpu_async_lsp.walk import Patterns, collect_files, invalid_pattern, walk_mlir


def touch(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")


def found(root: Path, **kwargs) -> list[str]:
    return [os.path.relpath(p, root) for p in walk_mlir(str(root), **kwargs)]


def test_walk_sorted_by_components_descends_x_mlir_folders(tmp_path):
    touch(tmp_path, "b.mlir", "a/z.mlir", "a/b/y.mlir", "a.mlir", "notes.txt", "d.mlir/in.mlir")
    assert found(tmp_path) == ["a/b/y.mlir", "a/z.mlir", "a.mlir", "b.mlir", "d.mlir/in.mlir"]


def test_walk_hidden_and_build_folders_are_walked_unless_ignored(tmp_path):
    touch(tmp_path, ".hidden/a.mlir", "build/b.mlir", "build-x/c.mlir")
    assert found(tmp_path) == [".hidden/a.mlir", "build/b.mlir", "build-x/c.mlir"]


def test_walk_skips_git_folder_itself(tmp_path):
    touch(tmp_path, ".git/x.mlir", "a.mlir")
    assert found(tmp_path) == ["a.mlir"]


def test_walk_gitignore_skips_build_folders_and_files(tmp_path):
    touch(tmp_path, "build/b.mlir", "build-release/c.mlir", "src/build/d.mlir", "src/a.mlir",
          "src/out.tmp.mlir", "builder.mlir")
    (tmp_path / ".gitignore").write_text("# build trees\nbuild*/\n*.tmp.mlir\n")
    assert found(tmp_path) == ["builder.mlir", "src/a.mlir"]


def test_walk_nested_gitignore_applies_below_its_folder_only(tmp_path):
    touch(tmp_path, "a/x.mlir", "a/sub/x.mlir", "b/x.mlir")
    (tmp_path / "a" / ".gitignore").write_text("x.mlir\n")
    assert found(tmp_path) == ["b/x.mlir"]


def test_walk_anchored_pattern_relative_to_its_gitignore(tmp_path):
    touch(tmp_path, "a/top.mlir", "a/sub/top.mlir", "top.mlir")
    (tmp_path / "a" / ".gitignore").write_text("/top.mlir\n")
    assert found(tmp_path) == ["a/sub/top.mlir", "top.mlir"]


def test_walk_negation_reincludes_and_deeper_file_wins(tmp_path):
    touch(tmp_path, "gen/a.mlir", "gen/keep.mlir", "x/y.mlir", "x/deep/y.mlir")
    (tmp_path / ".gitignore").write_text("gen/*.mlir\n!gen/keep.mlir\ny.mlir\n")
    (tmp_path / "x" / "deep" / ".gitignore").write_text("!y.mlir\n")
    assert found(tmp_path) == ["gen/keep.mlir", "x/deep/y.mlir"]


def test_walk_ignore_file_wins_over_gitignore_in_the_same_folder(tmp_path):
    touch(tmp_path, "a.mlir", "b.mlir")
    (tmp_path / ".gitignore").write_text("*.mlir\n")
    (tmp_path / ".ignore").write_text("!a.mlir\n")
    assert found(tmp_path) == ["a.mlir"]


def test_walk_ignore_file_alone_skips(tmp_path):
    touch(tmp_path, "a.mlir", "fixtures/b.mlir")
    (tmp_path / ".ignore").write_text("fixtures/\n")
    assert found(tmp_path) == ["a.mlir"]


def test_walk_respect_gitignore_false_walks_everything_but_git(tmp_path):
    touch(tmp_path, "build/b.mlir", "a.mlir", ".git/c.mlir")
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / ".ignore").write_text("a.mlir\n")
    assert found(tmp_path, respect_gitignore=False) == ["a.mlir", "build/b.mlir"]


def test_walk_gitignore_above_the_folder_applies_up_to_the_repository_root(tmp_path):
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    touch(tmp_path / "repo", "src/a.mlir", "src/a.gen.mlir")
    (tmp_path / "repo" / ".gitignore").write_text("*.gen.mlir\n")
    (tmp_path / ".gitignore").write_text("a.mlir\n")  # outside the repository
    assert found(tmp_path / "repo" / "src") == ["a.mlir"]


def test_walk_gitignore_above_the_folder_not_read_outside_a_repository(tmp_path):
    touch(tmp_path, "src/a.gen.mlir")
    (tmp_path / ".gitignore").write_text("*.gen.mlir\n")
    assert found(tmp_path / "src") == ["a.gen.mlir"]


def test_walk_folder_named_explicitly_is_walked_though_ignored(tmp_path):
    (tmp_path / ".git").mkdir()
    touch(tmp_path, "build/b.mlir", "build/sub/c.mlir", "build/d.tmp.mlir")
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / "build" / ".gitignore").write_text("*.tmp.mlir\n")
    assert found(tmp_path / "build") == ["b.mlir", "sub/c.mlir"]


def test_walk_invalid_gitignore_lines_are_passed_over(tmp_path):
    touch(tmp_path, "a.mlir", "b.mlir")
    (tmp_path / ".gitignore").write_text("!\n\\\n[z-a]\na.mlir\n")
    assert found(tmp_path) == ["b.mlir"]


def test_walk_exclusions_of_each_folder_apply(tmp_path):
    touch(tmp_path, "fixtures/a.mlir", "src/fixtures/b.mlir", "src/c.mlir", "src/d.bad.mlir")
    patterns = Patterns(str(tmp_path), ["fixtures/", "*.bad.mlir"])
    seen = []

    def exclusions(folder: str):
        seen.append(folder)
        return [patterns]

    assert found(tmp_path, exclusions=exclusions) == ["src/c.mlir"]
    assert str(tmp_path) in seen and str(tmp_path / "src") in seen


def test_walk_exclusion_matching_the_named_folder_is_set_aside(tmp_path):
    touch(tmp_path, "tests/fixtures/a.mlir")
    patterns = Patterns(str(tmp_path), ["fixtures"])
    assert found(tmp_path, exclusions=lambda folder: [patterns]) == []
    assert found(tmp_path / "tests" / "fixtures", exclusions=lambda folder: [patterns]) == [
        "a.mlir"]


def test_patterns_outside_base_match_only_unanchored_patterns(tmp_path):
    patterns = Patterns(str(tmp_path / "cwd"), ["fixtures", "/top.mlir", "a/b.mlir"])
    elsewhere = tmp_path / "elsewhere"
    assert patterns.skips(str(elsewhere / "fixtures"), True)
    assert not patterns.skips(str(elsewhere / "top.mlir"), False)
    assert not patterns.skips(str(elsewhere / "b.mlir"), False)


@pytest.mark.parametrize("pattern, valid", [("build/", True), ("**/x.mlir", True),
                                            ("", False), ("!", False), ("\\", False),
                                            ("[z-a]", False)])
def test_invalid_pattern_says_why(pattern, valid):
    assert (invalid_pattern(pattern) is None) == valid


def test_collect_files_named_file_is_kept_though_ignored_or_excluded(tmp_path):
    touch(tmp_path, "build/b.mlir", "a.mlir")
    (tmp_path / ".gitignore").write_text("build/\na.mlir\n")
    named = str(tmp_path / "build" / "b.mlir")
    patterns = Patterns(str(tmp_path), ["b.mlir"])
    files, errors, notes = collect_files([named, str(tmp_path)],
                                         exclusions=lambda folder: [patterns])
    assert files == [named] and errors == []
    assert notes == [f"{tmp_path}: note: no .mlir files found"]


def test_walk_exclusions_based_at_the_filesystem_root_or_relative(tmp_path, monkeypatch):
    touch(tmp_path, "a.mlir", "b/skip.mlir")
    monkeypatch.chdir(tmp_path)
    at_root = Patterns(os.sep, ["no-such-name"])
    relative = Patterns(".", ["/b"])
    assert relative.base == str(tmp_path)
    assert found(tmp_path, exclusions=lambda folder: [at_root, relative]) == ["a.mlir"]
