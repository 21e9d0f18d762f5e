"""Any text SQLite takes, PostgreSQL takes too: turns, digests, memory items and knowledge
chunks of megabytes are stored whole (the search index holds a bounded prefix), and a long
knowledge-document source is indexed by its hash. Both stores."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime

import pytest
from conftest import pg_schema_url

from rheo_cli.memory.facts import remember
from rheo_cli.memory.facts.parsing import Fact
from rheo_cli.memory.kb import documents, search
from rheo_cli.memory.ledger import digests
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store import db
from rheo_cli.memory.store.postgres import health as pg_health
from rheo_cli.memory.store.postgres import schema as pg_schema
from rheo_cli.memory.store.settings import Settings

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
S = Settings()

# What `python3 -c "...sha1..." | rheo ask "summarize"` pipes in: ~2 MB of distinct words,
# whose tsvector (2.1 MB) PostgreSQL refuses.
COMMITS = "\n".join(f"commit {hashlib.sha1(str(i).encode()).hexdigest()}" for i in range(40000))
# Dense text: 150,000 distinct two-character words (CJK ideographs), 2 MB of tsvector.
IDEOGRAPHS = " ".join(chr(0x4E00 + i // 400) + chr(0x4E00 + i % 400) for i in range(150_000))


def test_a_turn_of_two_megabytes_is_stored_whole_and_found(conn):
    big = "deployment notes\n" + COMMITS
    stored = ledger.append_turn(
        conn, profile="default", role="user", content=big, now=T0, gap_s=S.gap_s
    ).turn
    assert ledger.get_turn(conn, "default", stored.id).content == big
    hits = ledger.search_turns(conn, "default", "deployment")
    assert [t.id for t, _ in hits] == [stored.id]
    first = hashlib.sha1(b"0").hexdigest()
    assert [t.id for t, _ in ledger.search_turns(conn, "default", first)] == [stored.id]


def test_a_turn_of_the_densest_text_is_stored(conn):
    stored = ledger.append_turn(
        conn, profile="default", role="user", content=IDEOGRAPHS, now=T0, gap_s=S.gap_s
    ).turn
    assert ledger.get_turn(conn, "default", stored.id).content == IDEOGRAPHS


def test_a_digest_and_a_memory_item_of_megabytes_are_stored(conn):
    turn = ledger.append_turn(
        conn, profile="default", role="user", content="hello", now=T0, gap_s=S.gap_s
    ).turn
    digest = digests.store_digest(
        conn, profile="default", session_id=turn.session_id, narrative="release " + COMMITS,
        facts=[], procedures=[], decisions=[COMMITS], source_turn_ids=[turn.id], model=None,
        created_at="2026-05-01T10:00:00.000Z",
    )  # fmt: skip
    assert digests.get_digest(conn, "default", digest.id).narrative == "release " + COMMITS
    result = remember.remember(
        conn, Fact("fact", "commits", "the release commits", {"log": COMMITS}),
        source="manual", now=T0, settings=S, profile="default",
    )  # fmt: skip
    assert result.item is not None and result.item.properties == {"log": COMMITS}


def test_a_knowledge_document_with_a_heading_of_megabytes_is_indexed(conn):
    text = "# Release " + COMMITS.replace("\n", " ") + "\n\nThe rollout plan is staged.\n"
    added = documents.add_document(conn, "default", "/notes/release.md", text, T0)
    assert added.action == "added"
    assert [p.document_id for p in search.search_chunks(conn, "default", "rollout")] == [
        added.document.id
    ]


def test_a_knowledge_document_with_a_path_of_kilobytes_keeps_one_active_version(conn):
    # Hashes, so the key does not compress under PostgreSQL's 2,704-byte btree limit.
    source = "/" + "/".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(42))
    assert len(source) > 2700
    first = documents.add_document(conn, "default", source, "# Plan\n\nShip in May.\n", T0)
    again = documents.add_document(conn, "default", source, "# Plan\n\nShip in May.\n", T0)
    second = documents.add_document(conn, "default", source, "# Plan\n\nShip in June.\n", T0)
    assert (first.action, again.action, second.action) == ("added", "unchanged", "replaced")
    active = [d for d in documents.list_documents(conn, "default") if d.source == source]
    assert [d.version for d in active] == [2]


@pytest.mark.skipif(not os.environ.get("RHEO_TEST_DATABASE_URL"), reason="needs PostgreSQL")
def test_a_postgresql_store_of_the_previous_schema_is_upgraded_with_its_rows_searchable(
    monkeypatch,
):
    with pg_schema_url() as url:
        before = [name for name, _ in pg_schema.MIGRATIONS].index("m006_bounded_indexes")
        monkeypatch.setattr(pg_schema, "MIGRATIONS", pg_schema.MIGRATIONS[:before])
        monkeypatch.setattr(pg_schema, "SCHEMA_VERSION", before)  # the store before m006
        old = db.open_url(url, tenant="default")
        try:
            kept = ledger.append_turn(
                old, profile="default", role="user", content="the orchard needs pruning",
                now=T0, gap_s=S.gap_s,
            ).turn  # fmt: skip
            documents.add_document(old, "default", "/notes/a.md", "# Orchard\n\nPrune.\n", T0)
        finally:
            old.close()
        monkeypatch.undo()
        new = db.open_url(url, tenant="default")
        try:
            assert pg_schema.schema_version(new) == pg_schema.SCHEMA_VERSION
            assert [t.id for t, _ in ledger.search_turns(new, "default", "pruning")] == [kept.id]
            assert [p.source for p in search.search_chunks(new, "default", "orchard")] == [
                "/notes/a.md"
            ]
            assert pg_health.stale_tsvectors(new, "default") == {}
            assert pg_health.index_problems(new) == []
        finally:
            new.close()
