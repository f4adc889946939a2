"""Analysis layer: findings (diagnostics independent of any protocol), their codes and wording.

The messages are the pass's own (mlir/lib/Dialect/GPU/Transforms/AsyncRegionRewriter.cpp),
prefixed as MLIR's `emitOpError` prefixes them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

SOURCE = "gpu-async"


class Severity(enum.IntEnum):
    """Ordered as LSP orders DiagnosticSeverity (1 is the most severe)."""

    ERROR = 1
    WARNING = 2
    INFORMATION = 3
    HINT = 4

    @property
    def label(self) -> str:
        return self.name.lower()


PRE_EXISTING_WAIT = "pre-existing-wait"
ALREADY_ASYNC = "already-async"
ASYNC_OP_WITH_REGIONS = "async-op-with-regions"
LAUNCH_NOT_OUTLINED = "launch-not-outlined"
UNSUPPORTED_FORM = "unsupported-form"
SYNTAX = "syntax"
SYNC_GPU_OPS = "sync-gpu-ops"
# A `// gpu-async-lsp: ignore[...]` comment that names an unknown code or is malformed
# (async_region/suppression.py).
INVALID_SUPPRESSION = "invalid-suppression"

DEFAULT_SEVERITY = {
    PRE_EXISTING_WAIT: Severity.ERROR,
    ALREADY_ASYNC: Severity.ERROR,
    ASYNC_OP_WITH_REGIONS: Severity.ERROR,
    LAUNCH_NOT_OUTLINED: Severity.WARNING,
    UNSUPPORTED_FORM: Severity.WARNING,
    SYNTAX: Severity.ERROR,
    SYNC_GPU_OPS: Severity.HINT,
    INVALID_SUPPRESSION: Severity.WARNING,
}
CODES = tuple(DEFAULT_SEVERITY)
# Findings that stop the rewrite of their function.
BLOCKING = frozenset({PRE_EXISTING_WAIT, ALREADY_ASYNC, ASYNC_OP_WITH_REGIONS,
                      LAUNCH_NOT_OUTLINED, UNSUPPORTED_FORM})


def op_error(op_name: str, message: str) -> str:
    """MLIR's `op->emitOpError(message)` wording."""
    return f"'{op_name}' op {message}"


@dataclass(frozen=True)
class Related:
    """A place a finding points to (LSP relatedInformation)."""

    start: int
    end: int
    message: str


@dataclass(frozen=True)
class Finding:
    code: str
    message: str
    start: int
    end: int
    severity: Severity
    related: tuple[Related, ...] = field(default_factory=tuple)
    function: str | None = None  # `@f` of the func.func it belongs to
