"""The ledger: append-only turns, FTS5 search that never chokes, sessions detected by gap."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from conftest import as_tenant
from hypothesis import given, settings
from hypothesis import strategies as st

from rheo_cli.memory.ledger import sessions
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import Integrity, InvalidInput

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
GAP = 2 * 3600.0


def add(conn, content, when, role="user", profile="default", **kw):
    as_tenant(conn, profile)
    if role == "assistant":
        kw.setdefault("status", "ok")
    return ledger.append_turn(
        conn, profile=profile, role=role, content=content, now=when, gap_s=GAP, **kw
    )


def test_turn_fields_are_stored(conn):
    t = add(conn, "hello", T0).turn
    r = add(
        conn,
        "hi",
        T0 + timedelta(seconds=3),
        role="assistant",
        model="m1",
        session_id=t.session_id,
        usage=ledger.Usage(10, 5, 2, 1),
    ).turn
    got = ledger.get_turn(conn, "default", r.id)
    assert got.role == "assistant" and got.model == "m1" and got.status == "ok"
    assert got.usage == ledger.Usage(10, 5, 2, 1)
    assert got.ts == "2026-05-01T09:00:03.000Z"
    assert ledger.get_turn(conn, "default", t.id).ts == "2026-05-01T09:00:00.000Z"


def test_timestamps_are_utc_whatever_the_clock_offset(conn):
    from datetime import timezone

    local = datetime(2026, 5, 1, 11, 0, tzinfo=timezone(timedelta(hours=2)))
    assert add(conn, "x", local).turn.ts == "2026-05-01T09:00:00.000Z"


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE turns SET content = 'changed'",
        "UPDATE turns SET ts = '2000-01-01T00:00:00.000Z'",
        "DELETE FROM turns",
        "DELETE FROM turns WHERE id = 1",
    ],
)
def test_database_refuses_edits_and_deletes(conn, sql):
    add(conn, "keep me", T0)
    with pytest.raises(Integrity, match="append-only"):
        conn.execute(sql)
    assert ledger.get_turn(conn, "default", 1).content == "keep me"


def test_role_and_status_are_checked(conn):
    with pytest.raises(InvalidInput):
        add(conn, "x", T0, role="system")
    with pytest.raises(InvalidInput):
        add(conn, "x", T0, role="assistant", status="weird")
    with pytest.raises(InvalidInput):
        add(conn, "x", T0, status="ok")


def test_fts_index_follows_inserts_with_stemming(conn):
    add(conn, "We planted tomatoes in the greenhouse", T0)
    add(conn, "Nothing about vegetables", T0)
    found = ledger.search_turns(conn, "default", "tomato greenhouses")
    assert [t.content for t, _ in found] == ["We planted tomatoes in the greenhouse"]


WEIRD = [
    "C++",
    '"quoted"',
    "AND",
    "OR",
    "NOT",
    "-x",
    "a:b",
    "*",
    "(",
    ")",
    "NEAR(a b)",
    '"unbalanced',
    "😀",
    "東京",
    "東京都に住んでいます",
    "a AND",
    "^start",
    "col:val*",
    "{x y}",
    "'",
    "''",
    '""',
    "x\x00y",
    "   ",
    "",
    "💡 idea",
    "naïve café",
    "a - b",
    "1.5",
    "foo*bar",
    "*foo",
    "+plus",
]


@pytest.mark.parametrize("query", WEIRD)
def test_any_query_text_searches_without_error(conn, query):
    add(conn, "I code in C++ and visit 東京 😀 with a:b quoted naïve café", T0)
    result = ledger.search_turns(conn, "default", query)
    assert isinstance(result, list)
    result_any = ledger.search_turns(conn, "default", query, any_term=True)
    assert isinstance(result_any, list)


def test_special_queries_find_what_they_should(conn):
    add(conn, "I code in C++ daily", T0)
    add(conn, "ratio a:b matters", T0)
    add(conn, "naïve café", T0)
    assert ledger.search_turns(conn, "default", "C++")[0][0].content == "I code in C++ daily"
    assert ledger.search_turns(conn, "default", "a:b")[0][0].content == "ratio a:b matters"
    assert ledger.search_turns(conn, "default", "cafe naive")[0][0].content == "naïve café"
    assert ledger.search_turns(conn, "default", '"code in"')[0][0].content.startswith("I code")
    assert ledger.search_turns(conn, "default", "dail*")[0][0].content.startswith("I code")
    assert ledger.search_turns(conn, "default", "AND") == []


@settings(max_examples=150, deadline=None)
@given(query=st.text(max_size=40))
def test_hypothesis_search_never_raises(tmp_path_factory, query):
    path = tmp_path_factory.mktemp("h") / "h.db"
    conn = db.open_store(path)
    add(conn, "some stored text", T0)
    ledger.search_turns(conn, "default", query)
    ledger.search_turns(conn, "default", query, any_term=True)
    conn.close()


def test_profiles_never_see_each_other(conn):
    add(conn, "secret work plan", T0, profile="work")
    add(conn, "home plan", T0, profile="home")
    assert [t.content for t, _ in ledger.search_turns(conn, "home", "plan")] == ["home plan"]
    assert [t.content for t in ledger.recent_turns(as_tenant(conn, "work"), "work")] == [
        "secret work plan"
    ]
    as_tenant(conn, "home")
    with pytest.raises(Exception, match="no turn"):
        ledger.get_turn(conn, "home", 1)
    assert [s.profile for s in sessions.list_sessions(conn, "home")] == ["home"]


def test_gap_over_two_hours_opens_a_new_session(conn):
    a = add(conn, "one", T0)
    b = add(conn, "two", T0 + timedelta(hours=1, minutes=59))
    c = add(conn, "three", T0 + timedelta(hours=1, minutes=59) + timedelta(hours=2))
    d = add(conn, "four", T0 + timedelta(hours=1, minutes=59) + timedelta(hours=4, seconds=1))
    assert a.opened_session and not b.opened_session and not c.opened_session
    assert a.turn.session_id == b.turn.session_id == c.turn.session_id
    assert d.opened_session and d.turn.session_id != c.turn.session_id
    assert d.closed_session is not None and d.closed_session.id == a.turn.session_id
    s = sessions.get_session(conn, "default", a.turn.session_id)
    assert s.turns == 3 and s.started_at == "2026-05-01T09:00:00.000Z"


def test_sessions_are_per_profile(conn):
    a = add(conn, "x", T0, profile="a")
    b = add(conn, "y", T0 + timedelta(minutes=1), profile="b")
    a2 = add(conn, "z", T0 + timedelta(minutes=2), profile="a")
    assert a.turn.session_id == a2.turn.session_id != b.turn.session_id


def test_new_session_forced(conn):
    a = add(conn, "x", T0)
    b = add(conn, "y", T0 + timedelta(minutes=1), new_session=True)
    assert b.opened_session and b.turn.session_id != a.turn.session_id


def test_assistant_reply_joins_its_question_session_even_after_gap(conn):
    q = add(conn, "long question", T0)
    r = add(
        conn, "slow answer", T0 + timedelta(hours=3), role="assistant", session_id=q.turn.session_id
    )
    assert r.turn.session_id == q.turn.session_id and not r.opened_session


def test_clock_set_back_beyond_the_gap_starts_its_own_session(conn):
    nov = add(conn, "november", T0 + timedelta(days=200))
    jan = add(conn, "january", T0)
    jan2 = add(conn, "january later", T0 + timedelta(hours=3))
    assert jan.opened_session and jan.turn.session_id != nov.turn.session_id
    assert jan2.opened_session and jan2.turn.session_id != jan.turn.session_id
    s = sessions.get_session(conn, "default", jan.turn.session_id)
    assert s.started_at == s.last_turn_at == "2026-05-01T09:00:00.000Z"


def test_turn_slightly_earlier_than_session_start_joins_and_moves_start(conn):
    a = add(conn, "ten o'clock", T0)
    b = add(conn, "replayed 9:30", T0 - timedelta(minutes=30))
    assert b.turn.session_id == a.turn.session_id
    s = sessions.get_session(conn, "default", a.turn.session_id)
    assert (
        s.started_at == "2026-05-01T08:30:00.000Z" and s.last_turn_at == "2026-05-01T09:00:00.000Z"
    )


def test_search_ranks_the_newest_window_first_then_older(conn, monkeypatch):
    monkeypatch.setattr(ledger, "SEARCH_WINDOW", 5)
    for n in range(20):
        add(conn, f"apple number {n}" + (" quince" if n == 2 else ""), T0 + timedelta(minutes=n))
    newest = ledger.search_turns(conn, "default", "apple", limit=3)
    assert all(t.id > 15 for t, _ in newest)
    assert [t.id for t, _ in ledger.search_turns(conn, "default", "quince")] == [3]
    both = ledger.search_turns(conn, "default", "apple", limit=8)
    assert len(both) == 8 and {t.id for t, _ in both[:5]} == {16, 17, 18, 19, 20}


def test_too_common_a_query_lists_the_newest_matches_of_the_profile(conn, monkeypatch):
    monkeypatch.setattr(ledger, "RANKED_MAX", 3)
    for n in range(10):
        add(conn, f"common word {n}", T0 + timedelta(minutes=n), profile="mine")
    for n in range(300):  # a newer, busier profile
        add(conn, f"common word theirs {n}", T0 + timedelta(hours=5, minutes=n), profile="other")
    found = ledger.search_turns(as_tenant(conn, "mine"), "mine", "common", limit=4)
    assert [t.content for t, _ in found] == [f"common word {n}" for n in (9, 8, 7, 6)]
    assert all(t.profile == "mine" for t, _ in found)


def _import_past(conn, profile="default"):
    """Two conversations from 2023 and 2024 brought in by import-history (the bulk path)."""
    from rheo_cli.memory.archive.history import Conversation, Message, Parsed, import_history

    old = datetime(2023, 3, 1, 10, 0, tzinfo=UTC)
    late = datetime(2024, 6, 1, 10, 0, tzinfo=UTC)
    parsed = Parsed(
        "chatgpt",
        [
            Conversation("x:1", "2023", [Message("user", "imported 2023", old, "x:m1")]),
            Conversation("x:2", "2024", [Message("user", "imported 2024", late, "x:m2")]),
        ],
    )
    as_tenant(conn, profile)
    import_history(conn, profile, parsed, gap_s=GAP, now="2026-05-01T09:00:00.000Z")


def test_imported_past_conversations_are_never_the_current_or_previous_session(conn):
    today = add(conn, "asked today", T0)
    _import_past(conn)
    nxt = add(conn, "seconds later", T0 + timedelta(seconds=30))
    assert not nxt.opened_session and nxt.turn.session_id == today.turn.session_id
    assert sessions.latest_session(conn, "default").id == today.turn.session_id
    assert sessions.previous_session(conn, "default", today.turn.session_id) is None
    active = sessions.active_session(conn, "default", T0 + timedelta(minutes=1), GAP)
    assert active is not None and active.id == today.turn.session_id
    recent = [t.content for t in ledger.recent_turns(conn, "default", 2)]
    assert recent == ["asked today", "seconds later"]
    assert [t.content for t in ledger.recent_turns(conn, "default", 4)][:2] == [
        "imported 2023",
        "imported 2024",
    ]
    listed = sessions.list_sessions(conn, "default")
    assert listed[0].id == today.turn.session_id and listed[-1].last_turn_at.startswith("2023")
    # A session of rheo's own after a break: the previous session is today's, by time.
    later = add(conn, "the next day", T0 + timedelta(days=1))
    assert later.opened_session
    previous = sessions.previous_session(conn, "default", later.turn.session_id)
    assert previous is not None and previous.id == today.turn.session_id


def test_replayed_past_turns_after_newer_ones_keep_their_own_session(conn):
    add(conn, "november", T0 + timedelta(days=200))
    jan = add(conn, "january", T0)
    jan2 = add(conn, "january, a minute on", T0 + timedelta(minutes=1))
    assert jan.opened_session and not jan2.opened_session
    assert jan2.turn.session_id == jan.turn.session_id


def test_replies_with_content_are_the_later_replies_of_that_session_with_that_text(conn):
    question = add(conn, "where do I live?", T0).turn
    later = T0 + timedelta(seconds=3)
    same = add(conn, "Porto.", later, role="assistant", session_id=question.session_id).turn
    add(conn, "Lisbon.", later, role="assistant", session_id=question.session_id)
    again = add(conn, "Porto.", later, role="assistant", session_id=question.session_id).turn
    other = add(conn, "elsewhere", T0 + timedelta(days=3)).turn  # a new session
    add(conn, "Porto.", T0 + timedelta(days=3), role="assistant", session_id=other.session_id)
    found = ledger.replies_with_content(conn, "default", question, "Porto.")
    assert [t.id for t in found] == [same.id, again.id]
    assert ledger.replies_with_content(conn, "default", question, "porto.") == []
