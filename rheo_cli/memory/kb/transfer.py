"""The knowledge base in rheo's export format: documents and their chunks as records, and back.

A ``kb_document`` record is one version of a document (source, title, the SHA-256 of its
text, version, status, times, the key of the version that replaced it); its ``kb_chunk``
records follow it, in order. Keys are computed from content, like every other record's: a
document's from its profile, source, version, SHA-256 and time added; a chunk's from its
document's key and its place. An import computes them again from each record (the file's
keys only name records within it), so importing a file twice adds nothing, whatever keys it
gives, and a re-export of an imported store is the file it came from. A record whose key a
purge of the profile erased is left out (unless the caller includes purged records). Status
changes after the export are not merged: a document already stored keeps its own status.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from typing import Any

from ..store.api import Connection
from ..store.errors import InvalidInput
from ..store.timeutil import from_stored, to_stored

KINDS = ("kb_document", "kb_chunk")
"""The record types of the knowledge base."""

STATUSES = ("active", "replaced", "removed")


def _hash(*parts: Any) -> str:
    blob = json.dumps(parts, ensure_ascii=True, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("ascii")).hexdigest()[:24]


def document_key(r: Any) -> str:
    """The key of a document version (a row or record with profile, source, version, sha256,
    added_at)."""
    return "k" + _hash(r["profile"], r["source"], r["version"], r["sha256"], r["added_at"])


def chunk_key(doc_key: str, ordinal: int) -> str:
    """The key of a document's ``ordinal``-th chunk."""
    return "c" + _hash(doc_key, ordinal)


def has_documents(conn: Connection, profiles: list[str]) -> bool:
    """True when any of ``profiles`` has a knowledge document (any version)."""
    return any(
        conn.execute("SELECT 1 FROM kb_documents WHERE profile = ? LIMIT 1", (p,)).fetchone()
        for p in profiles
    )


def keys(conn: Connection, profile: str) -> dict[str, int]:
    """Every stored document and chunk key of ``profile`` -> its row id."""
    out: dict[str, int] = {}
    docs: dict[int, str] = {}
    for r in conn.execute(
        "SELECT id, profile, source, version, sha256, added_at FROM kb_documents "
        "WHERE profile = ? ORDER BY id",
        (profile,),
    ):
        docs[r["id"]] = document_key(r)
        out[docs[r["id"]]] = int(r["id"])
    for r in conn.execute(
        "SELECT id, document_id, ordinal FROM kb_chunks WHERE profile = ? ORDER BY id",
        (profile,),
    ):
        if r["document_id"] in docs:
            out[chunk_key(docs[r["document_id"]], int(r["ordinal"]))] = int(r["id"])
    return out


def export_records(conn: Connection, profile: str) -> Iterator[dict[str, Any]]:
    """``profile``'s knowledge base as records: each document version (oldest first), then
    its chunks in order. Read inside the caller's snapshot."""
    docs = conn.execute(
        "SELECT * FROM kb_documents WHERE profile = ? ORDER BY id", (profile,)
    ).fetchall()
    by_id = {int(r["id"]): document_key(r) for r in docs}
    for r in docs:
        key = by_id[int(r["id"])]
        yield {
            "type": "kb_document",
            "key": key,
            "profile": profile,
            "source": r["source"],
            "title": r["title"],
            "sha256": r["sha256"],
            "version": int(r["version"]),
            "status": r["status"],
            "added_at": r["added_at"],
            "changed_at": r["changed_at"],
            "replaced_by": by_id.get(r["replaced_by"]) if r["replaced_by"] is not None else None,
            "chars": int(r["chars"]),
        }
        for c in conn.execute(
            "SELECT ordinal, heading, content FROM kb_chunks WHERE document_id = ? "
            "AND profile = ? ORDER BY ordinal",
            (r["id"], profile),
        ):
            yield {
                "type": "kb_chunk",
                "key": chunk_key(key, int(c["ordinal"])),
                "profile": profile,
                "document": key,
                "ordinal": int(c["ordinal"]),
                "heading": c["heading"],
                "content": c["content"],
            }


def _time(rec: dict[str, Any], line: int, name: str, *, required: bool = True) -> str | None:
    value = rec.get(name)
    if value is None and not required:
        return None
    try:
        ok = isinstance(value, str) and to_stored(from_stored(value)) == value
    except (InvalidInput, ValueError, OverflowError):
        ok = False
    if not ok:
        raise InvalidInput(
            f"line {line}: {name} {value!r} is not a UTC time as rheo writes it "
            "(e.g. 2026-11-20T10:00:00.000Z)"
        )
    return str(value)


def _text(rec: dict[str, Any], line: int, name: str) -> str:
    value = rec.get(name)
    if not isinstance(value, str):
        raise InvalidInput(f"line {line}: a {rec.get('type')} record needs {name} as text")
    if "\x00" in value:
        raise InvalidInput(f"line {line}: {name} holds a NUL character")
    return value


def _int(rec: dict[str, Any], line: int, name: str, low: int) -> int:
    value = rec.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise InvalidInput(f"line {line}: {name} must be a whole number from {low}")
    return value


