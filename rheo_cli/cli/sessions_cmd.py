"""``rheo sessions list``: sessions as rheo detected them."""

from __future__ import annotations

import typer

from ..ui.output import echo, local, print_json
from .errors import command
from .options import Json, Limit, Profile
from .state import runtime_for

app = typer.Typer(
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    help="List conversation sessions.",
    no_args_is_help=True,
)


@app.command("list")
@command
def list_(limit: Limit = 20, json_out: Json = False, profile: Profile = None) -> None:
    """Show the last sessions, newest first, with their turn counts."""
    from ..memory.ledger import sessions

    rt = runtime_for(profile)
    found = sessions.list_sessions(rt.conn, rt.profile, limit=limit)
    if json_out:
        print_json([s.to_json() for s in found])
        return
    if not found:
        echo("(no sessions)")
        return
    now = rt.now()
    for s in found:
        echo(
            f"s{s.id:<5} {local(s.started_at, now)} → {local(s.last_turn_at, now)}  {s.turns} turns"
        )
