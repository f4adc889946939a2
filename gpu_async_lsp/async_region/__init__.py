"""Analysis layer: MLIR's gpu-async-region rewrite on the syntax IR, as findings and text edits.

Must not import lark, pygls or lsprotocol.
"""

from gpu_async_lsp.async_region.findings import Finding, Related, Severity
from gpu_async_lsp.async_region.rewriter import Analysis, FunctionRewrite, analyze, fix_text

__all__ = ["Analysis", "Finding", "FunctionRewrite", "Related", "Severity", "analyze", "fix_text"]
