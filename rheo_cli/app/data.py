"""Data in and out of the store: ``rheo backup`` (a copy of the store), ``rheo export``
(JSON Lines) and ``rheo import`` (a file recognised by its content: rheo's own export, or
another program's chat history).

Files are read and written by `rheo_cli.transfer` (the one registry of formats); what they
hold goes into or out of the store through the engine's `memory.archive`. Every copy rheo
writes is noted (`copies`), so a later purge can name it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..errors import RheoError, UsageError
from ..memory import archive
from ..memory.archive import ImportCounts, Summary
from ..memory.store.errors import InvalidInput
from ..memory.store.timeutil import to_stored
from ..transfer import formats, rheo_jsonl
from ..transfer.history import History
from ..transfer.rheo_jsonl import Records
from ..transfer.source import Source
from . import copies, maintenance
from .app import App

__all__ = [
    "FORMATS",
    "HISTORY_FORMATS",
    "Backup",
    "History",
    "ImportCounts",
    "Records",
    "Source",
    "Summary",
    "backup",
    "backup_target",
    "export",
    "export_profiles",
    "import_history",
    "import_records",
    "read",
]

FORMATS = formats.NAMES
"""The formats ``--from`` names: ``rheo``, ``llm``, ``chatgpt``, ``claude``."""
HISTORY_FORMATS = formats.HISTORY
"""The formats of other programs' chat history (all but ``rheo``)."""


@dataclass
class Backup:
    """A backup written: its size in ``bytes``; on PostgreSQL also the ``profile`` whose
    tenant it holds and its ``records`` (in rheo's export format, header not counted); on
    SQLite both None (a copy of the whole file, every profile)."""

    bytes: int
    profile: str | None = None
    records: int | None = None


def backup_target(raw: str, path: Path) -> Path:
    """The new file a backup goes to: ``path`` (the argument ``raw`` as a file name) with
    ``~`` expanded. Raises UsageError when it names a folder, its folder does not exist or
    it exists already."""
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
    return target


def backup(app: App, target: Path) -> Backup:
    """Copy the store to the new file ``target`` (mode 0600; it appears only once complete):
    SQLite's online backup of the whole file, or on PostgreSQL the profile's tenant from one
    snapshot in rheo's export format. Raises UsageError when ``target`` is one of rheo's own
    files, StoreError when it cannot be written."""
    own = {app.paths.db, app.paths.config} | {
        app.paths.db.with_name(app.paths.db.name + s) for s in ("-wal", "-shm", "-journal")
    }
    if target.absolute() in {f.absolute() for f in own}:
        raise UsageError(f"{target} is one of rheo's own files: choose another name")

    def export(dest: str) -> int:  # a store bound to one tenant backs up its records
        return rheo_jsonl.write_file(
            archive.export_records(app.conn, [app.profile]), Path(dest), point="backup.copy"
        )

    done = app.store.backup(str(target), export)
    if "records" not in done:  # the whole file: every profile in it
        copies.note(app.paths, target, kind="backup", profiles=None)
        return Backup(bytes=int(done["bytes"]))
    copies.note(app.paths, target, kind="backup", profiles=[app.profile])
    return Backup(bytes=int(done["bytes"]), profile=app.profile, records=int(done["records"]))


def export_profiles(app: App, *, every: bool = False) -> list[str]:
    """The profiles an export holds: ``app``'s, or with ``every`` each profile with something
    stored (sorted). Raises UsageError for ``every`` on PostgreSQL (a tenant sees only its
    own rows)."""
    if not every:
        return [app.profile]
    if app.store_class.serves_one_tenant:
        raise UsageError(
            "on PostgreSQL each profile is a tenant that sees only its own rows: export one "
            "profile at a time (rheo export --profile NAME)"
        )
    return archive.profiles(app.conn)


def export(app: App, profiles: list[str], to: Path | IO[str], *, replace: bool = False) -> int:
    """Write the ``profiles``' records (header first, knowledge base included) from one
    snapshot as JSON Lines to the new file ``to`` (mode 0600, noted as a copy) or the text
    stream ``to``; returns how many records (the header not counted). ``replace``: an
    existing file is replaced once the new one is whole. Raises UsageError when the file
    exists (without ``replace``), StoreError when it cannot be written."""
    if isinstance(to, Path) and to.exists() and not replace:
        raise UsageError(f"{to} already exists: choose a new file, or replace it with --force")
    with archive.snapshot(app.conn):
        records = archive.export_records(app.conn, profiles)
        if not isinstance(to, Path):
            return rheo_jsonl.write(records, to) - 1
        count = rheo_jsonl.write_file(records, to, replace=replace)
    copies.note(app.paths, to, kind="export", profiles=profiles)
    return count - 1


def read(source: Source, fmt_name: str | None, *, extract: bool = False) -> Records | History:
    """What ``source`` holds, in the format ``fmt_name`` names or (None) the one recognised
    by its content: rheo's own export as `Records` (read as they are imported), or another
    program's `History`. ``extract``: the import will queue extraction (only for history).
    Raises UsageError for an unknown or unrecognised format, a malformed history and
    ``extract`` with a rheo export; RheoError (exit 1) for a file that cannot be read and a
    history holding no conversation rheo can read."""
    fmt = formats.choose(fmt_name, source)
    if fmt.version is not None and extract:
        raise UsageError(
            "--extract is for other tools' history: a rheo export brings its facts and "
            "digests with it"
        )
    readout = fmt.read(source)
    if isinstance(readout, History) and not readout.parsed.conversations:
        parsed = readout.parsed
        left = ", ".join(f"{reason}: {n}" for reason, n in sorted(parsed.skipped.items()))
        said = f"no {parsed.fmt} conversation rheo can read" + (
            f" (left out: {left})" if left else ""
        )
        raise RheoError(f"{source.label()}: {said}")
    return readout


def import_records(
    app: App, source: Source, records: Records, *, include_purged: bool = False
) -> ImportCounts:
    """Import rheo's own export into the profiles it names, in one transaction: what is
    already stored is skipped, what a purge erased is left out unless ``include_purged``.
    Raises RheoError naming ``source`` for a malformed file (then nothing is imported)."""
    try:
        return archive.import_records(app.conn, records.lines, include_purged=include_purged)
    except (InvalidInput, ValueError) as exc:
        raise RheoError(f"{source.label()}: {exc}; nothing was imported") from None


def import_history(
    app: App,
    history: History,
    *,
    extract: bool = False,
    include_purged: bool = False,
    on_row: Callable[[int], None] | None = None,
) -> Summary:
    """Import another program's chat history into ``app``'s profile in one transaction (its
    times and order kept, each conversation its own sessions; what is stored already or was
    purged is skipped). ``extract`` also queues extraction and digests and starts the
    background worker. ``on_row(n)`` is called once with the number of rows, then with 0
    after each row written."""
    summary = archive.import_history(
        app.conn,
        app.profile,
        history.parsed,
        gap_s=app.settings.gap_s,
        now=to_stored(app.now()),
        extract=extract,
        on_row=on_row,
        include_purged=include_purged,
    )
    if extract and summary.extract_jobs + summary.digest_jobs:
        maintenance.start_worker(app)
    return summary
