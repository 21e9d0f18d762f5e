"""The items a new fact is compared with on the write path: the one a writer names, those on
its topic, those holding the same content under another topic, and retracted ones.

Every read is scoped by profile; "a scope" is the shared memory (``assistant`` None) or one
assistant's own.
"""

from __future__ import annotations

from ..store.api import Connection
from ..store.errors import NotFound
from .equivalence import content_key, equivalent, similar
from .fact import Fact
from .items import MemoryItem, row_to_item
from .keywords import roots


def owner_of_turn(conn: Connection, turn_id: int) -> str:
    """The profile of ledger turn ``turn_id``; raises NotFound."""
    row = conn.execute("SELECT profile FROM turns WHERE id = ?", (turn_id,)).fetchone()
    if row is None:
        raise NotFound(f"no turn #{turn_id}")
    return str(row[0])


def active_item(conn: Connection, profile: str, item_id: int) -> MemoryItem | None:
    """Item ``item_id`` when it is an active item of ``profile``, else None."""
    row = conn.execute(
        "SELECT * FROM memory_items WHERE id = ? AND profile = ? AND status = 'active'",
        (item_id, profile),
    ).fetchone()
    return None if row is None else row_to_item(row)


def on_topic(conn: Connection, profile: str, topic: str, assistant: str | None) -> list[MemoryItem]:
    """Active items of one scope (``assistant``; None: shared) on ``topic``, newest first."""
    return [
        row_to_item(r)
        for r in conn.execute(
            # coalesce, not `IS ?`: the same on SQLite and PostgreSQL (names are never empty)
            "SELECT * FROM memory_items WHERE profile = ? AND coalesce(assistant, '') = "
            "coalesce(?, '') AND topic = ? AND status = 'active' ORDER BY id DESC",
            (profile, assistant, topic),
        )
    ]


def same_content(
    conn: Connection, profile: str, fact: Fact, assistant: str | None
) -> list[MemoryItem]:
    """Active items of the scope whose content is the same fact as ``fact`` (by the strict
    rule, `equivalent`) whatever their topic, oldest first; candidates are found by the
    stored content key, so this is one indexed-by-profile read."""
    rows = conn.execute(
        "SELECT * FROM memory_items WHERE profile = ? AND status = 'active' AND content_key = ? "
        "AND coalesce(assistant, '') = coalesce(?, '') ORDER BY id",
        (profile, content_key(fact.label, fact.properties), assistant),
    ).fetchall()
    found = [row_to_item(r) for r in rows]
    return [o for o in found if equivalent(o.label, o.properties, fact.label, fact.properties)]


def retracted_like(conn: Connection, profile: str, fact: Fact) -> MemoryItem | None:
    """A fact of ``profile`` the person retracted that ``fact`` resembles (`similar`), whatever
    its topic or scope, or None."""
    for row in conn.execute(
        "SELECT * FROM memory_items WHERE profile = ? AND status = 'retracted'", (profile,)
    ):
        old = row_to_item(row)
        if similar(old.label, old.properties, fact.label, fact.properties):
            return old
        if old.reason == FORGET_REQUEST and covers(old.label, fact):
            return old
    return None


FORGET_REQUEST = "the person asked to forget this before rheo had stored it"
"""The ``reason`` of a retracted item that records a request to forget something rheo had
not stored (yet): what a later extraction of earlier turns would learn, it must not."""


def covers(request: str, fact: Fact) -> bool:
    """Whether every meaningful word of ``request`` (the person's "forget that …" words) is
    a word of ``fact`` (label, properties or topic), as `keywords.roots` reads them."""
    wanted = roots(request)
    have = roots(fact.label, fact.properties) | roots(fact.topic.replace("-", " "))
    return bool(wanted) and wanted <= have