def import_records(
    conn: Connection,
    profile: str,
    records: Iterable[tuple[int, dict[str, Any]]],
    *,
    purged: set[str] | frozenset[str] = frozenset(),
) -> tuple[dict[str, int], int, int]:
    """Write ``profile``'s knowledge-base records (``(line number, record)``, as
    `export_records` makes them) inside the caller's transaction; records whose key, computed
    from their content, is already stored are skipped, and so are those whose key is in
    ``purged`` (what purges erased, with what refers to them). Returns ``(added per kind,
    already present, left out as purged)``.

    An active version whose text (SHA-256) is the active version here — the same file added
    to both stores — is already there: it and its chunks are counted as present.

    Raises InvalidInput naming the line of a malformed record, one referring to a document
    not stored or before it, or an active version of a document that is already active here
    in a version with other text (remove it first with ``rheo kb remove``)."""
    run = _Import(conn, profile, purged)
    for line, rec in records:
        key = rec.get("key")
        if not isinstance(key, str) or not key:
            raise InvalidInput(f"line {line}: key and profile must be text")
        if key in run.file:
            run.present += 1  # the same record again (a file holding an export twice)
            continue
        if rec["type"] == "kb_document":
            run.document(line, rec, key)
        else:
            run.chunk(line, rec, key)
    run.link_replacements()
    return run.added, run.present, run.left_out


class _Import:
    """One `import_records` run into ``profile``: the keys stored and the file's keys seen so
    far, the counts, and the ``replaced_by`` links written once every document is in."""

    def __init__(self, conn: Connection, profile: str, purged: set[str] | frozenset[str]) -> None:
        self.conn = conn
        self.profile = profile
        self.purged = purged
        self.known = keys(conn, profile)  # stored content keys -> local ids
        self.file: dict[str, int | None] = {}  # the file's keys -> local ids (None: purged)
        self.content: dict[str, str] = {}  # the file's document keys -> their content keys
        self.same: set[str] = set()  # the file's document keys of an identical active version
        self.added = dict.fromkeys(KINDS, 0)
        self.present = 0
        self.left_out = 0
        self.links: list[tuple[int, int, str]] = []  # (local id, line, replaced_by's file key)

    def document(self, line: int, rec: dict[str, Any], key: str) -> None:
        """Import the ``kb_document`` record ``rec`` (file key ``key``) of line ``line``."""
        profile = self.profile
        status = rec.get("status")
        if status not in STATUSES:
            raise InvalidInput(f"line {line}: status must be one of {', '.join(STATUSES)}")
        source = _text(rec, line, "source")
        own = document_key({
            "profile": profile, "source": source, "version": _int(rec, line, "version", 1),
            "sha256": _text(rec, line, "sha256"), "added_at": _time(rec, line, "added_at"),
        })  # fmt: skip
        self.content[key] = own
        if own in self.known:
            self.file[key] = self.known[own]
            self.present += 1
            return
        if own in self.purged:
            self.file[key] = None
            self.left_out += 1
            return
        active = self._active(source) if status == "active" else None
        if active is not None and active[1] == _text(rec, line, "sha256"):
            # The same text is active here already (added to both stores): it is there.
            self.file[key] = int(active[0])
            self.same.add(key)
            self.present += 1
            return
        if active is not None:
            raise InvalidInput(
                f"line {line}: knowledge document {source!r} is already active here in "
                "another version (rheo kb remove it first)"
            )
        new_id = self.conn.execute(
            "INSERT INTO kb_documents(profile, source, title, sha256, version, status, "
            "added_at, changed_at, chars) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (
                profile, source, _text(rec, line, "title"), _text(rec, line, "sha256"),
                _int(rec, line, "version", 1), status, _time(rec, line, "added_at"),
                _time(rec, line, "changed_at", required=False), _int(rec, line, "chars", 0),
            ),
        ).fetchone()[0]  # fmt: skip
        if rec.get("replaced_by") is not None:
            self.links.append((int(new_id), line, str(rec["replaced_by"])))
        self.added["kb_document"] += 1
        self.known[own] = int(new_id)
        self.file[key] = int(new_id)

    def _active(self, source: str) -> Any:
        """The stored active version of ``source`` (its id and sha256), or None."""
        return self.conn.execute(
            "SELECT id, sha256 FROM kb_documents WHERE profile = ? AND source = ? "
            "AND status = 'active'",
            (self.profile, source),
        ).fetchone()

    def chunk(self, line: int, rec: dict[str, Any], key: str) -> None:
        """Import the ``kb_chunk`` record ``rec`` (file key ``key``) of line ``line``: its
        document must be a record before it."""
        document = rec.get("document")
        if not isinstance(document, str) or document not in self.file:
            raise InvalidInput(f"line {line}: document {document!r} is not a record before it")
        own = chunk_key(self.content[document], _int(rec, line, "ordinal", 0))
        if document in self.same:  # a chunk of a version already here: its own chunks stand
            self.present += 1
            return
        if own in self.known:
            self.file[key] = self.known[own]
            self.present += 1
            return
        if self.file[document] is None or own in self.purged:
            self.file[key] = None
            self.left_out += 1
            return
        new_id = self.conn.execute(
            "INSERT INTO kb_chunks(document_id, profile, ordinal, heading, content) "
            "VALUES (?, ?, ?, ?, ?) RETURNING id",
            (
                self.file[document], self.profile, _int(rec, line, "ordinal", 0),
                _text(rec, line, "heading"), _text(rec, line, "content"),
            ),
        ).fetchone()[0]  # fmt: skip
        self.added["kb_chunk"] += 1
        self.known[own] = int(new_id)
        self.file[key] = int(new_id)

    def link_replacements(self) -> None:
        """Point each imported version at the version that replaced it (its ``replaced_by``,
        a key of the file or one stored), unless that version was purged."""
        for doc_id, line, target in self.links:
            if target not in self.file and target not in self.known:
                raise InvalidInput(f"line {line}: replaced_by {target!r} is not in the file")
            replacement = self.file[target] if target in self.file else self.known[target]
            if replacement is None:  # the newer version was purged: this one has no successor
                continue
            self.conn.execute(
                "UPDATE kb_documents SET replaced_by = ? WHERE id = ? AND profile = ?",
                (replacement, doc_id, self.profile),
            )
