"""Suppression comments (`// gpu-async-lsp: ignore[...]`): which findings they hide, the
warnings of invalid ones, and the edit of the server's quick fix that adds one."""

from __future__ import annotations

from gpu_async_lsp.async_region import analyze, fix_text
from gpu_async_lsp.async_region import findings as F
from gpu_async_lsp.async_region.suppression import (
    NO_CONTEXT,
    SUPPRESSIBLE,
    directives,
    outside,
    suppress,
    suppression_edit,
)
from gpu_async_lsp.edits import apply_edits
from gpu_async_lsp.text import LineIndex

HEADER = "func.func @f(%n: index) {\n  %a = gpu.alloc (%n) : memref<?xf32>\n"
FOOTER = "  return\n}\n"


def visible(text: str) -> list[tuple[str, int]]:
    """(code, 1-based line) of each finding that the comments of `text` leave."""
    index = LineIndex(text)
    return [(f.code, index.line_col_1based(f.start)[0])
            for f in suppress(text, analyze(text).findings)]


def body(*lines: str) -> str:
    return HEADER + "".join(f"  {line}\n" for line in lines) + FOOTER


def test_suppression_comment_at_line_end_hides_the_findings_of_that_line():
    text = body("gpu.wait  // gpu-async-lsp: ignore", "gpu.wait")
    assert visible(text) == [("pre-existing-wait", 4)]


def test_suppression_comment_alone_above_hides_the_findings_of_the_next_line():
    text = body("// gpu-async-lsp: ignore", "gpu.wait", "gpu.wait")
    assert visible(text) == [("pre-existing-wait", 5)]


def test_suppression_comment_above_a_blank_line_hides_nothing():
    text = body("// gpu-async-lsp: ignore", "", "gpu.wait")
    assert visible(text) == [("pre-existing-wait", 5)]


def test_suppression_comment_above_another_comment_hides_nothing():
    text = body("// gpu-async-lsp: ignore", "// why: see below", "gpu.wait")
    assert visible(text) == [("pre-existing-wait", 5)]


def test_suppression_codes_listed_hide_only_those_codes():
    text = body("gpu.wait // gpu-async-lsp: ignore[already-async]",
                "// gpu-async-lsp: ignore[already-async, pre-existing-wait]", "gpu.wait")
    assert visible(text) == [("pre-existing-wait", 3)]


def test_suppression_blanks_tabs_and_trailing_comma_in_the_list_are_allowed():
    text = body("gpu.wait //\tgpu-async-lsp:\tignore [ pre-existing-wait ,already-async, ]",
                "gpu.wait")
    assert visible(text) == [("pre-existing-wait", 4)]


def test_suppression_text_after_the_directive_is_a_free_reason():
    text = body("gpu.wait // gpu-async-lsp: ignore[pre-existing-wait] the host needs it",
                "gpu.wait // gpu-async-lsp: ignore because of the host loop")
    assert visible(text) == []


def test_suppression_crlf_lines_carry_no_cr_into_the_codes():
    text = body("// gpu-async-lsp: ignore[pre-existing-wait]", "gpu.wait",
                "gpu.wait // gpu-async-lsp: ignore", "gpu.wait").replace("\n", "\r\n")
    assert visible(text) == [("pre-existing-wait", 6)]
    assert [d.codes for d in directives(text)][0] == {"pre-existing-wait"}
    assert all(not d.problems for d in directives(text))


def test_suppression_phrase_inside_a_string_is_not_a_comment():
    text = body('gpu.wait {note = "// gpu-async-lsp: ignore"}',
                '"x.y"() {s = "a // gpu-async-lsp: ignore"} : () -> ()', "gpu.wait")
    assert visible(text) == [("pre-existing-wait", 3), ("pre-existing-wait", 5)]
    assert directives(text) == []


def test_suppression_comment_after_a_string_holding_slashes_counts():
    text = body('gpu.wait {note = "a // b"} // gpu-async-lsp: ignore')
    assert visible(text) == []


def test_suppression_phrase_in_a_comments_prose_is_no_directive():
    text = body("gpu.wait // the gpu-async-lsp: ignore comment would hide this")
    assert visible(text) == [("pre-existing-wait", 3)]


