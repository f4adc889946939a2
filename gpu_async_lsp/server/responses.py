"""Protocol layer: the big answers, as JSON text built from the stored analysis.

Each builder takes a document's state and what the client can do, and returns the JSON text of
one response (server/protocol.py sends it as is). They run in the server's request thread, off
the event loop, and call `check()` between units so that a cancelled request stops early.
Diagnostics, code lenses and symbols are assembled from JSON fragments cached per unit and per
document version, so a keystroke re-renders what it moved.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from lsprotocol import types as lsp

from gpu_async_lsp.async_region import suppression
from gpu_async_lsp.async_region.findings import SOURCE, SYNC_GPU_OPS, Severity
from gpu_async_lsp.async_region.lowering import LOWERING_CODES, removed_by_lowering
from gpu_async_lsp.edits import TextEdit
from gpu_async_lsp.ide import features, semantic
from gpu_async_lsp.ide.units import (
    LAUNCH_VARIANT,
    LLVM22_SERIALIZING_VARIANT,
    LLVM22_VARIANT,
    LOWERING_VARIANT,
    SYNC_ONLY_VARIANT,
    VARIANT_BLOCKERS,
    DocumentAnalysis,
    FunctionInfo,
)
from gpu_async_lsp.server import convert
from gpu_async_lsp.server.capabilities import ClientFeatures
from gpu_async_lsp.server.documents import DocState
from gpu_async_lsp.text import LineIndex, positions_of

FIX_ALL_KIND = "source.fixAll.gpuAsync"
CODE_ACTION_KINDS = [lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.RefactorRewrite,
                     FIX_ALL_KIND]
# Commands of the code lenses (workspace/executeCommand); arguments: uri, `@f`, which of the
# functions named `@f` (split files repeat names). The command acts on the current version.
MAKE_ASYNC_COMMAND = "gpu-async.makeAsynchronous"
SHOW_BLOCKER_COMMAND = "gpu-async.showBlocker"
FIX_ALL_TITLE = "Make all GPU ops in this file asynchronous"
IGNORE_TITLE = "Ignore {code} here (// gpu-async-lsp: ignore[{code}])"
# The findings a suppression comment is offered for: not the hint of a function (the rewrite
# is its fix), nor what cannot be hidden (syntax errors).
IGNORABLE = suppression.QUICK_FIXABLE

Check = Callable[[], None]


def _never() -> None:
    pass


def _place(p) -> tuple[int, int]:
    return p.line, p.character


# -- diagnostics --------------------------------------------------------------------------------

class Fragments:
    """The diagnostics of units as JSON fragments, for one publication's uri, encoding and
    severities: a unit's fragment is kept on its result with the place it was made for, so
    that a unit whose place (line, column) and findings did not change since the last
    publication costs nothing (a keystroke re-renders one unit). `severity`: each code's
    severity; a code mapped to None is not published (not selected, or ignored)."""

    __slots__ = ("uri", "encoding", "severity", "table", "tails")

    def __init__(self, uri: str, encoding: str, severity: dict[str, Severity | None]):
        self.uri, self.encoding, self.severity = uri, encoding, severity
        self.table = tuple(severity.items())
        self.tails: dict = {}  # the text after each diagnostic's range, by message (convert.py)

    def published(self, f) -> bool:
        return self.severity.get(f.code, f.severity) is not None

    def fragment(self, result, line: int, character: int) -> str:
        """The diagnostics of a unit's result whose text starts at (line, character)."""
        key = (self.uri, self.encoding, line, character, self.table)
        cached = result.fragment
        if cached is None or cached[0] != key:
            uri, severity, tails = self.uri, self.severity, self.tails
            # In one pass where it can (the build, most units); else each finding placed
            # (`result.positions`, kept on the result) and formatted.
            text = convert.unit_fragment(result.findings, result.source, self.encoding, line,
                                         character, severity, tails)
            if text is not None:
                cached = result.fragment = (key, text)
                return text
            positions = result.positions(self.encoding)
            # A list, not a generator: the build makes a generator an object and a frame
            # to resume per diagnostic.
            text = ",".join([convert.placed_diagnostic_text(
                uri, f, line, character, start, end, related, severity, tails)
                for f, (start, end, related) in zip(result.findings, positions, strict=True)
                if severity.get(f.code, f.severity) is not None])
            cached = result.fragment = (key, text)
        return cached[1]

    def adopt(self, result, line: int, character: int, text: str) -> None:
        """Keep on `result` its fragment at (line, character), made elsewhere."""
        result.fragment = ((self.uri, self.encoding, line, character, self.table), text)

    def headers(self, findings: list, index: LineIndex | None,
                text: str) -> tuple[list[str], LineIndex | None]:
        """The JSON text of each published finding of container headers (of `text`), and
        the line index they were placed with (`index`, or one made for them)."""
        kept = [f for f in findings if self.published(f)]
        if not kept:
            return [], index
        if index is None:
            index = LineIndex(text)
        return [json.dumps(convert.diagnostic_json(self.uri, index, f, self.encoding,
                                                   self.severity)) for f in kept], index


