"""What a purge takes back from the memory items it keeps (`memory/purge_undo.py`), on both
stores: the history events that quote a purged turn are erased, and what the turn did is
undone — a fact it replaced comes back (through chains of replacements), an open item it
closed opens again, its reinforcement, pin and evictions are taken back, a conflict flag on
an erased item is cleared; a retraction it asked for stands, without its words."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from rheo_cli.memory import purge as engine
from rheo_cli.memory.archive.keys import keys_of
from rheo_cli.memory.facts import curation
from rheo_cli.memory.facts.events import history
from rheo_cli.memory.facts.items import get_item
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.ledger import turns
from rheo_cli.memory.store.settings import Settings

MARK = "ZORBLAX77"
T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
SETTINGS = Settings()


class Talk:
    """Turns of the default profile, each a minute after the last, in one session."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.n = 0

    def turn(self, text: str) -> int:
        self.n += 1
        return turns.append_turn(
            self.conn, profile="default", role="user", content=text,
            now=T0 + timedelta(minutes=self.n), gap_s=7200,
        ).turn.id  # fmt: skip

    def when(self) -> datetime:
        return T0 + timedelta(minutes=self.n)

    def learn(self, turn_id: int, fact: Fact, settings: Settings = SETTINGS, **kw: Any) -> Any:
        return remember(self.conn, fact, source="extractor", now=self.when(), settings=settings,
                        source_turn_id=turn_id, **kw)  # fmt: skip


def purge_turn(conn: Any, turn_id: int) -> engine.Purged:
    target = engine.plan(conn, profile="default", what="turn", ref_id=turn_id)
    return engine.purge(conn, target, now=T0 + timedelta(days=1))


def events_text(conn: Any, item_id: int) -> str:
    return json.dumps([e.to_json() for e in history(conn, "default", item_id)])


def test_an_open_item_closed_by_a_purged_turn_is_open_again_and_its_history_forgets_it(conn):
    talk = Talk(conn)
    said = talk.turn("I'll send the Acme invoice by Friday")
    item = talk.learn(said, Fact("open_item", "acme-invoice", "Send the Acme invoice")).item
    closing = talk.turn(f"sent the Acme invoice via courier {MARK}")
    done = talk.learn(closing, Fact("open_item", "acme-invoice",
                                    f"Sent the Acme invoice via courier {MARK}"),
                      relation="done", target_id=item.id)  # fmt: skip
    assert done.action == "done" and MARK in events_text(conn, item.id)
    before = keys_of(conn, "default").events
    done_event = max(e.id for e in history(conn, "default", item.id))
    purged = purge_turn(conn, closing)
    assert purged.counts["memory_items_restored"] == 1 and purged.counts["memory_events"] == 1
    kept = get_item(conn, "default", item.id)
    assert kept.status == "active"
    assert MARK not in events_text(conn, item.id)
    kinds = [(e.kind, e.cause) for e in history(conn, "default", item.id)]
    reopened = ("reopened", "open again: the statement that closed it was purged")
    assert kinds == [("created", "extractor"), reopened]
    # The tombstone lists the erased event's key (as an export wrote it), and no text.
    row = conn.execute("SELECT keys FROM purges").fetchone()
    assert before[done_event] in json.loads(row[0]) and MARK not in row[0]


def test_a_fact_replaced_by_a_purged_turn_is_active_again(conn):
    talk = Talk(conn)
    first = talk.turn("I live in Lyon")
    lyon = talk.learn(first, Fact("fact", "city", "Lives in Lyon", confidence=0.9)).item
    moved = talk.turn(f"I live on {MARK} street in Paris")
    paris = talk.learn(moved, Fact("fact", "city", f"Lives on {MARK} street in Paris",
                                   confidence=0.9))  # fmt: skip
    assert paris.action == "superseded" and paris.conflict  # both confident: flagged too
    assert MARK in events_text(conn, lyon.id)
    purged = purge_turn(conn, moved)
    assert purged.counts["memory_items"] == 1 and purged.counts["memory_items_restored"] == 1
    back = get_item(conn, "default", lyon.id)
    assert (back.status, back.superseded_by, back.conflict_with) == ("active", None, None)
    assert MARK not in events_text(conn, lyon.id)
    assert [e.kind for e in history(conn, "default", lyon.id)] == ["created", "reopened"]
    assert conn.execute("SELECT count(*) FROM memory_items").fetchone()[0] == 1


