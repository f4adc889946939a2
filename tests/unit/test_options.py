"""options.py, the one registry of options: the VS Code extension's settings, the fields of a
resolved configuration, `check`'s flags, the server's settings and the README follow it."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from gpu_async_lsp import cli
from gpu_async_lsp.async_region.findings import CODES, Severity
from gpu_async_lsp.config import DEFAULTS, Config
from gpu_async_lsp.options import (
    BOOL,
    BY_KEY,
    BY_SETTING,
    CHOICE,
    CODE_LIST,
    FILE_OPTIONS,
    OPTIONS,
    SEVERITY_CHOICES,
    SEVERITY_TABLE,
    OptionError,
)
from gpu_async_lsp.server.settings import SECTION, parse_settings

REPO = Path(__file__).resolve().parents[2]
MANIFEST = REPO / "editors" / "vscode" / "package.json"
# Settings of the extension itself (how to start the server), not sent to the server.
EXTENSION_ONLY = {"server.command", "interpreter", "importStrategy", "trace.server"}
EDITOR_OPTIONS = [o for o in OPTIONS if o.setting and o.in_editors]


def _properties() -> dict:
    manifest = json.loads(MANIFEST.read_text())
    return {k.removeprefix(f"{SECTION}."): v
            for k, v in manifest["contributes"]["configuration"]["properties"].items()}


def test_package_json_settings_are_the_registry_and_the_extension_own():
    assert set(_properties()) == {o.setting for o in EDITOR_OPTIONS} | EXTENSION_ONLY


@pytest.mark.parametrize("option", EDITOR_OPTIONS, ids=[o.setting for o in EDITOR_OPTIONS])
def test_package_json_setting_matches_its_option(option):
    prop = _properties()[option.setting]
    assert prop.get("markdownDescription") or prop.get("description")
    if option.kind == BOOL:
        assert (prop["type"], prop["default"]) == ("boolean", option.default)
    elif option.kind == CHOICE:
        assert (prop["type"], prop["default"]) == ("string", option.default)
        assert prop["enum"] == list(option.choices)
    elif option.kind == CODE_LIST:
        # No default: unset, the configuration file's value (else the registry's) applies.
        assert prop["type"] == "array" and "default" not in prop
        assert prop["items"] == {"type": "string", "enum": list(CODES)}
    else:
        assert option.kind == SEVERITY_TABLE
        assert (prop["type"], prop["default"]) == ("object", {})
        assert list(prop["properties"]) == list(CODES)
        for schema in [*prop["properties"].values(), prop["additionalProperties"]]:
            # Each code's entry also says what it means (tools/gen_codes_doc.py, checked
            # against the registry of codes in test_codes.py).
            schema = {k: v for k, v in schema.items() if k != "markdownDescription"}
            assert schema == {"type": "string", "enum": list(SEVERITY_CHOICES)}


def test_vscode_extension_sends_each_server_setting_of_the_registry():
    """extension.ts sends the settings in SERVER_SETTINGS (when the user set them): those the
    registry offers the editors, none of the extension's own."""
    source = (MANIFEST.parent / "src" / "extension.ts").read_text()
    found = re.search(r"const SERVER_SETTINGS = \[([^\]]*)\];", source)
    assert found, "no SERVER_SETTINGS list in extension.ts"
    sent = re.findall(r'"([^"]+)"', found.group(1))
    assert sorted(sent) == sorted(o.setting for o in EDITOR_OPTIONS)


def test_config_fields_are_the_file_options_with_their_defaults():
    fields = [name for name in Config._fields if name != "path"]
    assert fields == [o.field for o in FILE_OPTIONS]
    for option in FILE_OPTIONS:
        assert getattr(DEFAULTS, option.field) == option.default


