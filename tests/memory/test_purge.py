"""``rheo purge``: the one deliberate erase. The content leaves the tables, the FTS indexes and
the file's bytes; a tombstone says what and when; the ledger stays append-only otherwise."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from conftest import as_tenant
from fakeprovider import facts
from helpers import db_rows, route

from rheo_cli.memory import purge as engine
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.ledger import turns
from rheo_cli.memory.ledger.digests import store_digest
from rheo_cli.memory.store.db import open_store
from rheo_cli.memory.store.errors import Integrity
from rheo_cli.memory.store.settings import Settings

WORD = "Xylophonequartz"
T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


def raw_bytes(db) -> bytes:
    data = b""
    for suffix in ("", "-wal", "-journal"):
        path = db.with_name(db.name + suffix)
        if path.exists():
            data += path.read_bytes()
    return data


def found_in_file(db, word: str = WORD) -> bool:
    """The word, in any case (FTS stores lower-cased terms), anywhere in the file's bytes."""
    return word.lower()[:12].encode() in raw_bytes(db).lower()


def fill(conn, profile="default"):
    """Turns (one with WORD, many without), an item learnt from the WORD turn, a digest."""
    for i in range(40):
        turns.append_turn(conn, profile=profile, role="user", content=f"filler turn {i} " * 20,
                          now=T0 + timedelta(seconds=i), gap_s=7200)  # fmt: skip
    secret = turns.append_turn(conn, profile=profile, role="user",
                               content=f"my {WORD} plan is secret", now=T0 + timedelta(minutes=1),
                               gap_s=7200).turn  # fmt: skip
    remember(conn, Fact(category="fact", topic="plan", label=f"Plans {WORD}"), source="extractor",
             now=T0, settings=Settings(), source_turn_id=secret.id)  # fmt: skip
    store_digest(conn, profile=profile, session_id=secret.session_id,
                 narrative=f"Talked about {WORD}.", facts=[], procedures=[], decisions=[],
                 source_turn_ids=[secret.id], model="m",
                 created_at="2026-04-01T10:00:00.000Z")  # fmt: skip
    return secret


def test_purged_turn_leaves_no_bytes_in_the_file_even_with_the_connection_open(tmp_path):
    db = tmp_path / "rheo.db"
    conn = open_store(db)
    secret = fill(conn)
    assert found_in_file(db)
    target = engine.plan(conn, profile="default", what="turn", ref_id=secret.id)
    assert target.turns == [secret.id] and len(target.items) == 1 and len(target.digests) == 1
    done = engine.purge(conn, target, now=T0)
    assert done.vacuumed and done.wal_truncated
    assert done.counts["turns"] == 1 and done.counts["memory_items"] == 1
    assert not found_in_file(db)  # table pages, FTS segments, WAL: gone while still open
    assert turns.search_turns(conn, "default", WORD) == []
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 40
    check = conn.execute("INSERT INTO turns_fts(turns_fts, rank) VALUES ('integrity-check', 1)")
    assert check is not None
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert engine.tombstones(conn, "default")[0]["what"] == "turn"
    assert WORD not in json.dumps(engine.tombstones(conn, "default"))
    conn.close()


def test_without_purge_the_file_keeps_the_text(tmp_path):
    """The control: deleting rows with the guards lifted but no scrubbing leaves the bytes."""
    db = tmp_path / "rheo.db"
    conn = open_store(db)
    fill(conn)
    conn.execute("INSERT INTO purge_grant VALUES (1, 'test')")
    conn.execute("DELETE FROM memory_events")
    conn.execute("DELETE FROM memory_items")
    conn.execute("DELETE FROM digests")
    conn.execute("DELETE FROM turns WHERE content LIKE ?", (f"%{WORD}%",))
    conn.execute("DELETE FROM purge_grant")
    assert found_in_file(db)
    conn.close()


def test_the_ledger_stays_append_only_outside_a_purge(conn, backend):
    fill(conn)
    for sql in ("DELETE FROM turns", "UPDATE turns SET content = 'x'", "DELETE FROM digests",
                "DELETE FROM memory_items", "UPDATE memory_items SET label = 'x'",
                "DELETE FROM memory_events"):  # fmt: skip
        with pytest.raises(Integrity):
            conn.execute(sql)
    engine.purge(conn, engine.plan(conn, profile="default", what="memory", ref_id=1), now=T0)
    for sql in ("DELETE FROM purges", "UPDATE purges SET what = 'turn'"):
        with pytest.raises(Integrity):
            conn.execute(sql)
    if backend == "sqlite":  # the grant is gone with the purge's transaction
        assert conn.execute("SELECT count(*) FROM purge_grant").fetchone()[0] == 0


