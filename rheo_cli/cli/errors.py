"""The one place where failures become a line on stderr and an exit status."""

from __future__ import annotations

import contextlib
import errno
import functools
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

import typer

from ..app.errors import EngineError, InvalidInput, NotFound, ProviderError, database_message
from ..errors import ExitStatus, RheoError
from ..ui.output import quiet_stdout

P = ParamSpec("P")
R = TypeVar("R")


def say_error(message: str) -> None:
    """Print ``rheo: <message>`` as one line on stderr (newlines folded, control and invisible
    characters shown literally)."""
    from ..ui.output import safe

    line = " ".join(safe(str(message)).split())
    try:
        sys.stderr.write(f"rheo: {line}\n")
        sys.stderr.flush()
    except (BrokenPipeError, ValueError, OSError):
        pass


def exit_status_for(exc: BaseException) -> int:
    """The exit status for an exception rheo knows how to report."""
    if isinstance(exc, RheoError):
        return int(exc.exit_status)
    if isinstance(exc, InvalidInput | NotFound):  # a wrong argument, e.g. an unknown id
        return int(ExitStatus.USAGE)
    return int(ExitStatus.ERROR)


@contextmanager
def reported() -> Iterator[None]:
    """Turn rheo's errors into one stderr line and ``typer.Exit(status)``.

    RheoError and engine errors print their message; a provider failure prints its one line;
    a SQLite failure is explained; a closed stdout pipe exits quietly (0) and an unwritable
    stdout exits 1; Ctrl-C exits 130. Anything else is a bug and keeps its traceback.
    """
    try:
        yield
    except (RheoError, EngineError, ProviderError) as exc:
        say_error(str(exc))
        detail = getattr(exc, "detail", None)
        if isinstance(detail, str) and detail:  # guidance over several lines, e.g. no provider
            with contextlib.suppress(BrokenPipeError, ValueError, OSError):
                sys.stderr.write(detail)
        raise typer.Exit(exit_status_for(exc)) from None
    except sqlite3.Error as exc:
        say_error(database_message(exc))
        raise typer.Exit(int(ExitStatus.ERROR)) from None
    except MemoryError:  # SQLite's SQLITE_NOMEM: a garbled search index asks for absurd sizes
        say_error(
            "out of memory reading the store (a damaged search index can cause it: "
            "'rheo doctor' checks it and 'rheo doctor --repair' rebuilds it)"
        )
        raise typer.Exit(int(ExitStatus.ERROR)) from None
    except BrokenPipeError:
        quiet_stdout()
        raise typer.Exit(int(ExitStatus.OK)) from None
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EIO, errno.EBADF):
            say_error(f"cannot write the output: {exc.strerror or exc}")
            raise typer.Exit(int(ExitStatus.ERROR)) from None
        raise
    except KeyboardInterrupt as stop:
        from ..ui.signals import exit_status

        say_error("interrupted")
        raise typer.Exit(exit_status(stop)) from None


def command(func: Callable[P, R]) -> Callable[P, R]:
    """Decorate a command function so its failures are `reported`."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with reported():
            return func(*args, **kwargs)

    return wrapper
