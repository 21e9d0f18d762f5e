"""SIGTERM and SIGHUP during a reply: stop like Ctrl-C, so the partial reply is kept."""

from __future__ import annotations

import contextlib
import signal
from types import FrameType


class Terminated(KeyboardInterrupt):
    """Raised in the main thread when SIGTERM or SIGHUP arrives; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


def install() -> None:
    """Make SIGTERM and SIGHUP raise `Terminated` (a KeyboardInterrupt) in this process."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        with contextlib.suppress(ValueError, OSError):  # not the main thread / unsupported
            signal.signal(sig, _raise)


def exit_status(exc: BaseException | None) -> int:
    """128 + the signal number for a `Terminated`, else 130 (Ctrl-C)."""
    return 128 + exc.signum if isinstance(exc, Terminated) else 130