def chain(conn: Any) -> tuple[Talk, list[int], list[int]]:
    """A (Lyon) replaced by B (the marker) replaced by C (Berlin): turn ids and item ids."""
    talk = Talk(conn)
    said, items = [], []
    for label in ("Lives in Lyon", f"Lives in {MARK} Paris", "Lives in Berlin"):
        said.append(talk.turn(label.replace("Lives", "I live")))
        items.append(talk.learn(said[-1], Fact("fact", "city", label, confidence=0.7)).item.id)
    return talk, said, items


def test_purging_the_middle_of_a_chain_links_the_older_fact_to_the_newer(conn):
    _, said, (a, b, c) = chain(conn)
    assert get_item(conn, "default", a).superseded_by == b
    purged = purge_turn(conn, said[1])
    assert purged.counts["memory_items_relinked"] == 1
    older = get_item(conn, "default", a)
    assert (older.status, older.superseded_by) == ("superseded", c)
    assert get_item(conn, "default", c).status == "active"
    last = history(conn, "default", a)[-1]
    assert (last.kind, last.related_item_id) == ("superseded", c)
    assert last.cause == ("replaced by #3: Lives in Berlin (the statement that replaced it "
                          "before was purged)")  # fmt: skip
    assert MARK not in events_text(conn, a) + events_text(conn, c)
    chain_now = curation.supersede_chain(conn, "default", a)
    assert [i.id for i in chain_now] == [a, c]


def test_purging_the_end_of_a_chain_brings_back_the_one_before(conn):
    _, said, (a, b, c) = chain(conn)
    purge_turn(conn, said[2])
    assert get_item(conn, "default", b).status == "active"
    assert get_item(conn, "default", a).superseded_by == b  # untouched


def test_purging_both_replacements_brings_back_the_first(conn):
    _, said, (a, b, c) = chain(conn)
    session = turns.get_turns(conn, "default", [said[1]])[0].session_id
    # the turns of B and C only: purge them one after the other, newest first and oldest first
    purge_turn(conn, said[2])
    purge_turn(conn, said[1])
    assert get_item(conn, "default", a).status == "active"
    assert [r[0] for r in conn.execute("SELECT id FROM memory_items").fetchall()] == [a]
    assert session == turns.get_turns(conn, "default", [said[0]])[0].session_id


def test_purging_a_session_holding_the_whole_chain_but_the_first_brings_it_back(conn):
    talk = Talk(conn)
    first = talk.turn("I live in Lyon")
    a = talk.learn(first, Fact("fact", "city", "Lives in Lyon", confidence=0.7)).item.id
    talk.n += 300  # a new session
    later = [talk.turn(f"I live in {city}") for city in (MARK, "Berlin")]
    for turn_id, city in zip(later, (MARK, "Berlin"), strict=True):
        talk.learn(turn_id, Fact("fact", "city", f"Lives in {city}", confidence=0.7))
    session = turns.get_turns(conn, "default", later)[0].session_id
    target = engine.plan(conn, profile="default", what="session", ref_id=session)
    assert len(target.items) == 2
    engine.purge(conn, target, now=T0 + timedelta(days=1))
    assert get_item(conn, "default", a).status == "active"
    assert [e.kind for e in history(conn, "default", a)] == ["created", "reopened"]


def test_a_reinforcement_from_a_purged_turn_is_taken_back(conn):
    talk = Talk(conn)
    first = talk.turn("I like green tea")
    tea = talk.learn(first, Fact("preference", "tea", "Likes green tea")).item
    again = [talk.turn("I like green tea, really") for _ in range(2)]
    for turn_id in again:
        assert talk.learn(turn_id, Fact("preference", "tea", "Likes green tea")).action == (
            "reinforced"
        )
    now = get_item(conn, "default", tea.id)
    assert (now.reinforcements, round(now.confidence, 2)) == (3, 1.0)
    last_time = now.reinforced_at
    purged = purge_turn(conn, again[0])
    assert purged.counts["reinforcements_taken_back"] == 1
    after = get_item(conn, "default", tea.id)
    # 0.8 + the one left (0.1): 0.9; the last reinforcement is still the second one
    assert (after.reinforcements, after.confidence, after.reinforced_at) == (2, 0.9, last_time)
    purge_turn(conn, again[1])
    after = get_item(conn, "default", tea.id)
    assert (after.reinforcements, after.confidence) == (1, 0.8)
    assert after.reinforced_at == after.created_at
    assert [e.kind for e in history(conn, "default", tea.id)] == ["created"]


