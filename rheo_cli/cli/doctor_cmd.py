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
    from ..app.health.sqlite import run_checks
    from .state import GLOBAL

    checks, repaired = run_checks(profile if profile is not None else GLOBAL.profile, repair)
    healthy = all(c.ok for c in checks)
    if json_out:
        print_json(
            {"healthy": healthy, "checks": [c.to_json() for c in checks], "repaired": repaired}
        )
    else:
        for line in repaired:
            print(f"repaired  {safe(line)}")
        for c in checks:
            print(f"{'ok' if c.ok else 'PROBLEM':<9} {c.name}: {safe(c.detail)}")
        problems = [c for c in checks if not c.ok]
        if problems:
            sys.stdout.flush()
            sys.stderr.write(
                f"rheo: {len(problems)} problem(s): {', '.join(c.name for c in problems)}\n"
            )
    if not healthy:
        raise typer.Exit(int(ExitStatus.ERROR))
