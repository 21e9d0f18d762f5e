"""rheo's export format with the knowledge base (`memory/exchange.py`, `memory/kb/transfer.py`)
on both stores: documents, versions and chunks out and back in, identical on re-export, never
twice, nothing half imported; on PostgreSQL a snapshot that works and a file of several
profiles written into each profile's tenant."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import as_tenant, pg_schema_url

from rheo_cli.memory.archive import exchange
from rheo_cli.memory.facts.items import list_items
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.kb import documents
from rheo_cli.memory.kb.search import search_chunks
from rheo_cli.memory.ledger import turns
from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import InvalidInput
from rheo_cli.memory.store.settings import Settings

NOW = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
GUIDE = "# Guide\n\n## Refunds\n\nRefunds within 30 days.\n\n## Shipping\n\nShips on Mondays.\n"
GUIDE_V2 = GUIDE.replace("30 days", "45 days")


@contextlib.contextmanager
def another_store(backend: str, tmp_path: Path, tenant: str = "default") -> Iterator[Any]:
    """A second, empty store on the same backend."""
    if backend == "sqlite":
        c = db.open_store(tmp_path / "other.db")
        try:
            yield c
        finally:
            c.close()
        return
    with pg_schema_url() as url:
        c = db.open_url(url, tenant=tenant)
        try:
            yield c
        finally:
            c.close()


def seed(conn: Any, profile: str = "default") -> None:
    as_tenant(conn, profile)
    turns.append_turn(conn, profile=profile, role="user", content=f"{profile} says hi", now=NOW,
                      gap_s=7200)  # fmt: skip
    remember(conn, Fact("fact", "tea", f"{profile} likes tea"), source="manual", now=NOW,
             settings=Settings(), profile=profile)  # fmt: skip
    documents.add_document(conn, profile, "/docs/guide.md", GUIDE, NOW)
    documents.add_document(conn, profile, "/docs/guide.md", GUIDE_V2, NOW + timedelta(hours=1))
    old = documents.add_document(conn, profile, "/docs/old.txt", "Old notes about faxes.", NOW,
                                 markdown=False)  # fmt: skip
    documents.remove_document(conn, profile, old.document.id, NOW + timedelta(hours=2))


def export(conn: Any, names: list[str]) -> list[dict[str, Any]]:
    with exchange.snapshot(conn):
        return list(exchange.export_records(conn, names))


def numbered(records: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    return list(enumerate(records, start=1))


def test_the_knowledge_base_goes_out_and_comes_back(conn, backend, tmp_path):
    seed(conn)
    records = export(conn, ["default"])
    assert records[0]["version"] == 2
    kinds = [r["type"] for r in records]
    assert kinds.count("kb_document") == 3 and kinds.count("kb_chunk") == 5
    v1 = next(r for r in records if r["type"] == "kb_document" and r["version"] == 1
              and r["source"] == "/docs/guide.md")  # fmt: skip
    assert v1["status"] == "replaced" and v1["replaced_by"].startswith("k")
    assert not any("id" in r or "document_id" in r for r in records)
    with another_store(backend, tmp_path) as other:
        counts = exchange.import_records(other, numbered(records))
        assert counts.added["kb_document"] == 3 and counts.added["kb_chunk"] == 5
        assert export(other, ["default"]) == records
        again = exchange.import_records(other, numbered(records))
        assert sum(again.added.values()) == 0 and again.present == len(records) - 1
        # The imported knowledge base is the same knowledge base: versions, statuses, search.
        listed = documents.list_documents(other, "default", all_versions=True)
        assert [(d.source, d.version, d.status) for d in listed] == [
            ("/docs/guide.md", 2, "active"),
            ("/docs/guide.md", 1, "replaced"),
            ("/docs/old.txt", 1, "removed"),
        ]
        assert listed[1].replaced_by == listed[0].id
        found = search_chunks(other, "default", "refunds")
        assert [p.content for p in found] == ["Refunds within 45 days."]


def test_an_export_without_knowledge_stays_version_1(conn):
    turns.append_turn(conn, profile="default", role="user", content="hi", now=NOW, gap_s=7200)
    records = export(conn, ["default"])
    assert records[0]["version"] == 1
    assert {r["type"] for r in records} == {"header", "session", "turn"}


def test_a_bad_knowledge_record_is_reported_by_line_and_nothing_is_imported(
    conn, backend, tmp_path
):
    seed(conn)
    records = export(conn, ["default"])
    chunk_at = next(n for n, r in enumerate(records) if r["type"] == "kb_chunk")
    cases = [
        ({**records[chunk_at], "document": "knope"}, "document 'knope' is not a record"),
        ({**records[chunk_at], "content": 12}, "needs content as text"),
        ({**records[chunk_at - 1], "key": "kx", "added_at": "yesterday"}, "added_at"),
    ]
    with another_store(backend, tmp_path) as other:
        for bad, message in cases:
            broken = [*records[:chunk_at], bad, *records[chunk_at + 1 :]]
            with pytest.raises(InvalidInput, match=f"line {chunk_at + 1}: .*{message}"):
                exchange.import_records(other, numbered(broken))
            assert other.execute("SELECT count(*) FROM kb_documents").fetchone()[0] == 0
            assert other.execute("SELECT count(*) FROM turns").fetchone()[0] == 0


def test_an_active_document_already_active_here_in_another_version_is_refused(
    conn, backend, tmp_path
):
    seed(conn)
    records = export(conn, ["default"])
    with another_store(backend, tmp_path) as other:
        documents.add_document(other, "default", "/docs/guide.md", "# Mine\n\nlocal", NOW)
        with pytest.raises(InvalidInput, match="already active here"):
            exchange.import_records(other, numbered(records))
        assert len(documents.list_documents(other, "default", all_versions=True)) == 1


def test_on_postgres_a_file_of_several_profiles_goes_into_each_tenant(conn, backend, tmp_path):
    if backend != "postgres":
        pytest.skip("tenants are PostgreSQL's")
    seed(conn, "acme")
    acme = export(conn, ["acme"])
    seed(conn, "globex")
    globex = export(conn, ["globex"])
    both = [{**acme[0], "profiles": ["acme", "globex"]}, *acme[1:], *globex[1:]]
    with another_store(backend, tmp_path, tenant="acme") as other:
        counts = exchange.import_records(other, numbered(both))
        assert counts.added["turn"] == 2 and counts.added["kb_document"] == 6
        assert other.tenant == "acme"  # the connection's own tenant is unchanged afterwards
        assert export(other, ["acme"]) == acme
        assert other.execute("SELECT count(*) FROM turns").fetchone()[0] == 1  # only acme's
        other.set_tenant("globex")
        assert export(other, ["globex"]) == globex


def test_the_same_document_active_in_both_stores_is_already_there(conn, backend, tmp_path):
    seed(conn)
    records = export(conn, ["default"])
    with another_store(backend, tmp_path) as other:
        # the unchanged file added to the other store too, at another time
        documents.add_document(
            other, "default", "/docs/guide.md", GUIDE_V2, NOW + timedelta(days=3)
        )
        counts = exchange.import_records(other, numbered(records))
        versions = documents.list_documents(other, "default", all_versions=True)
        guide = [d for d in versions if d.source == "/docs/guide.md"]
        assert [d.status for d in guide if d.status == "active"] == ["active"]  # one active
        active = next(d for d in guide if d.status == "active")
        chunks = documents.document_chunks(other, "default", active.id)
        assert len(chunks) == 2  # its chunks were not added a second time
        assert counts.added["kb_document"] == 2  # guide v1 (replaced) and old.txt (removed)
        assert counts.present >= 3  # the active guide and its two chunks
        again = exchange.import_records(other, numbered(records))
        assert again.added["kb_document"] == 0 and again.added["kb_chunk"] == 0


def test_an_assistants_own_fact_comes_back_as_its_own(conn, backend, tmp_path):
    """Export -> import keeps ``memory_items.assistant``: Sarah's fact stays Sarah's, the
    shared one shared (its record written exactly as before, with no ``assistant``)."""
    settings = Settings()
    remember(conn, Fact("preference", "follow-ups", "Send follow-ups by email"),
             source="manual", now=NOW, settings=settings, profile="default",
             assistant="sarah")  # fmt: skip
    remember(conn, Fact("fact", "tea", "Likes green tea"), source="manual", now=NOW,
             settings=settings, profile="default")  # fmt: skip
    records = export(conn, ["default"])
    assert records[0]["version"] == 3  # an older rheo refuses it rather than share the fact
    item_records = {r["label"]: r for r in records if r["type"] == "memory_item"}
    assert item_records["Send follow-ups by email"]["assistant"] == "sarah"
    assert "assistant" not in item_records["Likes green tea"]
    with another_store(backend, tmp_path) as other:
        exchange.import_records(other, numbered(records))
        rows = other.execute("SELECT label, assistant FROM memory_items ORDER BY id").fetchall()
        assert [tuple(r) for r in rows] == [
            ("Send follow-ups by email", "sarah"),
            ("Likes green tea", None),
        ]
        shared = list_items(other, "default", statuses=("active",))
        sarahs = list_items(other, "default", statuses=("active",), assistant="sarah")
        assert [i.label for i in shared] == ["Likes green tea"]
        assert {i.label for i in sarahs} == {"Send follow-ups by email", "Likes green tea"}
        assert export(other, ["default"]) == records
        again = exchange.import_records(other, numbered(records))
        assert sum(again.added.values()) == 0


def test_a_file_without_assistants_imports_shared_and_a_bad_name_is_refused(
    conn, backend, tmp_path
):
    remember(conn, Fact("fact", "tea", "Likes green tea"), source="manual", now=NOW,
             settings=Settings(), profile="default")  # fmt: skip
    records = export(conn, ["default"])
    assert records[0]["version"] == 1  # as files were written before assistants
    at = next(n for n, r in enumerate(records) if r["type"] == "memory_item")
    with another_store(backend, tmp_path) as other:
        for bad in ("Sarah Smith", 7):
            broken = [*records[:at], {**records[at], "assistant": bad}, *records[at + 1 :]]
            with pytest.raises(InvalidInput, match=f"line {at + 1}: invalid assistant name"):
                exchange.import_records(other, numbered(broken))
            assert other.execute("SELECT count(*) FROM memory_items").fetchone()[0] == 0
        exchange.import_records(other, numbered(records))
        assert other.execute("SELECT assistant FROM memory_items").fetchone()[0] is None
