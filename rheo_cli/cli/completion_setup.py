"""``rheo --install-completion``: install Tab completion and say which files it wrote and
which shell start-up file it edited (typer's own message names only the script).

`group.GroupedHelp` (the root command) gives typer's ``--install-completion`` option
`install_and_tell` as its callback.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

STARTUP_FILES = {"bash": ".bashrc", "zsh": ".zshrc"}
"""The start-up file (under ``$HOME``) typer appends a line to, per shell; fish and
PowerShell load the written script without one."""


def edited_lines(shell: str, script: Path) -> list[str]:
    """What installing completion for ``shell`` changed, one line each: the script written
    at ``script`` and the start-up file that now loads it (if the shell has one)."""
    lines = [f"{shell} completion for rheo written to {script}"]
    startup = STARTUP_FILES.get(shell)
    if startup:
        lines.append(f"edited {Path.home() / startup}: it now loads that script")
        lines.append(f"open a new terminal (or run: source ~/{startup}) to use it")
    else:
        lines.append("open a new terminal to use it")
    return lines


def install_and_tell(ctx: Any, param: Any, value: Any) -> Any:
    """The ``--install-completion`` callback: install for the named (or detected) shell,
    print what was written and edited, exit 0."""
    if not value or ctx.resilient_parsing:
        return value
    from typer._completion_shared import install

    shell, script = install(shell=value if isinstance(value, str) else None)
    sys.stdout.write("\n".join(edited_lines(shell, script)) + "\n")
    sys.exit(0)
