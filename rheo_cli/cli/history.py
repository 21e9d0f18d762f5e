"""``rheo history search|recent``: the ledger, read back."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..ui.output import echo, print_json, turn_line
from .errors import command
from .options import Json, Limit, Profile
from .state import runtime_for

app = typer.Typer(
    epilog='Example: rheo history search "tomato seeds"',
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    help="Search and list stored turns (the ledger).",
    no_args_is_help=True,
)


def _print_turns(turns: list[Any], now: Any, rt: Any) -> None:
    from ..memory.ledger.sessions import session_numbers

    if not turns:
        echo("(no turns)")
        return
    numbers = session_numbers(rt.conn, rt.profile)
    for turn in turns:
        echo(turn_line(turn, now, numbers=numbers))


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
    from ..memory.ledger import turns as ledger

    rt = runtime_for(profile)
    found = ledger.search_turns(rt.conn, rt.profile, query, limit=limit)
    if json_out:
        print_json([dict(t.to_json(), score=round(s, 4)) for t, s in found])
        return
    _print_turns([t for t, _ in found], rt.now(), rt)


@app.command()
@command
def recent(limit: Limit = 20, json_out: Json = False, profile: Profile = None) -> None:
    """Show the last turns, oldest first.

    \b
    Example:
      rheo history recent -n 10
    """
    from ..memory.ledger import turns as ledger

    rt = runtime_for(profile)
    turns = ledger.recent_turns(rt.conn, rt.profile, limit)
    if json_out:
        print_json([t.to_json() for t in turns])
        return
    _print_turns(turns, rt.now(), rt)
