"""rheo's export format on both stores: a profile's ledger and memory (`export`,
`importing`), plus the knowledge base (`kb.transfer`), and the PostgreSQL side of both.

An export holding knowledge-base records says version 2 in its header, so an older rheo
refuses it with one line instead of stopping at the first record it does not know; one holding
memory items of one assistant (their ``assistant`` field) says version 3, so an older rheo
refuses it rather than import those facts as shared; an export with neither stays version 1,
byte for byte what it was (`keys.version_for`; `keys.VERSION` is the newest).

On PostgreSQL a connection is bound to one tenant: a snapshot is a ``REPEATABLE READ``
transaction, and an import writes each profile's records as that profile's tenant (for the
rest of the import's one transaction only, with the tenant's write lock), so a file holding
several profiles goes into each of them, as on SQLite. PostgreSQL's text cannot hold the NUL
character, which SQLite's can: a record holding one is refused with its line number (the
file's ``\u0000``), before anything is written, rather than changed on the way in.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from ..kb import transfer as kb_transfer
from ..store import health
from ..store.db import write
from ..store.errors import InvalidInput
from ..store.pg import dialect
from ..store.profiles import check_profile
from . import export as ledger_export
from . import importing as ledger_import
from .keys import KINDS as LEDGER_KINDS
from .keys import version_for
from .tombstones import purged_keys

KINDS = (*LEDGER_KINDS, *kb_transfer.KINDS)


class snapshot:  # noqa: N801 - used as a context manager, like `write`
    """A read transaction: every query inside sees one consistent state of the store (on
    PostgreSQL a ``REPEATABLE READ READ ONLY`` transaction)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._inner: ledger_export.snapshot | None = None

    def __enter__(self) -> sqlite3.Connection:
        if dialect(self.conn) != "postgres":
            self._inner = ledger_export.snapshot(self.conn)
            return self._inner.__enter__()
        self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        self.conn.execute("SELECT 1").fetchone()  # the snapshot is taken here
        return self.conn

    def __exit__(self, *exc: object) -> None:
        if self._inner is not None:
            self._inner.__exit__(*exc)
        else:
            self.conn.execute("ROLLBACK")


def export_records(conn: sqlite3.Connection, names: list[str]) -> Iterator[dict[str, Any]]:
    """The header, every record `export.export_records` yields for ``names``, then each
    profile's knowledge base. Read inside a `snapshot`."""
    with_kb = kb_transfer.has_documents(conn, names)
    version = version_for(
        knowledge=with_kb, assistants=ledger_export.has_assistant_items(conn, names)
    )
    yield from ledger_export.export_records(conn, names, version)
    if with_kb:
        for profile in names:
            yield from kb_transfer.export_records(conn, profile)


def _profile(item: tuple[int, dict[str, Any]]) -> Any:
    return item[1].get("profile")


def _act_as(conn: sqlite3.Connection, profile: Any) -> None:
    """On PostgreSQL, write as ``profile``'s tenant until the transaction ends (with its
    write lock, as `pg.PgConnection.begin` takes its own); nothing on SQLite or for a
    record without a profile (the import reports it)."""
    if dialect(conn) != "postgres" or not isinstance(profile, str) or not profile:
        return
    conn.execute("SELECT set_config('rheo.tenant', ?, true)", (profile,))
    conn.execute("SELECT pg_advisory_xact_lock(hashtext('rheo:' || ?))", (profile,))


def import_records(
    conn: sqlite3.Connection,
    records: Iterable[tuple[int, dict[str, Any]]],
    *,
    include_purged: bool = False,
) -> ledger_import.ImportCounts:
    """Write ``(line number, record)`` pairs of a rheo export in one transaction (see
    `importing.import_records`, whose rules hold), the knowledge base included; returns what
    was added per kind, how many records were already stored, and how many were left out
    because a purge of this store erased them (all imported with ``include_purged``). Raises
    InvalidInput naming the line of the first bad record; then nothing is written."""
    kb: list[tuple[int, dict[str, Any]]] = []
    postgres = dialect(conn) == "postgres"

    def others() -> Iterator[tuple[int, dict[str, Any]]]:
        for line, record in records:
            if postgres:
                _refuse_nul(line, record)
            if record.get("type") in kb_transfer.KINDS:
                kb.append((line, record))
            else:
                yield line, record

    counts = ledger_import.ImportCounts()
    counts.added.update(dict.fromkeys(kb_transfer.KINDS, 0))
    health.mend_unopenable(conn)
    with write(conn):
        if postgres:
            for profile, group in itertools.groupby(others(), key=_profile):
                _act_as(conn, profile)
                _merge(
                    counts, ledger_import.import_records(conn, group, include_purged=include_purged)
                )
        else:
            _merge(
                counts, ledger_import.import_records(conn, others(), include_purged=include_purged)
            )
        for profile, group in itertools.groupby(kb, key=_profile):
            items = list(group)
            if not isinstance(profile, str) or not profile:
                raise InvalidInput(f"line {items[0][0]}: key and profile must be text")
            try:
                check_profile(profile)
            except InvalidInput as exc:
                raise InvalidInput(f"line {items[0][0]}: {exc}") from None
            _act_as(conn, profile)
            purged = set() if include_purged else purged_keys(conn, profile)
            added, present, left_out = kb_transfer.import_records(
                conn, profile, items, purged=purged
            )
            for kind, n in added.items():
                counts.added[kind] += n
            counts.present += present
            counts.purged += left_out
    return counts


def _refuse_nul(line: int, record: dict[str, Any]) -> None:
    """PostgreSQL's text cannot hold NUL: raise InvalidInput naming the line and field of a
    text field holding one (nested values are stored as JSON, where NUL is ``\\u0000``)."""
    for field, value in record.items():
        if isinstance(value, str) and "\x00" in value:
            raise InvalidInput(
                f"line {line}: the {record.get('type')} record holds a NUL character "
                f"(\\u0000) in {field}, which PostgreSQL cannot store: remove it from the "
                "file, or import into a SQLite store"
            )


def _merge(into: ledger_import.ImportCounts, part: ledger_import.ImportCounts) -> None:
    for kind, n in part.added.items():
        into.added[kind] = into.added.get(kind, 0) + n
    into.present += part.present
    into.purged += part.purged
