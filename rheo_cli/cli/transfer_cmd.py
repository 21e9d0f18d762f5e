"""``rheo backup``, ``rheo export``: copies of the store, and conversations and memories out as
JSON Lines (``rheo import``, in `import_cmd`, reads them back)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..ui.output import echo, print_json
from ..ui.wording import plural
from .errors import command, say_error
from .inputs import file_arg
from .options import Json, Profile
from .state import runtime_for


@command
def backup(
    raw: Annotated[
        str,
        typer.Argument(metavar="PATH", help="The new file to write (must not exist)."),
    ],
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Copy the whole database (every profile) to PATH, safely while rheo is in use.

    Uses SQLite's online backup API: a consistent copy even while another rheo writes. The
    copy is private (mode 0600) and can be opened with RHEO_HOME pointing at its folder
    (named rheo.db) or with any SQLite tool. On PostgreSQL it writes the profile's tenant
    (everything it holds, knowledge base included) from one snapshot, in rheo's export
    format: 'rheo import PATH' restores it, into PostgreSQL or SQLite. PATH appears only
    once the copy is complete.

    \b
    Example:
      rheo backup ~/backups/rheo-$(date +%F).db
    """
    from ..app import data

    path = file_arg(Path(raw))
    target = data.backup_target(raw, path)
    with runtime_for(profile) as app:
        done = data.backup(app, target)
        db_file = app.paths.db
    if done.profile is not None:  # PostgreSQL: the profile's tenant, in export format
        if json_out:
            print_json(
                {
                    "backup": str(path.absolute()),
                    "bytes": done.bytes,
                    "profile": done.profile,
                    "records": done.records,
                    "format": "rheo-export",
                }  # fmt: skip
            )
            return
        echo(
            f"backed up profile {done.profile} ({plural(done.records or 0, 'record')}) to {path} "
            f"({done.bytes:,} bytes); restore with 'rheo import'"
        )
        return
    if json_out:
        print_json({"backup": str(path.absolute()), "bytes": done.bytes})
        return
    echo(f"backed up {db_file} to {path} ({done.bytes:,} bytes)")


@command
def export(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to FILE (else stdout).")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every profile, not just one.")] = False,
    force: Annotated[
        bool, typer.Option("--force", "-f", help="Replace FILE if it exists.")
    ] = False,
    profile: Profile = None,
) -> None:
    """Export turns, sessions, digests, memory items with their history and the knowledge
    base as JSON Lines.

    The first line is a header naming the format and its version; 'rheo import' reads the
    file back. Exporting the same data always gives the same bytes. The file holds everything
    you told rheo: it is created private (mode 0600).

    \b
    Examples:
      rheo export -o rheo-default.jsonl
      rheo export --all -o everything.jsonl
      rheo export -o rheo-default.jsonl --force   (replace last week's)
    """
    from ..app import data

    with runtime_for(profile) as app:
        names = data.export_profiles(app, every=all_)
        if output is None:
            data.export(app, names, sys.stdout)
            return
        output = file_arg(output)
        count = data.export(app, names, output, replace=force)
    say_error(
        f"exported {plural(count, 'record')} of {', '.join(names) or 'no profile'} to {output}"
    )
