"""Search on PostgreSQL under forced row-level security, as the application role
(`store/postgres/search.py`, `store/postgres/schema.py` m008): the store's owner is a plain role (no
superuser, no BYPASSRLS, ``ts_match_vq`` left as PostgreSQL ships it), and every statement a
search runs reads ``postings`` through its index — ``EXPLAIN`` shows ``postings_pkey`` with the
lexeme in the index condition, never a scan of the tenant's rows — while a canary tenant
holding the same words never appears in any result. The postings follow every write and
purge in the writer's transaction. Skipped without RHEO_TEST_DATABASE_URL."""

from __future__ import annotations

import os
import random
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conftest import pg_schema_url

from rheo_cli.memory import purge as engine
from rheo_cli.memory.bulk import TurnIn, import_turns
from rheo_cli.memory.context import assemble as context
from rheo_cli.memory.facts import items
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.kb import documents
from rheo_cli.memory.kb.search import search_chunks
from rheo_cli.memory.ledger import turns
from rheo_cli.memory.ledger.digests import store_digest
from rheo_cli.memory.store import db
from rheo_cli.memory.store.postgres import search as pgsearch
from rheo_cli.memory.store.settings import Settings

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("RHEO_TEST_DATABASE_URL"),
        reason="PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)",
    ),
    pytest.mark.xdist_group("pg_postings"),
]

T0 = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)
CANARY = "quetzalfrost"
"""A word both tenants hold; the other tenant's rows holding it must never come back."""
WORDS = [
    "garden",
    "tomatoes",
    "fence",
    "zucchini",
    "invoice",
    "meeting",
    "deploy",
    "deployment",
    "budget",
    "travel",
    "kitchen",
    "ticket",
    "server",
    "release",
    "roadmap",
    "pricing",
]


def _turns(profile: str, n: int, seed: int) -> list[TurnIn]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = rng.choices(WORDS, k=rng.randint(4, 12))
        if i % 97 == 0:
            words.append(CANARY)
        if i % 211 == 0:
            words.append("東京の会議は来週です")
        out.append(TurnIn("user" if i % 2 == 0 else "assistant",
                          f"{profile} " + " ".join(words),
                          T0 + timedelta(minutes=3 * i),
                          status=None if i % 2 == 0 else "ok"))  # fmt: skip
    return out


@pytest.fixture(scope="module")
def app_store() -> Iterator[tuple[str, Any]]:
    """A store owned by the application role (a plain role: RHEO_TEST_DATABASE_URL, as
    scripts/test-services makes it), with tenant acme (3,000 turns) and the canary tenant
    globex (1,000 turns with the same words), memory items, digests and documents of both;
    yields the owner's URL and a connection as the owner for acme."""
    import psycopg

    with pg_schema_url() as as_owner:
        conn = db.open_url(as_owner, tenant="acme")
        try:
            for profile, n, seed in (("globex", 1000, 2), ("acme", 3000, 1)):
                conn.set_tenant(profile)
                import_turns(conn, profile, _turns(profile, n, seed), gap_s=7200)
                for word in WORDS[:6] + [CANARY]:
                    remember(conn, Fact("fact", word, f"{profile} {word} {CANARY} noted"),
                             source="manual", now=T0, settings=Settings(),
                             profile=profile)  # fmt: skip
                first = conn.execute("SELECT min(id) FROM sessions").fetchone()[0]
                store_digest(conn, profile=profile, session_id=first,
                             narrative=f"{profile} spoke of the {CANARY} garden", facts=[],
                             procedures=[], decisions=[], source_turn_ids=[], model="m",
                             created_at="2025-01-06T10:00:00.000Z")  # fmt: skip
                documents.add_document(conn, profile, "/notes.md",
                                       f"# {CANARY}\n\n{profile} garden notes", T0)  # fmt: skip
            with psycopg.connect(as_owner, autocommit=True) as o:
                schema = o.execute("SELECT current_schema()").fetchone()[0]
                tables = o.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = %s", (schema,)
                ).fetchall()
                o.execute("ANALYZE " + ", ".join(f"{schema}.{t[0]}" for t in tables))
            conn.set_tenant("acme")
            yield as_owner, conn
        finally:
            conn.close()


