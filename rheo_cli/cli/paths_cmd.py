"""``rheo paths``: where rheo keeps its files."""

from __future__ import annotations

from .errors import command
from .options import Json, Profile
from .output import print_json
from .state import runtime_for


@command
def paths(json_out: Json = False, profile: Profile = None) -> None:
    """Show the database, config file and REPL history locations."""
    rt = runtime_for(profile)
    info = rt.paths.to_json()
    if json_out:
        print_json(info)
        return
    for key, value in info.items():
        print(f"{key:8} {value}")