def test_purge_session_and_profile_are_scoped(conn):
    fill(as_tenant(conn, "default"), "default")
    fill(as_tenant(conn, "work"), "work")
    as_tenant(conn, "default")
    session = conn.execute("SELECT max(id) FROM sessions WHERE profile = 'default'").fetchone()[0]
    target = engine.plan(conn, profile="default", what="session", ref_id=session)
    engine.purge(conn, target, now=T0)
    assert conn.execute("SELECT count(*) FROM sessions WHERE id = ?", (session,)).fetchone()[0] == 0
    as_tenant(conn, "work")
    assert turns.search_turns(conn, "work", WORD)  # the other profile is untouched
    with pytest.raises(Exception, match="no session"):
        engine.plan(conn, profile="work", what="session", ref_id=session)
    engine.purge(conn, engine.plan(conn, profile="work", what="profile", ref_id=None), now=T0)
    for table in ("turns", "sessions", "memory_items", "memory_events", "digests", "jobs"):
        left = conn.execute(f"SELECT count(*) FROM {table} WHERE profile = 'work'").fetchone()[0]
        assert left == 0, table
    assert [t["what"] for t in engine.tombstones(conn, "work")] == ["profile"]
    as_tenant(conn, "default")
    assert [t["what"] for t in engine.tombstones(conn, "default")] == ["session"]


def test_cli_purge_needs_confirmation_and_scrubs_everything(rheo, fake_model, monkeypatch, home):
    route(
        fake_model,
        chat="Noted.",
        extract=facts(
            {"category": "fact", "topic": "plan", "label": f"Plans {WORD}", "confidence": 0.9}
        ),
    )
    monkeypatch.setenv("RHEO_NOW", "2026-04-01T09:00:00+00:00")
    assert rheo("ask", f"my {WORD} plan").exit_code == 0
    assert rheo("ask", "something else").exit_code == 0
    assert rheo("maintain").exit_code == 0
    assert db_rows(home, "SELECT count(*) FROM memory_items")[0][0] == 1
    refused = rheo("purge", "turn", "1")  # no terminal, no --yes
    assert refused.exit_code == 2 and "--yes" in refused.stderr
    assert db_rows(home, "SELECT count(*) FROM turns")[0][0] == 4
    result = rheo("purge", "turn", "1", "--yes", "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["counts"]["turns"] == 1 and out["counts"]["memory_items"] == 1
    assert rheo("history", "search", WORD).stdout.strip() == "(no turns)"
    assert rheo("memory", "list", "--all", "--json").stdout.strip() == "[]"
    assert not found_in_file(home / "rheo.db")
    assert db_rows(home, "SELECT what, ref_id FROM purges")[0][:] == ("turn", 1)
    assert rheo("purge", "turn", "1", "--yes").exit_code == 2  # gone: not found
    assert rheo("purge", "everything", "--yes").exit_code == 2


def test_purge_profile_removes_its_input_history(rheo, fake_model, home):
    (home / "history").mkdir(parents=True, exist_ok=True)
    fake_model.add("hi")
    assert rheo("-p", "work", "ask", "hello").exit_code == 0
    (home / "history" / "work").write_text("\n# 2026\n+hello\n")
    assert rheo("purge", "profile", "work", "--yes").exit_code == 0
    assert not (home / "history" / "work").exists()
    assert rheo("-p", "work", "history", "recent").stdout.strip() == "(no turns)"


def test_the_history_of_kept_facts_leaves_no_bytes_when_the_turn_it_quotes_is_purged(tmp_path):
    """An open item closed by the turn, a fact it replaced, a reinforcement and a retraction
    it asked for: the items and their other history stay, the word leaves the file."""
    from rheo_cli.memory.facts import curation

    db = tmp_path / "rheo.db"
    conn = open_store(db)
    settings = Settings()

    def say(text: str, minute: int) -> int:
        when = T0 + timedelta(minutes=minute)
        return turns.append_turn(conn, profile="default", role="user", content=text, now=when,
                                 gap_s=7200).turn.id  # fmt: skip

    def learn(turn_id: int, fact: Fact, minute: int, **kw):
        return remember(conn, fact, source="extractor", now=T0 + timedelta(minutes=minute),
                        settings=settings, source_turn_id=turn_id, **kw)  # fmt: skip

    invoice = learn(say("I'll send the invoice", 1),
                    Fact("open_item", "invoice", "Send the invoice"), 1).item  # fmt: skip
    lyon = learn(say("I live in Lyon", 2), Fact("fact", "city", "Lives in Lyon"), 2).item
    tea = learn(say("I like green tea", 3), Fact("preference", "tea", "Green tea"), 3).item
    secret = say(f"sent the invoice by {WORD}, moved to {WORD} Paris, I like green tea", 4)
    learn(secret, Fact("open_item", "invoice", f"Sent the invoice by {WORD}"), 4,
          relation="done", target_id=invoice.id)  # fmt: skip
    learn(secret, Fact("fact", "city", f"Lives on {WORD} street, Paris"), 4)
    learn(secret, Fact("preference", "tea", "Green tea"), 4)
    curation.forget(conn, "default", tea.id, T0, cause=f'the person asked: "{WORD}"',
                    source_turn_id=secret)  # fmt: skip
    assert found_in_file(db)
    done = engine.purge(conn, engine.plan(conn, profile="default", what="turn", ref_id=secret),
                        now=T0 + timedelta(days=1))  # fmt: skip
    assert done.vacuumed and done.wal_truncated
    assert not found_in_file(db)
    kept = dict(conn.execute("SELECT id, status FROM memory_items").fetchall())
    assert kept == {invoice.id: "active", lyon.id: "active", tea.id: "retracted"}
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
