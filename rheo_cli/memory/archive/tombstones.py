"""What earlier purges erased, as an import needs it: the content keys (`keys`) each purge
tombstone lists (schema 13 on SQLite, m007 on PostgreSQL; tombstones from before list none).

A key is a truncated SHA-256 digest of a record's content, never the text: it lets an import
of an export made before a purge recognise the erased records and leave them out, so an old
file does not silently bring purged text back."""

from __future__ import annotations

import json

from ..store.api import Connection


def purged_keys(conn: Connection, profile: str) -> set[str]:
    """Every content key the purges of ``profile`` erased (empty when none listed any)."""
    found: set[str] = set()
    for row in conn.execute("SELECT keys FROM purges WHERE profile = ?", (profile,)).fetchall():
        try:
            keys = json.loads(row[0] or "[]")
        except ValueError:
            continue
        if isinstance(keys, list):
            found.update(k for k in keys if isinstance(k, str))
    return found
