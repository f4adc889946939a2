"""config.py: finding a file's configuration upwards, reading and checking it, the command
line's values on top (Resolver), and what a severity table lets through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gpu_async_lsp import config as config_module
from gpu_async_lsp.async_region.findings import CODES, Finding, Severity
from gpu_async_lsp.config import (
    DEFAULTS,
    Config,
    ConfigError,
    Finder,
    Resolver,
    load,
    parse_config,
    reported,
)


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


# -- finding ------------------------------------------------------------------------------------

def test_finder_pyproject_table_found_from_a_nested_folder(tmp_path):
    path = write(tmp_path / "pyproject.toml", '[tool.gpu-async-lsp]\nstrict = true\n')
    found = Finder().find(tmp_path / "a" / "b")
    assert found.path == str(path) and found.strict is True


def test_finder_keep_drops_what_the_open_folders_do_not_go_through(tmp_path):
    """The server keeps the configurations of the open documents' folders only."""
    kept = write(tmp_path / "a" / "gpu-async-lsp.toml", "strict = true\n")
    dropped = write(tmp_path / "b" / "gpu-async-lsp.toml", 'semantics = "llvm22"\n')
    finder = Finder()
    for i in range(50):  # a day of folders visited
        assert finder.find(tmp_path / "b" / f"d{i}").semantics == "llvm22"
    assert finder.find(tmp_path / "a" / "x").strict is True
    finder.keep([tmp_path / "a" / "x"])
    assert finder.holds(str(kept)) and not finder.holds(str(dropped))
    assert set(finder._folders) == {str(tmp_path / "a" / "x"), str(tmp_path / "a")}
    # What was dropped is found again when asked for.
    assert finder.find(tmp_path / "b" / "d0").semantics == "llvm22"
    finder.keep([])
    assert finder._folders == {} and finder._files == {}


def test_finder_gpu_async_lsp_toml_wins_over_pyproject_beside_it(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.gpu-async-lsp]\nstrict = true\n')
    own = write(tmp_path / "gpu-async-lsp.toml", 'semantics = "llvm22"\n')
    found = Finder().find(tmp_path)
    assert (found.path, found.semantics, found.strict) == (str(own), "llvm22", False)


def test_finder_pyproject_without_table_is_passed_over(tmp_path):
    outer = write(tmp_path / "pyproject.toml", '[tool.gpu-async-lsp]\nstrict = true\n')
    write(tmp_path / "pkg" / "pyproject.toml", '[project]\nname = "gpu-async-lsp"\n')
    assert Finder().find(tmp_path / "pkg").path == str(outer)


def test_finder_unrelated_broken_pyproject_is_not_read(tmp_path):
    write(tmp_path / "pyproject.toml", "[project\nname = 'x'\n")
    assert Finder().find(tmp_path) == DEFAULTS


def test_finder_nearest_file_decides_alone(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.gpu-async-lsp]\nignore = ["syntax"]\n')
    inner = write(tmp_path / "sub" / "gpu-async-lsp.toml", "strict = true\n")
    found = Finder().find(tmp_path / "sub" / "deeper")
    assert (found.path, found.strict, found.ignore) == (str(inner), True, ())


def test_finder_no_file_anywhere_gives_defaults(tmp_path):
    assert Finder().find(tmp_path) == DEFAULTS and DEFAULTS.path is None


def test_finder_folder_that_cannot_exist_gives_defaults(tmp_path):
    assert Finder().find(f"{tmp_path}/a\0b") == DEFAULTS


def test_finder_reads_each_file_once_for_many_folders(tmp_path, monkeypatch):
    write(tmp_path / "gpu-async-lsp.toml", "strict = true\n")
    calls = []
    parse = config_module.parse_config
    monkeypatch.setattr(config_module, "parse_config",
                        lambda *a, **k: calls.append(a[0]) or parse(*a, **k))
    finder = Finder()
    configs = {finder.find(tmp_path / "d" / str(i)) for i in range(20)}
    assert len(configs) == 1 and len(calls) == 1


def test_finder_fresh_lookup_sees_a_new_file_any_lookup_an_edited_one(tmp_path):
    """A folder keeps the file it resolved to until a fresh lookup; that file's stamp is
    looked at on each lookup."""
    old = write(tmp_path / "gpu-async-lsp.toml", "strict = true\n")
    finder = Finder()
    assert finder.find(tmp_path / "sub").strict is True
    write(tmp_path / "gpu-async-lsp.toml", "strict = false\n")
    new = write(tmp_path / "sub" / "gpu-async-lsp.toml", 'semantics = "llvm22"\n')
    found = finder.find(tmp_path / "sub")
    assert (found.path, found.strict) == (str(old), False)
    assert finder.find(tmp_path / "sub", fresh=True).path == str(new)


