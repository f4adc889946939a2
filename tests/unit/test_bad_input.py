"""`gpu-async-lsp check` on bad input: it exits 0, 1 or 2 with a message,
never prints a traceback, `--fix` never writes a file it could not fully parse, and a rewrite
never loses a byte it did not mean to change.

Most cases run the real command (`python -m gpu_async_lsp`); the many small ones (every prefix
of a corpus file, generated token soup) call `main()` in-process for speed. Seeded, bounded.
"""

from __future__ import annotations

import difflib
import io
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpu_async_lsp.cli import main

REPO = Path(__file__).resolve().parents[2]
# CI clones the repo with shared/ beside it.
CORPUS_FILE = (REPO.parent / "shared" / "corpus" / "upstream" / "mlir" / "test" / "Dialect"
               / "GPU" / "async-region.mlir")
EXIT_CODES = {0, 1, 2}

SYNC_FUNC = """\
func.func @f(%m: memref<4xf32>) {
  gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32>
  return
}
"""


# -- running the command -----------------------------------------------------------------------

def command(*args: str, input: bytes | None = None, timeout: float = 120):
    """Run `python -m gpu_async_lsp ...`; assert the exit status and that nothing crashed."""
    proc = subprocess.run([sys.executable, "-m", "gpu_async_lsp", *args], input=input,
                          capture_output=True, timeout=timeout)
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode in EXIT_CODES, (proc.returncode, err[-2000:])
    assert "Traceback" not in err, err[-4000:]
    return proc.returncode, proc.stdout, err


def call_main(argv: list[str], stdin: bytes = b"") -> tuple[int, bytes, str]:
    """`main(argv)` in this process with its own stdin/stdout/stderr (usable under hypothesis)."""
    saved = sys.stdin, sys.stdout, sys.stderr
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.StringIO()
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout, sys.stderr = out, err
    try:
        code = main(argv)
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
    out.flush()
    assert code in EXIT_CODES, (code, err.getvalue()[-2000:])
    assert "Traceback" not in err.getvalue()
    return code, out.buffer.getvalue(), err.getvalue()


# -- what --fix may change ---------------------------------------------------------------------

_LINE = re.compile(r"[^\n]*\n|[^\n]+\Z")
_WAIT_LINE = re.compile(r"[ \t]*(?:%[\w$.\-]+ = )?gpu\.wait(?: async)?(?: \[%[\w$.\-]+\])?"
                        r"[ \t]*\r?\n?\Z")


def _is_subsequence(short: str, long: str) -> bool:
    it = iter(long)
    return all(ch in it for ch in short)


def assert_only_gpu_changes(before: str, after: str) -> None:
    """`after` is `before` with GPU-op lines changed and `gpu.wait` lines inserted, nothing else.

    Every line of `before` survives in order: a changed line (always a GPU op's) keeps all its
    characters, in order, with only `async [%t]` / `, %t` inserted.
    """
    a, b = _LINE.findall(before), _LINE.findall(after)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        old, new = a[i1:i2], b[j1:j2]
        context = f"\n--- before\n{''.join(old)}\n+++ after\n{''.join(new)}"
        assert tag != "delete", "lines lost" + context
        if tag == "insert":
            assert all(_WAIT_LINE.match(line) for line in new), "inserted non-wait" + context
        elif tag == "replace":
            assert all("gpu." in line for line in old), "changed a non-GPU line" + context
            assert all("gpu." in line for line in new), "unexpected new line" + context
            assert _is_subsequence("".join(old), "".join(new)), "bytes lost" + context


def assert_fix_invariants(before: bytes, after: bytes, syntax_errors: bool) -> None:
    if syntax_errors or before == after:
        assert after == before, "a buffer with syntax errors was rewritten"
        return
    assert_only_gpu_changes(before.decode("utf-8"), after.decode("utf-8"))


