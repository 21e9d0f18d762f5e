"""Writing a message in the person's own editor (the REPL's ``/edit``): ``$VISUAL``, else
``$EDITOR``, run on a private temporary file; what the file holds when the editor exits is
the message."""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import tempfile
from collections.abc import Mapping

from ..errors import RheoError

NO_EDITOR = "no editor is set: set $VISUAL or $EDITOR (e.g. export EDITOR=nano)"


def editor_command(environ: Mapping[str, str] | None = None) -> str | None:
    """``$VISUAL``, else ``$EDITOR`` (blank counts as unset); None when neither is set."""
    env = os.environ if environ is None else environ
    return env.get("VISUAL", "").strip() or env.get("EDITOR", "").strip() or None


def compose(editor: str, initial: str = "") -> str:
    """Open ``editor`` (a command line, split as a shell would) on a new 0600 file holding
    ``initial`` and return the file's text once it exits (the file is removed either way).
    Raises RheoError when the editor cannot be run, exits with a non-zero status, or leaves
    text that is not UTF-8."""
    fd, name = tempfile.mkstemp(prefix="rheo-message-", suffix=".md")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as draft:
            draft.write(initial)
        try:
            status = subprocess.call([*shlex.split(editor), name])
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise RheoError(f"cannot run the editor {editor!r}: {reason}") from None
        if status != 0:
            raise RheoError(f"the editor exited with status {status}; nothing was sent")
        try:
            with open(name, encoding="utf-8-sig") as done:
                return done.read()
        except UnicodeDecodeError:
            raise RheoError("the edited message is not UTF-8 text; nothing was sent") from None
        except OSError as exc:  # the editor removed or replaced the file
            raise RheoError(f"cannot read the edited message: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)
