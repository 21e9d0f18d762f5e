"""Putting text on the clipboard (the REPL's ``/copy``): a clipboard program when one is
there, else the terminal's own clipboard escape (OSC 52).

Programs, in order: ``pbcopy`` (macOS), ``wl-copy`` (a Wayland session: ``WAYLAND_DISPLAY``
set), ``xclip -selection clipboard`` (an X session: ``DISPLAY`` set). Without any (over SSH,
in a container) the text is sent as ``ESC ] 52 ; c ; BASE64 BEL``, which most terminals
(iTerm2, kitty, WezTerm, Windows Terminal, foot, xterm with ``allowWindowOps``; tmux with
``set-clipboard on``) put on the clipboard of the machine the person sits at.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from typing import TextIO

PROGRAMS: tuple[tuple[tuple[str, ...], str | None], ...] = (
    (("pbcopy",), None),
    (("wl-copy",), "WAYLAND_DISPLAY"),
    (("xclip", "-selection", "clipboard"), "DISPLAY"),
)
"""Each clipboard program's command line and the variable its session needs (None: any)."""

TIMEOUT_S = 5.0
"""How long a clipboard program may take before OSC 52 is used instead (seconds)."""


def osc52(text: str) -> str:
    """The terminal escape that puts ``text`` (UTF-8, base64-encoded) on the clipboard."""
    return "\x1b]52;c;" + base64.b64encode(text.encode("utf-8")).decode("ascii") + "\x07"


def copy(
    text: str,
    terminal: TextIO,
    *,
    environ: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] = shutil.which,
) -> str:
    """Put ``text`` on the clipboard and return how, in words: the program's name
    (``wl-copy``, ``xclip``, ``pbcopy``) or ``the terminal (OSC 52)``. The first program of
    `PROGRAMS` found on PATH whose session is there is run with ``text`` on its stdin; when
    none is, or it fails, the OSC 52 escape is written to ``terminal``. Never raises for a
    missing or failing program."""
    env = os.environ if environ is None else environ
    for argv, needs in PROGRAMS:
        if (needs is not None and not env.get(needs)) or which(argv[0]) is None:
            continue
        try:
            done = subprocess.run(
                argv,
                input=text.encode("utf-8"),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return argv[0]
    terminal.write(osc52(text))
    terminal.flush()
    return "the terminal (OSC 52)"
