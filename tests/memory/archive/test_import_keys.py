"""An import decides what is already stored by each record's content, never by the key the file
gives it, and leaves out what a purge of the store erased — on both stores: a file whose keys
were changed or never were rheo's imports once and then adds nothing; an export made before a
purge does not bring the purged turn, session, memory or profile back (unless asked)."""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conftest import pg_schema_url

from rheo_cli.memory import purge as engine
from rheo_cli.memory.archive import exchange
from rheo_cli.memory.bulk import TurnIn, import_turns
from rheo_cli.memory.facts.items import get_item
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.kb import documents
from rheo_cli.memory.ledger import turns
from rheo_cli.memory.ledger.digests import store_digest
from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import InvalidInput
from rheo_cli.memory.store.settings import Settings

MARK = "ZORBLAX77"
T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
S = Settings()


@contextlib.contextmanager
def fresh_store(backend: str, tmp_path: Any, name: str = "other") -> Iterator[Any]:
    """Another empty store on the same backend."""
    if backend == "sqlite":
        c = db.open_store(tmp_path / f"{name}.db")
        try:
            yield c
        finally:
            c.close()
        return
    with pg_schema_url() as url:
        c = db.open_url(url, tenant="default")
        try:
            yield c
        finally:
            c.close()


def export(conn: Any) -> list[dict[str, Any]]:
    with exchange.snapshot(conn):
        return list(exchange.export_records(conn, ["default"]))


