"""``rheo usage``: tokens spent on replies (input, output, cache reads and writes) and what
they cost, from the usage stored with each reply, totalled or grouped by day, session or
model.

Only chat replies are counted: memory work (extraction, digests, the memory review) is not
stored per call. A reply Claude Code priced keeps that price (its own ``total_cost_usd``);
the others are priced from `PRICES`; a model that matches no entry there counts its tokens
with no cost.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from ..memory.ledger import sessions as sessions_mod
from ..memory.ledger import turns as ledger
from ..memory.store.timeutil import display, to_stored
from .app import App

By = Literal["day", "session", "model"]
BY: tuple[By, ...] = ("day", "session", "model")


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens: ``input`` (not from the cache), ``output``,
    ``cache_read`` and ``cache_write``."""

    input: float
    output: float
    cache_read: float
    cache_write: float


PRICES: tuple[tuple[str, Price], ...] = (
    ("opus-4-5", Price(5.0, 25.0, 0.50, 6.25)),
    ("opus", Price(15.0, 75.0, 1.50, 18.75)),
    ("sonnet", Price(3.0, 15.0, 0.30, 3.75)),
    ("3-5-haiku", Price(0.80, 4.0, 0.08, 1.0)),
    ("haiku-3-5", Price(0.80, 4.0, 0.08, 1.0)),
    ("3-haiku", Price(0.25, 1.25, 0.03, 0.30)),
    ("haiku", Price(1.0, 5.0, 0.10, 1.25)),
    ("gpt-5-nano", Price(0.05, 0.40, 0.005, 0.05)),
    ("gpt-5-mini", Price(0.25, 2.0, 0.025, 0.25)),
    ("gpt-5", Price(1.25, 10.0, 0.125, 1.25)),
    ("gpt-4.1-nano", Price(0.10, 0.40, 0.025, 0.10)),
    ("gpt-4.1-mini", Price(0.40, 1.60, 0.10, 0.40)),
    ("gpt-4.1", Price(2.0, 8.0, 0.50, 2.0)),
    ("gpt-4o-mini", Price(0.15, 0.60, 0.075, 0.15)),
    ("gpt-4o", Price(2.50, 10.0, 1.25, 2.50)),
)
"""List prices by model family, the first entry whose text the model's name contains
(lower case) winning, so more specific names come first. Sources: anthropic.com/pricing
(Claude Opus 4.5, Opus 4/4.1, Sonnet 4/4.5, Haiku 4.5, 3.5 and 3; cache writes at the
5-minute rate) and openai.com/api/pricing (GPT-5, 4.1 and 4o families; OpenAI charges no
extra for cache writes, so they are priced as input), both as published in late 2025. An
estimate: batch, regional and long-context rates are not applied."""


def price_of(model: str | None) -> Price | None:
    """The `PRICES` entry for ``model``; None when none matches (or no model is known)."""
    name = (model or "").lower()
    return next((price for key, price in PRICES if key in name), None) if name else None


def cost_of(row: ledger.TurnUsage) -> float | None:
    """One reply's cost in US dollars: the provider's own price when it reported one, else
    its tokens at `price_of` its model; None when neither is known."""
    if row.cost_usd is not None:
        return row.cost_usd
    price = price_of(row.model)
    if price is None:
        return None
    u = row.usage
    return (
        u.input_tokens * price.input
        + u.output_tokens * price.output
        + u.cache_read_tokens * price.cache_read
        + u.cache_write_tokens * price.cache_write
    ) / 1_000_000


@dataclass
class Totals:
    """Usage of a group of replies: ``key`` (the day ``YYYY-MM-DD``, the session ``s6``, the
    model's name, or ``total``), ``replies``, the four token counts (tokens), ``cost_usd``
    (US dollars, of the replies that could be priced; None when none could) and
    ``unpriced`` (replies whose cost is unknown)."""

    key: str
    replies: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float | None = None
    unpriced: int = 0

    def add(self, row: ledger.TurnUsage) -> None:
        """Count one reply in."""
        self.replies += 1
        self.input_tokens += row.usage.input_tokens
        self.output_tokens += row.usage.output_tokens
        self.cache_read_tokens += row.usage.cache_read_tokens
        self.cache_write_tokens += row.usage.cache_write_tokens
        cost = cost_of(row)
        if cost is None:
            self.unpriced += 1
        else:
            self.cost_usd = (self.cost_usd or 0.0) + cost

    def to_json(self) -> dict[str, Any]:
        """``{"key", "replies", "input_tokens", "output_tokens", "cache_read_tokens",
        "cache_write_tokens", "cost_usd" (rounded to 6 decimals, or null), "unpriced"}``."""
        return {
            "key": self.key,
            "replies": self.replies,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "cost_usd": round(self.cost_usd, 6) if self.cost_usd is not None else None,
            "unpriced": self.unpriced,
        }


@dataclass
class Report:
    """``rows`` grouped ``by`` (oldest day, session or first-used model first; empty without
    ``by``) and their ``total``; ``since`` as asked (None: all time)."""

    since: datetime | None
    by: By | None
    total: Totals = field(default_factory=lambda: Totals("total"))
    rows: list[Totals] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """``{"since": ISO 8601 or null, "by": "day"|"session"|"model"|null, "rows":
        [Totals], "total": Totals}`` (see `Totals.to_json`)."""
        return {
            "since": self.since.isoformat() if self.since is not None else None,
            "by": self.by,
            "rows": [row.to_json() for row in self.rows],
            "total": self.total.to_json(),
        }


def report(app: App, *, since: datetime | None = None, by: By | None = None) -> Report:
    """The profile's reply usage at or after ``since`` (aware), grouped ``by``; days are
    the clock's local days. Raises the engine's StoreError when the store cannot be read."""
    rows = ledger.usage_rows(
        app.conn, app.profile, since=to_stored(since) if since is not None else None
    )
    numbers = sessions_mod.session_numbers(app.conn, app.profile) if by == "session" else {}
    tz = app.now().tzinfo
    out = Report(since=since, by=by)
    groups: dict[str, Totals] = {}
    for row in rows:
        out.total.add(row)
        if by is None:
            continue
        if by == "day":
            key = display(row.ts, tz, with_time=False)
        elif by == "session":
            key = f"s{numbers.get(row.session_id, row.session_id)}"
        else:
            key = row.model or "(unknown)"
        groups.setdefault(key, Totals(key)).add(row)
    out.rows = list(groups.values())
    return out
