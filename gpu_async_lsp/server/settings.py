"""Protocol layer: the server's settings, from initializationOptions or didChangeConfiguration.

Accepted either as the options object itself or under a "gpuAsyncLsp" key (VS Code sends the
section of its configuration):

    {"strict": false, "semantics": "original", "threadLaunch": false,
     "severity": {"pre-existing-wait": "warning"}, "debounce": 0, "waitsOnHints": true}
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpu_async_lsp.async_region.findings import CODES, DEFAULT_SEVERITY, Severity
from gpu_async_lsp.async_region.rewriter import ORIGINAL, SEMANTICS

SECTION = "gpuAsyncLsp"
_SEVERITIES = {"error": Severity.ERROR, "warning": Severity.WARNING,
               "information": Severity.INFORMATION, "info": Severity.INFORMATION,
               "hint": Severity.HINT}


@dataclass(frozen=True)
class Settings:
    strict: bool = False
    severity: dict[str, Severity] = field(default_factory=lambda: dict(DEFAULT_SEVERITY))
    debounce_ms: int = 0  # optional delay before analysing a change; 0 = as soon as possible
    semantics: str = ORIGINAL  # which pass the rewrite follows: "original" or "llvm22"
    thread_launch: bool = False  # an inline gpu.launch is threaded like any async op
    waits_on_hints: bool = True  # inlay hints explaining threaded code (`waits on %t1 (...)`)


def parse_settings(raw) -> tuple[Settings, list[str]]:
    """Settings from a client's JSON value, and the problems found (defaults used for those)."""
    problems: list[str] = []
    if raw is None:
        return Settings(), problems
    if isinstance(raw, dict) and isinstance(raw.get(SECTION), dict):
        raw = raw[SECTION]
    if not isinstance(raw, dict):
        return Settings(), [f"settings must be an object, not {type(raw).__name__}"]
    strict = raw.get("strict", False)
    if not isinstance(strict, bool):
        problems.append(f"'strict' must be true or false, not {strict!r}")
        strict = False
    severity = dict(DEFAULT_SEVERITY)
    overrides = raw.get("severity", {}) or {}
    if not isinstance(overrides, dict):
        problems.append("'severity' must be an object mapping finding codes to severities")
        overrides = {}
    for code, level in overrides.items():
        if code not in CODES:
            problems.append(f"unknown finding code {code!r} in 'severity'")
        elif not isinstance(level, str) or level.lower() not in _SEVERITIES:
            problems.append(f"severity of {code!r} must be one of error, warning, information, "
                            f"hint, not {level!r}")
        else:
            severity[code] = _SEVERITIES[level.lower()]
    debounce = raw.get("debounce", 0)
    if isinstance(debounce, bool) or not isinstance(debounce, int) or not 0 <= debounce <= 10_000:
        problems.append(f"'debounce' must be a number of milliseconds (0-10000), not {debounce!r}")
        debounce = 0
    semantics = raw.get("semantics", ORIGINAL)
    if semantics not in SEMANTICS:
        problems.append(f"'semantics' must be one of {', '.join(SEMANTICS)}, not {semantics!r}")
        semantics = ORIGINAL
    thread_launch = raw.get("threadLaunch", False)
    if not isinstance(thread_launch, bool):
        problems.append(f"'threadLaunch' must be true or false, not {thread_launch!r}")
        thread_launch = False
    waits_on = raw.get("waitsOnHints", True)
    if not isinstance(waits_on, bool):
        problems.append(f"'waitsOnHints' must be true or false, not {waits_on!r}")
        waits_on = True
    return Settings(strict, severity, debounce, semantics, thread_launch, waits_on), problems
