"""Changes apply — on both stores.

A change the person states as one ("I moved to Lisbon", "I've given up coffee", "no longer",
"now", "actually", "switched", "quit") supersedes at once without a conflict flag; two
confident facts that disagree without such a signal still raise one. Every injected line
stating a value later changed — in CURRENT SESSION, at the previous session's end, in RELEVANT
HISTORY and in digests, the person's turn or the assistant's echo — carries the current value.
The value said last wins, whenever it was extracted; correcting one fact changes no other."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rheo_cli.memory.context import assemble
from rheo_cli.memory.facts import curation, items
from rheo_cli.memory.facts.changes import states_change
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.ledger import digests
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store.settings import Settings

TENANT = "default"
T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
S = Settings()


class Talk:
    def __init__(self, conn):
        self.conn = conn
        self.now = T0

    def say(self, text, role="user", question=None):
        self.now += timedelta(minutes=1)
        return ledger.append_turn(
            self.conn, profile="default", role=role, content=text, now=self.now,
            gap_s=S.gap_s, status="ok" if role == "assistant" else None,
            session_id=question.session_id if question else None,
            meta={"reply_to": question.id} if question else None,
        ).turn  # fmt: skip

    def learn(self, turn, label, topic="home", *, when=None, relation=None, target_id=None):
        return remember(
            self.conn, Fact("fact", topic, label, confidence=0.9), source="extractor",
            now=when or self.now, settings=S, source_turn_id=turn.id, relation=relation,
            target_id=target_id,
        )  # fmt: skip

    def context(self, message, *, later=timedelta(minutes=1)):
        return assemble.assemble(
            self.conn, profile="default", message=message, now=self.now + later, settings=S,
            budget=4000,
        ).text()  # fmt: skip


@pytest.mark.parametrize(
    ("before", "said", "after"),
    [
        ("Ana lives in Boston", "I moved to Lisbon.", "Ana lives in Lisbon"),
        ("Ana drinks coffee", "I've given up coffee.", "Ana does not drink coffee"),
        ("Ana uses Vim", "I switched to Neovim last week.", "Ana uses Neovim"),
        ("Ana smokes", "I quit smoking in March.", "Ana does not smoke"),
        ("Ana works at Acme", "Actually, I work at Globex.", "Ana works at Globex"),
        ("Ana's phone is 555-0100", "My number is 555-0199 now.", "Ana's phone is 555-0199"),
        ("Ana eats meat", "I no longer eat meat.", "Ana is vegetarian"),
        ("Ana wohnt in Berlin", "Ich bin nach Hamburg umgezogen.", "Ana wohnt in Hamburg"),
        ("Ana vit à Paris", "J'habite maintenant à Lyon.", "Ana vit à Lyon"),
        ("Ana vive en Madrid", "Ahora vivo en Sevilla.", "Ana vive en Sevilla"),
    ],
)
def test_a_change_the_person_states_applies_without_a_conflict(conn, before, said, after):
    talk = Talk(conn)
    old = talk.learn(talk.say("Some background."), before, "topic").item
    out = talk.learn(talk.say(said), after, "topic")
    assert out.action == "superseded" and out.previous.id == old.id and not out.conflict
    assert curation.conflicts(conn, "default") == []
    assert items.get_item(conn, "default", old.id).superseded_by == out.item.id


def test_two_confident_facts_that_disagree_without_a_signal_still_conflict(conn):
    talk = Talk(conn)
    talk.learn(talk.say("I live in Boston."), "Ana lives in Boston")
    out = talk.learn(talk.say("I live in Lisbon."), "Ana lives in Lisbon")
    assert out.action == "superseded" and out.conflict
    assert len(curation.conflicts(conn, "default")) == 1


def test_the_signal_must_be_about_the_fact_not_elsewhere_in_the_turn(conn):
    talk = Talk(conn)
    talk.learn(talk.say("My favourite colour is green."), "Ana's favourite colour is green",
               "colour")  # fmt: skip
    turn = talk.say("I now work from home. My favourite colour is blue.")
    out = talk.learn(turn, "Ana's favourite colour is blue", "colour")
    assert out.conflict  # "now" was about working from home


def test_change_words_in_four_languages():
    for text in ("I moved", "we're no longer", "actually it's", "ich bin umgezogen",
                 "il ne fume plus", "ya no fumo", "jetzt", "désormais"):  # fmt: skip
        assert states_change(text), text
    for text in ("I live in Lisbon", "Ana likes tea", "Wir wohnen in Berlin"):
        assert not states_change(text), text


def test_the_value_said_last_wins_when_an_older_one_is_extracted_late(conn):
    """A retried extraction job runs after a newer value was stored: the old value is kept
    in the history, superseded already, and the newer stays current."""
    talk = Talk(conn)
    monday = talk.say("I live in Boston.")
    tuesday = talk.say("I moved to Lisbon.")
    new = talk.learn(tuesday, "Ana lives in Lisbon").item
    late = talk.learn(monday, "Ana lives in Boston", when=T0 + timedelta(seconds=30))
    assert late.item.status == "superseded" and late.item.superseded_by == new.id
    assert [i.label for i in items.list_items(conn, "default")] == ["Ana lives in Lisbon"]
    assert "said before" in late.describe()
    assert curation.conflicts(conn, "default") == []


def test_correcting_one_fact_never_changes_another(conn):
    from rheo_cli.memory.facts import events

    talk = Talk(conn)
    home = talk.learn(talk.say("I live in Boston."), "Ana lives in Boston", "home").item
    sister = talk.learn(talk.say("Mia lives in Denver."), "Ana's sister Mia lives in Denver",
                        "sister").item  # fmt: skip
    before = (
        items.get_item(conn, "default", sister.id),
        events.history(conn, "default", sister.id),
    )
    fix = talk.learn(talk.say("Actually, I live in Lisbon, not Boston."), "Ana lives in Lisbon",
                     "home", relation="update", target_id=home.id)  # fmt: skip
    assert fix.previous.id == home.id and not fix.conflict
    after = (items.get_item(conn, "default", sister.id), events.history(conn, "default", sister.id))
    assert after == before


def test_of_several_facts_on_one_topic_a_change_replaces_only_its_own():
    from rheo_cli.memory.facts.changes import changed_by
    from rheo_cli.memory.facts.items import MemoryItem

    def item(n, label):
        return MemoryItem(n, "default", "fact", "pets", label, {}, 0.9, 1, False, "", "manual",
                          None, "t", "t", "active", None, None, None)  # fmt: skip

    dog, cat = item(1, "Ana has a dog named Rex"), item(2, "Ana has a cat named Tom")
    assert changed_by([dog, cat], Fact("fact", "pets", "Ana's dog Rex died")) == [dog]
    assert changed_by([dog, cat], Fact("fact", "pets", "Ana adopted a parrot")) == []
    assert changed_by([dog], Fact("fact", "pets", "Ana has a dog named Max")) == [dog]


def test_old_values_in_current_session_are_marked_with_the_current_one(conn):
    talk = Talk(conn)
    q = talk.say("I live in Boston, near the harbour.")
    talk.say("Boston it is: near the harbour.", role="assistant", question=q)
    talk.learn(q, "Ana lives in Boston")
    q2 = talk.say("Big news: I moved to Lisbon!")
    talk.learn(q2, "Ana lives in Lisbon")
    text = talk.context("Any restaurant tips?")
    session = text.split("=== CURRENT SESSION ===")[1]
    assert session.count("(superseded on 2026-05-04; now: Ana lives in Lisbon)") == 2


def test_old_values_at_the_previous_sessions_end_are_marked(conn):
    talk = Talk(conn)
    q = talk.say("My phone number is 555-0100.")
    talk.say("Got it, 555-0100.", role="assistant", question=q)
    talk.learn(q, "Ana's phone number is 555-0100", "phone")
    q2 = talk.say("My number is 555-0199 now.")
    talk.learn(q2, "Ana's phone number is 555-0199", "phone")
    text = talk.context("hello again", later=timedelta(hours=5))
    episodic = text.split("=== EPISODIC MEMORY ===")[1].split("===")[0]
    assert episodic.count("now: Ana's phone number is 555-0199") == 2


def test_old_values_in_relevant_history_and_digests_are_marked(conn):
    talk = Talk(conn)
    q = talk.say("I live in Boston.")
    echo = talk.say("Boston, lovely city.", role="assistant", question=q)
    talk.learn(q, "Ana lives in Boston")
    digests.store_digest(
        conn, profile="default", session_id=q.session_id,
        narrative="Ana lives in Boston and likes the harbour.", facts=[], procedures=[],
        decisions=[], source_turn_ids=[q.id, echo.id], model="m",
        created_at="2026-05-04T10:00:00.000Z",
    )  # fmt: skip
    talk.now += timedelta(days=3)
    q2 = talk.say("I moved to Lisbon.")
    talk.learn(q2, "Ana lives in Lisbon")
    talk.now += timedelta(days=3)
    text = talk.context("Boston harbour", later=timedelta(hours=1))
    history = text.split("=== RELEVANT HISTORY ===")[1].split("===")[0]
    assert "Boston, lovely city." in history
    echo_line = history.split("Boston, lovely city.")[1].split("\n[")[0]
    assert "now: Ana lives in Lisbon" in echo_line
    episodic = text.split("=== EPISODIC MEMORY ===")[1].split("===")[0]
    assert "“Ana lives in Boston” superseded on 2026-05-07; now: Ana lives in Lisbon" in episodic
