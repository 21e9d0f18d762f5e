"""``rheo doctor``: is the store sound, private and usable? ``--repair`` fixes what it can.

The checks are the application layer's (`app.health`); this command prints them, one line
each, and exits 0 when healthy, 1 with the list of problems.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..errors import ExitStatus
from ..ui.output import print_json, safe
from ..ui.wording import plural
from .errors import command
from .options import Json, Profile


@command
def doctor(
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Rebuild search indexes from their tables, recount sessions from their "
            "turns, queue missing digests, make files private. Never changes the ledger's "
            "content.",
        ),
    ] = False,
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Check the store: integrity, search indexes, session counters, permissions, config,
    API key, jobs, schema version. Exit 0 when healthy, 1 with the list of problems.

    \b
    Examples:
      rheo doctor
      rheo doctor --repair
    """
    from ..app.health import diagnose
    from .state import GLOBAL

    found = diagnose(profile if profile is not None else GLOBAL.profile, repair=repair)
    if json_out:
        print_json(found.to_json())
    else:
        for line in found.repaired:
            print(f"repaired  {safe(line)}")
        for c in found.checks:
            print(f"{'ok' if c.ok else 'PROBLEM':<9} {c.name}: {safe(c.detail)}")
        if found.problems:
            sys.stdout.flush()
            names = ", ".join(c.name for c in found.problems)
            sys.stderr.write(f"rheo: {plural(len(found.problems), 'problem')}: {names}\n")
    if not found.healthy:
        raise typer.Exit(int(ExitStatus.ERROR))