def test_finder_forget_rereads_a_file_whose_stamp_did_not_change(tmp_path):
    path = write(tmp_path / "gpu-async-lsp.toml", "strict = true \n")
    finder = Finder()
    assert finder.find(tmp_path).strict is True
    st = os.stat(path)
    write(path, "strict = false\n")  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert finder.find(tmp_path, fresh=True).strict is True  # the stamp says: unchanged
    finder.forget(str(path))
    assert finder.find(tmp_path, fresh=True).strict is False


def test_finder_same_invalid_content_same_error_object(tmp_path):
    path = write(tmp_path / "gpu-async-lsp.toml", "strict = 1\n")
    finder = Finder()
    with pytest.raises(ConfigError) as first:
        finder.find(tmp_path)
    finder.forget()
    with pytest.raises(ConfigError) as again:
        finder.find(tmp_path, fresh=True)
    assert again.value is first.value
    write(path, "strict = 2\n")
    finder.forget()
    with pytest.raises(ConfigError) as changed:
        finder.find(tmp_path, fresh=True)
    assert changed.value is not first.value


# -- checking -----------------------------------------------------------------------------------

def test_parse_config_every_key(tmp_path):
    path = str(tmp_path / "gpu-async-lsp.toml")
    text = ('semantics = "llvm22"\nstrict = true\nthread-launch = true\nlowering = "none"\n'
            'select = ["pre-existing-wait", "syntax"]\nignore = ["syntax"]\n'
            'exclude = ["fixtures/", "*.tmp.mlir"]\n'
            'severity = {pre-existing-wait = "warning", syntax = "info"}\n')
    assert parse_config(path, text.encode()) == Config(
        path, "llvm22", True, True, "none", ("pre-existing-wait", "syntax"), ("syntax",),
        ("fixtures/", "*.tmp.mlir"),
        (("pre-existing-wait", Severity.WARNING), ("syntax", Severity.INFORMATION)))


INVALID = [
    ("pyproject.toml", "[tool.gpu-async-lsp]\nstrict = \n", "invalid TOML: "),
    ("gpu-async-lsp.toml", "strict = true\nstrict = false\n", "invalid TOML: "),
    ("pyproject.toml", "[tool.gpu-async-lsp]\nfoo = 1\n",
     "unknown key 'foo' in [tool.gpu-async-lsp] (keys: semantics, strict, thread-launch"),
    ("gpu-async-lsp.toml", "threadLaunch = true\n",
     "unknown key 'threadLaunch'; in a file it is 'thread-launch'"),
    ("gpu-async-lsp.toml", 'strict = "yes"\n',
     "invalid 'strict': must be true or false, not 'yes'"),
    ("pyproject.toml", '[tool.gpu-async-lsp]\nsemantics = "llvm23"\n',
     "invalid 'semantics' in [tool.gpu-async-lsp]: must be one of original, llvm22, sync-only"),
    ("gpu-async-lsp.toml", 'select = "pre-existing-wait"\n',
     "invalid 'select': must be a list of finding codes"),
    ("gpu-async-lsp.toml", 'ignore = ["pre-existing-wait", "no-such-code"]\n',
     "invalid 'ignore': unknown finding code 'no-such-code' (codes: pre-existing-wait"),
    ("gpu-async-lsp.toml", 'severity = {no-such-code = "error"}\n',
     "invalid 'severity': unknown finding code 'no-such-code'"),
    ("gpu-async-lsp.toml", 'severity = {syntax = "fatal"}\n',
     "invalid 'severity': severity of 'syntax' must be one of error, warning, information, "
     "hint, not 'fatal'"),
    ("gpu-async-lsp.toml", 'severity = "error"\n',
     "invalid 'severity': must be a table mapping finding codes to severities"),
    ("gpu-async-lsp.toml", 'exclude = ["\\\\"]\n', "invalid 'exclude': invalid pattern"),
    ("gpu-async-lsp.toml", 'exclude = [""]\n', "invalid 'exclude': invalid pattern '': empty"),
    ("gpu-async-lsp.toml", 'exclude = ["[z-a]"]\n', "invalid 'exclude': invalid pattern '[z-a]'"),
    ("pyproject.toml", '[tool]\ngpu-async-lsp = 3\n',
     "[tool.gpu-async-lsp] must be a table, not 3"),
    ("gpu-async-lsp.toml", b"strict = true # \xff\n", "not valid UTF-8 (byte 0xff at offset 16)"),
]


