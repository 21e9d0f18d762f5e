"""Knowledge-base documents: add (or a new version of) a document, list, show, remove.

A document is identified within a profile by its ``source`` (for files, the absolute path).
Adding the same text again changes nothing; adding changed text makes a new version whose
chunks replace the old ones in search, while the old version stays, marked ``replaced``.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from ..store.api import Connection, Row
from ..store.db import write
from ..store.errors import InvalidInput, NotFound
from ..store.timeutil import to_stored
from .chunking import Chunk, chunk_document

MAX_DOCUMENT_CHARS = 5_000_000
"""Largest document accepted (characters)."""


@dataclass(frozen=True)
class Document:
    """One version of a document. ``status``: active, replaced or removed."""

    id: int
    profile: str
    source: str
    title: str
    sha256: str
    version: int
    status: str
    added_at: str
    changed_at: str | None
    replaced_by: int | None
    chars: int
    chunks: int = 0


@dataclass(frozen=True)
class Added:
    """What `add_document` did: ``added`` (first version), ``replaced`` (a new version of a
    changed document; ``previous`` is the old one) or ``unchanged``."""

    action: Literal["added", "replaced", "unchanged"]
    document: Document
    previous: Document | None = None


def _row(row: Row) -> Document:
    keys = row.keys()
    return Document(
        id=row["id"],
        profile=row["profile"],
        source=row["source"],
        title=row["title"],
        sha256=row["sha256"],
        version=row["version"],
        status=row["status"],
        added_at=row["added_at"],
        changed_at=row["changed_at"],
        replaced_by=row["replaced_by"],
        chars=row["chars"],
        chunks=row["chunks"] if "chunks" in keys else 0,
    )


_SELECT = (
    "SELECT d.*, (SELECT count(*) FROM kb_chunks c WHERE c.document_id = d.id) AS chunks "
    "FROM kb_documents d"
)


def _title(source: str, chunks: list[Chunk], text: str) -> str:
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#"):
            return stripped.lstrip("#").strip()[:200] or source
    return source.rsplit("/", 1)[-1][:200]


def add_document(
    conn: Connection,
    profile: str,
    source: str,
    text: str,
    now: datetime,
    *,
    markdown: bool = True,
) -> Added:
    """Add ``text`` as the document ``source`` of ``profile``, or a new version of it.

    Returns what happened (see `Added`). Raises InvalidInput for an empty source, text with no
    content, text holding NUL characters, or text over `MAX_DOCUMENT_CHARS`.
    """
    source = source.strip()
    if not source:
        raise InvalidInput("a knowledge document needs a source name")
    if "\x00" in text:
        raise InvalidInput(f"{source} is not a text document (it holds NUL bytes)")
    if len(text) > MAX_DOCUMENT_CHARS:
        raise InvalidInput(f"{source} is larger than {MAX_DOCUMENT_CHARS:,} characters")
    chunks = chunk_document(text, markdown=markdown)
    if not chunks:
        raise InvalidInput(f"{source} holds no text")
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    stamp = to_stored(now)
    with write(conn):
        current = conn.execute(
            f"{_SELECT} WHERE d.profile = ? AND d.source = ? AND d.status = 'active'",
            (profile, source),
        ).fetchone()
        if current is not None and current["sha256"] == digest:
            return Added("unchanged", _row(current))
        version = 1 + int(
            conn.execute(
                "SELECT coalesce(max(version), 0) FROM kb_documents "
                "WHERE profile = ? AND source = ?",
                (profile, source),
            ).fetchone()[0]
        )
        if current is not None:
            conn.execute(
                "UPDATE kb_documents SET status = 'replaced', changed_at = ? WHERE id = ?",
                (stamp, current["id"]),
            )
        doc_id = conn.execute(
            "INSERT INTO kb_documents(profile, source, title, sha256, version, status, added_at, "
            "chars) VALUES (?, ?, ?, ?, ?, 'active', ?, ?) RETURNING id",
            (profile, source, _title(source, chunks, text), digest, version, stamp, len(text)),
        ).fetchone()[0]
        conn.store.execute_indexed(
            "kb_chunks",
            "INSERT INTO kb_chunks(document_id, profile, ordinal, heading, content) "
            "VALUES (?, ?, ?, ?, ?)",
            [(doc_id, profile, n, c.heading, c.content) for n, c in enumerate(chunks)],
            many=True,
        )
        if current is not None:
            conn.execute(
                "UPDATE kb_documents SET replaced_by = ? WHERE id = ?", (doc_id, current["id"])
            )
        document = _row(conn.execute(f"{_SELECT} WHERE d.id = ?", (doc_id,)).fetchone())
    if current is None:
        return Added("added", document)
    previous = get_document(conn, profile, int(current["id"]))
    return Added("replaced", document, previous)


def list_documents(conn: Connection, profile: str, *, all_versions: bool = False) -> list[Document]:
    """The active documents of ``profile`` by source (``all_versions``: every version, also
    replaced and removed ones, newest version first within a source)."""
    where = "d.profile = ?" + ("" if all_versions else " AND d.status = 'active'")
    rows = conn.execute(
        f"{_SELECT} WHERE {where} ORDER BY d.source, d.version DESC", (profile,)
    ).fetchall()
    return [_row(r) for r in rows]


def get_document(conn: Connection, profile: str, document_id: int) -> Document:
    """One document version of ``profile``. Raises NotFound (also for another profile's id)."""
    row = conn.execute(
        f"{_SELECT} WHERE d.id = ? AND d.profile = ?", (document_id, profile)
    ).fetchone()
    if row is None:
        raise NotFound(f"no knowledge document #{document_id}")
    return _row(row)


def find_document(conn: Connection, profile: str, ref: str) -> Document:
    """The active document named by ``ref``: an id (``12`` or ``#12``) or a source.
    Raises NotFound."""
    digits = ref.strip().lstrip("#")
    if digits.isdigit() and len(digits) < 19:
        return get_document(conn, profile, int(digits))
    row = conn.execute(
        f"{_SELECT} WHERE d.profile = ? AND d.source = ? AND d.status = 'active'",
        (profile, ref.strip()),
    ).fetchone()
    if row is None:
        raise NotFound(f"no knowledge document {ref!r}")
    return _row(row)


def document_chunks(conn: Connection, profile: str, document_id: int) -> list[Chunk]:
    """The chunks of one document version, in order. Raises NotFound."""
    get_document(conn, profile, document_id)
    rows = conn.execute(
        "SELECT heading, content FROM kb_chunks WHERE document_id = ? AND profile = ? "
        "ORDER BY ordinal",
        (document_id, profile),
    ).fetchall()
    return [Chunk(r["heading"], r["content"]) for r in rows]


def remove_document(conn: Connection, profile: str, document_id: int, now: datetime) -> Document:
    """Stop using a document: its active version is marked ``removed`` (kept, no longer
    searched or injected). Raises NotFound, or InvalidInput for a version that is not active."""
    with write(conn):
        document = get_document(conn, profile, document_id)
        if document.status != "active":
            raise InvalidInput(f"knowledge document #{document_id} is {document.status} already")
        conn.execute(
            "UPDATE kb_documents SET status = 'removed', changed_at = ? WHERE id = ?",
            (to_stored(now), document_id),
        )
    return get_document(conn, profile, document_id)
