"""Shared and assistant-specific memory in the engine (Solid# article, "Shared vs.
Agent-Specific Memory": ADA, Sarah, Marcus): who sees which fact, which fact wins on a topic,
same/changed within a scope, caps per assistant, ownership from the source turn."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from rheo_cli.memory.context.assemble import assemble
from rheo_cli.memory.facts import items, remember
from rheo_cli.memory.facts.remember import Fact
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store.errors import InvalidInput
from rheo_cli.memory.store.settings import Settings

TENANT = "acme"
"""On PostgreSQL the `conn` fixture acts for this profile (row-level security)."""

T0 = datetime(2026, 3, 16, 9, 0, tzinfo=UTC)
S = Settings()


def turn(conn, content: str, assistant: str | None = None, profile: str = "acme"):
    meta = {"assistant": assistant} if assistant else None
    return ledger.append_turn(
        conn, profile=profile, role="user", content=content, now=T0, gap_s=S.gap_s, meta=meta
    ).turn


def learn(conn, label, topic, *, said_to=None, scope=None, category="fact", settings=S, **kw):
    """Remember ``label`` as the extractor would after the person said it to ``said_to``;
    ``scope="assistant"`` files it under that assistant."""
    t = turn(conn, label, said_to)
    return remember.remember(
        conn,
        Fact(category, topic, label, confidence=kw.pop("confidence", 0.9), **kw),
        source="extractor",
        now=T0,
        settings=settings,
        source_turn_id=t.id,
        assistant=said_to if scope == "assistant" else None,
    )


def seen_by(conn, assistant):
    return [i.label for i in items.list_items(conn, "acme", assistant=assistant)]


def memory_section(conn, assistant, message="How should we follow up with the Hendersons?"):
    ctx = assemble(conn, profile="acme", message=message, now=T0, settings=S, assistant=assistant)
    section = ctx.section("CURRENT MEMORY")
    return section.render() if section else ""


def test_the_solid_sharp_table(conn):
    """Shared facts are seen by every assistant; Sarah's by Sarah only."""
    learn(conn, "Company has 5 employees, targets residential market", "company", said_to="ada")
    learn(conn, "Got first online sale on March 15", "first sale", said_to="ada", category="win")
    learn(
        conn,
        "Prefers email over SMS for follow-ups",
        "follow-ups",
        said_to="sarah",
        scope="assistant",
        category="preference",
    )
    learn(
        conn,
        "Wants weekly revenue reports on Mondays",
        "revenue reports",
        said_to="taylor",
        scope="assistant",
    )
    shared = {
        "Company has 5 employees, targets residential market",
        "Got first online sale on March 15",
    }
    assert set(seen_by(conn, None)) == shared  # no assistant: shared memory only, as before
    assert set(seen_by(conn, "marcus")) == shared
    assert set(seen_by(conn, "ada")) == shared
    assert set(seen_by(conn, "sarah")) == shared | {"Prefers email over SMS for follow-ups"}
    assert set(seen_by(conn, "taylor")) == shared | {"Wants weekly revenue reports on Mondays"}
    stored = {i.label: i.assistant for i in items.list_items(conn, "acme", all_assistants=True)}
    assert stored["Prefers email over SMS for follow-ups"] == "sarah"
    assert stored["Company has 5 employees, targets residential market"] is None

    # The same, in what is injected before a message.
    assert "Prefers email over SMS" in memory_section(conn, "sarah")
    for other in ("marcus", None):
        text = memory_section(conn, other)
        assert "Company has 5 employees" in text and "Prefers email" not in text
        assert "weekly revenue" not in text


def test_on_a_topic_clash_the_assistants_own_fact_wins_for_it_only(conn):
    shared = learn(conn, "Prefers SMS for follow-ups", "follow-ups", said_to="ada").item
    own = learn(
        conn,
        "Prefers email over SMS for follow-ups",
        "follow-ups",
        said_to="sarah",
        scope="assistant",
    )
    # Shadowed, not superseded: the shared fact stays active for everyone else.
    assert own.action == "created" and own.previous is None and not own.conflict
    assert items.get_item(conn, "acme", shared.id).status == "active"
    assert seen_by(conn, "sarah") == ["Prefers email over SMS for follow-ups"]
    assert seen_by(conn, "marcus") == ["Prefers SMS for follow-ups"]
    sarah, marcus = memory_section(conn, "sarah"), memory_section(conn, "marcus")
    assert "Prefers email over SMS" in sarah and "Prefers SMS for follow-ups" not in sarah
    assert "Prefers SMS for follow-ups" in marcus and "email" not in marcus
    # Search reads the same view.
    found = items.search_items(conn, "acme", "follow-ups SMS", assistant="sarah")
    assert [i.id for i, _ in found] == [own.item.id]


def test_same_and_changed_are_decided_within_a_scope(conn):
    shared = learn(conn, "Prefers SMS for follow-ups", "follow-ups", said_to="ada").item
    first = learn(
        conn, "Prefers email for follow-ups", "follow-ups", said_to="sarah", scope="assistant"
    ).item
    again = learn(
        conn, "Prefers email for follow-ups", "follow-ups", said_to="sarah", scope="assistant"
    )
    assert again.action == "reinforced" and again.item.id == first.id
    changed = learn(
        conn, "Prefers phone calls for follow-ups", "follow-ups", said_to="sarah", scope="assistant"
    )
    assert changed.action == "superseded" and changed.previous.id == first.id
    assert items.get_item(conn, "acme", shared.id).status == "active"  # other scope untouched
    # A shared change supersedes only the shared fact; Sarah keeps hers.
    news = learn(conn, "Prefers WhatsApp for follow-ups", "follow-ups", said_to="marcus")
    assert news.action == "superseded" and news.previous.id == shared.id
    assert items.get_item(conn, "acme", changed.item.id).status == "active"
    assert seen_by(conn, "sarah") == ["Prefers phone calls for follow-ups"]
    assert seen_by(conn, "marcus") == ["Prefers WhatsApp for follow-ups"]


