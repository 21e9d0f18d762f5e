"""Same, changed or new — decided with care, never lossy.

A change is never counted as a repeat; the extractor's relation (same / update / done / new,
against a known id) is checked by rheo; an open item fulfilled or cancelled is marked done,
not turned into a conflict; a pinned fact is replaced only by a confident one, whoever writes;
and the person's new wording is always kept where `memory show` shows it."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from conftest import as_tenant
from fakeprovider import Canned, facts
from helpers import kind_of, route

from rheo_cli.memory.facts import curation, events, items, remember
from rheo_cli.memory.facts.remember import Fact
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store.errors import InvalidInput
from rheo_cli.memory.store.settings import Settings

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
S = Settings()


def turn(conn, text="something", profile="default", when=T0):
    as_tenant(conn, profile)
    return ledger.append_turn(
        conn, profile=profile, role="user", content=text, now=when, gap_s=S.gap_s
    ).turn


def manual(conn, label, topic, *, when=T0, profile="default", **kw):
    fact = Fact(kw.pop("category", "fact"), topic, label, **kw)
    as_tenant(conn, profile)
    return remember.remember(conn, fact, source="manual", now=when, settings=S, profile=profile)


def extracted(conn, label, topic, turn_id, *, when=T0, relation=None, target=None, **kw):
    fact = Fact(kw.pop("category", "fact"), topic, label, **kw)
    return remember.remember(
        conn,
        fact,
        source="extractor",
        now=when,
        settings=S,
        source_turn_id=turn_id,
        relation=relation,
        target_id=target,
    )


# --- report 2: a change counted as a repeat, and the new statement lost --------------------


def test_report_2_reversed_preference_supersedes_and_keeps_both_wordings(conn):
    first = manual(conn, "Prefers email over SMS for follow-ups", "follow-up channel").item
    out = manual(
        conn, "Prefers SMS over email for follow-ups", "follow-up channel", when=T0 + timedelta(1)
    )
    assert out.action == "superseded" and out.previous.id == first.id
    assert out.item.label == "Prefers SMS over email for follow-ups"
    assert out.item.confidence == pytest.approx(0.8)  # not reinforced to 1.0
    old = items.get_item(conn, "default", first.id)
    assert old.status == "superseded" and old.superseded_by == out.item.id
    assert old.label == "Prefers email over SMS for follow-ups"  # old kept, never overwritten


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("Moved from Berlin to Lisbon", "Moved from Lisbon to Berlin"),
        ("Jake schedules, Maria estimates", "Maria schedules, Jake estimates"),
        ("Likes tea more than coffee", "Likes coffee more than tea"),
        ("Budget is 4,000 EUR", "Budget is 40,000 EUR"),
        ("Flight on 2026-03-12", "Flight on 2026-03-21"),
        ("Manager is Maria", "Manager is Marta"),
        ("Team meeting on Monday", "Team meeting moved from Monday"),
    ],
)
def test_order_roles_numbers_dates_names_and_change_words_are_changes(conn, before, after):
    manual(conn, before, "t")
    out = manual(conn, after, "t")
    assert out.action == "superseded"


def test_a_repeat_in_other_punctuation_reinforces_and_the_new_wording_is_kept(conn):
    first = manual(conn, "Likes tea and coffee", "drinks").item
    out = manual(conn, "likes coffee and tea!", "drinks", when=T0 + timedelta(1))
    assert out.action == "reinforced" and out.item.id == first.id
    last = events.history(conn, "default", first.id)[-1]
    assert last.kind == "reinforced" and "likes coffee and tea!" in last.cause
    assert last.data["wording"] == "likes coffee and tea!"


def test_both_confident_changes_are_flagged_and_say_so(conn):
    manual(conn, "Lives in Paris", "home", confidence=0.9)
    out = manual(conn, "Lives in Berlin", "home", confidence=0.9)
    assert out.conflict and "both were confident" in out.describe()
    quiet = manual(conn, "Lives in Rome", "home", confidence=0.5)
    assert quiet.action == "superseded" and not quiet.conflict
    assert "both were confident" not in quiet.describe()


# --- the extractor's relation, checked by rheo -------------------------------------------


def test_same_with_a_known_id_reinforces_that_item_across_topics(conn):
    item = manual(conn, "Prefers tea in the morning", "drink").item
    t = turn(conn, "I still like tea in the mornings")
    out = extracted(
        conn, "Prefers tea in the mornings", "morning-drink", t.id, relation="same", target=item.id
    )
    assert out.action == "reinforced" and out.item.id == item.id


def test_a_doubted_same_is_stored_as_a_change(conn):
    item = manual(conn, "Prefers email over SMS for follow-ups", "channel").item
    t = turn(conn)
    out = extracted(
        conn,
        "Prefers SMS over email for follow-ups",
        "channel",
        t.id,
        relation="same",
        target=item.id,
        confidence=0.9,
    )
    assert out.action == "superseded" and out.previous.id == item.id
    assert "differs in meaning" in out.note
    assert items.get_item(conn, "default", item.id).status == "superseded"


def test_update_supersedes_the_named_item_even_on_another_topic(conn):
    item = manual(conn, "Lives in Berlin", "home").item
    t = turn(conn)
    out = extracted(conn, "Lives in Lisbon", "city", t.id, relation="update", target=item.id)
    assert out.action == "superseded" and out.previous.id == item.id
    assert out.item.topic == item.topic


def test_an_id_of_another_profile_or_an_inactive_item_is_not_followed(conn):
    theirs = manual(conn, "Lives in Berlin", "home", profile="work").item
    t = turn(conn, profile="default")
    out = extracted(conn, "Lives in Berlin", "city", t.id, relation="same", target=theirs.id)
    assert out.action == "created" and out.item.profile == "default"
    assert f"#{theirs.id} is not an active memory" in out.note
    assert items.get_item(as_tenant(conn, "work"), "work", theirs.id).reinforcements == 1
    as_tenant(conn, "default")
    gone = manual(conn, "Has a cat", "pet").item
    curation.forget(conn, "default", gone.id, T0)
    out = extracted(conn, "Has a dog", "animals", t.id, relation="update", target=gone.id)
    assert out.action == "created" and items.get_item(conn, "default", gone.id).status == (
        "retracted"
    )


def test_an_unknown_relation_is_refused(conn):
    t = turn(conn)
    with pytest.raises(InvalidInput):
        extracted(conn, "x", "t", t.id, relation="maybe")


# --- report 6: a finished commitment became a conflict -----------------------------------


def test_report_6_a_fulfilled_open_item_is_done_not_a_conflict(conn):
    t1 = turn(conn, "I'll send the invoice to Acme by Friday")
    item = extracted(
        conn,
        "Send the invoice to Acme by Friday",
        "acme invoice",
        t1.id,
        category="open_item",
        confidence=0.9,
    ).item
    t2 = turn(conn, "I sent the Acme invoice yesterday", when=T0 + timedelta(days=3))
    out = extracted(
        conn,
        "Sent the Acme invoice",
        "acme invoice",
        t2.id,
        when=T0 + timedelta(days=3),
        relation="done",
        target=item.id,
        confidence=0.9,
    )
    assert out.action == "done" and out.item.id == item.id and not out.conflict
    assert items.get_item(conn, "default", item.id).status == "done"
    assert curation.conflicts(conn, "default") == []
    listed = items.list_items(conn, "default", category="open_item", statuses=("active", "done"))
    assert [i.id for i in listed] == [item.id]  # still listed by `items list --all`
    done = events.history(conn, "default", item.id)[-1]
    assert done.kind == "done" and done.source_turn_id == t2.id
    assert "Sent the Acme invoice" in done.cause  # the person's new wording is kept


def test_report_6_a_closing_statement_on_the_topic_closes_the_item_without_a_relation(conn):
    item = manual(
        conn,
        "Send the invoice to Acme by Friday",
        "acme invoice",
        category="open_item",
        confidence=0.9,
    ).item
    out = manual(conn, "Sent the invoice to Acme", "acme invoice", confidence=0.9)
    assert out.action == "done" and items.get_item(conn, "default", item.id).status == "done"
    assert curation.conflicts(conn, "default") == []


def test_report_6_a_cancelled_appointment_never_reinforces_it(conn):
    appt = manual(conn, "Dentist appointment on Monday", "dentist", confidence=0.9).item
    t = turn(conn, "Dentist appointment on Monday is cancelled")
    # Whatever the extractor claims, "cancelled" is not a repeat.
    out = extracted(
        conn,
        "Dentist appointment on Monday is cancelled",
        "dentist",
        t.id,
        relation="same",
        target=appt.id,
        confidence=0.9,
    )
    assert out.action != "reinforced"
    assert items.get_item(conn, "default", appt.id).reinforcements == 1
    assert items.get_item(conn, "default", appt.id).status == "superseded"
    current = items.list_items(conn, "default")
    assert [i.label for i in current] == ["Dentist appointment on Monday is cancelled"]


def test_done_on_a_fact_that_is_no_open_item_supersedes_it_without_a_conflict(conn):
    appt = manual(conn, "Dentist appointment on Monday", "dentist", confidence=0.9).item
    t = turn(conn)
    out = extracted(
        conn,
        "Dentist appointment cancelled",
        "dentist",
        t.id,
        relation="done",
        target=appt.id,
        confidence=0.9,
    )
    assert out.action == "superseded" and not out.conflict


# --- report 7: pins ----------------------------------------------------------------------


@pytest.mark.parametrize("confidence", [0.5, 0.0])
def test_report_7_a_manual_add_of_low_confidence_does_not_replace_a_pinned_fact(conn, confidence):
    pinned = manual(conn, "I like tea", "tea", pinned=True).item
    out = manual(conn, "I like coffee now", "tea", confidence=confidence)
    assert out.action == "skipped" and f"pinned #{pinned.id}" in out.note
    assert "both were confident" not in out.describe()
    assert items.get_item(conn, "default", pinned.id).status == "active"


def test_report_7_confidence_zero_from_the_extractor_does_not_pass_the_guard(conn):
    pinned = manual(conn, "Allergic to penicillin", "allergy", pinned=True).item
    t = turn(conn)
    out = extracted(conn, "No allergies", "allergy", t.id, confidence=0.0)
    assert out.action == "skipped" and f"pinned #{pinned.id}" in out.note


def test_report_7_a_confident_replacement_of_a_pin_is_flagged_and_says_so(conn):
    manual(conn, "I like tea", "tea", pinned=True)
    out = manual(conn, "I like coffee", "tea", confidence=0.9)
    assert out.action == "superseded" and out.conflict
    assert "both were confident" in out.describe()


def test_issue_23_a_stated_change_of_a_pin_applies_and_keeps_the_pin(conn):
    manual(conn, "I like tea", "tea", pinned=True)
    out = manual(conn, "I like coffee now", "tea", confidence=0.9)
    assert out.action == "superseded" and not out.conflict and out.item.pinned


def test_report_7_i_always_remember_birthdays_pins_nothing():
    from rheo_cli.memory.facts.pins import pin_requested, wants_pin

    said = "I always remember birthdays, and I'm allergic to peanuts."
    assert not wants_pin(said)
    assert not pin_requested(said, Fact("fact", "allergy", "Allergic to peanuts"))
    asked = "Always remember that I'm allergic to peanuts."
    assert pin_requested(asked, Fact("fact", "allergy", "Allergic to peanuts"))
    assert not pin_requested(asked, Fact("fact", "diet", "Eats no meat"))


# --- through the CLI and the fake API ----------------------------------------------------


def test_cli_memory_add_reversed_preference_is_a_change(rheo):
    rheo("memory", "add", "Prefers email over SMS for follow-ups", "--topic", "follow-up channel")
    out = rheo(
        "memory", "add", "Prefers SMS over email for follow-ups", "--topic", "follow-up channel"
    )
    assert out.exit_code == 0 and "superseding #1" in out.stdout and "reinforced" not in out.stdout
    listed = json.loads(rheo("memory", "list", "--json").stdout)
    assert [m["content"]["label"] for m in listed] == ["Prefers SMS over email for follow-ups"]
    assert listed[0]["confidence"] == 0.8
    shown = rheo("memory", "show", "1").stdout
    assert "Prefers email over SMS" in shown and "superseded" in shown


def test_cli_reinforcement_shows_the_new_wording(rheo):
    rheo("memory", "add", "Likes tea and coffee", "-t", "drinks")
    assert "reinforced" in rheo("memory", "add", "likes coffee and tea.", "-t", "drinks").stdout
    shown = rheo("memory", "show", "1").stdout
    assert 'mentioned again (manual): "likes coffee and tea."' in shown


def test_cli_low_confidence_add_over_a_pin_is_refused_in_one_line(rheo):
    rheo("memory", "add", "I like tea", "-t", "tea", "--pin")
    out = rheo("memory", "add", "I like coffee now", "-t", "tea", "--confidence", "0.5")
    assert out.exit_code == 1 and "both were confident" not in out.stderr
    assert "pinned #1 is kept" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    zero = rheo("memory", "add", "I like coffee now", "-t", "tea", "--confidence", "0")
    assert zero.exit_code == 1
    assert [m["id"] for m in json.loads(rheo("memory", "list", "--json").stdout)] == [1]


def at(monkeypatch, when: datetime) -> None:
    monkeypatch.setenv("RHEO_NOW", when.isoformat())


def test_cli_report_6_sent_invoice_marks_the_item_done(rheo, fake_model, monkeypatch):
    route(
        fake_model,
        chat="Noted.",
        extract=[
            facts(
                {
                    "relation": "new",
                    "category": "open_item",
                    "topic": "acme invoice",
                    "label": "Send the invoice to Acme by Friday",
                    "due": "2026-03-06",
                    "confidence": 0.9,
                }
            ),
            facts(
                {
                    "relation": "done",
                    "existing_id": 1,
                    "category": "win",
                    "topic": "invoice sent",
                    "label": "Sent the Acme invoice",
                    "confidence": 0.9,
                }
            ),
        ],
    )
    at(monkeypatch, T0)
    rheo("ask", "I'll send the invoice to Acme by Friday.")
    assert rheo("maintain").exit_code == 0
    at(monkeypatch, T0 + timedelta(days=3))
    rheo("ask", "I sent the Acme invoice yesterday.")
    assert rheo("maintain").exit_code == 0
    extract = [r for r in fake_model.requests if kind_of(r) == "extract"]
    assert extract[-1].tool_choice == "record_facts"
    assert (
        "#1 [open_item] acme-invoice: Send the invoice to Acme by Friday"
        in (extract[-1].messages[0]["content"][0]["text"])
    )
    assert json.loads(rheo("items", "list", "--json").stdout) == []
    every = json.loads(rheo("items", "list", "--all", "--json").stdout)
    assert [(i["id"], i["status"]) for i in every] == [(1, "done")]
    assert rheo("memory", "conflicts").stdout.strip() == "(no conflicts)"
    assert "Sent the Acme invoice" in rheo("memory", "show", "1").stdout


def test_cli_the_extractor_answers_through_a_forced_tool_call(rheo, fake_model, monkeypatch):
    fact = {"relation": "new", "category": "preference", "topic": "tea", "label": "Loves tea"}
    route(fake_model, chat="ok", extract=Canned(tool_calls=[("record_facts", {"facts": [fact]})]))
    at(monkeypatch, T0)
    rheo("ask", "I love tea.")
    rheo("maintain")
    extract = next(r for r in fake_model.requests if kind_of(r) == "extract")
    assert [t.name for t in extract.tools] == ["record_facts"]
    assert extract.tools[0].input_schema["properties"]["facts"]["maxItems"] == 3
    assert [m["content"]["label"] for m in json.loads(rheo("memory", "list", "--json").stdout)] == [
        "Loves tea"
    ]


def test_cli_a_plain_text_reply_is_still_read(rheo, fake_model, monkeypatch):
    reply = Canned(
        'Here: ```json\n{"facts": [{"category": "fact", "topic": "city", '
        '"label": "Lives in Porto", "relation": "new"}]}\n```'
    )
    route(fake_model, chat="ok", extract=reply)
    at(monkeypatch, T0)
    rheo("ask", "I live in Porto.")
    rheo("maintain")
    assert json.loads(rheo("memory", "list", "--json").stdout)[0]["content"]["label"] == (
        "Lives in Porto"
    )


# --- the same words filed anew as an open item (a new user's report) ----------------------


def test_the_same_words_as_an_open_item_replace_the_fact_without_a_conflict(conn):
    first = remember.remember(
        conn,
        Fact(category="fact", topic="acme.invoice", label="Send invoice to Acme"),
        source="manual",
        now=T0,
        settings=S,
        profile="default",
    )
    due = "2026-03-06T22:59:59Z"
    again = remember.remember(
        conn,
        Fact(category="open_item", topic="acme.invoice", label="Send invoice to Acme", due_at=due),
        source="manual",
        now=T0 + timedelta(minutes=1),
        settings=S,
        profile="default",
    )
    assert again.action == "superseded" and again.previous.id == first.item.id
    assert again.item.category == "open_item" and again.item.due_at == due
    assert not again.conflict and "said again as an open item" in again.note
    open_now = items.list_items(conn, "default", category="open_item")
    assert [i.id for i in open_now] == [again.item.id]
    # the same open item again reinforces; another due date replaces it
    same = remember.remember(
        conn,
        Fact(category="open_item", topic="acme.invoice", label="Send invoice to Acme"),
        source="manual",
        now=T0 + timedelta(minutes=2),
        settings=S,
        profile="default",
    )
    assert same.action == "reinforced" and same.item.id == again.item.id
    later = remember.remember(
        conn,
        Fact(
            category="open_item",
            topic="acme.invoice",
            label="send the invoice to acme",
            due_at="2026-03-13T22:59:59Z",
        ),
        source="manual",
        now=T0 + timedelta(minutes=3),
        settings=S,
        profile="default",
    )
    assert later.action == "superseded" and later.item.due_at == "2026-03-13T22:59:59Z"
    # an open item said again as a plain fact stays the open item
    plain = remember.remember(
        conn,
        Fact(category="fact", topic="acme.invoice", label="Send invoice to Acme"),
        source="manual",
        now=T0 + timedelta(minutes=4),
        settings=S,
        profile="default",
    )
    assert plain.action == "reinforced" and plain.item.category == "open_item"
