"""Memory items: reinforcement, decay, pinning, the cap, conflicts, supersede chains, history."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from conftest import as_tenant
from hypothesis import given
from hypothesis import strategies as st

from rheo_cli.memory.facts import curation, events, items, remember
from rheo_cli.memory.facts.decay import effective_confidence
from rheo_cli.memory.facts.remember import Fact
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store.errors import Integrity, InvalidInput
from rheo_cli.memory.store.settings import Settings

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
S = Settings()


def turn(conn, text="something", profile="default", when=T0):
    return ledger.append_turn(
        conn, profile=profile, role="user", content=text, now=when, gap_s=S.gap_s
    ).turn


def put(conn, label, topic="t", *, when=T0, settings=S, source_turn=None, profile="default", **kw):
    fact = Fact(category=kw.pop("category", "fact"), topic=topic, label=label, **kw)
    if source_turn is not None:
        return remember.remember(
            conn, fact, source="extractor", now=when, settings=settings, source_turn_id=source_turn
        )
    return remember.remember(
        conn, fact, source="manual", now=when, settings=settings, profile=profile
    )


# --- decay -------------------------------------------------------------------------------


@pytest.mark.parametrize(("days", "expected"), [(0, 0.8), (90, 0.55), (180, 0.3), (365, 0.3)])
def test_decay_curve(days, expected):
    value = effective_confidence(0.8, T0, T0 + timedelta(days=days), floor=0.3, decay_days=180)
    assert value == pytest.approx(expected)


def test_decay_is_read_time_only(conn):
    item = put(conn, "likes tea", confidence=0.9).item
    later = T0 + timedelta(days=90)
    assert item.effective(later, S) == pytest.approx(0.6)
    assert items.get_item(conn, "default", item.id).confidence == 0.9  # nothing written


@given(
    stored=st.floats(0, 1),
    floor=st.floats(0, 1),
    days_a=st.floats(0, 2000),
    extra=st.floats(0, 2000),
    decay_days=st.floats(1, 1000),
)
def test_decay_is_monotonic_and_never_below_floor(stored, floor, days_a, extra, decay_days):
    a = effective_confidence(
        stored, T0, T0 + timedelta(days=days_a), floor=floor, decay_days=decay_days
    )
    b = effective_confidence(
        stored, T0, T0 + timedelta(days=days_a + extra), floor=floor, decay_days=decay_days
    )
    assert b <= a + 1e-12
    assert b >= min(stored, floor) - 1e-12
    assert a <= stored + 1e-12


def test_pinned_reads_one_and_never_decays():
    assert effective_confidence(0.5, T0, T0 + timedelta(days=3650), pinned=True) == 1.0


def test_clock_before_reinforcement_means_no_decay():
    assert effective_confidence(0.8, T0, T0 - timedelta(days=30)) == 0.8


def test_decay_settings_are_honoured(conn):
    fast = Settings(floor=0.1, decay_days=10)
    item = put(conn, "x", confidence=0.9).item
    assert item.effective(T0 + timedelta(days=5), fast) == pytest.approx(0.5)
    assert item.effective(T0 + timedelta(days=50), fast) == pytest.approx(0.1)


# --- reinforcement -----------------------------------------------------------------------


def test_reinforcement_adds_point_one_up_to_one(conn):
    out = put(conn, "Prefers tea in the morning", topic="drink")
    assert out.action == "created" and out.item.confidence == 0.8
    values = []
    for day in (1, 2, 3, 4):
        out = put(conn, "prefers tea in the mornings", topic="Drink", when=T0 + timedelta(days=day))
        assert out.action == "reinforced"
        values.append(out.item.confidence)
    assert values == [pytest.approx(0.9), 1.0, 1.0, 1.0]
    item = out.item
    assert item.reinforcements == 5
    assert item.reinforced_at == "2026-01-05T12:00:00.000Z"
    assert len(items.list_items(conn, "default")) == 1  # never a duplicate
    kinds = [e.kind for e in events.history(conn, "default", item.id)]
    assert kinds == ["created", "reinforced", "reinforced", "reinforced", "reinforced"]


def test_reinforcement_restarts_decay(conn):
    item = put(conn, "likes tea", confidence=0.8).item
    late = T0 + timedelta(days=170)
    assert item.effective(late, S) < 0.4
    again = put(conn, "likes tea", when=late).item
    assert again.effective(late, S) == pytest.approx(0.9)


# --- supersede and conflicts ---------------------------------------------------------------


def test_supersede_chain_over_three_versions(conn):
    v1 = put(conn, "Lives in Paris", topic="home city", confidence=0.6).item
    v2 = put(
        conn, "Lives in Lyon", topic="home city", confidence=0.6, when=T0 + timedelta(days=1)
    ).item
    v3 = put(
        conn, "Lives in Nice", topic="home city", confidence=0.6, when=T0 + timedelta(days=2)
    ).item
    got = {i.id: i for i in items.list_items(conn, "default", statuses=None)}
    assert got[v1.id].status == got[v2.id].status == "superseded"
    assert got[v1.id].superseded_by == v2.id and got[v2.id].superseded_by == v3.id
    assert got[v3.id].status == "active" and got[v3.id].superseded_by is None
    for item in (v1, v2, v3):
        assert [v.id for v in curation.supersede_chain(conn, "default", item.id)] == [
            v1.id,
            v2.id,
            v3.id,
        ]
    assert [e.kind for e in events.history(conn, "default", v2.id)] == ["created", "superseded"]
    assert "replaced by #3: Lives in Nice" in events.history(conn, "default", v2.id)[1].cause
    assert curation.conflicts(conn, "default") == []  # 0.6: not confident, no flag


@pytest.mark.parametrize(
    ("old", "new", "flagged"),
    [
        (0.8, 0.8, True),
        (0.79, 0.8, False),
        (0.8, 0.79, False),
        (0.95, 1.0, True),
        (0.79, 0.79, False),
    ],
)
def test_conflict_flag_threshold(conn, old, new, flagged):
    a = put(conn, "Wife is Ana", topic="wife", confidence=old).item
    out = put(conn, "Wife is Maria", topic="wife", confidence=new)
    assert out.action == "superseded" and out.previous.id == a.id
    assert out.conflict is flagged
    pairs = curation.conflicts(conn, "default")
    assert [(n.id, o.id) for n, o in pairs] == ([(out.item.id, a.id)] if flagged else [])
    if flagged:
        assert [e.kind for e in events.history(conn, "default", a.id)] == [
            "created",
            "superseded",
            "conflict_flagged",
        ]


def test_decayed_old_fact_is_not_a_conflict(conn):
    put(conn, "Works at Acme", topic="employer", confidence=0.9)
    out = put(
        conn, "Works at Globex", topic="employer", confidence=0.9, when=T0 + timedelta(days=120)
    )
    assert out.action == "superseded" and not out.conflict


def test_pinned_old_fact_always_conflicts(conn):
    a = put(conn, "Blood type O+", topic="blood type", pinned=True, confidence=0.5).item
    out = put(conn, "Blood type A+", topic="blood type", when=T0 + timedelta(days=400))
    assert out.conflict and out.previous.id == a.id


def test_resolve_keeping_either_side(conn):
    a = put(conn, "Wife is Ana", topic="wife").item
    b = put(conn, "Wife is Maria", topic="wife").item
    kept = curation.resolve(conn, "default", a.id, T0 + timedelta(days=1))
    assert kept.status == "active" and kept.conflict_with is None
    other = items.get_item(conn, "default", b.id)
    assert other.status == "superseded" and other.superseded_by == a.id
    assert curation.conflicts(conn, "default") == []
    assert events.history(conn, "default", a.id)[-1].kind == "resolved"
    with pytest.raises(InvalidInput, match="not part of a flagged conflict"):
        curation.resolve(conn, "default", a.id, T0)


def test_resolve_keeping_the_newer(conn):
    a = put(conn, "Wife is Ana", topic="wife").item
    b = put(conn, "Wife is Maria", topic="wife").item
    curation.resolve(conn, "default", b.id, T0)
    assert items.get_item(conn, "default", b.id).conflict_with is None
    assert items.get_item(conn, "default", a.id).superseded_by == b.id


# --- cap and eviction --------------------------------------------------------------------


def test_eviction_takes_the_least_reinforced_first(conn):
    small = Settings(cap=3)
    a = put(conn, "fact a", topic="a", settings=small).item
    b = put(conn, "fact b", topic="b", settings=small).item
    c = put(conn, "fact c", topic="c", settings=small).item
    for _ in range(2):
        put(conn, "fact a", topic="a", settings=small)
    put(conn, "fact c", topic="c", settings=small)
    out = put(conn, "fact d", topic="d", settings=small, when=T0 + timedelta(days=1))
    assert out.evicted == (b.id,)  # b: 1 mention; a: 3, c: 2, d is new
    assert items.get_item(conn, "default", b.id).status == "evicted"
    ev = events.history(conn, "default", b.id)[-1]
    assert ev.kind == "evicted" and "cap of 3" in ev.cause
    assert {i.id for i in items.list_items(conn, "default")} == {a.id, c.id, out.item.id}


def test_eviction_ties_go_to_lower_confidence_then_older(conn):
    small = Settings(cap=2)
    low = put(conn, "low", topic="low", confidence=0.5, settings=small).item
    put(conn, "high", topic="high", confidence=0.9, settings=small)
    out = put(conn, "new", topic="new", confidence=0.9, settings=small)
    assert out.evicted == (low.id,)


def test_pinned_items_are_never_evicted(conn):
    small = Settings(cap=2)
    pinned = put(conn, "pinned one", topic="p", settings=small, pinned=True).item
    others = [
        put(conn, f"other {n}", topic=f"o{n}", settings=small, when=T0 + timedelta(days=n))
        for n in range(1, 6)
    ]
    assert items.get_item(conn, "default", pinned.id).status == "active"
    active = items.list_items(conn, "default")
    assert pinned.id in {i.id for i in active}
    assert len([i for i in active if not i.pinned]) == 2
    assert others[-1].item.id in {i.id for i in active}


def test_open_items_do_not_count_toward_the_cap_and_are_not_evicted(conn):
    small = Settings(cap=1)
    todo = put(conn, "Send the invoice", topic="invoice", category="open_item", settings=small).item
    put(conn, "x", topic="x", settings=small)
    put(conn, "y", topic="y", settings=small)
    assert items.get_item(conn, "default", todo.id).status == "active"


def test_pin_and_unpin_commands(conn):
    item = put(conn, "likes tea").item
    pinned = curation.pin(conn, "default", item.id, T0)
    assert pinned.pinned and pinned.effective(T0 + timedelta(days=999), S) == 1.0
    with pytest.raises(InvalidInput, match="already pinned"):
        curation.pin(conn, "default", item.id, T0)
    unpinned = curation.unpin(conn, "default", item.id, T0)
    assert not unpinned.pinned
    assert [e.kind for e in events.history(conn, "default", item.id)] == [
        "created",
        "pinned",
        "unpinned",
    ]


# --- ownership, forgetting, integrity ------------------------------------------------------


def test_profile_comes_from_the_source_turn(conn):
    t = turn(as_tenant(conn, "alice"), "I love jazz", profile="alice")
    out = put(conn, "Loves jazz", topic="music", source_turn=t.id)
    assert out.item.profile == "alice"
    assert items.list_items(conn, "default") == []
    with pytest.raises(InvalidInput, match="profile of its source turn"):
        remember.remember(
            conn,
            Fact("fact", "music", "x"),
            source="tool",
            now=T0,
            settings=S,
            source_turn_id=t.id,
            profile="mallory",
        )


def test_forget_retracts_keeps_history_and_is_not_relearnt(conn):
    t = turn(conn)
    item = put(conn, "Smokes", topic="smoking", source_turn=t.id).item
    gone = curation.forget(conn, "default", item.id, T0)
    assert gone.status == "retracted"
    assert items.list_items(conn, "default") == []
    again = put(conn, "smokes", topic="smoking", source_turn=t.id)
    assert again.action == "skipped" and "retracted" in again.note
    # the person can still add it back on purpose
    assert put(conn, "Smokes", topic="smoking").action == "created"
    assert [e.kind for e in events.history(conn, "default", item.id)] == ["created", "retracted"]


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM memory_items",
        "UPDATE memory_items SET label = 'changed'",
        "UPDATE memory_items SET topic = 'x'",
        "UPDATE memory_items SET profile = 'other'",
        "DELETE FROM memory_events",
        "UPDATE memory_events SET cause = 'rewritten'",
    ],
)
def test_database_protects_item_content_and_history(conn, sql):
    put(conn, "keep")
    with pytest.raises(Integrity):
        conn.execute(sql)


def test_done_only_for_open_items(conn):
    todo = put(conn, "Upload the catalog", topic="catalog", category="open_item").item
    fact = put(conn, "likes tea", topic="tea").item
    assert curation.mark_done(conn, "default", todo.id, T0).status == "done"
    with pytest.raises(InvalidInput, match="not an open item"):
        curation.mark_done(conn, "default", fact.id, T0)
    with pytest.raises(InvalidInput, match="cannot be marked done"):
        curation.mark_done(conn, "default", todo.id, T0)


def test_bad_facts_are_refused(conn):
    with pytest.raises(InvalidInput, match="unknown category"):
        put(conn, "x", category="gossip")
    with pytest.raises(InvalidInput, match="needs some content"):
        put(conn, "   ")
    with pytest.raises(InvalidInput, match="confidence"):
        put(conn, "x", confidence=1.5)