@pytest.mark.parametrize("name, text, says", INVALID,
                         ids=["bad_toml", "repeated_key", "unknown_key", "setting_name",
                              "wrong_type", "unknown_semantics", "codes_not_a_list",
                              "unknown_code", "unknown_severity_code", "unknown_severity",
                              "severity_not_a_table", "bad_pattern", "empty_pattern", "bad_range",
                              "table_not_a_table", "not_utf8"])
def test_finder_invalid_file_is_one_error_naming_file_and_key(tmp_path, name, text, says):
    path = write(tmp_path / name, text)
    with pytest.raises(ConfigError) as error:
        Finder().find(tmp_path)
    line = str(error.value)
    assert line.startswith(f"{path}: error: ") and says in line, line
    assert "\n" not in line


def test_load_named_pyproject_needs_the_table(tmp_path):
    path = write(tmp_path / "pyproject.toml", '[project]\nname = "x"\n')
    with pytest.raises(ConfigError, match=r"no \[tool.gpu-async-lsp\] table"):
        load(str(path))


def test_load_any_other_name_reads_the_top_level(tmp_path, monkeypatch):
    path = write(tmp_path / "ci.toml", "strict = true\n")
    monkeypatch.chdir(tmp_path)
    assert load("ci.toml") == Config(str(path), strict=True)  # its path made absolute


def test_load_missing_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="No such file or directory"):
        load(str(tmp_path / "gone.toml"))


# -- values -------------------------------------------------------------------------------------

def test_config_severities_select_then_ignore_then_overrides():
    config = Config(select=("pre-existing-wait", "syntax", "sync-gpu-ops"), ignore=("syntax",),
                    severity=(("pre-existing-wait", Severity.WARNING),))
    table = config.severities()
    assert list(table) == list(CODES)
    assert table["pre-existing-wait"] == Severity.WARNING
    assert table["sync-gpu-ops"] == Severity.HINT
    assert table["syntax"] is None and table["already-async"] is None


def test_config_with_values_merges_severity_code_by_code():
    config = Config(severity=(("syntax", Severity.WARNING),))
    merged = config.with_values({"severity": (("pre-existing-wait", Severity.HINT),),
                                 "strict": True})
    assert merged.strict is True
    assert merged.severity == (("pre-existing-wait", Severity.HINT),
                               ("syntax", Severity.WARNING))


def test_reported_drops_unselected_and_applies_severity():
    findings = [Finding("pre-existing-wait", "w", 0, 1, Severity.ERROR),
                Finding("syntax", "s", 2, 3, Severity.ERROR)]
    got = reported(findings, {"pre-existing-wait": Severity.WARNING, "syntax": None})
    assert [(f.code, f.severity) for f in got] == [("pre-existing-wait", Severity.WARNING)]


# -- Resolver -----------------------------------------------------------------------------------

def test_resolver_command_line_values_win_over_the_file(tmp_path):
    write(tmp_path / "gpu-async-lsp.toml", 'strict = true\nignore = ["syntax"]\n')
    resolver = Resolver(overrides={"strict": False, "select": ("syntax",)})
    config = resolver.config_for(str(tmp_path / "a.mlir"))
    assert (config.strict, config.select, config.ignore) == (False, ("syntax",), ("syntax",))


def test_resolver_isolated_and_named_file_ignore_the_files_found(tmp_path):
    write(tmp_path / "gpu-async-lsp.toml", "strict = true\n")
    named = write(tmp_path / "other" / "ci.toml", "thread-launch = true\n")
    assert Resolver(isolated=True).config_for(str(tmp_path / "a.mlir")) == DEFAULTS
    config = Resolver(config_file=str(named)).config_for(str(tmp_path / "a.mlir"))
    assert (config.strict, config.thread_launch) == (False, True)


def test_resolver_exclusions_relative_to_the_config_folder(tmp_path):
    write(tmp_path / "pyproject.toml", '[tool.gpu-async-lsp]\nexclude = ["/fixtures"]\n')
    [patterns] = Resolver().exclusions(str(tmp_path / "sub"))
    assert patterns.skips(str(tmp_path / "fixtures"), True)
    assert not patterns.skips(str(tmp_path / "sub" / "fixtures"), True)


def test_resolver_command_line_exclude_replaces_extend_exclude_adds(tmp_path):
    write(tmp_path / "gpu-async-lsp.toml", 'exclude = ["a"]\n')
    cwd = str(tmp_path / "sub")
    replaced = Resolver(overrides={"exclude": ("b",)}, cwd=cwd).exclusions(str(tmp_path))
    assert [p.lines for p in replaced] == [("b",)] and replaced[0].base == cwd
    extended = Resolver(extend_exclude=("c",), cwd=cwd).exclusions(str(tmp_path))
    assert [(p.base, p.lines) for p in extended] == [(str(tmp_path), ("a",)), (cwd, ("c",))]
