"""``rheo purge`` on PostgreSQL (`memory/purge.py` with `memory/store/postgres/purge.py`),
against a real server: one transaction erases the tenant's rows past the append-only guards through
the transaction-local ``rheo.purge`` bypass, then VACUUM FULL takes the text out of the table, TOAST
and index files; other tenants are untouched; the bypass is narrow. Skipped without
RHEO_TEST_DATABASE_URL."""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conftest import as_admin, pg_schema_url

from rheo_cli.memory import purge as engine
from rheo_cli.memory.facts import hotcache
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.kb import documents
from rheo_cli.memory.ledger import turns
from rheo_cli.memory.ledger.digests import store_digest
from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import Integrity
from rheo_cli.memory.store.postgres import roles as pg_roles
from rheo_cli.memory.store.postgres import schema as pg_schema
from rheo_cli.memory.store.settings import Settings

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("RHEO_TEST_DATABASE_URL"),
        reason="PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)",
    ),
    # One worker runs these in turn: one of them holds an old snapshot on purpose, and
    # VACUUM FULL keeps what any transaction of the database may still read.
    pytest.mark.xdist_group("pg_purge"),
]

WORD = "Xylophonequartz"
KB_WORD = "Quinquenniumvox"
T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def url(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    from rheo_cli.memory.store.postgres import purge as pg_purge

    # Other workers' transactions share this database's horizon: wait them out (the product
    # waits 10 s, then reports the tables it could not rewrite, as one test checks).
    monkeypatch.setattr(pg_purge, "SNAPSHOT_WAIT_S", 60)
    with pg_schema_url() as u:
        yield u


def admin(url: str) -> Any:
    """A superuser connection to the test schema: row-level security does not bind it."""
    import psycopg

    return psycopg.connect(as_admin(url), autocommit=True)


def files_hold(url: str, word: str = WORD) -> list[str]:
    """The relations of the test schema (tables, their TOAST tables, every index) whose data
    files hold ``word`` in any case, read after a CHECKPOINT (superuser only)."""
    needle = word.lower()[:12].encode()
    found = []
    with admin(url) as a:
        a.execute("CHECKPOINT")
        rels = a.execute(
            "SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class c "
            "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r','i') "
            "UNION ALL SELECT t.relname || ':toast', pg_relation_filepath(t.reltoastrelid) "
            "FROM pg_class t WHERE t.relnamespace = current_schema()::regnamespace "
            "AND t.reltoastrelid <> 0"
        ).fetchall()
        for name, path in rels:
            if path is None:
                continue
            data = a.execute("SELECT pg_read_binary_file(%s::text)", (path,)).fetchone()[0]
            if data and needle in bytes(data).lower():
                found.append(name)
    return found


def fill(conn: Any, profile: str) -> Any:
    """Turns (one with WORD, a long one with WORD stored in TOAST, many without), an item
    learnt from the WORD turn, a digest of its session, a knowledge document (KB_WORD)."""
    if hasattr(conn, "set_tenant"):
        conn.set_tenant(profile)
    for i in range(40):
        turns.append_turn(conn, profile=profile, role="user", content=f"filler turn {i} " * 20,
                          now=T0 + timedelta(seconds=i), gap_s=7200)  # fmt: skip
    secret = turns.append_turn(conn, profile=profile, role="user",
                               content=f"my {WORD} plan is secret", now=T0 + timedelta(minutes=1),
                               gap_s=7200).turn  # fmt: skip
    noise = " ".join(secrets.token_hex(8) for _ in range(400))  # incompressible: > 2 kB in TOAST
    turns.append_turn(conn, profile=profile, role="assistant", content=f"{noise} {WORD} {noise}",
                      now=T0 + timedelta(minutes=1, seconds=5), gap_s=7200, status="ok",
                      model="m")  # fmt: skip
    remember(conn, Fact(category="fact", topic="plan", label=f"Plans {WORD}"), source="extractor",
             now=T0, settings=Settings(), source_turn_id=secret.id, profile=profile)  # fmt: skip
    store_digest(conn, profile=profile, session_id=secret.session_id,
                 narrative=f"Talked about {WORD}.", facts=[], procedures=[], decisions=[],
                 source_turn_ids=[secret.id], model="m",
                 created_at="2026-04-01T10:00:00.000Z")  # fmt: skip
    documents.add_document(conn, profile, "/docs/plan.md", f"# Plan\n\nThe {KB_WORD} book.", T0)
    return secret


def counts_of(url: str, profile: str) -> dict[str, int]:
    with admin(url) as a:
        return {
            table: a.execute(
                f"SELECT count(*) FROM {table} WHERE profile = %s", (profile,)
            ).fetchone()[0]  # fmt: skip
            for table in pg_schema.M002_TABLES
        }


def test_a_purged_turn_leaves_no_bytes_in_the_table_files_and_other_tenants_keep_theirs(url):
    conn = db.open_url(url, tenant="globex")
    fill(conn, "globex")
    fill(conn, "acme")
    globex_before = counts_of(url, "globex")
    # nothing pending from the filling (this schema's tables only: a database-wide VACUUM would
    # meet other tests' schemas being dropped)
    conn.execute("VACUUM " + ", ".join(pg_schema.M002_TABLES))
    secret = conn.execute(
        "SELECT id FROM turns WHERE content = ?", (f"my {WORD} plan is secret",)
    ).fetchone()[0]
    long_turn = secret + 1
    target = engine.plan(conn, profile="acme", what="session", ref_id=turns.get_turns(
        conn, "acme", [secret])[0].session_id)  # fmt: skip
    assert secret in target.turns and long_turn in target.turns
    assert len(target.items) == 1 and len(target.digests) == 1
    done = engine.purge(conn, target, now=T0)
    assert done.vacuumed
    assert done.counts["turns"] == 42 and done.counts["memory_items"] == 1
    assert done.counts["digests"] == 1 and done.counts["sessions"] == 1
    assert turns.search_turns(conn, "acme", WORD) == []
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 0
    assert [t["what"] for t in engine.tombstones(conn, "acme")] == ["session"]
    assert WORD not in json.dumps(engine.tombstones(conn, "acme"))
    # globex's rows are all there, byte for byte what they were, and still found.
    assert counts_of(url, "globex") == globex_before
    conn.set_tenant("globex")
    assert turns.search_turns(conn, "globex", WORD)
    assert engine.tombstones(conn, "globex") == []
    # The only copies of the word left in the files are globex's (its table rows, its
    # index entries): erase globex's too and no file holds it any more.
    held = files_hold(url)
    assert "turns" in held and "turns:toast" in held
    engine.purge(conn, engine.plan(conn, profile="globex", what="profile", ref_id=None), now=T0)
    assert files_hold(url) == []
    conn.close()


def test_the_history_of_a_kept_fact_leaves_no_bytes_when_its_closing_turn_is_purged(url):
    """An open item closed by a turn quoting the word, a fact replaced by one, a
    reinforcement and a retraction asked for in it: the purge of that turn keeps the items
    and their other history, and no table, TOAST or index file holds the word."""
    from rheo_cli.memory.facts import curation
    from rheo_cli.memory.facts.events import history

    conn = db.open_url(url, tenant="acme")
    settings = Settings()

    def say(text: str, minute: int) -> int:
        when = T0 + timedelta(minutes=minute)
        return turns.append_turn(conn, profile="acme", role="user", content=text, now=when,
                                 gap_s=7200).turn.id  # fmt: skip

    def learn(turn_id: int, fact: Fact, minute: int, **kw: Any) -> Any:
        return remember(conn, fact, source="extractor", now=T0 + timedelta(minutes=minute),
                        settings=settings, source_turn_id=turn_id, **kw)  # fmt: skip

    invoice = learn(say("I'll send the invoice", 1), Fact("open_item", "invoice",
                                                          "Send the invoice"), 1).item  # fmt: skip
    lyon = learn(say("I live in Lyon", 2), Fact("fact", "city", "Lives in Lyon"), 2).item
    tea = learn(say("I like green tea", 3), Fact("preference", "tea", "Green tea"), 3).item
    secret = say(f"sent the invoice by {WORD}, moved to {WORD} Paris, I like green tea", 4)
    learn(secret, Fact("open_item", "invoice", f"Sent the invoice by {WORD}"), 4,
          relation="done", target_id=invoice.id)  # fmt: skip
    learn(secret, Fact("fact", "city", f"Lives on {WORD} street, Paris"), 4)
    learn(secret, Fact("preference", "tea", "Green tea"), 4)
    curation.forget(conn, "acme", tea.id, T0, cause=f'the person asked: "{WORD}"',
                    source_turn_id=secret)  # fmt: skip
    conn.execute("VACUUM " + ", ".join(pg_schema.M002_TABLES))
    assert {"memory_events", "turns"} <= set(files_hold(url))
    done = engine.purge(conn, engine.plan(conn, profile="acme", what="turn", ref_id=secret),
                        now=T0 + timedelta(days=1))  # fmt: skip
    assert done.vacuumed, done.not_rewritten
    assert files_hold(url) == []
    kept = {r[0]: r[1] for r in conn.execute("SELECT id, status FROM memory_items").fetchall()}
    assert kept == {invoice.id: "active", lyon.id: "active", tea.id: "retracted"}
    assert [e.kind for e in history(conn, "acme", tea.id)] == ["created", "retracted"]
    conn.close()


def test_without_the_rewrite_the_files_keep_the_text(url):
    """The control: the same rows deleted through the bypass, then a plain VACUUM, leave the
    text in the table and index files — which is why the purge rewrites them."""
    conn = db.open_url(url, tenant="acme")
    fill(conn, "acme")
    for i in range(40):  # rows after the secret ones: VACUUM cannot just cut the file short
        turns.append_turn(conn, profile="acme", role="user", content=f"later {i} " * 20,
                          now=T0 + timedelta(minutes=2, seconds=i), gap_s=7200)  # fmt: skip
    toast_filler = " ".join(secrets.token_hex(8) for _ in range(400))
    turns.append_turn(conn, profile="acme", role="user", content=toast_filler,
                      now=T0 + timedelta(minutes=3), gap_s=7200)  # fmt: skip
    with db.write(conn):
        conn.execute("SELECT set_config('rheo.purge', 'acme', true)")
        conn.execute("DELETE FROM memory_events")
        conn.execute("DELETE FROM memory_items")
        conn.execute("DELETE FROM digests")
        conn.execute("DELETE FROM turns WHERE content LIKE ?", (f"%{WORD}%",))
    with admin(url) as a:
        a.execute("VACUUM " + ", ".join((*pg_schema.M002_TABLES, "postings")))
    assert {"postings", "postings_pkey", "turns:toast"} <= set(files_hold(url))
    conn.close()


def test_the_bypass_is_narrow_one_tenant_one_transaction_never_update_or_truncate(url):
    conn = db.open_url(url, tenant="acme")
    fill(conn, "globex")
    fill(conn, "acme")
    refused = "append-only|never deleted|row-level"
    for sql in ("DELETE FROM turns", "DELETE FROM digests", "DELETE FROM memory_items",
                "DELETE FROM memory_events", "UPDATE memory_events SET data = '{}'"):  # fmt: skip
        with pytest.raises(Integrity, match=refused):
            conn.execute(sql)
    # Set for one transaction only: afterwards the guards are back.
    with db.write(conn):
        conn.execute("SELECT set_config('rheo.purge', 'acme', true)")
        with pytest.raises(Integrity, match="append-only"), db.write(conn):
            conn.execute("UPDATE turns SET content = 'changed'")  # the ledger: never
        with pytest.raises(Integrity, match="append-only|denied"), db.write(conn):
            conn.execute("TRUNCATE turns CASCADE")
    with pytest.raises(Integrity, match="append-only"):
        conn.execute("DELETE FROM digests")
    # A superuser connection, which row-level security does not bind, with the bypass set
    # for acme still cannot delete globex's rows.
    with admin(url) as a:
        with pytest.raises(Exception, match="append-only"), a.transaction():
            a.execute("SELECT set_config('rheo.purge', 'acme', true)")
            a.execute("DELETE FROM digests WHERE profile = 'globex'")
        with pytest.raises(Exception, match="append-only"):
            a.execute("SELECT set_config('rheo.purge', 'acme', false)")
            a.execute("UPDATE memory_events SET profile = 'acme' WHERE profile = 'globex'")
        a.execute("RESET rheo.purge")
    # The purge log itself is append-only.
    engine.purge(conn, engine.plan(conn, profile="acme", what="memory", ref_id=conn.execute(
        "SELECT min(id) FROM memory_items").fetchone()[0]), now=T0)  # fmt: skip
    for sql in ("DELETE FROM purges", "UPDATE purges SET what = 'turn'"):
        with pytest.raises(Integrity, match="append-only"):
            conn.execute(sql)
    conn.close()


def test_a_purge_on_a_connection_bound_to_another_tenant_is_refused(url):
    conn = db.open_url(url, tenant="acme")
    fill(conn, "acme")
    target = engine.plan(conn, profile="acme", what="profile", ref_id=None)
    conn.set_tenant("globex")
    with pytest.raises(engine.InvalidInput, match="not bound"):
        engine.purge(conn, target, now=T0)
    assert counts_of(url, "acme")["turns"] == 42
    conn.close()


def test_a_failure_inside_the_transaction_erases_nothing(url, monkeypatch):
    conn = db.open_url(url, tenant="acme")
    fill(conn, "acme")
    before = counts_of(url, "acme")
    from rheo_cli.memory.store import crash

    def boom(point: str) -> None:
        if point == "purge.erase":
            raise RuntimeError("stopped mid-purge")

    monkeypatch.setattr(crash, "reach", boom)
    target = engine.plan(conn, profile="acme", what="profile", ref_id=None)
    with pytest.raises(RuntimeError):
        engine.purge(conn, target, now=T0)
    assert counts_of(url, "acme") == before
    assert engine.tombstones(conn, "acme") == []
    # The bypass went with the rolled-back transaction.
    with pytest.raises(Integrity):
        conn.execute("DELETE FROM turns")
    conn.close()


def test_a_turn_purge_keeps_the_session_and_the_links_of_what_stays(url):
    conn = db.open_url(url, tenant="acme")
    secret = fill(conn, "acme")
    old = remember(conn, Fact(category="fact", topic="city", label="Lives in Lyon"),
                   source="manual", now=T0, settings=Settings(), profile="acme")  # fmt: skip
    new = remember(conn, Fact(category="fact", topic="city", label="Lives in Paris"),
                   source="extractor", now=T0 + timedelta(hours=1), settings=Settings(),
                   source_turn_id=secret.id, profile="acme")  # fmt: skip
    assert old.item is not None and new.item is not None
    target = engine.plan(conn, profile="acme", what="turn", ref_id=secret.id)
    assert new.item.id in target.items and old.item.id not in target.items
    done = engine.purge(conn, target, now=T0)
    assert done.counts["turns"] == 1 and "sessions" not in done.counts
    kept = conn.execute(
        "SELECT superseded_by FROM memory_items WHERE id = ?", (old.item.id,)
    ).fetchone()
    assert kept is not None and kept[0] is None  # the link to the erased item is cleared
    session = conn.execute(
        "SELECT turns FROM sessions WHERE id = ?", (secret.session_id,)
    ).fetchone()[0]
    assert (
        session
        == conn.execute(
            "SELECT count(*) FROM turns WHERE session_id = ?", (secret.session_id,)
        ).fetchone()[0]
        == 41
    )
    conn.close()


def test_a_profile_purge_takes_its_knowledge_base_and_drops_the_redis_cache(url):
    redis_url = os.environ.get("RHEO_TEST_REDIS_URL")
    if not redis_url:
        pytest.skip("needs RHEO_TEST_REDIS_URL (scripts/test-services start)")
    from rheo_cli.cache import redis_hot

    tenant = "acme-" + secrets.token_hex(4)
    conn = db.open_url(url, tenant=tenant)
    fill(conn, tenant)
    redis_hot.install(redis_url, ttl_s=600)
    try:
        assert [i.label for i in hotcache.active_items(conn, tenant)] == [f"Plans {WORD}"]
        cache = hotcache.installed()
        assert cache is not None and cache.read(tenant, hotcache.SHARED)  # filled
        done = engine.purge(
            conn, engine.plan(conn, profile=tenant, what="profile", ref_id=None), now=T0
        )
        assert cache.read(tenant, hotcache.SHARED) is None  # dropped with the purge
        assert hotcache.active_items(conn, tenant) == []
    finally:
        redis_hot.uninstall()
    assert done.counts["kb_documents"] == 1 and done.counts["kb_chunks"] == 1
    assert documents.list_documents(conn, tenant, all_versions=True) == []
    assert all(n == 0 for n in counts_of(url, tenant).values())
    assert files_hold(url) == [] and files_hold(url, KB_WORD) == []
    conn.close()


def test_a_store_from_before_m004_is_upgraded_and_its_rows_can_be_purged(url):
    """Schema version 3 with data (applied as `pg_schema.migrate` does, by hand): opening it
    applies m004 once, keeps every row, and the purge works on the old rows. Made by the
    application role, which owns the tables as it would have then."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as a:
        a.execute(
            "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "applied_at TEXT NOT NULL)"
        )
        for n, (name, script) in enumerate(pg_schema.MIGRATIONS[:3], start=1):
            a.execute(script.encode())
            a.execute("INSERT INTO schema_migrations VALUES (%s, %s, 'then')", (n, name))
        a.execute("SELECT set_config('rheo.tenant', 'acme', false)")  # held by FORCE too
        a.execute("INSERT INTO sessions(profile, started_at, last_turn_at, turns) "
                  "VALUES ('acme', 't', 't', 1)")  # fmt: skip
        a.execute(
            "INSERT INTO turns(profile, session_id, role, content, ts) SELECT 'acme', id, "
            "'user', %s, '2026-01-01T00:00:00.000Z' FROM sessions",
            (f"old {WORD} turn",),
        )
    conn = db.open_url(url, tenant="acme")
    assert pg_schema.schema_version(conn) == pg_schema.SCHEMA_VERSION
    assert [t.content for t in turns.recent_turns(conn, "acme")] == [f"old {WORD} turn"]
    with pytest.raises(Integrity, match="append-only"):
        conn.execute("DELETE FROM turns")
    session = conn.execute("SELECT id FROM sessions").fetchone()[0]
    done = engine.purge(conn, engine.plan(conn, profile="acme", what="session", ref_id=session),
                        now=T0)  # fmt: skip
    assert done.counts["turns"] == 1 and done.vacuumed
    assert files_hold(url) == []
    conn.close()


def test_an_older_snapshot_elsewhere_is_waited_for_then_reported(url, monkeypatch):
    """A transaction that began before the purge may still read the erased rows, so a rewrite
    keeps them: the purge waits for it, then says which tables it could not clean."""
    from rheo_cli.memory.store.postgres import purge as pg_purge

    monkeypatch.setattr(pg_purge, "SNAPSHOT_WAIT_S", 0.5)
    conn = db.open_url(url, tenant="acme")
    fill(conn, "acme")
    with admin(url) as reader:
        reader.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        reader.execute("SELECT count(*) FROM turns").fetchone()  # its snapshot: before the purge
        target = engine.plan(conn, profile="acme", what="profile", ref_id=None)
        done = engine.purge(conn, target, now=T0)
        assert not done.vacuumed and "turns" in done.not_rewritten
        assert "turns" in files_hold(url)  # kept for the reader, as PostgreSQL must
        reader.execute("ROLLBACK")
    pg_purge.compact(conn, done.not_rewritten)  # what the owner's VACUUM FULL does
    assert files_hold(url) == []
    conn.close()


def test_as_a_plain_role_that_owns_the_tables_and_as_one_that_does_not(url):
    """Production's usual setup: rheo's role owns its tables and is no superuser (forced
    row-level security binds it too); the purge rewrites the tables. A member's role, granted
    the profile (rights on the tables only), erases the rows but may not rewrite them, and
    says which."""
    suffix = secrets.token_hex(4)
    owner, user = f"rheo_owner_{suffix}", f"rheo_user_{suffix}"
    with admin(url) as a:
        schema = a.execute("SELECT current_schema()").fetchone()[0]
        a.execute(f"CREATE ROLE {owner} LOGIN")
        a.execute(f"CREATE ROLE {user} LOGIN")
        a.execute(f"GRANT ALL ON SCHEMA {schema} TO {owner}")
        a.execute(f"GRANT USAGE ON SCHEMA {schema} TO {user}")
    as_owner = as_admin(url).replace("://rheo@", f"://{owner}@", 1)
    as_user = as_admin(url).replace("://rheo@", f"://{user}@", 1)
    try:
        conn = db.open_url(as_owner, tenant="acme")  # creates and owns the tables
        assert conn.execute("SELECT current_user").fetchone()[0] == owner
        fill(conn, "globex")
        fill(conn, "acme")
        assert conn.execute("SELECT count(DISTINCT profile) FROM turns").fetchone()[0] == 1
        session = conn.execute("SELECT min(id) FROM sessions").fetchone()[0]
        done = engine.purge(conn, engine.plan(conn, profile="acme", what="session",
                                              ref_id=session), now=T0)  # fmt: skip
        assert done.vacuumed and done.not_rewritten == []
        pg_roles.grant(conn, user, "globex", now=T0)  # a member's login: table rights only
        conn.close()
        other = db.open_url(as_user, tenant="globex")
        done = engine.purge(other, engine.plan(other, profile="globex", what="profile",
                                               ref_id=None), now=T0)  # fmt: skip
        assert done.counts["turns"] == 42 and not done.vacuumed
        assert "turns" in done.not_rewritten
        other.close()
        assert counts_of(url, "globex")["turns"] == 0
        assert counts_of(url, "acme")["kb_documents"] == 1
    finally:
        with admin(url) as a:
            for role in (user, owner):
                a.execute(f"DROP OWNED BY {role} CASCADE")
                a.execute(f"DROP ROLE {role}")