def diagnostics(uri: str, a: DocumentAnalysis, index: LineIndex | None, encoding: str,
                severity: dict[str, Severity | None]) -> str:
    """publishDiagnostics for an analysis, as JSON text assembled from one cached fragment
    per unit (`Fragments`). Without a line index of the text (a first analysis), the places
    of the units are counted in one pass (text.positions_of)."""
    fragments = Fragments(uri, encoding, severity)
    parts, index = fragments.headers(a.header_findings, index, a.text)
    placed = [unit for unit in a.units if unit.result.findings]
    if index is None:
        bases = positions_of(a.text, [unit.base for unit in placed], encoding)
    else:
        bases = index.line_columns([unit.base for unit in placed], encoding)
    fragment = fragments.fragment
    for unit, (line, character) in zip(placed, bases, strict=True):
        text = fragment(unit.result, line, character)
        if text:
            parts.append(text)
    return publication_of(uri, a.version, parts)


def out_of_sync_diagnostics(uri: str, version: int | None, why: str) -> str:
    """The one finding of a document whose text the server lost track of."""
    return _notice(uri, version, "out-of-sync", lsp.DiagnosticSeverity.Warning,
                   f"gpu-async-lsp lost track of this document's text: {why}. Findings are "
                   "paused until the editor sends the whole text again (close and reopen the "
                   "document).")


def internal_error_diagnostics(uri: str, version: int | None, error: str) -> str:
    """The one finding of a document whose analysis failed (a bug in this server)."""
    return _notice(uri, version, "internal-error", lsp.DiagnosticSeverity.Error,
                   f"gpu-async-lsp could not analyse this document: internal error {error}. "
                   "Please report it with the document; the next change is analysed afresh.")


def _notice(uri: str, version: int | None, code: str, severity, message: str) -> str:
    """A publication of one finding about the whole document, at its start."""
    d = {"range": convert.json_range_of((0, 0), (0, 0)), "message": message,
         "severity": int(severity), "code": code, "source": SOURCE}
    return publication(uri, version, json.dumps(d))


def publication(uri: str, version: int | None, diagnostics_text: str) -> str:
    """A publishDiagnostics notification of diagnostics given as JSON text."""
    return publication_of(uri, version, [diagnostics_text])


def publication_of(uri: str, version: int | None, parts: list[str]) -> str:
    """The same, of the diagnostics' JSON text in parts (joined with commas): one copy of
    the text, however big (10k diagnostics at 50k lines of host code: 3 MB)."""
    v = "" if version is None else ',"version":' + str(int(version))
    head = ('{"jsonrpc":"2.0","method":"textDocument/publishDiagnostics","params":{"uri":'
            + json.dumps(uri) + v + ',"diagnostics":[')
    return "".join((head, ",".join(parts), "]}}")) if len(parts) < 2 else ",".join(
        [head + parts[0], *parts[1:-1], parts[-1] + "]}}"])


# -- code actions -------------------------------------------------------------------------------

def function_edit(state: DocState, functions: list[FunctionInfo], encoding: str,
                  document_changes: bool, variant: str | None = None) -> dict:
    """The rewrite of `functions` as one WorkspaceEdit (JSON values); with a `variant`, that
    other rewrite of blocked functions (FunctionInfo.variants)."""
    edits = convert.merge_insertions([e for fn in functions for e in (
        fn.edits if variant is None else fn.variant_edits(variant) or ())])
    return convert.workspace_edit_json(
        state.uri, state.analysis.version,
        convert.text_edits_json(state.line_index(), edits, encoding), document_changes)


