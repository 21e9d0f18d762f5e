"""``rheo paths``: where rheo keeps its files."""

from __future__ import annotations

from ..ui.output import echo, print_json
from .errors import command
from .options import Json, Profile


@command
def paths(json_out: Json = False, profile: Profile = None) -> None:
    """Show the database (its URL, password hidden, when memory is in PostgreSQL), config
    file and REPL history locations.

    \b
    Example:
      rheo paths --json
    """
    from ..app.locations import locations
    from .state import GLOBAL

    info = locations(profile if profile is not None else GLOBAL.profile)
    if json_out:
        print_json(info)
        return
    for key, value in info.items():
        echo(f"{key:8} {value}")
