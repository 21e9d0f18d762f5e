"""What waits for a command to get past its own checks: the ``rheo`` process registers it
(starting a resident rheo for the next command), the command calls `reached` once its
configuration, provider and arguments proved usable (``rheo mcp`` before it serves), and
``rheo ask`` reaches it by succeeding. Standard library only."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

WAITING: list[Callable[[], None]] = []
"""Callbacks `reached` runs, each once."""


def when_reached(callback: Callable[[], None]) -> None:
    """Run ``callback`` at `reached`."""
    WAITING.append(callback)


def reached() -> None:
    """The command is past what could fail for reasons of its own: run what waited for it
    (each once; one that fails is skipped)."""
    while WAITING:
        callback = WAITING.pop(0)
        with contextlib.suppress(Exception):
            callback()