def file_edit(state: DocState, encoding: str, document_changes: bool) -> dict:
    """Every rewritable function's rewrite (one edit each), cached per version."""
    a = state.analysis
    key = (encoding, document_changes)
    cached = state.fix_all
    if cached is None or cached[0] is not a or cached[1] != key:
        edit = convert.workspace_edit_json(
            state.uri, a.version, convert.text_edits_json(state.line_index(), a.fixes(), encoding),
            document_changes)
        cached = state.fix_all = (a, key, edit)
    return cached[2]


# The titles of the other rewrites of a blocked function, the quick fixes of its blockers.
VARIANT_TITLES = {
    LLVM22_VARIANT: "{title}, threading through the existing gpu.wait (as LLVM 22 does)",
    LLVM22_SERIALIZING_VARIANT: "{title}, threading through the existing gpu.wait (as LLVM 22 "
                                "does: serializes the streams it starts apart)",
    SYNC_ONLY_VARIANT: "{title}, threading only its synchronous ops (keeps its streams apart)",
    LOWERING_VARIANT: "Make GPU ops in {name} lower with LLVM 22",
    LAUNCH_VARIANT: "{title}, gpu.launch included",
}


def code_actions(state: DocState, caps: ClientFeatures, encoding: str,
                 params: lsp.CodeActionParams, check: Check = _never) -> str:
    """The code actions of a range: per function one rewrite, offered once (the quick fix of
    its `sync-gpu-ops` hint when that is in the context, else a refactor; a client that asks
    for only one kind gets that kind); for a blocked function, the other rewrites that get past
    its blockers (LLVM 22's through waits and async ops, or with gpu.launch threaded) as the
    quick fixes of those findings; the file-wide fix; last, per finding in the context that
    a comment can hide, the quick fix that adds `// gpu-async-lsp: ignore[code]` on its line.

    A client that resolves `edit` gets each action without its edit and with `data` naming it
    ({uri, version, start of the function or null for the file, variant}, or {uri, version,
    ignore: code, at: offset} for a comment); codeAction/resolve fills the edit in
    (`resolve_code_action`)."""
    request = _ActionRequest(state, caps, encoding, params)
    actions: list[str] = []
    for n, fn in enumerate(request.functions()):
        if n % 64 == 0:
            check()
        if not fn.rewritable:
            actions.extend(_lowering_actions(request, fn))
        if fn.sync_ops == 0:
            continue
        actions.extend(_rewrite_actions(request, fn) if fn.rewritable
                       else _blocked_actions(request, fn))
    if request.wants(FIX_ALL_KIND) and state.analysis.any_rewritable:
        check()
        actions.append(request.action(FIX_ALL_TITLE, FIX_ALL_KIND, None))
    if request.wants(lsp.CodeActionKind.QuickFix):
        actions.extend(_ignore_actions(state, caps, encoding, params.context.diagnostics or []))
    return "[" + ",".join(actions) + "]"


class _ActionRequest:
    """One codeAction request, resolved once: the kinds it wants, the range, our findings in
    its context (the `sync-gpu-ops` hints and the blockers, by start position), and how its
    actions are written (with their edit, or with `data` for codeAction/resolve)."""

    __slots__ = ("state", "caps", "encoding", "index", "only", "start", "end", "hints",
                 "blockers", "lowering")

    def __init__(self, state: DocState, caps: ClientFeatures, encoding: str,
                 params: lsp.CodeActionParams):
        self.state, self.caps, self.encoding = state, caps, encoding
        self.index = state.line_index()
        self.only = params.context.only
        self.start = convert.offset_of(self.index, params.range.start, encoding)
        self.end = convert.offset_of(self.index, params.range.end, encoding)
        self.hints: dict[tuple[int, int], lsp.Diagnostic] = {}
        self.blockers: dict[tuple[int, int], list] = {}
        self.lowering: list[lsp.Diagnostic] = []  # not-lowered, stream-hazard
        for d in params.context.diagnostics or []:
            if d.source != SOURCE:
                continue
            at = (d.range.start.line, d.range.start.character)
            if d.code == SYNC_GPU_OPS:
                self.hints[at] = d
            elif d.code in LOWERING_CODES and removed_by_lowering(d.code, d.message):
                self.lowering.append(d)
            elif any(d.code in codes for codes in VARIANT_BLOCKERS.values()):
                self.blockers.setdefault(at, []).append(d)

    def functions(self) -> list[FunctionInfo]:
        return self.state.analysis.functions_between(self.start, self.end)

    def wants(self, kind: str) -> bool:
        return not self.only or any(kind == k or kind.startswith(k + ".") for k in self.only)

    def at(self, offset: int) -> tuple[int, int]:
        return _place(self.index.position(offset, self.encoding))

    def action(self, title: str, kind: str, target: FunctionInfo | None,
               variant: str | None = None, **extra) -> str:
        out = {"title": title, "kind": kind, **extra}
        state, caps = self.state, self.caps
        if caps.code_action_resolve_edit:
            out["data"] = {"uri": state.uri, "version": state.analysis.version,
                           "function": None if target is None else target.start,
                           "variant": variant}
        elif target is None:
            out["edit"] = file_edit(state, self.encoding, caps.document_changes)
        else:
            out["edit"] = function_edit(state, [target], self.encoding, caps.document_changes,
                                        variant)
        return json.dumps(out, ensure_ascii=False)


