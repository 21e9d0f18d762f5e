"""`app.usage`: the price table and a provider's own price."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from rheo_cli.app import app as runtime
from rheo_cli.app import usage
from rheo_cli.memory.ledger import turns as ledger

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("model", "per_million_input"),
    [
        ("claude-opus-4-5-20251101", 5.0),
        ("claude-opus-4-1", 15.0),
        ("claude-sonnet-4-5", 3.0),
        ("claude-haiku-4-5", 1.0),
        ("claude-3-5-haiku-latest", 0.80),
        ("claude-3-haiku-20240307", 0.25),
        ("gpt-5-mini", 0.25),
        ("gpt-5", 1.25),
        ("gpt-4o-mini", 0.15),
        ("gpt-4o", 2.50),
    ],
)
def test_each_family_has_its_price(model, per_million_input):
    price = usage.price_of(model)
    assert price is not None and price.input == per_million_input


def test_unknown_models_have_no_price():
    assert usage.price_of("llama3.2:8b") is None and usage.price_of(None) is None


def test_a_reported_price_wins_over_the_table(home, monkeypatch):
    monkeypatch.setenv("RHEO_NOW", "2026-12-01T10:00:00Z")
    with runtime.build() as app:
        for model, meta in (("opus", {"cost_usd": 0.25}), ("opus", {})):
            turn = ledger.append_turn(
                app.conn, profile="default", role="user", content="q", now=T0, gap_s=3600
            ).turn
            ledger.append_turn(
                app.conn,
                profile="default",
                role="assistant",
                content="a",
                now=T0,
                gap_s=3600,
                session_id=turn.session_id,
                model=model,
                status="ok",
                usage=ledger.Usage(input_tokens=1_000_000),
                meta=meta,
            )
        found = usage.report(app)
    assert found.total.replies == 2
    assert found.total.cost_usd == pytest.approx(0.25 + 15.0)