def test_a_pin_asked_for_in_a_purged_turn_is_taken_back(conn):
    talk = Talk(conn)
    first = talk.turn("I like green tea")
    tea = talk.learn(first, Fact("preference", "tea", "Likes green tea")).item
    ask = talk.turn(f"always remember that I like green tea {MARK}")
    pinned = talk.learn(ask, replace(Fact("preference", "tea", "Likes green tea"), pinned=True))
    assert pinned.action == "reinforced" and pinned.item.pinned
    purge_turn(conn, ask)
    after = get_item(conn, "default", tea.id)
    assert (after.pinned, after.reinforcements, after.confidence) == (False, 1, 0.8)
    assert [e.kind for e in history(conn, "default", tea.id)] == ["created", "unpinned"]


def test_a_fact_evicted_to_make_room_for_a_purged_one_comes_back(conn):
    small = replace(SETTINGS, cap=1)
    talk = Talk(conn)
    first = talk.turn("I like green tea")
    tea = talk.learn(first, Fact("preference", "tea", "Likes green tea"), small).item
    other = talk.turn(f"I drive a {MARK} car")
    car = talk.learn(other, Fact("fact", "car", f"Drives a {MARK} car"), small)
    assert car.evicted == (tea.id,)
    assert get_item(conn, "default", tea.id).status == "evicted"
    purge_turn(conn, other)
    assert get_item(conn, "default", tea.id).status == "active"
    causes = [e.cause for e in history(conn, "default", tea.id)]
    assert causes == ["extractor", "restored: it was evicted to make room for a purged fact"]


def test_a_later_change_of_status_is_not_undone(conn):
    talk = Talk(conn)
    said = talk.turn("I'll send the Acme invoice by Friday")
    item = talk.learn(said, Fact("open_item", "acme-invoice", "Send the Acme invoice")).item
    closing = talk.turn("sent the Acme invoice")
    talk.learn(closing, Fact("open_item", "acme-invoice", "Sent the Acme invoice"),
               relation="done", target_id=item.id)  # fmt: skip
    # the person then forgets it: that decision stands when the closing turn is purged
    curation.forget(conn, "default", item.id, talk.when())
    purge_turn(conn, closing)
    assert get_item(conn, "default", item.id).status == "retracted"


def test_a_conflict_flag_on_a_purged_fact_is_cleared(conn):
    talk = Talk(conn)
    first = talk.turn(f"I live in {MARK} Lyon")
    lyon = talk.learn(first, Fact("fact", "city", f"Lives in {MARK} Lyon", confidence=0.9)).item
    moved = talk.turn("I live in Paris")
    paris = talk.learn(moved, Fact("fact", "city", "Lives in Paris", confidence=0.9))
    assert get_item(conn, "default", paris.item.id).conflict_with == lyon.id
    purge_turn(conn, first)  # the older fact's own turn
    kept = get_item(conn, "default", paris.item.id)
    assert (kept.status, kept.conflict_with) == ("active", None)
    assert curation.conflicts(conn, "default") == []
    assert MARK not in events_text(conn, paris.item.id)
    assert history(conn, "default", paris.item.id)[-1].cause == (
        "no longer flagged: the statement it conflicted with was purged"
    )


def test_a_retraction_asked_for_in_a_purged_turn_stands_without_its_words(conn):
    from rheo_cli.memory.facts.requests import honour

    talk = Talk(conn)
    first = talk.turn("I like green tea")
    tea = talk.learn(first, Fact("preference", "tea", "Green tea")).item
    ask = talk.turn(f"forget that I like green tea {MARK}")
    notes = honour(conn, profile="default", turn_id=ask, text=f"forget that I like "
                            f"green tea {MARK}", now=talk.when(), settings=SETTINGS)  # fmt: skip
    assert notes == [f"forgot #{tea.id} (Green tea)"] and MARK in events_text(conn, tea.id)
    purge_turn(conn, ask)
    assert get_item(conn, "default", tea.id).status == "retracted"
    last = history(conn, "default", tea.id)[-1]
    assert (last.kind, last.source_turn_id, last.cause) == (
        "retracted", None, "retracted at the person's request (the turn that asked was purged)"
    )  # fmt: skip


def test_a_retraction_from_before_turns_were_cited_is_recognised_by_its_words(conn):
    talk = Talk(conn)
    first = talk.turn("I like green tea")
    tea = talk.learn(first, Fact("preference", "tea", "Likes green tea")).item
    ask = talk.turn(f"forget that I like green tea {MARK}")
    curation.forget(conn, "default", tea.id, talk.when(),
                    cause=f'the person asked: "forget that {MARK}" (turn #{ask})')  # fmt: skip
    purge_turn(conn, ask)
    assert MARK not in events_text(conn, tea.id)
    assert get_item(conn, "default", tea.id).status == "retracted"


