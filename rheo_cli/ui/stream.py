"""Showing a reply as it streams: raw text for pipes, rendered Markdown for terminals (with
control and invisible characters shown literally, see `output.safe`)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO

_FENCES = ("```", "~~~")


@contextlib.contextmanager
def _sigint_deferred() -> Iterator[None]:
    """Hold Ctrl-C back while the terminal is being redrawn: an interrupt in the middle of a
    redraw would leave half a frame that the final print then repeats. The signal is
    delivered (and the reply stopped) as soon as the redraw is done."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "pthread_sigmask"
    ):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class _NoEcho:
    """The terminal the person types on stops echoing while a reply is drawn live: a typed
    key or the ``^C`` of Ctrl-C written into the live area moves the cursor (a wrapped line),
    so the redraw that clears the area misses its first line and the reply is shown twice.
    `restore` puts the settings back; a stdin that is not a terminal is left alone."""

    def __init__(self, keys: Any) -> None:
        self._fd: int | None = None
        self._saved: Any = None
        try:
            import termios

            fd = keys.fileno() if hasattr(keys, "fileno") else int(keys)
            if not os.isatty(fd):
                return
            saved = termios.tcgetattr(fd)
            quiet = list(saved)
            quiet[3] &= ~(termios.ECHO | getattr(termios, "ECHOCTL", 0))
            termios.tcsetattr(fd, termios.TCSANOW, quiet)
        except (ImportError, OSError, ValueError, AttributeError, TypeError):
            return
        self._fd, self._saved = fd, saved

    def restore(self) -> None:
        """Echo as before (once)."""
        if self._fd is None:
            return
        import termios

        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(self._fd, termios.TCSANOW, self._saved)
        self._fd = None


class BlockSplitter:
    """Finds where finished Markdown blocks end in a growing text, looking at each line once.

    A block is finished at a blank line that is outside a code fence and followed by more
    text: later deltas can no longer change how it renders. `feed` is called with the whole
    text so far (each call extending the previous one) and scans only the lines that arrived
    since the last call, so a whole reply costs time linear in its length.
    """

    def __init__(self) -> None:
        self._scanned = 0  # text[:_scanned] is whole lines already looked at
        self._in_fence = False
        self._candidate = 0  # end of the last blank line outside a fence
        self.settled = 0

    def feed(self, text: str) -> int:
        """The length of ``text``'s settled prefix (never less than before)."""
        end = text.rfind("\n", self._scanned) + 1
        if end > self._scanned:
            for line in text[self._scanned : end].splitlines(keepends=True):
                stripped = line.strip()
                if stripped.startswith(_FENCES):
                    self._in_fence = not self._in_fence
                self._scanned += len(line)
                if not self._in_fence and not stripped and line.endswith(("\n", "\r")):
                    self._candidate = self._scanned
        if self.settled < self._candidate < len(text):
            self.settled = self._candidate
        return self.settled


def settled_prefix(text: str) -> int:
    """Length of the part of ``text`` that later deltas can no longer change as Markdown: up
    to the last blank line that is outside a code fence and followed by more text (0 if none).
    """
    return BlockSplitter().feed(text)


REFRESH_S = 1 / 15
"""Shortest time between two redraws of the unfinished block (seconds): a fast stream is
shown at most this often, so the cost of a reply grows with its length, not its deltas."""


class ReplyWriter:
    """Receives reply text deltas and shows them.

    Raw mode (stdout is a pipe) writes each delta and flushes. Rendered mode (a terminal)
    prints each finished Markdown block once, permanently, and shows only the block still
    being written in a transient live area, so a reply taller than the terminal never leaves
    repeated copies in the scrollback. A closed pipe (``| head -1``) sets `pipe_closed` and
    the rest is swallowed, so the caller can still store the whole reply and exit quietly.
    ``spinner`` shows "thinking…" on ``spinner_out`` (stderr by default) until the first text.
    While the live area is drawn, ``keys`` (stdin by default), when a terminal, does not echo
    (see `_NoEcho`); `finish` restores it.
    """

    def __init__(
        self,
        *,
        rendered: bool,
        out: TextIO | None = None,
        spinner: bool = False,
        spinner_out: TextIO | None = None,
        keys: Any = None,
    ) -> None:
        self.rendered = rendered
        self.out = out if out is not None else sys.stdout
        self.text = ""
        # No stdout at all (`rheo ask q >&-`): keep the text, show nothing.
        self.pipe_closed = self.out is None
        self.finished = False
        self._printed = 0
        self._blocks = 0
        self._splitter = BlockSplitter()
        self._shown_at = 0.0
        self._console: Any = None
        self._live: Any = None
        self._status: Any = None
        self._keys = sys.stdin if keys is None else keys
        self._no_echo: _NoEcho | None = None
        if spinner:
            from rich.console import Console

            console = Console(file=spinner_out or sys.stderr)
            self._status = console.status("thinking…", spinner="dots")
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
        except OSError as exc:  # e.g. stdout is a full disk: keep going, report at the end
            self.write_error = exc.strerror or str(exc)
            self.pipe_closed = True

    write_error: str | None = None
    """Why stdout could not be written (other than a closed pipe), if it could not."""

    def _markdown(self, text: str) -> Any:
        from .markdown import render
        from .output import safe

        # The model's text may carry escape sequences (rich drops BEL but passes ESC): on a
        # terminal they are shown, not run. Raw mode (a pipe) writes the bytes as they came.
        return render(safe(text))

    def _render(self) -> None:
        import time

        if self._console is None:
            from rich.console import Console
            from rich.live import Live

            self._no_echo = _NoEcho(self._keys)
            self._console = Console(file=self.out)
            self._live = Live(
                console=self._console,
                refresh_per_second=10,
                transient=True,
                vertical_overflow="crop",
                auto_refresh=False,
                redirect_stdout=False,
                redirect_stderr=False,
            )
            self._live.start()
        with _sigint_deferred():
            cut = self._splitter.feed(self.text)
            if cut > self._printed:
                # Finished blocks are printed once, for good; the live area is emptied first
                # so that printing does not redraw the stale tail under them.
                block = self.text[self._printed : cut]
                self._printed = cut
                self._live.update("", refresh=True)
                self._print_block(block)
            # Only the unfinished tail is drawn live, and at most every REFRESH_S.
            now = time.monotonic()
            if now - self._shown_at >= REFRESH_S:
                self._live.update(self._markdown(self.text[self._printed :]), refresh=True)
                self._shown_at = now

    def _print_block(self, block: str) -> None:
        # Blocks are separated by a blank line in the source: keep it between them.
        if self._blocks:
            self._console.print()
        self._console.print(self._markdown(block))
        self._blocks += 1

    def finish(self) -> None:
        """End the display: print the last block, or a final newline for raw text; stop the
        spinner. Calling it again does nothing."""
        self._stop_spinner()
        if self._no_echo is not None:
            self._no_echo.restore()
        if self.pipe_closed or self.finished:
            return
        self.finished = True
        try:
            if self._live is not None:
                with _sigint_deferred():
                    self._live.update("", refresh=True)
                    self._live.stop()
                    tail = self.text[self._printed :]
                    if tail.strip():
                        self._print_block(tail)
                    self._live = None
            elif self.text and not self.rendered and not self.text.endswith("\n"):
                self.out.write("\n")
                self.out.flush()
        except BrokenPipeError:
            self._close_pipe()
        except OSError as exc:
            self.write_error = exc.strerror or str(exc)
            self.pipe_closed = True

    def _close_pipe(self) -> None:
        from .output import quiet_stdout

        self.pipe_closed = True
        quiet_stdout(self.out)
