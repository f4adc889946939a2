"""The server in real Emacs: Debian's emacs-nox with eglot (elpa-eglot on Emacs 28), in batch mode.

The driver (DRIVER below, Emacs Lisp) sets eglot up as docs/server.md says, opens a copy of
examples/blocked.mlir, waits (bounded) until flymake holds the pre-existing-wait error, asks for
the code actions on the gpu.wait line the way `M-x eglot-code-actions` does (picking, as a
user would at its prompt, the one that threads through the gpu.wait as LLVM 22 does), saves
and reports what it saw as JSON. The saved file must equal `check --fix --semantics llvm22`.
`scripts/install-editor-test-deps` installs emacs-nox and elpa-eglot; without them the test
skips, unless CI is set.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCKED = ROOT / "examples" / "blocked.mlir"
TIMEOUT_S = 90

DRIVER = r"""
(require 'eglot)
(require 'flymake)
(require 'json)
(define-derived-mode mlir-mode prog-mode "MLIR"
  (setq-local comment-start "// "))
(add-to-list 'auto-mode-alist '("\\.mlir\\'" . mlir-mode))
(defvar params (json-read-file (getenv "GPU_ASYNC_EMACS_PARAMS")))
(defun param (key) (cdr (assq key params)))
(add-to-list 'eglot-server-programs `(mlir-mode . ,(append (param 'cmd) nil)))
(setq eglot-sync-connect 30)
(defvar report (list (cons 'emacs emacs-version)))
(defun finish (ok &optional error)
  (push (cons 'ok ok) report)
  (when error (push (cons 'error error) report))
  (with-temp-file (param 'out) (insert (json-encode report)))
  (kill-emacs (if ok 0 1)))
(defun wait-for (what predicate)
  (let ((deadline (+ (float-time) (param 'timeout))))
    (while (and (not (funcall predicate)) (< (float-time) deadline))
      (accept-process-output nil 0.1))
    (or (funcall predicate) (error "waited %ss for %s" (param 'timeout) what))))
(condition-case err
    (progn
      (find-file (param 'file))
      (unless (eq major-mode 'mlir-mode) (error "not in mlir-mode: %s" major-mode))
      ;; What eglot-ensure does on the first command (batch mode runs none).
      (apply #'eglot--connect (eglot--guess-contact))
      (wait-for "the pre-existing-wait error in flymake"
                (lambda () (cl-some (lambda (d) (string-match-p "pre-existing gpu.wait"
                                                                (flymake-diagnostic-text d)))
                                    (flymake-diagnostics))))
      (push (cons 'diagnostics (mapcar #'flymake-diagnostic-text (flymake-diagnostics))) report)
      (goto-char (point-min))
      (re-search-forward "^ *gpu\\.wait  //")
      (let ((offered nil))
        ;; The menu of eglot-code-actions (a popup menu, or the minibuffer when the last
        ;; event was a key), answered as a user would: the LLVM 22 rewrite.
        (cl-flet ((pick (titles)
                    (setq offered titles)
                    (or (cl-find-if (lambda (title) (string-match-p "LLVM 22" title)) titles)
                        (error "no LLVM 22 action among %S" titles))))
          (cl-letf (((symbol-function 'completing-read)
                     (lambda (_prompt collection &rest _)
                       (pick (mapcar (lambda (c) (if (consp c) (car c) c)) collection))))
                    ((symbol-function 'x-popup-menu)
                     (lambda (_position menu)
                       (let* ((items (cdr (cadr menu)))  ; ("title" ("dummy" . ITEMS))
                              (title (pick (mapcar #'car items))))
                         (cdr (assoc title items))))))
            (eglot-code-actions (line-beginning-position) (line-end-position) nil t)))
        (push (cons 'offered offered) report))
      (wait-for "the rewrite in the buffer"
                (lambda () (save-excursion (goto-char (point-min))
                                           (search-forward "async [" nil t))))
      (save-buffer)
      (eglot-shutdown (eglot-current-server))
      (finish t))
  (error (finish nil (error-message-string err))))
"""


def _emacs() -> str:
    emacs = shutil.which("emacs")
    has_eglot = emacs and subprocess.run(
        [emacs, "--batch", "--eval", "(progn (require 'eglot) (kill-emacs 0))"],
        capture_output=True, timeout=60).returncode == 0
    if not has_eglot:
        message = ("emacs with eglot is missing (apt-get install emacs-nox elpa-eglot, or "
                   "scripts/install-editor-test-deps)")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return emacs


def _check_fix(text: str, *flags: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "gpu_async_lsp", "check", "--fix", *flags,
         "--stdin-filename", "blocked.mlir", "-"],
        input=text.encode(), capture_output=True, timeout=60, check=False)
    assert result.returncode in (0, 1), result.stderr.decode()
    return result.stdout.decode()


def test_eglot_gets_the_diagnostic_and_applies_the_code_action(tmp_path: Path) -> None:
    emacs = _emacs()
    target = tmp_path / "blocked.mlir"
    original = BLOCKED.read_text()
    target.write_text(original)
    (tmp_path / "driver.el").write_text(DRIVER)
    out = tmp_path / "report.json"
    (tmp_path / "params.json").write_text(json.dumps({
        "cmd": [sys.executable, "-m", "gpu_async_lsp"], "file": str(target), "out": str(out),
        "timeout": 30}))
    env = dict(os.environ, GPU_ASYNC_EMACS_PARAMS=str(tmp_path / "params.json"),
               HOME=str(tmp_path))
    # -q, not -Q: Debian puts elpa-eglot on the load-path in its site-start files.
    proc = subprocess.run([emacs, "--batch", "-q", "-l", str(tmp_path / "driver.el")],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S, stdin=subprocess.DEVNULL)
    report = json.loads(out.read_text()) if out.exists() else None
    assert report and report.get("ok"), (
        f"emacs exit {proc.returncode}\nreport: {report}\n{proc.stderr[-6000:]}{proc.stdout[-2000:]}")
    assert any("pre-existing gpu.wait" in d for d in report["diagnostics"]), report
    assert any("LLVM 22" in title for title in report["offered"]), report
    assert target.read_text() == _check_fix(original, "--semantics", "llvm22")