def test_an_assistants_repeat_of_a_shared_fact_reinforces_it(conn):
    shared = learn(conn, "Company has 5 employees", "company size", said_to="ada").item
    out = learn(conn, "Company has 5 employees", "company size", said_to="sarah", scope="assistant")
    assert out.action == "reinforced" and out.item.id == shared.id and out.item.assistant is None
    assert len(items.list_items(conn, "acme", all_assistants=True)) == 1


def test_an_extractor_update_of_a_shared_fact_from_an_assistant_shadows_it(conn):
    shared = learn(conn, "Prefers SMS for follow-ups", "follow-ups", said_to="ada").item
    t = turn(conn, "Sarah, send my follow-ups by email please", "sarah")
    out = remember.remember(
        conn,
        Fact("preference", "email", "Prefers email for follow-ups", confidence=0.9),
        source="extractor",
        now=T0,
        settings=S,
        source_turn_id=t.id,
        relation="update",
        target_id=shared.id,
        assistant="sarah",
    )
    assert out.action == "created" and out.item.topic == shared.topic
    assert items.get_item(conn, "acme", shared.id).status == "active"
    assert seen_by(conn, "sarah") == ["Prefers email for follow-ups"]


def test_the_assistant_comes_from_the_source_turn_never_from_the_writer(conn):
    t = turn(conn, "Prefers email for follow-ups", "sarah")
    with pytest.raises(InvalidInput, match="assistant of its source turn"):
        remember.remember(
            conn,
            Fact("preference", "follow-ups", "Prefers email for follow-ups"),
            source="extractor",
            now=T0,
            settings=S,
            source_turn_id=t.id,
            assistant="marcus",
        )
    plain = turn(conn, "no assistant here")
    with pytest.raises(InvalidInput):
        remember.remember(
            conn,
            Fact("fact", "x", "Something"),
            source="tool",
            now=T0,
            settings=S,
            source_turn_id=plain.id,
            assistant="sarah",
        )
    assert items.list_items(conn, "acme", all_assistants=True) == []


def test_caps_count_per_assistant_with_shared_as_its_own_bucket(conn):
    small = replace(S, cap=2)
    for n in range(3):
        learn(conn, f"Shared fact number {n}", f"shared {n}", said_to="ada", settings=small)
    for n in range(2):
        learn(
            conn,
            f"Sarah's fact number {n}",
            f"sarah {n}",
            said_to="sarah",
            scope="assistant",
            settings=small,
        )
    everything = items.list_items(conn, "acme", statuses=None, all_assistants=True)
    status = {i.label: i.status for i in everything}
    # Shared: three facts for a cap of two, the least reinforced (oldest) evicted.
    assert status["Shared fact number 0"] == "evicted"
    assert status["Shared fact number 1"] == status["Shared fact number 2"] == "active"
    # Sarah's two fit her own cap, whatever the shared bucket holds.
    assert status["Sarah's fact number 0"] == status["Sarah's fact number 1"] == "active"
    learn(
        conn, "Sarah's fact number 2", "sarah 2", said_to="sarah", scope="assistant", settings=small
    )
    status = {
        i.label: i.status
        for i in items.list_items(conn, "acme", statuses=None, all_assistants=True)
    }
    assert status["Sarah's fact number 0"] == "evicted"
    assert status["Shared fact number 1"] == "active"


def test_open_items_of_another_assistant_are_not_injected(conn):
    learn(
        conn,
        "Send Marcus the campaign numbers",
        "campaign numbers",
        said_to="marcus",
        scope="assistant",
        category="open_item",
    )
    learn(conn, "Upload the product catalog", "catalog", said_to="ada", category="open_item")

    def open_items(assistant):
        ctx = assemble(conn, profile="acme", message="hi", now=T0, settings=S, assistant=assistant)
        section = ctx.section("OPEN ITEMS")
        return section.render() if section else ""

    assert "campaign numbers" in open_items("marcus") and "catalog" in open_items("marcus")
    assert "campaign numbers" not in open_items("sarah") and "catalog" in open_items("sarah")


def test_a_change_of_the_assistants_own_fact_stays_its_own(conn):
    """The extractor names Sarah's own item as updated but forgets to say "assistant": the
    change still replaces her fact, not the shared memory."""
    shared = learn(conn, "Prefers SMS for follow-ups", "follow-ups", said_to="ada").item
    own = learn(
        conn, "Prefers email for follow-ups", "follow-ups", said_to="sarah", scope="assistant"
    ).item
    t = turn(conn, "Sarah, phone them instead", "sarah")
    out = remember.remember(
        conn,
        Fact("preference", "calls", "Prefers phone calls for follow-ups", confidence=0.9),
        source="extractor",
        now=T0,
        settings=S,
        source_turn_id=t.id,
        relation="update",
        target_id=own.id,
    )
    assert out.action == "superseded" and out.previous.id == own.id
    assert out.item.assistant == "sarah" and out.item.topic == own.topic
    assert items.get_item(conn, "acme", shared.id).status == "active"
    assert seen_by(conn, "marcus") == ["Prefers SMS for follow-ups"]
