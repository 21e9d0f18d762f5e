"""``rheo backup``, ``rheo export``, ``rheo import``: copies of the store, and moving
conversations and memories in and out as JSON Lines."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import RheoError, UsageError
from ..ui.output import echo, print_json
from . import copies
from .errors import command, say_error
from .inputs import file_arg
from .options import Json, Profile
from .state import runtime_for


def _write_export(
    records: Iterable[dict[str, Any]], output: Path, *, point: str | None = None
) -> int:
    """Write export records to the new file ``output`` (mode 0600), which never exists
    half-written; returns how many records. ``point``: a crash point reached when every
    record is written, before the file takes its name. Raises StoreError when it exists."""
    from ..memory.store import crash
    from ..memory.store.private_file import new_private_file
    from ..transfer import rheo_jsonl

    with new_private_file(output) as partial:
        with open(partial, "w", encoding="utf-8") as out:
            count = rheo_jsonl.write(records, out)
        if point:
            crash.reach(point)
        return count


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
    if rt.store_url:
        from ..memory.archive import exchange

        with exchange.snapshot(rt.conn):
            records = exchange.export_records(rt.conn, [rt.profile])
            count = _write_export(records, target, point="backup.copy")
        copies.note(rt.paths, target, kind="backup", profiles=[rt.profile])
        size = target.stat().st_size
        if json_out:
            print_json(
                {
                    "backup": str(path.absolute()),
                    "bytes": size,
                    "profile": rt.profile,
                    "records": count - 1,
                    "format": "rheo-export",
                }  # fmt: skip
            )
            return
        echo(
            f"backed up profile {rt.profile} ({count - 1:,} records) to {path} ({size:,} bytes); "
            "restore with 'rheo import'"
        )
        return
    size = archive.backup(rt.conn, target)
    copies.note(rt.paths, target, kind="backup", profiles=None)  # every profile of the file
    if json_out:
        print_json({"backup": str(path.absolute()), "bytes": size})
        return
    echo(f"backed up {rt.paths.db} to {path} ({size:,} bytes)")


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
    from ..memory.archive import exchange
    from ..transfer import rheo_jsonl

    rt = runtime_for(profile)
    if all_ and rt.store_url:
        raise UsageError(
            "on PostgreSQL each profile is a tenant that sees only its own rows: export one "
            "profile at a time (rheo export --profile NAME)"
        )
    names = archive.profiles(rt.conn) if all_ else [rt.profile]
    output = file_arg(output) if output is not None else None
    if output is not None and output.exists():
        raise UsageError(f"{output} already exists: choose a new file")
    with exchange.snapshot(rt.conn):
        records = exchange.export_records(rt.conn, names)
        if output is None:
            rheo_jsonl.write(records, sys.stdout)
            return
        count = _write_export(records, output)
    copies.note(rt.paths, output, kind="export", profiles=names)
    say_error(f"exported {count - 1} records of {', '.join(names) or 'no profile'} to {output}")


@command
def import_(
    file: Annotated[Path, typer.Argument(help="The file to import ('-' for stdin).")],
    from_: Annotated[
        str | None,
        typer.Option(
            "--from",
            help="The file's format: rheo ('rheo export'), or llm, chatgpt, claude (other "
            "tools' history, as 'rheo import-history'); sniffed when not given.",
        ),
    ] = None,
    json_out: Json = False,
    profile: Annotated[
        str | None,
        typer.Option("--profile", "-p", metavar="NAME", help="Profile for other tools' history."),
    ] = None,
    include_purged: Annotated[
        bool,
        typer.Option(
            "--include-purged",
            help="Also bring back records 'rheo purge' erased from this store (left out "
            "otherwise).",
        ),
    ] = False,
) -> None:
    """Import a file made by 'rheo export' (into the profiles it names), or another tool's
    chat history.

    Records already stored are skipped — recognised by their content, whatever keys the
    file gives them — so importing a file twice adds nothing the second time. Records that
    'rheo purge' erased from this store (an export made before the purge holds them) are
    left out and counted, unless --include-purged. The whole file is checked and written in
    one transaction: a malformed line is reported with its number and nothing is imported.

    \b
    Examples:
      rheo import everything.jsonl
      rheo import conversations.json --from chatgpt
    """
    from ..memory.archive import exchange
    from ..memory.store.errors import InvalidInput
    from ..transfer import formats
    from ..transfer.history_formats import FORMATS as HISTORY_FORMATS
    from ..transfer.history_formats import sniff as sniff_history
    from .import_cmd import import_history

    file = file_arg(file)
    history = (from_ or "").strip().lower()
    if not history and str(file) != "-" and file.is_file():
        try:
            with file.open("rb") as head:
                is_rheo = formats.FORMATS["rheo"].sniff(head.readline())
            history = "" if is_rheo else (sniff_history(file) or "")
        except OSError:
            history = ""
    if history in HISTORY_FORMATS:
        import_history(
            fmt=history, file=file, extract=False, json_out=json_out, profile=profile,
            include_purged=include_purged,
        )  # fmt: skip
        return

    try:
        data = sys.stdin.buffer if str(file) == "-" else open(file, "rb")  # noqa: SIM115
    except OSError as exc:
        raise RheoError(f"cannot read {file}: {exc.strerror or exc}") from None
    with data:
        first = data.peek(4096).split(b"\n", 1)[0] if hasattr(data, "peek") else b""
        try:
            reader = formats.choose(from_, first)
        except formats.UnknownFormat as exc:
            raise UsageError(str(exc)) from None
        rt = runtime_for(None)
        try:
            counts = exchange.import_records(
                rt.conn, reader.read(data), include_purged=include_purged
            )
        except (InvalidInput, ValueError) as exc:
            raise RheoError(f"{file}: {exc}; nothing was imported") from None
    if json_out:
        print_json(
            {
                "added": counts.added,
                "already_present": counts.present,
                "left_out_purged": counts.purged,
            }
        )
        return
    added = ", ".join(f"{n} {k.replace('_', ' ')}s" for k, n in counts.added.items() if n)
    echo(f"imported {added or 'nothing new'}; {counts.present} already present")
    if counts.purged:
        say_error(
            f"note: left out {counts.purged} record(s) that 'rheo purge' erased from this "
            "store; --include-purged brings them back"
        )