def test_suppression_directive_later_in_a_comment_is_prose():
    text = body("gpu.wait // kept: see `// gpu-async-lsp: ignore` in the README",
                "// Write `// gpu-async-lsp: ignore` to keep it:", "gpu.wait")
    assert visible(text) == [("pre-existing-wait", 3), ("pre-existing-wait", 5)]
    assert directives(text) == []


def test_suppression_unknown_code_warns_and_still_hides_the_known_ones():
    text = body("gpu.wait // gpu-async-lsp: ignore[pre-existing-wiat, pre-existing-wait]")
    [warning] = suppress(text, analyze(text).findings)
    assert warning.code == F.INVALID_SUPPRESSION
    assert warning.severity == F.Severity.WARNING
    assert text[warning.start:warning.end] == "pre-existing-wiat"
    assert warning.message.startswith(
        "unknown finding code 'pre-existing-wiat' in a suppression comment (known: "
        "pre-existing-wait, already-async,")


def test_suppression_syntax_findings_are_never_hidden():
    text = body("gpu.wait ) // gpu-async-lsp: ignore",
                "gpu.wait } // gpu-async-lsp: ignore[syntax]")
    codes = [f.code for f in suppress(text, analyze(text).findings)]
    assert F.SYNTAX in codes
    assert F.INVALID_SUPPRESSION in codes  # `syntax` listed: it cannot be suppressed


def test_suppression_malformed_directive_warns_and_hides_nothing():
    for comment in ("gpu-async-lsp: ignroe", "gpu-async-lsp: ignore[pre-existing-wait",
                    "gpu-async-lsp: ignored", "gpu-async-lsp:"):
        text = body(f"gpu.wait // {comment}")
        found = suppress(text, analyze(text).findings)
        assert [f.code for f in found] == ["pre-existing-wait", F.INVALID_SUPPRESSION], comment
        assert "malformed suppression comment" in found[1].message


def test_suppression_empty_list_warns_and_hides_nothing():
    text = body("gpu.wait // gpu-async-lsp: ignore[ ]")
    found = suppress(text, analyze(text).findings)
    assert [f.code for f in found] == ["pre-existing-wait", F.INVALID_SUPPRESSION]
    assert "lists no code" in found[1].message


def test_suppression_comment_on_or_above_the_func_hides_its_sync_gpu_ops_hint():
    plain = "func.func @f(%n: index) {\n  %a = gpu.alloc (%n) : memref<?xf32>\n  return\n}\n"
    assert visible(plain) == [("sync-gpu-ops", 1)]
    assert visible("// gpu-async-lsp: ignore[sync-gpu-ops]\n" + plain) == []
    assert visible(plain.replace("{\n", "{ // gpu-async-lsp: ignore\n", 1)) == []
    assert visible("// gpu-async-lsp: ignore[already-async]\n" + plain) == [("sync-gpu-ops", 2)]


def test_suppression_hidden_blocker_still_blocks_the_rewrite():
    text = body("gpu.wait // gpu-async-lsp: ignore[pre-existing-wait]")
    assert suppress(text, analyze(text).findings) == []
    assert fix_text(text) == text  # the original pass refuses the wait, hidden or not
    assert fix_text(text, "llvm22") != text


def test_suppression_kept_findings_keep_their_related_information():
    text = body("gpu.wait // gpu-async-lsp: ignore[already-async]", "gpu.wait")
    before = [f for f in analyze(text).findings if f.code == "pre-existing-wait"]
    kept = suppress(text, analyze(text).findings)
    assert kept == before and all(f.related for f in kept)


def test_suppression_text_without_the_marker_leaves_the_findings_as_they_are():
    text = body("gpu.wait")
    findings = analyze(text).findings
    assert suppress(text, findings) == findings
    assert suppress(text, findings, NO_CONTEXT) == findings


def test_suppression_outside_context_hides_on_the_first_and_last_line_of_a_piece():
    """The server analyses each function as its own text: a comment above its first line, or
    after its end on its last line, lies outside that text."""
    text = "// gpu-async-lsp: ignore[sync-gpu-ops]\n" + HEADER + FOOTER
    start = text.index("func.func")
    context = outside(text, start, len(text) - 1)
    assert context == ({"sync-gpu-ops"}, set())
    piece = text[start:len(text) - 1]
    assert suppress(piece, analyze(piece).findings, context) == []
    one_line = "module { func.func @f() { gpu.wait } } // gpu-async-lsp: ignore\n"
    start, end = one_line.index("func.func"), one_line.index("} }") + 1
    assert outside(one_line, start, end)[1] == SUPPRESSIBLE
    assert outside(body("gpu.wait"), 0, len(HEADER)) == NO_CONTEXT