def test_assert_only_gpu_changes_rejects_lost_and_foreign_edits():
    fixed = SYNC_FUNC.replace("  gpu.memcpy",
                              "  %t0 = gpu.wait async\n  %t1 = gpu.memcpy async [%t0]")
    assert_only_gpu_changes(SYNC_FUNC, fixed)
    with pytest.raises(AssertionError):
        assert_only_gpu_changes(SYNC_FUNC, SYNC_FUNC.replace("  return\n", ""))
    with pytest.raises(AssertionError):
        assert_only_gpu_changes(SYNC_FUNC, SYNC_FUNC.replace("return", "return // x"))
    with pytest.raises(AssertionError):
        assert_only_gpu_changes(SYNC_FUNC, SYNC_FUNC.replace("gpu.memcpy %m,", "gpu.memcpy %n,"))


def check_fix_on_files(paths: list[Path], *extra: str) -> tuple[int, str, str]:
    """`check --fix` the files in one run; assert each one's invariants; (status, out, err)."""
    before = {p: p.read_bytes() for p in paths}
    code, out_bytes, err = command("check", "--fix", *extra, *map(str, paths))
    out = out_bytes.decode("utf-8", "replace")
    for p in paths:
        data = before[p]
        after = p.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            assert after == data, f"{p}: not UTF-8 yet rewritten"
            continue
        # Findings (of the fixed text) are on stdout; a rewrite never adds a syntax error.
        # A changed file is re-parsed here: the original must have had none.
        syntax = any(line.startswith(f"{p}:") and line.endswith("[syntax]")
                     for line in out.splitlines())
        if after != data:
            syntax = syntax or _has_syntax_errors(text)
        assert_fix_invariants(data, after, syntax)
    return code, out, err


def _has_syntax_errors(text: str) -> bool:
    from gpu_async_lsp.async_region import analyze

    return analyze(text).has_syntax_errors


# -- random bytes ------------------------------------------------------------------------------

def test_check_random_bytes_files_exit_cleanly_and_stay_untouched(tmp_path):
    rng = random.Random(20240601)
    paths = []
    for i in range(30):
        n = rng.choice([0, 1, 7, 100, 2000])
        data = bytes(rng.randrange(256) for _ in range(n))
        if i % 3 == 0:  # valid UTF-8 noise with MLIR's punctuation
            data = "".join(rng.choice('{}()<>[]"%@^#!:=,.\\ \n\r\tagpu.waitmemcpyé€😀\0')
                           for _ in range(n)).encode()
        paths.append(tmp_path / f"r{i:02}.mlir")
        paths[-1].write_bytes(data)
    code, _, err = check_fix_on_files(paths, "--jobs", "2")
    assert code == 2  # some of them are not UTF-8
    assert "not valid UTF-8" in err
    code, out, _ = command("check", "--output-format", "json", str(tmp_path))
    assert isinstance(json.loads(out), list)


# -- every prefix of a corpus file ---------------------------------------------------------------

def _corpus_text() -> str:
    if not CORPUS_FILE.exists():
        if os.environ.get("CI"):
            pytest.fail(f"corpus file missing in CI: {CORPUS_FILE} (shared/ beside the repo)")
        pytest.skip(f"corpus not present at {CORPUS_FILE} (shared/ beside the repo)")
    return CORPUS_FILE.read_bytes().decode("utf-8")


def test_check_fix_every_prefix_of_corpus_file_keeps_invariants():
    text = _corpus_text()
    rewritten = 0
    for i in range(len(text) + 1):
        data = text[:i].encode()
        code, out, err = call_main(["check", "--fix", "-"], data)
        syntax = "[syntax]" in err
        assert_fix_invariants(data, out, syntax)
        rewritten += out != data
        if code == 0:
            assert " error: " not in err
    assert rewritten > 0  # the whole file has rewritable functions


def test_check_prefixes_of_corpus_file_via_command(tmp_path):
    text = _corpus_text()
    rng = random.Random(7)
    cuts = sorted({len(text) // 2, len(text) - 1, text.index("{") + 1,
                   text.index("gpu.launch_func") + 5, text.index("blocks in") + 4,
                   *(rng.randrange(len(text)) for _ in range(5))})
    paths = []
    for cut in cuts:
        paths.append(tmp_path / f"prefix{cut:05}.mlir")
        paths[-1].write_text(text[:cut], encoding="utf-8")
    check_fix_on_files(paths)
    for p in paths[:2]:
        command("tree", str(p))
        command("check", "--output-format", "sarif", str(p))