class Recording:
    """Stands in for the connection's driver connection and keeps every statement run
    through it, with its parameters."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw
        self.statements: list[tuple[str, Any]] = []

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        real = self._raw.cursor(*args, **kwargs)
        outer = self

        class Cursor:
            def __getattr__(self, name: str) -> Any:
                return getattr(real, name)

            def __setattr__(self, name: str, value: Any) -> None:
                setattr(real, name, value)

            def execute(self, query: Any, params: Any = None, **kw: Any) -> Any:
                outer.statements.append((query, params))
                real.execute(query, params, **kw)
                return self

        return Cursor()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def statements_of(conn: Any, action: Any) -> list[tuple[str, Any]]:
    """The statements ``action()`` runs on ``conn`` that read ``postings``."""
    recording = Recording(conn.raw)
    conn.raw = recording
    try:
        action()
    finally:
        conn.raw = recording._raw
    return [(q, p) for q, p in recording.statements if "postings" in str(q)]


def plan(conn: Any, query: str, params: Any) -> str:
    rows = conn.raw.execute("EXPLAIN " + query, params).fetchall()
    return "\n".join(r[0] for r in rows)


SEARCHES = {
    "history search, all words": lambda c: turns.search_turns(c, "acme", "garden fence"),
    "history search, a phrase": lambda c: turns.search_turns(c, "acme", '"tomatoes fence"'),
    "history search, a prefix": lambda c: turns.search_turns(c, "acme", "deploy*"),
    "history search, CJK": lambda c: turns.search_turns(c, "acme", "東京の会議"),
    "plain bm25": lambda c: pgsearch.plain_turn_ids(c, "acme", ['"zucchini"', '"invoice"'], 20),
    "memory search": lambda c: items.search_items(c, "acme", "garden budget"),
    "digests": lambda c: pgsearch.search_digests(c, "acme", ['"garden"'], 10),
    "knowledge": lambda c: search_chunks(c, "acme", "garden notes"),
    "word postings": lambda c: pgsearch.word_turn_ids(c, "acme", ['"meeting"'], 2001),
    "trigram ranking": lambda c: pgsearch.trigram_turns(
        c, "acme", "t.id", ["東京の", "京の会"], 40
    ),
}


def test_the_application_role_is_a_plain_one_under_forced_row_level_security(app_store):
    _, conn = app_store
    row = conn.execute(
        "SELECT r.rolsuper, r.rolbypassrls, c.relforcerowsecurity, (SELECT proleakproof FROM "
        "pg_proc WHERE oid = 'pg_catalog.ts_match_vq(tsvector, tsquery)'::regprocedure) "
        "FROM pg_roles r, pg_class c WHERE r.rolname = current_user "
        "AND c.oid = 'postings'::regclass"
    ).fetchone()
    assert tuple(row) == (False, False, True, False)
    assert conn.execute("SELECT current_user = session_user").fetchone()[0] is True


@pytest.mark.parametrize("name", list(SEARCHES))
def test_every_search_reads_postings_through_the_index(app_store, name):
    _, conn = app_store
    found = statements_of(conn, lambda: SEARCHES[name](conn))
    assert found, f"{name} read no postings"
    for query, params in found:
        shown = plan(conn, query, params)
        assert "Seq Scan on postings" not in shown, shown
        assert re.search(r"(Index|Index Only|Bitmap Index) Scan (using|on) postings_pkey", shown), (
            shown
        )
        conditions = [line for line in shown.splitlines() if "Index Cond" in line]
        assert any("lexeme" in line for line in conditions), shown


def test_explain_analyze_reads_only_the_words_postings(app_store):
    """The evidence in figures: a word in a few dozen of acme's turns costs a few dozen index
    entries, not a pass over acme's 3,000 turns (as ``@@`` under the policy did)."""
    _, conn = app_store
    holders = conn.execute(
        "SELECT count(*) FROM turns WHERE profile = 'acme' AND content LIKE ?", (f"%{CANARY}%",)
    ).fetchone()[0]
    found = statements_of(conn, lambda: pgsearch.word_turn_ids(conn, "acme", [f'"{CANARY}"'], 99))
    query, params = found[-1]
    rows = conn.raw.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + query, params).fetchone()[0]

    def nodes(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
        yield node
        for child in node.get("Plans", []):
            yield from nodes(child)

    scans = [n for n in nodes(rows[0]["Plan"]) if n.get("Relation Name") == "postings"]
    # An index-only scan once the table is vacuumed (its visibility map set), else a bitmap
    # heap scan from the index: either way only the word's entries are read.
    assert [n["Node Type"] for n in scans] in (["Index Only Scan"], ["Bitmap Heap Scan"])
    assert scans[0]["Actual Rows"] == holders < 60
    assert scans[0].get("Rows Removed by Filter", 0) == 0, scans[0]


def test_the_canary_tenant_never_appears(app_store):
    _, conn = app_store
    canary = f'"{CANARY}"'
    assert pgsearch.word_turn_ids(conn, "acme", [canary], 5000)
    for ids in (
        pgsearch.word_turn_ids(conn, "acme", [canary], 5000),
        pgsearch.newest_word_turn_ids(conn, "acme", [canary, '"garden"'], 5000),
        pgsearch.plain_turn_ids(conn, "acme", [canary], 5000),
        pgsearch.cjk_turn_ids(conn, "acme", "東京の会議", 5000),
        [t.id for t, _ in turns.search_turns(conn, "acme", f"{CANARY} garden", limit=500)],
        [t.id for t, _ in turns.search_turns(conn, "acme", "東京の会議", limit=500)],
    ):
        profiles = {p for (p,) in conn.execute(
            "SELECT DISTINCT profile FROM turns WHERE id = ANY(?)", (ids,))}  # fmt: skip
        assert profiles == {"acme"}
        assert all(t.content.startswith("acme ") for t in turns.get_turns(conn, "acme", ids))
    assert {i.label.split()[0] for i, _ in items.search_items(conn, "acme", CANARY)} == {"acme"}
    assert [r["narrative"] for r in pgsearch.search_digests(conn, "acme", [canary], 10)] == [
        f"acme spoke of the {CANARY} garden"
    ]
    assert [c.content for c in search_chunks(conn, "acme", CANARY)] == ["acme garden notes"]
    built = context.assemble(conn, profile="acme", message=f"what about {CANARY}?", now=T0
                             + timedelta(days=30), settings=Settings())  # fmt: skip
    assert "globex" not in str(built)
    # The postings themselves: the query names no profile, the policy keeps globex's out.
    assert {p for (p,) in conn.execute("SELECT DISTINCT profile FROM postings")} == {"acme"}


def test_postings_follow_writes_and_purges_in_the_same_transaction(app_store):
    _, conn = app_store
    word = "xylobriskett"
    appended = turns.append_turn(conn, profile="acme", role="user", content=f"a {word} here",
                                 now=T0 + timedelta(days=90), gap_s=7200)  # fmt: skip
    assert pgsearch.word_turn_ids(conn, "acme", [f'"{word}"'], 10) == [appended.turn.id]
    with pytest.raises(RuntimeError), db.write(conn):
        turns.append_turn(conn, profile="acme", role="user", content=f"{word} again",
                          now=T0 + timedelta(days=90, minutes=1), gap_s=7200)  # fmt: skip
        raise RuntimeError("rolled back")
    assert pgsearch.word_turn_ids(conn, "acme", [f'"{word}"'], 10) == [appended.turn.id]
    target = engine.plan(conn, profile="acme", what="turn", ref_id=appended.turn.id)
    engine.purge(conn, target, now=T0 + timedelta(days=91))
    assert pgsearch.word_turn_ids(conn, "acme", [f'"{word}"'], 10) == []
    assert (
        conn.execute(
            "SELECT count(*) FROM postings WHERE doc = ? AND kind IN ('t', 'c')",
            (appended.turn.id,),
        ).fetchone()[0]
        == 0
    )
