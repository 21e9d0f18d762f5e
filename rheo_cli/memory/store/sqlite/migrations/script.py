"""What the migration steps share: running a multi-statement script inside the step's
transaction, and the triggers that make a table append-only."""

from __future__ import annotations

import sqlite3

from ...errors import StoreError


def run_script(conn: sqlite3.Connection, script: str) -> None:
    """Execute a multi-statement SQL script inside the caller's transaction.

    ``Connection.executescript`` would COMMIT first; this splits the script into complete
    statements (trigger bodies included) with ``sqlite3.complete_statement`` and runs each.
    """
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            if pending.strip():
                conn.execute(pending)
            pending = ""
    if pending.strip():
        raise StoreError(f"incomplete SQL statement in migration: {pending.strip()[:60]}")


def append_only(table: str, what: str) -> str:
    """SQL for the two triggers that make ``table`` refuse UPDATE and DELETE."""
    return f"""
    CREATE TRIGGER {table}_no_update BEFORE UPDATE ON {table}
    BEGIN SELECT RAISE(ABORT, '{what} is append-only: rows cannot be changed'); END;
    CREATE TRIGGER {table}_no_delete BEFORE DELETE ON {table}
    BEGIN SELECT RAISE(ABORT, '{what} is append-only: rows cannot be deleted'); END;
    """
