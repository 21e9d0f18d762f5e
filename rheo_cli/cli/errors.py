"""The one place where failures become a line on stderr and an exit status."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

import typer

from ..errors import ExitStatus, RheoError
from ..memory.errors import EngineError, InvalidInput

P = ParamSpec("P")
R = TypeVar("R")


def say_error(message: str) -> None:
    """Print ``rheo: <message>`` as one line on stderr (newlines folded)."""
    line = " ".join(str(message).split())
    try:
        sys.stderr.write(f"rheo: {line}\n")
        sys.stderr.flush()
    except (BrokenPipeError, ValueError, OSError):
        pass


def exit_status_for(exc: BaseException) -> int:
    """The exit status for an exception rheo knows how to report."""
    if isinstance(exc, RheoError):
        return int(exc.exit_status)
    if isinstance(exc, InvalidInput):
        return int(ExitStatus.USAGE)
    return int(ExitStatus.ERROR)


@contextmanager
def reported() -> Iterator[None]:
    """Turn rheo's errors into one stderr line and ``typer.Exit(status)``.

    RheoError and engine errors print their message; a provider failure prints its one line;
    Ctrl-C exits 130. Anything else is a bug and keeps its traceback.
    """
    from ..providers.base import ProviderError

    try:
        yield
    except (RheoError, EngineError, ProviderError) as exc:
        say_error(str(exc))
        raise typer.Exit(exit_status_for(exc)) from None
    except KeyboardInterrupt:
        say_error("interrupted")
        raise typer.Exit(int(ExitStatus.INTERRUPTED)) from None


def command(func: Callable[P, R]) -> Callable[P, R]:
    """Decorate a command function so its failures are `reported`."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with reported():
            return func(*args, **kwargs)

    return wrapper
