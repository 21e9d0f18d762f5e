"""rheo's export format on both stores: a profile's ledger and memory (`export`,
`importing`), plus the knowledge base (`kb.transfer`), and the PostgreSQL side of both.

An export holding knowledge-base records says version 2 in its header, so an older rheo
refuses it with one line instead of stopping at the first record it does not know; one holding
memory items of one assistant (their ``assistant`` field) says version 3, so an older rheo
refuses it rather than import those facts as shared; an export with neither stays version 1,
byte for byte what it was (`keys.version_for`; `keys.VERSION` is the newest).

A snapshot is the store's read transaction (`api.Store.snapshot`). Where a connection is
bound to one tenant (PostgreSQL), an import writes each profile's records as that profile's
tenant (`api.Store.tenant_groups`: for the rest of the import's one transaction only, with
the tenant's write lock), so a file holding several profiles goes into each of them, as on
SQLite. A store whose text cannot hold the NUL character (`api.Store.refuses_nul`:
PostgreSQL's; SQLite's can) refuses a record holding one with its line number (the file's
``\u0000``), before anything is written, rather than changed on the way in.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from typing import Any

from ..kb import transfer as kb_transfer
from ..store.api import Connection
from ..store.db import write
from ..store.errors import InvalidInput
from ..store.profiles import check_profile
from . import export as ledger_export
from . import importing as ledger_import
from .keys import KINDS as LEDGER_KINDS
from .keys import version_for
from .tombstones import purged_keys

KINDS = (*LEDGER_KINDS, *kb_transfer.KINDS)


def snapshot(conn: Connection) -> AbstractContextManager[Connection]:
    """A read transaction: every query inside sees one consistent state of the store
    (`api.Store.snapshot`)."""
    return conn.store.snapshot()


def export_records(conn: Connection, names: list[str]) -> Iterator[dict[str, Any]]:
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


def import_records(
    conn: Connection,
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
    store = conn.store

    def others() -> Iterator[tuple[int, dict[str, Any]]]:
        for line, record in records:
            if store.refuses_nul:
                _refuse_nul(line, record)
            if record.get("type") in kb_transfer.KINDS:
                kb.append((line, record))
            else:
                yield line, record

    counts = ledger_import.ImportCounts()
    counts.added.update(dict.fromkeys(kb_transfer.KINDS, 0))
    store.mend_indexes()
    with write(conn):
        for group in store.tenant_groups(others(), _profile):
            _merge(counts, ledger_import.import_records(conn, group, include_purged=include_purged))
        for profile, group in itertools.groupby(kb, key=_profile):
            items = list(group)
            if not isinstance(profile, str) or not profile:
                raise InvalidInput(f"line {items[0][0]}: key and profile must be text")
            try:
                check_profile(profile)
            except InvalidInput as exc:
                raise InvalidInput(f"line {items[0][0]}: {exc}") from None
            store.act_as(profile)
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
    """Text that cannot hold NUL (PostgreSQL's): raise InvalidInput naming the line and field
    of a text field holding one (nested values are stored as JSON, where NUL is ``\\u0000``)."""
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
