"""The same fact under two topic names is one memory, reinforced, not two copies (the person's
"remember that ..." and the model's write_memory name topics differently)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rheo_cli.memory.facts import items
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store.settings import Settings

T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def said(conn, text):
    return ledger.append_turn(
        conn, profile="default", role="user", content=text, now=T0, gap_s=7200
    ).turn


def test_the_same_fact_under_another_topic_reinforces_it(conn):
    first = said(conn, "Ana prefers tea")
    a = remember(
        conn,
        Fact("preference", "ana.drink", "Ana prefers tea"),
        source="manual",
        now=T0,
        settings=Settings(),
        profile="default",
    )
    second = said(conn, "ana prefers tea.")
    b = remember(
        conn,
        Fact("preference", "drinks", "ana prefers tea."),
        source="tool",
        now=T0,
        settings=Settings(),
        source_turn_id=second.id,
    )
    assert first.id and a.action == "created"
    assert b.action == "reinforced" and b.item is not None and b.item.id == a.item.id
    active = items.list_items(conn, "default")
    assert [i.label for i in active] == ["Ana prefers tea"]
    assert active[0].confidence == pytest.approx(0.9)  # 0.8, then one reinforcement


def test_a_different_fact_under_another_topic_is_its_own_memory(conn):
    remember(
        conn,
        Fact("preference", "ana.drink", "Ana prefers tea"),
        source="manual",
        now=T0,
        settings=Settings(),
        profile="default",
    )
    other = remember(
        conn,
        Fact("preference", "drinks", "Ana prefers coffee"),
        source="manual",
        now=T0,
        settings=Settings(),
        profile="default",
    )
    assert other.action == "created"
    assert len(items.list_items(conn, "default")) == 2