def _unstructured(diagnostics: list) -> list:
    return [convert.CONVERTER.unstructure(d) for d in diagnostics]


def _rewrite_actions(request: _ActionRequest, fn: FunctionInfo) -> list[str]:
    """A rewritable function: the quick fix of its hint when the context holds it, else a
    refactor."""
    title = f"Make GPU ops in {fn.name} asynchronous"
    hint = request.hints.get(request.at(fn.anchor[0]))
    if hint is not None and request.wants(lsp.CodeActionKind.QuickFix):
        return [request.action(title, lsp.CodeActionKind.QuickFix, fn, isPreferred=True,
                               diagnostics=_unstructured([hint]))]
    if request.wants(lsp.CodeActionKind.RefactorRewrite):
        return [request.action(title, lsp.CodeActionKind.RefactorRewrite, fn)]
    return []


def _lowering_actions(request: _ActionRequest, fn: FunctionInfo) -> list[str]:
    """A function the rewrite leaves alone, with findings of the lowering in the context that
    `--fix` removes: the quick fix that makes its async ops lower as written (what `--fix`
    does to it)."""
    if not request.lowering or not request.wants(lsp.CodeActionKind.QuickFix):
        return []
    fixed = [d for d in request.lowering
             if fn.start <= convert.offset_of(request.index, d.range.start, request.encoding)
             <= fn.end]
    if not fixed or not fn.lowering_edits():
        return []
    return [request.action(VARIANT_TITLES[LOWERING_VARIANT].format(name=fn.name),
                           lsp.CodeActionKind.QuickFix, fn, LOWERING_VARIANT,
                           diagnostics=_unstructured(fixed))]


def _blocked_actions(request: _ActionRequest, fn: FunctionInfo) -> list[str]:
    """A blocked function: each rewrite that gets past its blockers (the quick fix of those in
    the context, else a refactor); without one, the rewrite disabled with the first blocker
    as the reason, where the client shows disabled actions."""
    title = f"Make GPU ops in {fn.name} asynchronous"
    out = []
    for variant, _ in fn.variants:
        if variant == LOWERING_VARIANT:
            continue  # offered for the findings it removes (_lowering_actions)
        codes = VARIANT_BLOCKERS[variant]
        fixed = [d for s, _ in fn.blocker_spans for d in request.blockers.get(request.at(s), [])
                 if d.code in codes]
        variant_title = VARIANT_TITLES[variant].format(title=title)
        if fixed and request.wants(lsp.CodeActionKind.QuickFix):
            out.append(request.action(variant_title, lsp.CodeActionKind.QuickFix, fn, variant,
                                      diagnostics=_unstructured(fixed)))
        elif request.wants(lsp.CodeActionKind.RefactorRewrite):
            out.append(request.action(variant_title, lsp.CodeActionKind.RefactorRewrite, fn,
                                      variant))
    if (not out and request.caps.code_action_disabled
            and request.wants(lsp.CodeActionKind.RefactorRewrite)):
        out.append(json.dumps({"title": title, "kind": lsp.CodeActionKind.RefactorRewrite,
                               "disabled": {"reason": fn.first_blocker or "blocked"}},
                              ensure_ascii=False))
    return out