# -- generated token soup ------------------------------------------------------------------------

FRAGMENTS = [
    "func.func @f(%m: memref<4xf32>) {", "func.func @g() {", "module {",
    "module attributes {gpu.container_module} {", "gpu.module @k {",
    "gpu.func @kern() kernel {", "gpu.return", "}", "{", "return", "func.return",
    "gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32>", "%a = gpu.alloc() : memref<4xf32>",
    "gpu.dealloc %a : memref<4xf32>", "gpu.memset %m, %z : memref<4xf32>, f32",
    "%z = arith.constant 0.0 : f32", "%c0 = arith.constant 0 : index",
    "gpu.launch_func @k::@kern blocks in (%c0, %c0, %c0) threads in (%c0, %c0, %c0)",
    "gpu.wait", "%t0 = gpu.wait async", "gpu.wait [%t0]",
    "scf.for %i = %c0 to %c0 step %c0 {", "scf.if %b {", "} else {",
    "call @foo() : () -> ()", "cf.br ^bb1", "^bb1:", "// -----", "// comment é 😀",
    '"gpu.memcpy"(%m, %m) : (memref<4xf32>, memref<4xf32>) -> ()', '"', "'", "(", ")",
    "<", ">", "[", "]", "%", "@", "#map = affine_map<(d0) -> (d0)>", "loc(unknown)",
    '{attr = "str}{"}', "%t0 = arith.constant 1 : index", "\t", "",
]


@st.composite
def soup(draw) -> str:
    lines = draw(st.lists(st.sampled_from(FRAGMENTS), max_size=40))
    indent = draw(st.sampled_from(["", "  ", "\t"]))
    eol = draw(st.sampled_from(["\n", "\r\n"]))
    tail = draw(st.sampled_from(["", eol]))
    return eol.join(indent + line for line in lines) + tail


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(soup())
def test_check_fix_token_soup_keeps_invariants(text):
    data = text.encode()
    _, out, err = call_main(["check", "--fix", "-"], data)
    syntax = "[syntax]" in err
    assert_fix_invariants(data, out, syntax)
    if out != data:
        again = call_main(["check", "--fix", "-"], out)[1]
        assert again == out, "a second --fix changed the text again"


# -- ops sharing a line ---------------------------------------------------------------------------

def test_check_gpu_op_after_another_op_on_its_line_is_seen():
    text = ("func.func @f(%m: memref<4xf32>) {\n"
            "  %c = arith.constant 0 : index  gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32>\n"
            "  return\n}\n")
    _, out, _ = call_main(["check", "-"], text.encode())
    assert "1 GPU op in @f runs synchronously" in out.decode()
    _, tree_out, _ = call_main(["tree", "-"], text.encode())
    assert tree_out.decode().split() == ["func.func", "arith.constant", "gpu.memcpy", "func.return"]


def test_check_terminator_after_op_on_its_line_parses():
    text = ("func.func @f(%m: memref<4xf32>) {\n"
            "  gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32> return }\n")
    _, out, _ = call_main(["check", "-"], text.encode())
    assert "[syntax]" not in out.decode()


# -- unbalanced braces and quotes ----------------------------------------------------------------

UNBALANCED = {
    "open_brace": SYNC_FUNC.replace("  return\n}\n", "  return\n"),
    "extra_close": SYNC_FUNC + "}\n}\n",
    "close_first": "}\n" + SYNC_FUNC,
    "open_quote": SYNC_FUNC.replace("return", 'return "unterminated'),
    "quote_at_eof": SYNC_FUNC + '"',
    "escaped_quote_at_eof": SYNC_FUNC + '"abc\\"',
    "single_quote": SYNC_FUNC.replace("return", "'return"),
    "open_paren": SYNC_FUNC.replace("gpu.memcpy %m, %m", "gpu.memcpy (%m, %m"),
    "open_angle": SYNC_FUNC.replace("memref<4xf32>)", "memref<4xf32)"),
    "open_bracket": SYNC_FUNC.replace("gpu.memcpy", "gpu.memcpy ["),
    "brace_in_string": SYNC_FUNC.replace("return", 'return {s = "}"}'),
    "many_opens": "func.func @f() {\n" + "{\n" * 5000,
    "many_closes": "}" * 5000 + "\n",
    "chunk_then_garbage": SYNC_FUNC + "// -----\n{{{ \"\n" + "// -----\n" + SYNC_FUNC,
}