def test_purging_a_memory_brings_back_the_one_it_replaced(conn):
    settings = SETTINGS
    remember(conn, Fact("fact", "city", "Lives in Lyon"), source="manual", now=T0,
             settings=settings, profile="default")  # fmt: skip
    paris = remember(conn, Fact("fact", "city", f"Lives in {MARK} Paris"), source="manual",
                     now=T0 + timedelta(hours=1), settings=settings, profile="default")  # fmt: skip
    lyon_id = paris.previous.id
    assert MARK in events_text(conn, lyon_id)
    target = engine.plan(conn, profile="default", what="memory", ref_id=paris.item.id)
    engine.purge(conn, target, now=T0 + timedelta(days=1))
    assert get_item(conn, "default", lyon_id).status == "active"
    assert MARK not in events_text(conn, lyon_id)


def test_the_extraction_job_of_a_reply_to_a_purged_question_goes(conn):
    from rheo_cli.memory import jobs

    talk = Talk(conn)
    question = talk.turn(f"my courier is {MARK}")
    reply = turns.append_turn(conn, profile="default", role="assistant", content="Noted.",
                              now=talk.when(), gap_s=7200, status="ok", model="m",
                              meta={"reply_to": question}).turn  # fmt: skip
    other_q = talk.turn("and the weather?")
    other_r = turns.append_turn(conn, profile="default", role="assistant", content="Sunny.",
                                now=talk.when(), gap_s=7200, status="ok", model="m",
                                meta={"reply_to": other_q}).turn  # fmt: skip
    for turn in (reply, other_r):
        jobs.enqueue(
            conn, profile="default", kind="extract", ref_id=turn.id, ts="2026-04-01T09:00:00.000Z"
        )
    purged = purge_turn(conn, question)
    assert purged.counts["jobs"] == 1
    left = conn.execute("SELECT ref_id FROM jobs WHERE kind = 'extract'").fetchall()
    assert [r[0] for r in left] == [other_r.id]


@pytest.mark.parametrize("what", ["turn", "session"])
def test_the_tombstone_lists_the_keys_an_export_gave_the_erased_records(conn, what):
    talk = Talk(conn)
    keep = talk.turn("I like green tea")
    talk.learn(keep, Fact("preference", "tea", "Likes green tea"))
    gone = talk.turn(f"I live in {MARK}")
    talk.learn(gone, Fact("fact", "city", f"Lives in {MARK}"))
    talk.learn(gone, Fact("preference", "tea", "Likes green tea"))  # a reinforcement
    before = keys_of(conn, "default")
    ref = gone if what == "turn" else turns.get_turns(conn, "default", [gone])[0].session_id
    engine.purge(conn, engine.plan(conn, profile="default", what=what, ref_id=ref), now=T0)
    after = keys_of(conn, "default")
    listed = set(json.loads(conn.execute("SELECT keys FROM purges").fetchone()[0]))
    every_before = {k for d in (before.sessions, before.turns, before.items, before.events,
                                before.digests) for k in d.values()}  # fmt: skip
    every_after = {k for d in (after.sessions, after.turns, after.items, after.events,
                               after.digests) for k in d.values()}  # fmt: skip
    # exactly what is gone, by the keys it had
    assert listed == every_before - every_after
    assert len(listed) == (4 if what == "turn" else len(every_before))  # turn, item, 2 events


def test_what_a_dropped_digest_learnt_without_citing_a_turn_goes_and_the_digest_is_queued(conn):
    from rheo_cli.memory import jobs
    from rheo_cli.memory.ledger.digests import store_digest

    talk = Talk(conn)
    tea_turn = talk.turn("I like green tea")
    tea = talk.learn(tea_turn, Fact("preference", "tea", "Likes green tea")).item
    secret = talk.turn(f"my courier is {MARK}, and I still like green tea")
    last = talk.turn("see you tomorrow")
    session = turns.get_turns(conn, "default", [last])[0].session_id
    facts = [{"category": "fact", "topic": "courier", "label": f"Courier is {MARK}",
              "turn_id": None},
             {"category": "preference", "topic": "tea", "label": "Likes green tea",
              "turn_id": None},
             {"category": "fact", "topic": "farewell", "label": "Says see you tomorrow",
              "turn_id": last}]  # fmt: skip
    store_digest(conn, profile="default", session_id=session, narrative=f"About {MARK}.",
                 facts=facts, procedures=[], decisions=[], source_turn_ids=[secret],
                 model="m", created_at="2026-04-02T09:00:00.000Z")  # fmt: skip
    for fact in facts:  # as the digest job writes them: an uncited fact under the last turn
        remember(conn, Fact(fact["category"], fact["topic"], fact["label"]), source="digest",
                 now=talk.when(), settings=SETTINGS, source_turn_id=last)  # fmt: skip
    assert get_item(conn, "default", tea.id).reinforcements == 2
    target = engine.plan(conn, profile="default", what="turn", ref_id=secret)
    labels = [get_item(conn, "default", i).label for i in target.items]
    assert labels == [f"Courier is {MARK}"]  # the cited fact stays, with its turn
    assert len(target.events) == 1  # the digest's reinforcement of the tea fact
    engine.purge(conn, target, now=T0 + timedelta(days=1))
    kept = conn.execute("SELECT label FROM memory_items ORDER BY id").fetchall()
    assert [r[0] for r in kept] == ["Likes green tea", "Says see you tomorrow"]
    assert get_item(conn, "default", tea.id).reinforcements == 1
    queued = conn.execute("SELECT kind, ref_id, status FROM jobs").fetchall()
    assert [tuple(r) for r in queued] == [("digest", session, "pending")]
    assert conn.execute("SELECT count(*) FROM digests").fetchone()[0] == 0
    assert jobs.enqueue(conn, profile="default", kind="digest", ref_id=session,
                        ts="2026-04-03T09:00:00.000Z") is False  # already queued  # fmt: skip


