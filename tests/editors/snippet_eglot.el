;;; snippet_eglot.el --- Emacs 28 batch: the Emacs snippets of docs/editors.md as printed  -*- lexical-binding: t -*-
;; $SETUP_SNIPPET (eglot for YAML files) is loaded as a user's init would, $TARGET is opened, and once its
;; diagnostics are in, $RUN_SNIPPET (the run from the editor) is loaded.  Batch-mode plumbing only: Debian's
;; elpa folder (`-Q' drops it) and one `post-command-hook' run, since `eglot-ensure' waits for a command.
(require 'package)
(add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
(package-initialize)
(load (getenv "SETUP_SNIPPET") nil t)
(find-file (getenv "TARGET"))
(princ (format "MODE %s\n" major-mode))
(run-hooks 'post-command-hook)

(let ((deadline (+ (float-time) 30))
      (found nil))
  (while (and (< (float-time) deadline) (not found))
    (when (bound-and-true-p flymake-mode) (flymake-start))
    (accept-process-output nil 0.2)
    (setq found (and (bound-and-true-p flymake-mode) (flymake-diagnostics))))
  (princ (format "ROOT %s\n" (project-root (eglot--project (eglot-current-server)))))
  (dolist (d found)
    (princ (format "DIAG %d %s\n" (line-number-at-pos (flymake-diagnostic-beg d)) (flymake-diagnostic-text d))))
  (unless found
    (princ "NO DIAGNOSTICS\n")
    (kill-emacs 3)))
(load (getenv "RUN_SNIPPET") nil t)
(princ "\nEND\n")
(kill-emacs 0)
