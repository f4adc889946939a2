"""options.py, the one registry of options: the VS Code extension's settings, the fields of a
resolved configuration, `check`'s flags, the server's settings and the README follow it."""

from __future__ import annotations

import dataclasses
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
    fields = [f for f in dataclasses.fields(Config) if f.name != "path"]
    assert [f.name for f in fields] == [o.field for o in FILE_OPTIONS]
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
    assert problems == ["'semantics' must be one of original, llvm22, not 'llvm23'"]


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