@pytest.mark.parametrize("name", sorted(UNBALANCED))
def test_check_fix_unbalanced_braces_and_quotes_in_process(name):
    data = UNBALANCED[name].encode()
    code, out, err = call_main(["check", "--fix", "-"], data)
    assert_fix_invariants(data, out, "[syntax]" in err)
    assert code in EXIT_CODES


def test_check_fix_unbalanced_braces_and_quotes_via_command(tmp_path):
    paths = []
    for name, text in sorted(UNBALANCED.items()):
        paths.append(tmp_path / f"{name}.mlir")
        paths[-1].write_text(text, encoding="utf-8")
    code, out, _ = check_fix_on_files(paths)
    assert code == 1
    chunked = (tmp_path / "chunk_then_garbage.mlir").read_bytes()
    assert chunked == UNBALANCED["chunk_then_garbage"].encode()  # the file has a syntax error
    # The error costs its own chunk only: both functions around it are still analyzed.
    lines = [line for line in out.splitlines() if "chunk_then_garbage.mlir:" in line]
    assert [line.split(".mlir:")[1].split(": ")[0:2] for line in lines] == [
        ["1:11", "hint"], ["2:3", "warning"], ["6:1", "error"], ["8:11", "hint"],
        ["9:3", "warning"]]  # each function's synchronous op is not lowered as written


# -- 10,000 nested regions ---------------------------------------------------------------------

def _nested(depth: int) -> str:
    return ("func.func @f(%m: memref<4xf32>) {\n" + "scf.execute_region {\n" * depth
            + "gpu.memcpy %m, %m : memref<4xf32>, memref<4xf32>\n"
            + "scf.yield\n}\n" * depth + "return\n}\n")


def test_check_10000_nested_regions_exits_cleanly(tmp_path):
    f = tmp_path / "nested.mlir"
    f.write_text(_nested(10_000))
    code, _, err = command("check", str(f))
    assert f"{f}" in err or code in (0, 1)
    before = f.read_bytes()
    code, _, _ = command("check", "--fix", str(f))
    if code == 2:
        assert f.read_bytes() == before
    command("tree", str(f))


def test_check_10000_nested_regions_is_analyzed_and_fixed(tmp_path):
    f = tmp_path / "nested.mlir"
    f.write_text(_nested(10_000))
    code, out, err = command("check", str(f))
    assert "internal error" not in err
    assert (code, out.decode().count("[sync-gpu-ops]")) == (0, 1)
    code, out, err = command("tree", str(f))
    assert code == 0
    assert out.decode().count("scf.execute_region") == 10_000


def test_check_500_nested_regions_is_analyzed(tmp_path):
    f = tmp_path / "nested.mlir"
    f.write_text(_nested(500))
    code, _, err = command("check", "--fix", str(f))
    assert code == 0, err
    assert_only_gpu_changes(_nested(500), f.read_text())


# -- a 1,000,000-character line ----------------------------------------------------------------