def _ignore_actions(state: DocState, caps: ClientFeatures, encoding: str,
                    diagnostics: list) -> list[str]:
    """Per current finding among `diagnostics` that a comment can hide, the quick fix that
    adds one on its line (one per edit: two findings of a code on one line share it)."""
    a = state.analysis
    index = state.line_index()
    out = []
    seen = set()
    for d in diagnostics:
        if d.source != SOURCE or d.code not in IGNORABLE:
            continue
        at = convert.offset_of(index, d.range.start, encoding)
        edit = ignore_edit(a, at, d.code)
        if edit is None or (edit.start, edit.new_text) in seen:
            continue
        seen.add((edit.start, edit.new_text))
        item = {"title": IGNORE_TITLE.format(code=d.code), "kind": lsp.CodeActionKind.QuickFix,
                "diagnostics": [convert.CONVERTER.unstructure(d)]}
        if caps.code_action_resolve_edit:
            item["data"] = {"uri": state.uri, "version": a.version, "ignore": d.code, "at": at}
        else:
            item["edit"] = _ignore_workspace_edit(state, edit, encoding, caps.document_changes)
        out.append(json.dumps(item, ensure_ascii=False))
    return out


def ignore_edit(a: DocumentAnalysis, at: int, code: str) -> TextEdit | None:
    """The edit that hides the finding of `code` starting at `at`, or None when the analysis
    has no such finding (the client's diagnostic is stale) or a comment hides it already."""
    unit = a.unit_at(at)
    if unit is None or not any(f.code == code and f.start + unit.base == at
                               for f in unit.result.findings):
        return None
    return suppression.suppression_edit(a.text, at, code)


def _ignore_workspace_edit(state: DocState, edit: TextEdit, encoding: str,
                           document_changes: bool) -> dict:
    return convert.workspace_edit_json(
        state.uri, state.analysis.version,
        convert.text_edits_json(state.line_index(), [edit], encoding), document_changes)


def resolve_code_action(state: DocState, caps: ClientFeatures, encoding: str,
                        action: dict) -> dict | None:
    """`action` (as the client sent it back) with its edit, or None when the function it
    names, or the finding it hides, is not in the current version (the document changed
    since)."""
    data = action.get("data")
    function = data.get("function")
    variant = data.get("variant")
    a = state.analysis
    ignore, at = data.get("ignore"), data.get("at")
    if isinstance(ignore, str) and isinstance(at, int) and not isinstance(at, bool):
        edit = ignore_edit(a, at, ignore)
        if edit is not None:
            edit = _ignore_workspace_edit(state, edit, encoding, caps.document_changes)
    elif function is None:
        edit = file_edit(state, encoding, caps.document_changes) if a.any_rewritable else None
    else:
        fn = next((f for f in a.functions_between(function, function) if f.start == function
                   and (f.rewritable if variant is None else f.variant_edits(variant))), None)
        edit = None if fn is None else function_edit(state, [fn], encoding,
                                                     caps.document_changes, variant)
    if edit is None:
        return None
    return {**action, "edit": edit}


# -- code lens ----------------------------------------------------------------------------------

def code_lenses(state: DocState, encoding: str, check: Check = _never) -> str:
    a = state.analysis
    key = ("lenses", encoding)
    cached = a.memo.get(key)
    if cached is None:
        index = state.line_index()
        lenses = []
        uri = json.dumps(state.uri)
        for n, (unit, placement, unit_lenses) in enumerate(
                features.code_lenses(a, index, encoding)):
            if n % 64 == 0:
                check()
            # One JSON fragment per unit, kept while its place and names do not change
            # (an edit re-renders the lenses of the units it moved, as for diagnostics).
            fragment_key = (uri, encoding, placement)
            fragment = unit.result.memo.get("lens-json")
            if fragment is None or fragment[0] != fragment_key:
                text = ",".join(json.dumps({
                    "range": convert.json_range_of(lens.start, lens.end),
                    "command": {"title": lens.title,
                                "command": SHOW_BLOCKER_COMMAND if lens.blocker
                                else MAKE_ASYNC_COMMAND,
                                "arguments": [state.uri, lens.function, lens.nth]
                                + ([lens.variant] if lens.variant else [])}},
                    ensure_ascii=False) for lens in unit_lenses)
                fragment = unit.result.memo["lens-json"] = (fragment_key, text)
            lenses.append(fragment[1])
        cached = a.memo[key] = "[" + ",".join(x for x in lenses if x) + "]"
    return cached


