"""``rheo backup``, ``rheo export``, ``rheo import``: copies of the store, and moving
conversations and memories in and out as JSON Lines."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import RheoError, UsageError
from ..ui.output import echo, print_json
from .errors import command, say_error
from .options import Json, Profile
from .state import runtime_for


@command
def backup(
    path: Annotated[Path, typer.Argument(help="The new file to write (must not exist).")],
    json_out: Json = False,
) -> None:
    """Copy the whole database (every profile) to PATH, safely while rheo is in use.

    Uses SQLite's online backup API: a consistent copy even while another rheo writes. The
    copy is private (mode 0600) and can be opened with RHEO_HOME pointing at its folder
    (named rheo.db) or with any SQLite tool.

    \b
    Example:
      rheo backup ~/backups/rheo-$(date +%F).db
    """
    from ..memory import archive

    rt = runtime_for(None)
    size = archive.backup(rt.conn, path)
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
    """Export turns, sessions, digests and memory items with their history as JSON Lines.

    The first line is a header naming the format and its version; 'rheo import' reads the
    file back. Exporting the same data always gives the same bytes. The file holds everything
    you told rheo: it is created private (mode 0600).

    \b
    Examples:
      rheo export -o rheo-default.jsonl
      rheo export --all -o everything.jsonl
    """
    from ..io import rheo_jsonl
    from ..memory import archive

    rt = runtime_for(profile)
    names = archive.profiles(rt.conn) if all_ else [rt.profile]
    if output is not None and output.exists():
        raise UsageError(f"{output} already exists: choose a new file")
    with archive.snapshot(rt.conn):
        records = archive.export_records(rt.conn, names)
        if output is None:
            rheo_jsonl.write(records, sys.stdout)
            return
        partial = output.with_name(output.name + ".partial")
        old = os.umask(0o077)
        try:
            with open(partial, "x", encoding="utf-8") as out:
                count = rheo_jsonl.write(records, out)
            os.chmod(partial, 0o600)
            partial.replace(output)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        finally:
            os.umask(old)
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
) -> None:
    """Import a file made by 'rheo export' (into the profiles it names), or another tool's
    chat history.

    Records already stored are skipped, so importing a file twice adds nothing the second
    time. The whole file is checked and written in one transaction: a malformed line is
    reported with its number and nothing is imported.

    \b
    Examples:
      rheo import everything.jsonl
      rheo import conversations.json --from chatgpt
    """
    from ..importers import FORMATS as HISTORY_FORMATS
    from ..importers import sniff as sniff_history
    from ..io import formats
    from ..memory import archive
    from ..memory.store.errors import InvalidInput
    from .import_history_cmd import import_history

    history = (from_ or "").strip().lower()
    if not history and str(file) != "-" and file.is_file():
        try:
            with file.open("rb") as head:
                is_rheo = formats.FORMATS["rheo"].sniff(head.readline())
            history = "" if is_rheo else (sniff_history(file) or "")
        except OSError:
            history = ""
    if history in HISTORY_FORMATS:
        import_history(fmt=history, file=file, extract=False, json_out=json_out, profile=profile)
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
            counts = archive.import_records(rt.conn, reader.read(data))
        except (InvalidInput, ValueError) as exc:
            raise RheoError(f"{file}: {exc}; nothing was imported") from None
    if json_out:
        print_json({"added": counts.added, "already_present": counts.present})
        return
    added = ", ".join(f"{n} {k.replace('_', ' ')}s" for k, n in counts.added.items() if n)
    echo(f"imported {added or 'nothing new'}; {counts.present} already present")