LONG = 1_000_000
LONG_LINES = {
    "comment": SYNC_FUNC.replace("  return", "  // " + "x" * LONG + "\n  return"),
    "string_attr": SYNC_FUNC.replace(
        "  return", '  %s = arith.constant {v = "' + "y" * LONG + '"} 0 : index\n  return'),
    "operands": SYNC_FUNC.replace(
        "  return", '  "test.op"(' + ", ".join(["%m"] * (LONG // 4)) + ") : () -> ()\n  return"),
    "garbage": "(" * LONG + "\n",
    "one_line_program": SYNC_FUNC.replace("\n", " ") + " " * LONG,
}


def test_check_fix_million_character_lines(tmp_path):
    paths = []
    for name, text in sorted(LONG_LINES.items()):
        assert max(len(line) for line in text.split("\n")) >= LONG
        paths.append(tmp_path / f"{name}.mlir")
        paths[-1].write_text(text, encoding="utf-8")
    check_fix_on_files(paths, "--jobs", "2")
    fixed = (tmp_path / "comment.mlir").read_text()
    assert "gpu.memcpy async" in fixed
    assert "  // " + "x" * LONG + "\n" in fixed


# -- invalid UTF-8 on disk ---------------------------------------------------------------------

INVALID_UTF8 = {
    "lone_continuation": b"func.func @f() {\n  \x80\n}\n",
    "truncated_at_eof": SYNC_FUNC.encode() + b"// \xe2\x82",
    "overlong": b"// \xc0\xaf\n" + SYNC_FUNC.encode(),
    "surrogate": SYNC_FUNC.encode().replace(b"return", b"return // \xed\xa0\x80"),
    "latin1_comment": SYNC_FUNC.encode().replace(b"return", b"return // caf\xe9"),
    "utf16": SYNC_FUNC.encode("utf-16"),
}


def test_check_fix_invalid_utf8_reports_and_never_rewrites(tmp_path):
    paths = []
    for name, data in sorted(INVALID_UTF8.items()):
        paths.append(tmp_path / f"{name}.mlir")
        paths[-1].write_bytes(data)
    code, _, err = check_fix_on_files(paths)
    assert code == 2
    for p in paths:
        assert f"{p}: error: not valid UTF-8 (byte 0x" in err
        assert p.read_bytes() == INVALID_UTF8[p.stem]
    code, _, err = command("tree", str(paths[0]))
    assert code == 2 and "not valid UTF-8" in err


# -- unreadable paths --------------------------------------------------------------------------

def test_check_unreadable_paths_exit_with_message(tmp_path):
    locked = tmp_path / "locked.mlir"
    locked.write_text(SYNC_FUNC)
    locked.chmod(0)
    dangling = tmp_path / "dangling.mlir"
    dangling.symlink_to(tmp_path / "gone.mlir")
    dir_named_mlir = tmp_path / "x.mlir"
    dir_named_mlir.mkdir()
    try:
        code, _, err = command("check", "--fix", str(locked))
        if os.geteuid() != 0:  # root reads anything
            assert code == 2 and "Permission denied" in err
        code, _, err = command("check", "--fix", str(dangling))
        assert code == 2
        assert f"{dangling}: error: No such file or directory" in err
        assert dangling.is_symlink()
        code, _, err = command("check", "--fix", str(dir_named_mlir))
        assert code == 0
        assert "no .mlir files found" in err
        code, _, err = command("check", str(tmp_path))  # the walk meets all three
        assert code == 2
        assert "dangling.mlir: error:" in err
    finally:
        locked.chmod(0o644)


def test_check_directory_walk_skips_fifo_instead_of_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.mlir")
    (tmp_path / "a.mlir").write_text(SYNC_FUNC)
    code, out, _ = command("check", str(tmp_path), timeout=60)
    assert code == 0
    assert b"a.mlir" in out and b"pipe.mlir" not in out


def test_bad_input_llvm22_execute_results_without_their_types_is_a_finding():
    """Two results named, no types written (not valid MLIR, as while typing): LLVM 22's
    async.execute phases cannot follow it in place, so the function gets an unsupported-form
    finding instead of an internal error."""
    from gpu_async_lsp.async_region import analyze

    text = """\
func.func @f(%sz: index) {
  %a0, %v = async.execute {
    %m = gpu.alloc () : memref<7xf32>
    async.yield
  }
  async.await %a0 : !async.token
  async.await %v : !async.value<!gpu.async.token>
  async.await %v : !async.value<!gpu.async.token>
  return
}
"""
    analysis = analyze(text, semantics="llvm22")
    assert [b.code for fn in analysis.functions for b in fn.blockers] == ["unsupported-form"]
    assert analysis.fixed_text() == text
