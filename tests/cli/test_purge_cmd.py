"""``rheo purge`` end to end (the fake Messages API over the real SDK): after purging the turns
that closed an open item and replaced a fact, their words are in no view, no ``--json``, no
export and no byte of the database file; the open item is open again and the old fact active
again; the session's digest is written again from the turns left. The result names the
backups and exports rheo wrote earlier, which still hold the text, and an import of such an
export leaves the purged records out."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fakeprovider import facts
from helpers import db_rows, request_text, route

MARK = "ZORBLAX77"
T0 = datetime.fromisoformat("2026-06-01T09:00:00+02:00")


def file_bytes(home: Path) -> bytes:
    data = b""
    for suffix in ("", "-wal", "-journal"):
        path = home / f"rheo.db{suffix}"
        if path.exists():
            data += path.read_bytes()
    return data.lower()


def views(rheo: Any) -> str:
    """Everything a person can read about memory and history, as text and JSON."""
    out = []
    for args in (
        ("memory", "list", "--all"),
        ("memory", "list", "--all", "--json"),
        ("memory", "show", "1"),
        ("memory", "show", "1", "--json"),
        ("memory", "show", "2"),
        ("memory", "show", "2", "--json"),
        ("items", "list", "--all", "--json"),
        ("history", "search", MARK),
        ("history", "recent", "--json"),
        ("digests", "list", "--json"),
        ("jobs", "list", "--json"),
        ("context", "what about the courier and the street?"),
        ("export",),
    ):
        result = rheo(*args)
        assert result.exit_code == 0, (args, result.stderr)
        out.append(result.stdout)
    return "\n".join(out)


def talk(rheo: Any, fake_model: Any, monkeypatch: Any, digests: list[str]) -> None:
    """Session 1: an open item, then its closing (with the marker); a fact, then its
    replacement (with the marker). Session 2, hours later, closes session 1 (its digest)."""

    def digest(recorded: Any) -> Any:
        digests.append(request_text(recorded))
        return json.dumps({"narrative": f"Worked through {len(digests)} exchange(s)."})

    route(
        fake_model,
        chat="Noted.",
        extract=[
            facts(
                {
                    "category": "open_item",
                    "topic": "acme-invoice",
                    "label": "Send the Acme invoice",
                    "confidence": 0.9,
                }
            ),
            facts(
                {
                    "category": "open_item",
                    "topic": "acme-invoice",
                    "relation": "done",
                    "existing_id": 1,
                    "label": f"Sent the Acme invoice via courier {MARK}",
                }
            ),
            facts(
                {"category": "fact", "topic": "city", "label": "Lives in Lyon", "confidence": 0.9}
            ),
            facts(
                {
                    "category": "fact",
                    "topic": "city",
                    "relation": "update",
                    "existing_id": 2,
                    "confidence": 0.9,
                    "label": f"Lives on {MARK} street in Paris",
                }
            ),
            facts(),
        ],  # fmt: skip
        digest=digest,
    )
    said = [
        "I'll send the Acme invoice by Friday",
        f"I sent the Acme invoice via courier {MARK}",
        "I live in Lyon",
        f"I moved to {MARK} street in Paris",
    ]
    for n, message in enumerate(said):
        monkeypatch.setenv("RHEO_NOW", (T0 + timedelta(minutes=n)).isoformat())
        assert rheo("ask", message).exit_code == 0
        assert rheo("maintain").exit_code == 0
    monkeypatch.setenv("RHEO_NOW", (T0 + timedelta(hours=5)).isoformat())
    assert rheo("ask", "good morning").exit_code == 0
    assert rheo("maintain").exit_code == 0


def test_purged_turns_leave_no_trace_and_what_they_did_is_undone(
    rheo, fake_model, monkeypatch, home
):
    digests: list[str] = []
    talk(rheo, fake_model, monkeypatch, digests)
    items = {m["id"]: m for m in json.loads(rheo("memory", "list", "--all", "--json").stdout)}
    assert items[1]["status"] == "done" and items[2]["status"] == "superseded"
    assert MARK in views(rheo) and MARK.lower().encode() in file_bytes(home)
    assert len(digests) == 1 and MARK in digests[0]
    for turn_id in (3, 7):  # the questions that closed the open item and replaced the fact
        done = rheo("purge", "turn", str(turn_id), "--yes", "--json")
        assert done.exit_code == 0, done.stderr
    seen = views(rheo)
    assert MARK not in seen
    assert MARK.lower().encode() not in file_bytes(home)
    items = {m["id"]: m for m in json.loads(rheo("memory", "list", "--all", "--json").stdout)}
    assert sorted(items) == [1, 2]  # the replacement (#3) went with its turn
    assert (items[1]["status"], items[2]["status"], items[2]["superseded_by"]) == (
        "active", "active", None,
    )  # fmt: skip
    assert "Send the Acme invoice" in rheo("context", "anything due?").stdout
    assert "Lives in Lyon" in rheo("context", "where do I live?").stdout
    shown = rheo("memory", "show", "1").stdout
    assert "open again: the statement that closed it was purged" in shown
    # The session's digest went with the purged text; the next maintain writes it again
    # from the turns that are left.
    assert rheo("maintain").exit_code == 0
    assert len(digests) == 2 and MARK not in digests[1]
    assert "I live in Lyon" in digests[1]
    listed = json.loads(rheo("digests", "list", "--json").stdout)
    assert [d["narrative"] for d in listed] == ["Worked through 2 exchange(s)."]


def test_the_result_names_the_earlier_copies_rheo_wrote(
    rheo, fake_model, monkeypatch, home, tmp_path
):
    fake_model.add("Noted.", "Fine.")
    monkeypatch.setenv("RHEO_NOW", T0.isoformat())
    assert rheo("ask", "hello there").exit_code == 0  # turns 1 and 2
    assert rheo("ask", f"my courier is {MARK}").exit_code == 0  # turns 3 and 4
    none_yet = rheo("purge", "turn", "4", "--yes")
    assert none_yet.exit_code == 0
    assert ("backups and exports made before this purge still hold what it erased (rheo wrote "
            "none that still exist)") in none_yet.stderr  # fmt: skip
    backup, exported, gone = tmp_path / "b.db", tmp_path / "e.jsonl", tmp_path / "old.jsonl"
    assert rheo("backup", str(backup)).exit_code == 0
    assert rheo("export", "-o", str(gone)).exit_code == 0
    gone.unlink()
    assert rheo("export", "-o", str(exported)).exit_code == 0
    assert rheo("-p", "work", "export", "-o", str(tmp_path / "w.jsonl")).exit_code == 0
    done = rheo("purge", "turn", "2", "--yes", "--json")
    assert done.exit_code == 0, done.stderr
    # newest first; the deleted one and the other profile's export are not named
    assert json.loads(done.stdout)["earlier_copies"] == [str(exported), str(backup)]
    said = rheo("purge", "turn", "3", "--yes")
    assert said.exit_code == 0, said.stderr
    assert f"rheo wrote these, which still exist: {exported}, {backup}" in said.stderr
    assert (home / "copies.jsonl").stat().st_mode & 0o777 == 0o600
    assert MARK not in (home / "copies.jsonl").read_text()
    # The export made before those purges does not bring their turns back, unless asked.
    back = rheo("import", str(exported))
    assert back.exit_code == 0, back.stderr
    assert "imported nothing new; 2 already present" in back.stdout  # the session, turn 1
    assert ("left out 2 records that 'rheo purge' erased from this store; --include-purged "
            "brings them back") in back.stderr  # fmt: skip
    assert [r[0] for r in db_rows(home, "SELECT content FROM turns")] == ["hello there"]
    as_json = json.loads(rheo("import", str(exported), "--json").stdout)
    assert as_json["left_out_purged"] == 2 and sum(as_json["added"].values()) == 0
    forced = json.loads(rheo("import", str(exported), "--include-purged", "--json").stdout)
    assert forced["added"]["turn"] == 2 and forced["left_out_purged"] == 0
    contents = [r[0] for r in db_rows(home, "SELECT content FROM turns ORDER BY ts, id")]
    assert contents == ["hello there", "Noted.", f"my courier is {MARK}"]


def test_the_confirmation_says_earlier_copies_keep_theirs(rheo, fake_model, monkeypatch, home):
    from rheo_cli.cli import purge_cmd

    fake_model.add("Noted.")
    assert rheo("ask", "hello").exit_code == 0
    asked: list[str] = []

    def answer_no(question: str) -> bool:
        asked.append(question)
        return False

    monkeypatch.setattr(purge_cmd, "_confirm", answer_no)
    refused = rheo("purge", "turn", "1")
    assert refused.exit_code == 1 and "nothing erased" in refused.stderr
    assert asked == ['Erase turn #1 ("hello"): 1 turn for good? This cannot be undone '
                     "(earlier backups and exports keep their copy)."]  # fmt: skip
    assert db_rows(home, "SELECT count(*) FROM turns")[0][0] == 2


PURGES = {
    "the session": [("session", "1")],
    "the two turns, last first": [("turn", "7"), ("turn", "3")],
    "the replacing fact, then both turns": [("memory", "3"), ("turn", "3"), ("turn", "7")],
}


@pytest.mark.parametrize("how", list(PURGES))
def test_other_ways_of_purging_the_marked_text_leave_none_of_it(
    rheo, fake_model, monkeypatch, home, how
):
    """Variants of the case above: the whole session, the turns in the other order, the
    replacing fact purged as a memory. Whatever is kept, no view, export or byte of the
    database holds the marker, and no kept fact is left superseded by nothing."""
    talk(rheo, fake_model, monkeypatch, [])
    for what, ref in PURGES[how]:
        done = rheo("purge", what, ref, "--yes")
        assert done.exit_code == 0, done.stderr
        if (what, ref) == ("memory", "3"):  # the fact it replaced is back, its history clean
            shown = rheo("memory", "show", "2", "--json")
            assert MARK not in shown.stdout and json.loads(shown.stdout)["status"] == "active"
    if how == "the session":  # the facts it stated went with it
        assert json.loads(rheo("memory", "list", "--all", "--json").stdout) == []
        seen = "".join(
            rheo(*args).stdout
            for args in (("history", "search", MARK), ("history", "recent", "--json"),
                         ("items", "list", "--all", "--json"), ("digests", "list", "--json"),
                         ("jobs", "list", "--json"), ("context", "the courier?"), ("export",))
        )  # fmt: skip
    else:
        seen = views(rheo)
        by_id = {m["id"]: m for m in json.loads(rheo("memory", "list", "--all", "--json").stdout)}
        assert (by_id[1]["status"], by_id[2]["status"]) == ("active", "active"), by_id
        assert by_id[2]["superseded_by"] is None
    assert MARK not in seen
    assert MARK.lower().encode() not in file_bytes(home)
    assert rheo("doctor").exit_code == 0
