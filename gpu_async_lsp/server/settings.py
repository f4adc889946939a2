"""Protocol layer: the server's settings, from initializationOptions or didChangeConfiguration.

Accepted either as the options object itself or under a "gpuAsyncLsp" key (VS Code sends the
section of its configuration):

    {"strict": false, "semantics": "original", "threadLaunch": false,
     "select": ["pre-existing-wait", ...], "ignore": ["sync-gpu-ops"],
     "severity": {"pre-existing-wait": "warning"}, "debounce": 0, "waitsOnHints": true}

Names and checks come from the registry (options.py). The options a configuration file can
also set (`strict`, `semantics`, `threadLaunch`, `select`, `ignore`, `severity`) are kept as
`overrides`: only those the client gave (a key absent or null is not given), which win over
the document's configuration file (config.py); `severity` is merged code by code. Keys the
server does not know are passed over (VS Code's section also holds the extension's own).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_async_lsp.async_region.findings import Severity
from gpu_async_lsp.config import Config
from gpu_async_lsp.options import BY_SETTING, OptionError

SECTION = "gpuAsyncLsp"


@dataclass(frozen=True)
class Settings:
    debounce_ms: int = 0  # optional delay before analysing a change; 0 = as soon as possible
    waits_on_hints: bool = True  # inlay hints explaining threaded code (`waits on %t1 (...)`)
    # The options the client set that a configuration file also sets: (file key, value).
    overrides: tuple[tuple[str, object], ...] = ()


def parse_settings(raw) -> tuple[Settings, list[str]]:
    """Settings from a client's JSON value, and the problems found (those options are then
    left unset: the file's value or the default applies)."""
    problems: list[str] = []
    # Neovim encodes an empty Lua table (`init_options = {}`) as `[]`: no settings either.
    if raw is None or raw == []:
        return Settings(), problems
    if isinstance(raw, dict) and isinstance(raw.get(SECTION), dict):
        raw = raw[SECTION]
    if not isinstance(raw, dict):
        return Settings(), [f"settings must be an object, not {type(raw).__name__}"]
    server_only = {}
    overrides = []
    for name, option in BY_SETTING.items():
        value = raw.get(name)
        if value is None:
            continue
        try:
            value = option.parse(value)
        except OptionError as e:
            problems.append(f"{name!r} {e}")
            continue
        if option.key is None:
            server_only[option.field] = value
        else:
            overrides.append((option.key, value))
    return Settings(server_only.get("debounce", 0), server_only.get("waitsOnHints", True),
                    tuple(overrides)), problems


def effective(config: Config, settings: Settings) -> Config:
    """A document's configuration (from its file, or the defaults) with the client's
    settings on top."""
    return config.with_values(dict(settings.overrides)) if settings.overrides else config


def severity_table(config: Config) -> dict[str, Severity | None]:
    """Each code's severity as published (None: not published)."""
    return config.severities()