# -- navigation ---------------------------------------------------------------------------------

def document_symbols(state: DocState, caps: ClientFeatures, encoding: str,
                     check: Check = _never) -> str:
    a = state.analysis
    tree = caps.hierarchical_symbols
    key = ("symbols", encoding, tree)
    cached = a.memo.get(key)
    if cached is not None:
        return cached
    index = state.line_index()
    nodes = features.document_symbols(a)
    bases: dict = {}
    kinds = convert.SYMBOL_KINDS

    def ranges(node: features.SymbolNode) -> tuple[dict, dict]:
        start, end, sel_start, sel_end = features.symbol_places(node, index, encoding, bases)
        return convert.json_range_of(start, end), convert.json_range_of(sel_start, sel_end)

    out = []
    n = 0
    if tree:
        # DocumentSymbol trees, built without recursion (modules may nest deeply).
        stack = [(node, out) for node in reversed(nodes)]
        while stack:
            n += 1
            if n % 1024 == 0:
                check()
            node, siblings = stack.pop()
            children: list = []
            whole, selection = ranges(node)
            siblings.append({"name": node.name, "detail": node.detail,
                             "kind": int(kinds[node.kind]), "range": whole,
                             "selectionRange": selection, "children": children})
            stack.extend((c, children) for c in reversed(node.children))
    else:
        # A client without hierarchy support gets the flat list, each with its container.
        stack = [(node, None) for node in reversed(nodes)]
        while stack:
            n += 1
            if n % 1024 == 0:
                check()
            node, parent = stack.pop()
            item = {"name": node.name, "kind": int(kinds[node.kind]),
                    "location": {"uri": state.uri, "range": ranges(node)[0]}}
            if parent is not None:
                item["containerName"] = parent
            out.append(item)
            stack.extend((c, node.name) for c in reversed(node.children))
    cached = a.memo[key] = json.dumps(out, ensure_ascii=False)
    return cached


def folding_ranges(state: DocState, caps: ClientFeatures) -> str:
    found = features.folding_ranges(state.analysis, state.line_index())
    limit = caps.folding_range_limit
    if limit is not None:
        found = found[:max(limit, 0)]
    return json.dumps([{"startLine": first, "endLine": last, "kind": "region"}
                       for first, last, _ in found])


def semantic_tokens(state: DocState, encoding: str, rng: lsp.Range | None = None,
                    check=None) -> str:
    """SemanticTokens of the document (or of the units a range touches) as JSON text."""
    index = state.line_index()
    if rng is None:
        data = semantic.document_data(state.analysis, index, encoding, check=check)
    else:
        start = convert.offset_of(index, rng.start, encoding)
        end = convert.offset_of(index, rng.end, encoding)
        data = semantic.document_data(state.analysis, index, encoding, start, end, check)
    return '{"data":[' + data + "]}"


def locations(state: DocState, spans, encoding: str) -> str:
    index = state.line_index()
    return json.dumps([{"uri": state.uri,
                        "range": convert.json_range(index, s.start, s.end, encoding)}
                       for s in spans], ensure_ascii=False)


def inlay_hints(state: DocState, encoding: str, rng: lsp.Range, explain: bool = True) -> str:
    """The hints in a range; without `explain`, none of those explaining threaded code."""
    index = state.line_index()
    start = convert.offset_of(index, rng.start, encoding)
    end = convert.offset_of(index, rng.end, encoding)
    hints = []
    for unit, hint in features.inlay_hints(state.analysis, min(start, end), max(start, end)):
        if hint.explains and not explain:
            continue
        p = index.position(unit.base + hint.offset, encoding)
        item = {"position": {"line": p.line, "character": p.character}, "label": hint.label,
                "paddingLeft": hint.pad_left, "paddingRight": hint.pad_right}
        if hint.tooltip is not None:
            item["tooltip"] = hint.tooltip
        hints.append(item)
    return json.dumps(hints, ensure_ascii=False)