def test_check_help_lists_each_flag_with_its_doc(capsys):
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["check", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for option in OPTIONS:
        if option.flag:
            assert option.flag in text and " ".join(option.doc.split()) in text


def test_server_settings_take_each_setting_by_its_name():
    raw = {"strict": True, "semantics": "llvm22", "threadLaunch": True, "select": ["syntax"],
           "ignore": ["syntax"], "severity": {"syntax": "hint"}, "debounce": 5,
           "waitsOnHints": False, "server.command": ["x"]}
    settings, problems = parse_settings({SECTION: raw})
    assert problems == []
    assert (settings.debounce_ms, settings.waits_on_hints) == (5, False)
    assert dict(settings.overrides) == {"strict": True, "semantics": "llvm22",
                                        "thread-launch": True, "select": ("syntax",),
                                        "ignore": ("syntax",),
                                        "severity": (("syntax", Severity.HINT),)}


def test_server_settings_null_or_absent_is_not_given_invalid_is_a_problem():
    settings, problems = parse_settings({"strict": None, "semantics": "llvm23"})
    assert settings.overrides == ()
    assert problems == ["'semantics' must be one of original, llvm22, sync-only, not 'llvm23'"]


@pytest.mark.parametrize("option", OPTIONS, ids=[o.name for o in OPTIONS])
def test_option_default_is_a_valid_value(option):
    value = option.default
    if option.kind == SEVERITY_TABLE:
        value = {code: level.label for code, level in value}
    elif isinstance(value, tuple):
        value = list(value)
    assert option.parse(value) == option.default
    with pytest.raises(OptionError):
        option.parse(object())


def _readme_section(title: str) -> str:
    text = (REPO / "README.md").read_text()
    start = text.index(f"\n{title}\n")
    end = re.compile(r"\n#{2,3} ").search(text, start + len(title) + 2)
    return text[start:end.start() if end else len(text)]


def test_readme_configuration_section_names_each_key_and_flag():
    section = _readme_section("### Configuration")
    for key in BY_KEY:
        assert f"`{key}`" in section or f"\n{key} = " in section, key
    for flag in ["--config", "--isolated", "--no-respect-gitignore", "--extend-exclude",
                 "--force-exclude",
                 *(o.flag for o in OPTIONS if o.flag)]:
        assert f"`{flag}" in section, flag


def test_parse_settings_empty_list_from_neovim_is_no_settings():
    """Neovim's JSON encoder writes an empty Lua table as `[]`."""
    settings, problems = parse_settings([])
    assert problems == [] and settings == parse_settings(None)[0]
    assert parse_settings([1])[1] == ["settings must be an object, not list"]


# -- README.md and docs/ against the registries ---------------------------------------------------

DOCS = REPO / "docs"
# A flag as this project's parsers spell them: `--long-name` or `-x`. (`-gpu-async-region`, one
# dash and a word, is a pass of mlir-opt, not one of ours.)
_FLAG = re.compile(r"(?<![\w-])(?:--[a-z][a-z0-9-]*|-[a-zA-Z](?![\w-]))")
# Our command in a line of a fenced block: `gpu-async-lsp check ...`, `.venv/bin/gpu-async-lsp`,
# `- run: gpu-async-lsp ...` (not `gpu-async-lsp.toml` or `gpu-async-lsp-check`).
_OUR_COMMAND = re.compile(r"gpu-async-lsp(?![\w./-])")
# A code span that is our command: `gpu-async-lsp check --fix`, `check --diff`, `serve --tcp`.
_OUR_COMMAND_SPAN = re.compile(r"(?:\S*/)?gpu-async-lsp\s|(?:check|tree|serve)\s")


def _flags_named(text: str) -> set[str]:
    """The flags of gpu-async-lsp that a Markdown text names: in code spans that are flags
    (`--fix`, `--jobs N`, `-q`) or our commands (`check --fix --diff`), and in the lines of
    fenced blocks that run our command (in a shell or usage block, with the indented lines
    that continue it). Other tools' flags (`mlir-opt-22 -split-input-file`, `ruff check ...`)
    are not ours."""
    flags: set[str] = set()
    prose = []
    fenced = command = shell = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced, command = not fenced, False
            shell = line.strip("` ") in ("", "sh", "bash", "console")
        elif not fenced:
            prose.append(line)
        elif (at := _OUR_COMMAND.search(line)) is not None:
            command = shell
            flags.update(_FLAG.findall(line, at.end()))
        elif command and line[:1].isspace():
            flags.update(_FLAG.findall(line))
        else:
            command = False
    for span in re.findall(r"`([^`]+)`", "\n".join(prose)):
        if span.startswith("-") or _OUR_COMMAND_SPAN.match(span):
            flags.update(_FLAG.findall(span))
    return flags


def _subcommands() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """`cli.build_parser()` and its subcommands' parsers, by name."""
    top = cli.build_parser()
    sub = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
    return top, dict(sub.choices)


def _option_strings(*parsers: argparse.ArgumentParser) -> set[str]:
    return {s for parser in parsers for action in parser._actions for s in action.option_strings}


def _markdown_section(text: str, title: str) -> str:
    """The section under the heading line `title` (`## Install`), up to the next heading of
    the same or a higher level; lines of fenced blocks (`# pyproject.toml`) are no headings."""
    level = len(title) - len(title.lstrip("#"))
    lines = text.splitlines()
    start = lines.index(title)
    fenced = False
    for end in range(start + 1, len(lines)):
        line = lines[end]
        if line.lstrip().startswith("```"):
            fenced = not fenced
        hashes = len(line) - len(line.lstrip("#"))
        if not fenced and 0 < hashes <= level and line[hashes:hashes + 1] == " ":
            return "\n".join(lines[start:end])
    return "\n".join(lines[start:])


def test_flags_named_finds_flags_of_our_commands_only():
    text = ("`--fix` and `-q`/`--quiet`, `check --diff --jobs N`, `-j N`, `-` (stdin),\n"
            "MLIR's `-gpu-async-region` pass, `mlir-opt-22 -split-input-file --a-pass`\n"
            "```\ngpu-async-lsp check [--strict | --no-strict]\n    [--color auto]\n"
            "ruff check --fix-only\n  - run: .venv/bin/gpu-async-lsp tree --tree-flag\n```\n"
            "```lua\ncmd = { 'gpu-async-lsp' },\n  cmd = { 'python', '-m', 'gpu_async_lsp' }\n```")
    assert _flags_named(text) == {"--fix", "-q", "--quiet", "--diff", "--jobs", "-j",
                                  "--strict", "--no-strict", "--color", "--tree-flag"}


def test_docs_cli_names_each_flag_of_check():
    """docs/cli.md is the reference of `check`: each flag of the registry and each other flag
    `check --help` prints (both spellings of `--strict`/`--no-strict`, `-j`/`--jobs`, ...)."""
    named = _flags_named((DOCS / "cli.md").read_text(encoding="utf-8"))
    check = _option_strings(_subcommands()[1]["check"])
    registry = {o.flag for o in OPTIONS if o.flag}
    assert registry <= check
    assert not sorted(registry - named), "flags of options.py that docs/cli.md does not name"
    assert not sorted(check - named), "flags of `check --help` that docs/cli.md does not name"


def test_docs_cli_names_no_flag_the_parser_lacks():
    top, sub = _subcommands()
    named = _flags_named((DOCS / "cli.md").read_text(encoding="utf-8"))
    stale = named - _option_strings(top, sub["check"], sub["tree"])
    assert not sorted(stale), "flags docs/cli.md names that `check`, `tree` and --version lack"


@pytest.mark.parametrize("page", ["README.md", "docs/server.md", "editors/vscode/README.md",
                                  "editors/nvim/README.md"])
def test_docs_name_no_flag_the_parser_lacks(page):
    """(docs/benchmarks.md is left out: the flags there are the benchmark scripts'.)"""
    top, sub = _subcommands()
    named = _flags_named((REPO / page).read_text(encoding="utf-8"))
    stale = named - _option_strings(top, *sub.values())
    assert not sorted(stale), f"flags {page} names that no subcommand of gpu-async-lsp has"


def test_docs_server_names_each_setting_and_serve_flag():
    text = (DOCS / "server.md").read_text(encoding="utf-8")
    missing = [o.setting for o in OPTIONS
               if o.setting and f"`{o.setting}`" not in text and f'"{o.setting}"' not in text]
    assert not missing, "server settings of options.py that docs/server.md does not name"
    serve = _option_strings(_subcommands()[1]["serve"]) - {"-h", "--help"}
    assert not sorted(serve - _flags_named(text)), "flags of `serve` docs/server.md lacks"


def test_docs_server_settings_example_is_every_setting_and_valid():
    """The JSON example of "## Settings" shows each setting of the registry, and no other."""
    section = _markdown_section((DOCS / "server.md").read_text(encoding="utf-8"), "## Settings")
    found = re.search(r"```json\n(.*?)```", section, re.S)
    assert found, "no ```json example in docs/server.md's Settings"
    example = json.loads(found.group(1))
    assert set(example) == set(BY_SETTING)
    assert parse_settings(example)[1] == []


def test_readme_editor_section_names_each_vscode_setting():
    section = _markdown_section((REPO / "README.md").read_text(encoding="utf-8"),
                                "## Using it in the editor")
    missing = [f"{SECTION}.{name}" for name in _properties()
               if f"`{SECTION}.{name}`" not in section]
    assert not missing, "VS Code settings the README's editor section does not name"


@pytest.mark.parametrize("page", ["README.md", "docs/cli.md", "docs/server.md",
                                  "docs/benchmarks.md", "editors/vscode/README.md"])
def test_docs_name_only_vscode_settings_and_commands_that_exist(page):
    manifest = json.loads(MANIFEST.read_text())["contributes"]
    known = set(manifest["configuration"]["properties"])
    known |= {c["command"] for c in manifest["commands"]}
    text = (REPO / page).read_text(encoding="utf-8")
    named = set(re.findall(rf"{SECTION}\.[A-Za-z]+(?:\.[A-Za-z]+)*", text))
    assert not sorted(named - known), f"settings {page} names that package.json lacks"

