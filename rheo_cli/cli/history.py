"""``rheo history search|recent``: the ledger, read back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from ..ui.output import echo, print_json
from .errors import command
from .group import RecentWhenAlone
from .options import Json, Limit, Profile
from .state import runtime_for

if TYPE_CHECKING:
    from ..app.app import App
    from ..app.history import Turn

app = typer.Typer(
    cls=RecentWhenAlone,
    epilog='Example: rheo history search "tomato seeds"',
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    help="Search and list stored turns, the ledger (alone: the most recent).",
)


def _print_turns(app: App, turns: list[Turn]) -> None:
    """The turns as a table (`listings.print_turns`), with the session numbers the person
    sees."""
    from ..app import history

    if not turns:
        echo("(no turns)")
        return
    from ..ui.listings import print_turns

    print_turns(turns, app.now(), history.session_numbers(app))


@app.command()
@command
def search(
    query: Annotated[str, typer.Argument(help='Words to find ("a phrase", prefix*).')],
    limit: Limit = 20,
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Find turns containing every word of QUERY, best matches first.

    \b
    Examples:
      rheo history search "tomato seeds"
      rheo history search '"exact phrase"' -n 5
    """
    from ..app import history

    with runtime_for(profile) as app:
        found = history.search_turns(app, query, limit=limit)
        if json_out:
            print_json([dict(t.to_json(), score=round(s, 4)) for t, s in found])
            return
        _print_turns(app, [t for t, _ in found])


@app.command()
@command
def recent(limit: Limit = 20, json_out: Json = False, profile: Profile = None) -> None:
    """Show the last turns, oldest first.

    \b
    Example:
      rheo history recent -n 10
    """
    from ..app import history

    with runtime_for(profile) as app:
        turns = history.recent_turns(app, limit)
        if json_out:
            print_json([t.to_json() for t in turns])
            return
        _print_turns(app, turns)