def numbered(records: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    return list(enumerate(records, start=1))


def fill(conn: Any) -> dict[str, int]:
    """Two sessions: an open item and the turn that closed it (with the marker), a fact
    replaced by a later one, a reinforcement, a digest, a knowledge document; ids by name."""
    ids: dict[str, int] = {}
    minute = itertools.count(1)

    def say(text: str, role: str = "user", **kw: Any) -> Any:
        return turns.append_turn(
            conn, profile="default", role=role, content=text, gap_s=S.gap_s,
            now=T0 + timedelta(minutes=next(minute)),
            **({"status": "ok", "model": "m"} if role == "assistant" else {}), **kw,
        ).turn  # fmt: skip

    def learn(turn: Any, fact: Fact, **kw: Any) -> Any:
        return remember(conn, fact, source="extractor", settings=S, source_turn_id=turn.id,
                        now=T0 + timedelta(minutes=next(minute)), **kw)  # fmt: skip

    promise = say("I'll send the Acme invoice by Friday")
    say("Noted.", "assistant", meta={"reply_to": promise.id})
    ids["invoice"] = learn(promise, Fact("open_item", "invoice", "Send the Acme invoice")).item.id
    closing = say(f"sent the Acme invoice via courier {MARK}")
    ids["closing_turn"] = closing.id
    learn(closing, Fact("open_item", "invoice", f"Sent the Acme invoice via courier {MARK}"),
          relation="done", target_id=ids["invoice"])  # fmt: skip
    lyon = say("I live in Lyon")
    ids["lyon"] = learn(lyon, Fact("fact", "city", "Lives in Lyon")).item.id
    learn(say("I live in Lyon, yes"), Fact("fact", "city", "Lives in Lyon"))
    ids["session1"] = closing.session_id
    store_digest(conn, profile="default", session_id=closing.session_id,
                 narrative=f"Sent the invoice by {MARK}.", facts=[], procedures=[],
                 decisions=[], source_turn_ids=[closing.id], model="m",
                 created_at="2026-04-01T12:00:00.000Z")  # fmt: skip
    for _ in range(200):  # a new session, hours later
        next(minute)
    paris = say(f"I moved to Paris, {MARK} street")
    ids["paris_turn"] = paris.id
    ids["paris"] = learn(paris, Fact("fact", "city", f"Lives on {MARK} street, Paris")).item.id
    ids["session2"] = paris.session_id
    documents.add_document(conn, "default", "/docs/plan.md", f"# Plan\n\n{MARK} plan.", T0)
    return ids


def relabelled(records: list[dict[str, Any]], make: Any) -> list[dict[str, Any]]:
    """``records`` with every key renamed by ``make(n, old)`` and every reference to it
    renamed alike: a valid file whose keys are not rheo's."""
    names = {r["key"]: make(n, r["key"]) for n, r in enumerate(records) if "key" in r}

    def swap(value: Any) -> Any:
        if isinstance(value, str):
            return names.get(value, value)
        if isinstance(value, list):
            return [swap(v) for v in value]
        if isinstance(value, dict):
            return {k: (v if k in ("content", "label", "narrative") else swap(v))
                    for k, v in value.items()}  # fmt: skip
        return value

    return [swap(r) for r in records]


KEYINGS = {
    "rheo's": lambda n, old: old,
    "numbered": lambda n, old: f"r{n}",
    "uuid-like": lambda n, old: f"{n:08x}-0000-4000-8000-{hash(old) & 0xFFFFFFFFFFFF:012x}",
    "another hash": lambda n, old: "t" + old[::-1],
}


@pytest.mark.parametrize("keying", list(KEYINGS))
def test_three_imports_give_the_store_one_gives_whatever_the_keys(conn, backend, tmp_path,
                                                                  keying):  # fmt: skip
    fill(conn)
    original = export(conn)
    with fresh_store(backend, tmp_path) as other:
        total = len(original) - 1
        first = exchange.import_records(other, numbered(relabelled(original, KEYINGS[keying])))
        assert sum(first.added.values()) == total and first.present == 0
        once = export(other)
        assert once == original  # rheo's own keys again, computed from the content
        for attempt in range(2):
            # each time renamed anew: the keys in the file never decide
            again = relabelled(original, lambda n, old, a=attempt: f"{keying}-{a}-{n}")
            counts = exchange.import_records(other, numbered(again))
            assert sum(counts.added.values()) == 0, counts.added
            assert counts.present == total and counts.purged == 0
        assert export(other) == once


def test_a_file_holding_an_export_twice_imports_it_once_and_a_key_naming_two_records_is_refused(
    conn, backend, tmp_path
):
    fill(conn)
    original = export(conn)
    with fresh_store(backend, tmp_path) as other:
        counts = exchange.import_records(other, numbered(original + original))
        assert counts.present == len(original) - 1
        assert export(other) == original
    turn_at = next(n for n, r in enumerate(original) if r["type"] == "turn")
    clash = [*original[: turn_at + 1], {**original[turn_at], "content": "another text"}]
    with fresh_store(backend, tmp_path, "third") as other:
        with pytest.raises(InvalidInput, match=f"line {turn_at + 2}: key .* already names the "
                                               f"record of line {turn_at + 1}"):  # fmt: skip
            exchange.import_records(other, numbered(clash))
        assert other.execute("SELECT count(*) FROM turns").fetchone()[0] == 0


def test_records_in_another_order_add_nothing_to_a_store_holding_them(conn, backend, tmp_path):
    """A file whose records come in another order than rheo writes them (the session record
    after the turns that name it): before, importing it onto a store holding the export made
    a second, empty session claiming the turns' count (s2, "4 turns", none in it)."""
    fill(conn)
    original = export(conn)
    header, body = original[0], original[1:]
    sessions = [r for r in body if r["type"] == "session"]
    moved = [header, *[r for r in body if r["type"] != "session"], *sessions]
    with fresh_store(backend, tmp_path) as other:
        exchange.import_records(other, numbered(original))
        once = export(other)
        for records in (moved, [header, *reversed(body)]):
            try:
                counts = exchange.import_records(other, numbered(records))
            except InvalidInput as exc:  # refused whole is fine; adding is not
                assert "is not a record before it" in str(exc)
                continue
            assert sum(counts.added.values()) == 0, counts.added
        assert other.execute("SELECT count(*) FROM sessions").fetchone()[0] == 2
        assert export(other) == once
    with fresh_store(backend, tmp_path, "empty") as other:  # nothing to name: refused whole
        with pytest.raises(InvalidInput, match="is not a record before it"):
            exchange.import_records(other, numbered(moved))
        assert other.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0


def test_ten_thousand_turns_imported_three_times_are_ten_thousand(conn, backend, tmp_path):
    n = 10_000 if backend == "sqlite" else 2_000
    rows = [TurnIn(role="user" if i % 2 == 0 else "assistant", content=f"turn {i} of many",
                   when=T0 + timedelta(seconds=i), status=None if i % 2 == 0 else "ok")
            for i in range(n)]  # fmt: skip
    import_turns(conn, "default", rows, gap_s=S.gap_s)
    original = export(conn)
    with fresh_store(backend, tmp_path) as other:
        for attempt in range(3):
            exchange.import_records(
                other, numbered(relabelled(original, lambda i, old, a=attempt: f"k{a}.{i}"))
            )
        assert other.execute("SELECT count(*) FROM turns").fetchone()[0] == n
        assert export(other) == original


def purged_then_imported(conn: Any, what: str, ids: dict[str, int]) -> tuple[Any, Any]:
    before = export(conn)
    ref = {"turn": ids.get("closing_turn"), "session": ids.get("session1"),
           "memory": ids.get("paris"), "profile": None}[what]  # fmt: skip
    engine.purge(conn, engine.plan(conn, profile="default", what=what, ref_id=ref), now=T0)
    after = export(conn)
    counts = exchange.import_records(conn, numbered(before))
    return before, (after, counts)


@pytest.mark.parametrize("what", ["turn", "session", "memory", "profile"])
def test_an_export_from_before_a_purge_does_not_bring_the_purged_records_back(conn, what):
    ids = fill(conn)
    before, (after, counts) = purged_then_imported(conn, what, ids)
    assert MARK in json.dumps(before)
    assert sum(counts.added.values()) == 0, counts.added
    assert counts.purged > 0
    assert counts.present + counts.purged == len(before) - 1
    assert export(conn) == after
    if what == "turn":
        # the item the purged turn closed stays open: its "done" event is not brought back
        assert get_item(conn, "default", ids["invoice"]).status == "active"
    if what == "profile":
        assert counts.present == 0 and MARK not in json.dumps(export(conn))


@pytest.mark.parametrize("what", ["turn", "session", "profile"])
def test_include_purged_brings_them_back(conn, what):
    ids = fill(conn)
    before = export(conn)
    ref = {"turn": ids["closing_turn"], "session": ids["session1"], "profile": None}[what]
    engine.purge(conn, engine.plan(conn, profile="default", what=what, ref_id=ref), now=T0)
    counts = exchange.import_records(conn, numbered(before), include_purged=True)
    assert counts.purged == 0 and sum(counts.added.values()) > 0
    restored = export(conn)
    assert {r.get("key") for r in before} <= {r.get("key") for r in restored}
    if what == "profile":
        assert restored == before
