"""``rheo sessions list|show``: sessions as rheo detected them, and one read back whole."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..ui.output import echo, print_json, safe
from .complete import session_numbers
from .errors import command
from .group import ListsWhenAlone
from .options import Json, Limit, Profile, session_number
from .state import runtime_for

app = typer.Typer(
    cls=ListsWhenAlone,
    pretty_exceptions_show_locals=False,
    epilog="Example: rheo sessions show 3 --markdown",
    rich_markup_mode=None,
    help="List conversation sessions, read one back (alone: list them).",
)


@app.command("list")
@command
def list_(limit: Limit = 20, json_out: Json = False, profile: Profile = None) -> None:
    """Show the last sessions, newest first, with their turn counts.

    Sessions are numbered s1, s2, ... within each profile.

    \b
    Example:
      rheo sessions list -n 5
    """
    from ..app import history

    with runtime_for(profile) as app:
        found = history.sessions(app, limit)
        now = app.now()
    if json_out:
        print_json([s.to_json() for s in found])
        return
    if not found:
        echo("(no sessions)")
        return
    from ..ui.listings import print_sessions

    print_sessions(found, now)


@app.command()
@command
def show(
    number: Annotated[
        str,
        typer.Argument(
            metavar="N",
            help="Session number, as 'rheo sessions list' shows it (3 or s3).",
            autocompletion=session_numbers,
        ),
    ],
    markdown: Annotated[
        bool, typer.Option("--markdown", help="Print Markdown, to keep or share.")
    ] = False,
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Print a whole session as a transcript, oldest turn first.

    \b
    Examples:
      rheo sessions show 3
      rheo sessions show s3 --markdown > trip-planning.md
    """
    from ..app import history
    from ..ui.transcript import transcript

    wanted = session_number(number)
    with runtime_for(profile) as app:
        session, turns = history.session(app, wanted)
        now = app.now()
    if json_out:
        print_json({**session.to_json(), "transcript": [t.to_json() for t in turns]})
        return
    text = transcript(session, turns, now, markdown=markdown)
    if sys.stdout.isatty():
        sys.stdout.write(safe(text))  # on a terminal, stored text is shown, never interpreted
    else:
        sys.stdout.write(text)  # into a file or a pipe, as written
