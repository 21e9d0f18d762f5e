"""Defence in depth on PostgreSQL (`memory/pgsearch.py` and the word-index reads of the
ledger): every search names the profile itself, so a connection that row-level security does
not bind — here a superuser's, which bypasses every policy — still reads one tenant's rows.
Skipped without RHEO_TEST_DATABASE_URL."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conftest import as_admin, pg_schema_url

from rheo_cli.memory.facts import items
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.kb import documents
from rheo_cli.memory.kb.search import search_chunks
from rheo_cli.memory.ledger import turns
from rheo_cli.memory.ledger.digests import store_digest
from rheo_cli.memory.store import db
from rheo_cli.memory.store.postgres import PostgresStore
from rheo_cli.memory.store.postgres import search as pgsearch
from rheo_cli.memory.store.postgres.connection import PgConnection
from rheo_cli.memory.store.settings import Settings

pytestmark = pytest.mark.skipif(
    not os.environ.get("RHEO_TEST_DATABASE_URL"),
    reason="PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)",
)

T0 = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def stores() -> Iterator[tuple[Any, dict[str, list[int]]]]:
    """Two tenants with the same words (and the same Chinese text), written through their
    own connections; yields an unbound superuser connection and each tenant's turn ids."""
    import psycopg

    with pg_schema_url() as url:
        ids: dict[str, list[int]] = {}
        for tenant in ("acme", "globex"):
            conn = db.open_url(url, tenant=tenant)
            ids[tenant] = []
            for i in range(6):
                appended = turns.append_turn(
                    conn, profile=tenant, role="user",
                    content=f"{tenant} pricing plan {i}, 我们的价格计划 {i}",
                    now=T0 + timedelta(minutes=i), gap_s=7200,
                )  # fmt: skip
                ids[tenant].append(appended.turn.id)
            remember(conn, Fact("fact", "pricing", f"{tenant} pricing is secret"),
                     source="manual", now=T0, settings=Settings(), profile=tenant)  # fmt: skip
            session = turns.get_turns(conn, tenant, ids[tenant][:1])[0].session_id
            store_digest(conn, profile=tenant, session_id=session,
                         narrative=f"{tenant} talked about pricing", facts=[], procedures=[],
                         decisions=[], source_turn_ids=[], model="m",
                         created_at="2026-06-01T10:00:00.000Z")  # fmt: skip
            documents.add_document(conn, tenant, "/pricing.md", f"# Pricing\n\n{tenant} pricing",
                                   T0)  # fmt: skip
            conn.close()
        raw = psycopg.connect(as_admin(url), autocommit=True)  # a superuser: no policy binds it
        try:
            yield _unbound_store(raw), ids
        finally:
            raw.close()


def _unbound_store(raw: Any) -> PgConnection:
    """A store over ``raw`` as it is (its role and settings untouched): the engine's calls
    reach the store's own queries through it, with nothing of ``connect`` applied."""
    conn = PgConnection(raw, "acme")
    store = PostgresStore.__new__(PostgresStore)
    store.conn, store.tenant, store.repair_notices = conn, "acme", []
    conn.store = store
    return conn


def test_the_connection_really_bypasses_row_level_security(stores):
    unbound, ids = stores
    assert unbound.execute("SELECT current_setting('is_superuser')").fetchone()[0] == "on"
    assert unbound.execute("SELECT count(*) FROM turns").fetchone()[0] == 12
    # The same query without its profile filter finds both tenants' turns: the filter is
    # what keeps them apart below.
    rows = unbound.execute(
        "SELECT doc FROM postings WHERE kind = 't' AND lexeme = 'price'"
    ).fetchall()
    assert {r[0] for r in rows} == set(ids["acme"]) | set(ids["globex"])


def test_word_index_reads_name_the_profile(stores):
    unbound, ids = stores
    assert sorted(pgsearch.word_turn_ids(unbound, "acme", ['"pricing"'], 100)) == ids["acme"]
    assert (
        pgsearch.newest_word_turn_ids(unbound, "globex", ['"pricing"'], 3)
        == (ids["globex"][::-1][:3])
    )
    assert pgsearch.cjk_turn_ids(unbound, "acme", "价格计划", 100) == ids["acme"][::-1]
    assert sorted(turns.term_frequency(unbound, "acme", '"plan"', 100)) == ids["acme"]
    assert (
        turns.newest_matching(unbound, "globex", ['"plan"', '"pricing"'], 2)
        == (ids["globex"][::-1][:2])
    )


def test_every_search_returns_one_tenant_on_an_unbound_connection(stores):
    unbound, ids = stores
    found = turns.search_turns(unbound, "acme", "pricing plan", limit=50)
    assert {t.id for t, _ in found} == set(ids["acme"])
    cjk = turns.search_turns(unbound, "globex", "价格计划", limit=50)
    assert {t.id for t, _ in cjk} == set(ids["globex"])
    window = pgsearch.window_turn_ids(
        unbound, "acme", ['"pricing"'], any_term=True, newer_than=None, up_to=None, limit=50
    )
    assert window == ids["acme"][::-1]  # acme's turns only, newest first
    older = pgsearch.window_turn_ids(
        unbound, "acme", ['"pricing"'], any_term=True, newer_than=None, up_to=ids["acme"][2],
        limit=50,
    )  # fmt: skip
    assert older == ids["acme"][:3][::-1]
    assert set(pgsearch.plain_turn_ids(unbound, "globex", ['"pricing"'], 50)) == set(ids["globex"])
    assert [i.label for i, _ in items.search_items(unbound, "acme", "pricing")] == [
        "acme pricing is secret"
    ]
    digests = pgsearch.search_digests(unbound, "globex", ['"pricing"'], 10)
    assert [d["narrative"] for d in digests] == ["globex talked about pricing"]
    chunks = search_chunks(unbound, "acme", "pricing")
    assert chunks and all("acme" in c.content for c in chunks)
