"""``rheo backup``, ``rheo export``: copies of the store, and conversations and memories out as
JSON Lines (``rheo import``, in `import_cmd`, reads them back)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import UsageError
from ..ui.output import echo, print_json
from . import copies
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
    from ..errors import UsageError
    from ..memory import archive

    path = file_arg(Path(raw))
    target = path.expanduser()
    if not raw.strip() or target.is_dir() or raw.endswith(("/", os.sep)):
        raise UsageError(
            f"{raw or 'an empty path'} is a folder: name the new file "
            f"(e.g. {Path(raw or '.') / 'rheo-backup.db'})"
        )
    if not target.parent.is_dir():
        raise UsageError(f"no such folder: {target.parent} (create it first)")
    if target.exists():
        raise UsageError(f"{raw} already exists: choose a new file for the backup")
    rt = runtime_for(profile)
    own = {rt.paths.db, rt.paths.config} | {
        rt.paths.db.with_name(rt.paths.db.name + s) for s in ("-wal", "-shm", "-journal")
    }
    if target.absolute() in {f.absolute() for f in own}:
        raise UsageError(f"{target} is one of rheo's own files: choose another name")

    def export(dest: str) -> int:  # a store bound to one tenant backs up its records
        from ..transfer import rheo_jsonl

        records = archive.export_records(rt.conn, [rt.profile])
        return rheo_jsonl.write_file(records, Path(dest), point="backup.copy")

    done = rt.store.backup(str(target), export)
    size = done["bytes"]
    if "records" in done:  # the profile's tenant, in rheo's export format
        copies.note(rt.paths, target, kind="backup", profiles=[rt.profile])
        if json_out:
            print_json(
                {
                    "backup": str(path.absolute()),
                    "bytes": size,
                    "profile": rt.profile,
                    "records": done["records"],
                    "format": "rheo-export",
                }  # fmt: skip
            )
            return
        echo(
            f"backed up profile {rt.profile} ({done['records']:,} records) to {path} "
            f"({size:,} bytes); restore with 'rheo import'"
        )
        return
    copies.note(rt.paths, target, kind="backup", profiles=None)  # every profile of the file
    if json_out:
        print_json({"backup": str(path.absolute()), "bytes": size})
        return
    echo(f"backed up {rt.store.location} to {path} ({size:,} bytes)")


@command
def export(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to FILE (else stdout).")
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Every profile, not just one.")] = False,
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
    """
    from ..memory import archive
    from ..transfer import rheo_jsonl

    rt = runtime_for(profile)
    if all_ and rt.store_class.serves_one_tenant:
        raise UsageError(
            "on PostgreSQL each profile is a tenant that sees only its own rows: export one "
            "profile at a time (rheo export --profile NAME)"
        )
    names = archive.profiles(rt.conn) if all_ else [rt.profile]
    output = file_arg(output) if output is not None else None
    if output is not None and output.exists():
        raise UsageError(f"{output} already exists: choose a new file")
    with archive.snapshot(rt.conn):
        records = archive.export_records(rt.conn, names)
        if output is None:
            rheo_jsonl.write(records, sys.stdout)
            return
        count = rheo_jsonl.write_file(records, output)
    copies.note(rt.paths, output, kind="export", profiles=names)
    say_error(f"exported {count - 1} records of {', '.join(names) or 'no profile'} to {output}")