def test_facts_an_earlier_purge_left_superseded_by_nothing_are_given_back(backend, tmp_path,
                                                                          monkeypatch):  # fmt: skip
    """A store whose older purges erased a replacing statement and left the fact it replaced
    ``superseded`` by nothing: upgrading relinks it to the newest fact on its topic, or makes
    it active again (schema 13 on SQLite, m007 on PostgreSQL)."""
    import contextlib

    from conftest import pg_schema_url

    from rheo_cli.memory.store import db
    from rheo_cli.memory.store.postgres import schema as pg_schema
    from rheo_cli.memory.store.sqlite import migrations

    @contextlib.contextmanager
    def old_store():
        if backend == "sqlite":
            c = db.open_store(tmp_path / "old.db", migrate_schema=False)
            migrations.migrate(c, target=12)
            yield c, lambda: db.open_store(tmp_path / "old.db")
            return
        with pg_schema_url() as url:
            before = [name for name, _ in pg_schema.MIGRATIONS].index("m007_purge_keys")
            monkeypatch.setattr(pg_schema, "MIGRATIONS", pg_schema.MIGRATIONS[:before])
            monkeypatch.setattr(pg_schema, "SCHEMA_VERSION", before)
            c = db.open_url(url, tenant="default")

            def reopen():
                monkeypatch.undo()
                return db.open_url(url, tenant="default")

            yield c, reopen

    with old_store() as (conn, reopen):
        # What a purge of Paris's and of Coffee's turns used to leave, written in the old
        # schema's columns (the engine of today writes columns that store does not have yet):
        # Lyon and Green tea superseded by nothing; Berlin, said after Lyon, active.
        ids = {}
        old = (
            ("lyon", "city", "Lives in Lyon", "superseded"),
            ("berlin", "city", "Lives in Berlin", "active"),
            ("tea", "tea", "Likes green tea", "superseded"),
        )
        for name, topic, label, status in old:
            with db.write(conn):
                conn.execute(
                    "INSERT INTO memory_items(profile, category, topic, label, properties, "
                    "content_key, confidence, reinforcements, pinned, source, created_at, "
                    "reinforced_at, status) VALUES ('default', 'fact', ?, ?, '{}', ?, 0.5, 1, "
                    "0, 'manual', ?, ?, ?)",
                    (topic, label, f"key-{name}", "2026-01-01T00:00:00.000Z",
                     "2026-01-01T00:00:00.000Z", status),
                )  # fmt: skip
            ids[name] = conn.execute(
                "SELECT id FROM memory_items WHERE label = ?", (label,)
            ).fetchone()[0]
        assert ids["lyon"] < ids["berlin"]
        conn.close()
        conn = reopen()
        try:
            lyon, tea = (
                get_item(conn, "default", ids["lyon"]),
                get_item(conn, "default", ids["tea"]),
            )
            assert (lyon.status, lyon.superseded_by) == ("superseded", ids["berlin"])
            assert (tea.status, tea.superseded_by) == ("active", None)
            assert history(conn, "default", ids["tea"])[-1].cause == (
                "restored: the statement that replaced it had been purged"
            )
            last = history(conn, "default", ids["lyon"])[-1]
            assert (last.kind, last.related_item_id) == ("superseded", ids["berlin"])
            assert get_item(conn, "default", ids["berlin"]).status == "active"
        finally:
            conn.close()
