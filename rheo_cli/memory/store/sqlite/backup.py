"""Backups: a consistent copy of the live SQLite store through SQLite's online backup API,
even while another process writes (WAL readers never block writers)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from .. import crash
from ..errors import DatabaseError, StoreError
from ..private_file import new_private_file
from .connection import SqliteConnection


def backup(conn: SqliteConnection, dest: str | os.PathLike[str]) -> int:
    """Copy the database to ``dest`` (a new file, mode 0600, its folder created 0700) with the
    online backup API; returns the size in bytes. The copy is a single file (rollback
    journal, no -wal) and passes ``PRAGMA integrity_check``. It is written beside ``dest``
    and takes that name only once complete (`private_file`): ``dest`` never exists
    half-written.

    Raises StoreError when ``dest`` exists or cannot be written, or the copy is not sound.
    """
    path = Path(dest)
    if path.exists():
        raise StoreError(f"{path} already exists: choose a new file for the backup")
    with new_private_file(path) as partial:
        try:
            target = sqlite3.connect(partial, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write the backup {path}: {exc}") from exc
        try:
            # One step: the whole copy reads one snapshot, so writers elsewhere never restart it.
            conn.backup(target, pages=-1)
            crash.reach("backup.copy")
            target.execute("PRAGMA journal_mode = DELETE")
            verdict = target.execute("PRAGMA integrity_check").fetchone()[0]
            if verdict != "ok":
                raise StoreError(f"the backup {path} failed its integrity check: {verdict}")
        except (sqlite3.Error, DatabaseError) as exc:
            raise StoreError(f"cannot write the backup {path}: {exc}") from exc
        finally:
            target.close()
    return path.stat().st_size