def test_suppression_outside_context_ignores_a_comment_after_code_above():
    text = "%x = arith.constant 0 : index // gpu-async-lsp: ignore\n" + HEADER + FOOTER
    assert outside(text, text.index("func.func"), len(text) - 1) == NO_CONTEXT


# -- the quick fix's edit -----------------------------------------------------------------------

def edited(text: str, needle: str, code: str = "pre-existing-wait") -> str | None:
    edit = suppression_edit(text, text.index(needle), code)
    return None if edit is None else apply_edits(text, [edit])


def test_suppression_edit_appends_a_comment_at_the_end_of_the_line():
    text = body("gpu.wait   ")
    assert edited(text, "gpu.wait") == body(
        "gpu.wait // gpu-async-lsp: ignore[pre-existing-wait]   ")


def test_suppression_edit_adds_the_code_to_the_list_on_the_line():
    text = body("gpu.wait // gpu-async-lsp: ignore[already-async]")
    assert edited(text, "gpu.wait") == body(
        "gpu.wait // gpu-async-lsp: ignore[already-async, pre-existing-wait]")
    text = body("gpu.wait // gpu-async-lsp: ignore[ already-async, ] reason")
    assert edited(text, "gpu.wait") == body(
        "gpu.wait // gpu-async-lsp: ignore[ already-async, pre-existing-wait ] reason")


def test_suppression_edit_adds_the_code_to_the_list_alone_above():
    text = body("// gpu-async-lsp: ignore[already-async]", "gpu.wait // host loop")
    assert edited(text, "gpu.wait") == body(
        "// gpu-async-lsp: ignore[already-async, pre-existing-wait]", "gpu.wait // host loop")


def test_suppression_edit_after_another_comment_goes_alone_above_with_the_indentation():
    text = HEADER + "\t  gpu.wait // host loop\n" + FOOTER
    assert edited(text, "gpu.wait") == (HEADER + "\t  // gpu-async-lsp: ignore[pre-existing-wait]\n"
                                       "\t  gpu.wait // host loop\n" + FOOTER)


def test_suppression_edit_keeps_crlf_line_ends():
    text = body("gpu.wait", "gpu.wait // host").replace("\n", "\r\n")
    assert edited(text, "gpu.wait") == body(
        "gpu.wait // gpu-async-lsp: ignore[pre-existing-wait]", "gpu.wait // host").replace(
            "\n", "\r\n")
    assert edited(text, "gpu.wait // host") == body(
        "gpu.wait", "// gpu-async-lsp: ignore[pre-existing-wait]", "gpu.wait // host").replace(
            "\n", "\r\n")
    last = "module {\r\n  gpu.wait // host"
    assert edited(last, "gpu.wait") == (
        "module {\r\n  // gpu-async-lsp: ignore[pre-existing-wait]\r\n  gpu.wait // host")


def test_suppression_edit_none_when_hidden_already_or_not_suppressible():
    assert edited(body("gpu.wait // gpu-async-lsp: ignore"), "gpu.wait") is None
    assert edited(body("// gpu-async-lsp: ignore[pre-existing-wait]", "gpu.wait"),
                  "gpu.wait") is None
    assert edited(body("gpu.wait"), "gpu.wait", F.SYNTAX) is None
    assert edited(body("gpu.wait"), "gpu.wait", "no-such-code") is None


def test_suppression_edit_applied_hides_the_finding():
    for text in (body("gpu.wait"), body("gpu.wait // host"),
                 body("gpu.wait // gpu-async-lsp: ignore[already-async]"),
                 body("gpu.wait", "gpu.wait // host").replace("\n", "\r\n")):
        fixed = edited(text, "gpu.wait")
        assert [c for c, _ in visible(text)] == ["pre-existing-wait"] * text.count("gpu.wait")
        assert len(visible(fixed)) == len(visible(text)) - 1, fixed
