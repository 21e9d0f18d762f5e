"""Showing a reply as it streams: raw text for pipes, rendered Markdown for terminals."""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO


class ReplyWriter:
    """Receives reply text deltas and shows them.

    With ``rendered`` (stdout is a terminal) the text is re-rendered as Markdown with rich's
    Live display; otherwise deltas are written raw and flushed. A closed pipe (``| head -1``)
    sets `pipe_closed` and the rest is swallowed, so the caller can still store the whole
    reply and exit quietly. A spinner on stderr (terminals only) waits for the first text.
    """

    def __init__(self, *, rendered: bool, out: TextIO | None = None, spinner: bool = False):
        self.rendered = rendered
        self.out = out or sys.stdout
        self.text = ""
        self.pipe_closed = False
        self.finished = False
        self._live: Any = None
        self._status: Any = None
        if spinner:
            from rich.console import Console

            self._status = Console(stderr=True).status("thinking…", spinner="dots")
            self._status.start()

    def _stop_spinner(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def __call__(self, delta: str) -> None:
        self._stop_spinner()
        self.text += delta
        if self.pipe_closed:
            return
        try:
            if self.rendered:
                self._render()
            else:
                self.out.write(delta)
                self.out.flush()
        except BrokenPipeError:
            self._close_pipe()

    def _render(self) -> None:
        from rich.markdown import Markdown

        if self._live is None:
            from rich.console import Console
            from rich.live import Live

            console = Console(file=self.out)
            self._live = Live(
                Markdown(self.text),
                console=console,
                refresh_per_second=12,
                vertical_overflow="visible",
                transient=False,
            )
            self._live.start()
        else:
            self._live.update(Markdown(self.text))

    def finish(self) -> None:
        """End the display: final render, trailing newline for raw text, spinner stopped.
        Calling it again does nothing."""
        self._stop_spinner()
        if self.pipe_closed or self.finished:
            return
        self.finished = True
        try:
            if self._live is not None:
                from rich.markdown import Markdown

                self._live.update(Markdown(self.text))
                self._live.stop()
                self._live = None
            elif self.text and not self.rendered and not self.text.endswith("\n"):
                self.out.write("\n")
                self.out.flush()
        except BrokenPipeError:
            self._close_pipe()

    def _close_pipe(self) -> None:
        self.pipe_closed = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.out.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass
