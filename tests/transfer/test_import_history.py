"""``rheo import-history``: the llm CLI's logs.db, ChatGPT and Claude.ai exports (synthetic
fixtures in tests/data, written from the formats' public descriptions)."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import db_rows, run_rheo

from rheo_cli.memory import jobs
from rheo_cli.memory.archive.history import Conversation, Message, Parsed, import_history
from rheo_cli.memory.store import db
from rheo_cli.memory.store.errors import InvalidInput
from rheo_cli.transfer.formats import recognised_name as sniff

DATA = Path(__file__).resolve().parent.parent / "data"
CHATGPT = DATA / "chatgpt_conversations.json"
CLAUDE = DATA / "claude_conversations.json"


@pytest.fixture
def llm_db(tmp_path: Path) -> Path:
    path = tmp_path / "logs.db"
    conn = sqlite3.connect(path)
    conn.executescript((DATA / "llm_logs.sql").read_text())
    conn.commit()
    conn.close()
    return path


def imported(*args: str) -> dict:
    done = run_rheo("import-history", *args, "--json")
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def store(home: Path) -> list[tuple]:
    """Every turn and session as rows, to compare stores."""
    turns = db_rows(
        home, "SELECT id, session_id, role, content, ts, model, status, meta, source_key FROM turns"
    )
    sessions = db_rows(home, "SELECT * FROM sessions")
    return [tuple(r) for r in turns] + [tuple(r) for r in sessions]


@pytest.mark.boundary
def test_chatgpt_export_keeps_the_shown_branch_times_and_order(home: Path) -> None:
    summary = imported("chatgpt", str(CHATGPT))
    assert summary["conversations"] == 2 and summary["turns"] == 6 and summary["sessions"] == 2
    assert summary["skipped"] == {
        "code content": 1,
        "image or file part": 1,
        "system message": 1,
        "tool message": 1,
    }
    turns = db_rows(home, "SELECT * FROM turns ORDER BY id")
    assert [t["source_key"] for t in turns] == [
        "chatgpt:u-1",
        "chatgpt:a-1",
        "chatgpt:u-2",
        "chatgpt:a-2",
        "chatgpt:u-3",
        "chatgpt:a-3",
    ]
    assert "edited away" not in " ".join(t["content"] for t in turns)
    assert turns[0]["ts"] == "2024-03-01T09:00:00.500Z"
    assert turns[1]["model"] == "gpt-4o" and turns[1]["status"] == "ok"
    assert turns[2]["content"] == "Here is the balcony. Which pots should I buy?"
    # a-3 has no create_time: it takes the time of the message it answers
    assert turns[5]["ts"] == turns[4]["ts"] == "2024-03-04T14:00:00.000Z"
    assert json.loads(turns[0]["meta"]) == {
        "imported": "chatgpt",
        "conversation": "chatgpt:conv-garden",
        "title": "Planning the garden",
    }
    assert turns[0]["session_id"] != turns[4]["session_id"]


@pytest.mark.boundary
def test_claude_export_splits_sessions_on_the_gap_and_names_attachments(home: Path) -> None:
    summary = imported("claude", str(CLAUDE))
    assert summary["conversations"] == 1 and summary["turns"] == 4
    assert summary["sessions"] == 2  # 06:30 and 09:40: more than the 2-hour gap apart
    assert summary["skipped"] == {"conversation with no text messages": 1, "empty message": 1}
    turns = db_rows(home, "SELECT * FROM turns ORDER BY id")
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant"]
    assert turns[0]["content"].endswith("[attachment: last_year_times.csv]")
    assert turns[1]["content"] == "Here is a 16-week plan building to 32 km long runs."
    assert turns[0]["ts"] == "2024-05-02T06:30:05.120Z"
    assert turns[1]["session_id"] == turns[0]["session_id"] != turns[2]["session_id"]


@pytest.mark.boundary
def test_llm_logs_group_conversations_in_their_own_order(home: Path, llm_db: Path) -> None:
    summary = imported("llm", str(llm_db))
    assert summary["conversations"] == 3 and summary["turns"] == 9
    assert summary["skipped"] == {"empty message": 1}
    turns = db_rows(home, "SELECT * FROM turns ORDER BY id")
    keys = [t["source_key"] for t in turns]
    # the sourdough conversation whole (its last exchange days later), then the others
    assert keys[:6] == [
        f"llm:01hqz0resp000000000000000{n}:{f}" for n in (1, 2, 5) for f in ("prompt", "response")
    ]
    assert keys[6:] == [
        "llm:01hqz0resp0000000000000003:prompt",
        "llm:01hqz0resp0000000000000003:response",
        "llm:01hqz0resp0000000000000004:prompt",
    ]
    assert turns[0]["ts"] == "2024-02-10T08:00:00.123Z"
    assert turns[1]["model"] == "gpt-4o-mini"
    sessions = [t["session_id"] for t in turns]
    assert sessions[0] == sessions[3] != sessions[4]  # 08:05, then three days later


@pytest.mark.boundary
@pytest.mark.parametrize("fmt", ["chatgpt", "claude", "llm"])
def test_a_second_import_leaves_the_same_store(home: Path, llm_db: Path, fmt: str) -> None:
    path = {"chatgpt": CHATGPT, "claude": CLAUDE, "llm": llm_db}[fmt]
    first = imported(fmt, str(path))
    before = store(home)
    again = imported(fmt, str(path))
    assert store(home) == before
    assert again["turns"] == 0 and again["conversations"] == 0
    assert again["skipped"]["already imported"] == first["turns"]


@pytest.mark.boundary
def test_a_later_export_adds_only_the_new_messages(home: Path, tmp_path: Path) -> None:
    imported("claude", str(CLAUDE))
    data = json.loads(CLAUDE.read_text())
    data[0]["chat_messages"].append(
        {
            "uuid": "msg-0006",
            "text": "The physio says I can run again.",
            "sender": "human",
            "created_at": "2024-05-20T18:00:00Z",
        }
    )
    later = tmp_path / "later.json"
    later.write_text(json.dumps(data))
    summary = imported("claude", str(later))
    assert summary["turns"] == 1 and summary["skipped"]["already imported"] == 4
    last = db_rows(home, "SELECT content, ts FROM turns ORDER BY id DESC LIMIT 1")[0]
    assert tuple(last) == ("The physio says I can run again.", "2024-05-20T18:00:00.000Z")


@pytest.mark.boundary
def test_extract_queues_ordinary_jobs_only_when_asked(home: Path) -> None:
    imported("claude", str(CLAUDE))
    assert db_rows(home, "SELECT count(*) FROM jobs")[0][0] == 0
    conn = db.open_store(home / "rheo.db")
    # `rheo maintain` does not digest imported sessions on its own
    assert jobs.sessions_awaiting_digest(conn, profile="default", closed_before="9999") == []
    conn.close()

    done = run_rheo("import-history", "chatgpt", str(CHATGPT), "--extract")
    assert done.returncode == 0, done.stderr
    assert b"queued 3 extraction and 2 digest jobs" in done.stdout
    rows = db_rows(
        home,
        "SELECT j.kind, t.source_key FROM jobs j LEFT JOIN turns t "
        "ON j.kind = 'extract' AND t.id = j.ref_id ORDER BY j.id",
    )
    assert [tuple(r) for r in rows] == [
        ("extract", "chatgpt:a-1"),
        ("extract", "chatgpt:a-2"),
        ("extract", "chatgpt:a-3"),
        ("digest", None),
        ("digest", None),
    ]


@pytest.mark.boundary
def test_the_text_summary_says_what_was_skipped(home: Path) -> None:
    done = run_rheo("import-history", "chatgpt", str(CHATGPT))
    assert done.returncode == 0
    out = done.stdout.decode()
    assert "imported 6 turns from 2 conversations into 2 sessions" in out
    assert "1  tool message" in out


@pytest.mark.boundary
@pytest.mark.parametrize(
    ("fmt", "text", "message"),
    [
        ("chatgpt", '[{"title": "a", "mapping": {}},\n  {"title": ', "line 2, column"),
        ("chatgpt", '{"conversations": []}', "expected a JSON list"),
        (
            "chatgpt",
            '[{"title": "fine", "mapping": {"n": {"message": {"id": "m", "author": {"role": '
            '"user"}, "create_time": 1700000000, "content": {"parts": ["hi"]}}, "parent": null}}, '
            '"current_node": "n"}, {"title": "Broken one", "mapping": []}]',
            "conversation 2 ('Broken one'): no 'mapping'",
        ),
        (
            "claude",
            '[{"uuid": "c1", "name": "Trip", "chat_messages": [{"uuid": "m1", "sender": "human",'
            ' "text": "hi", "created_at": "2024-01-01T00:00:00Z"}, {"uuid": "m2", "text": "x",'
            ' "created_at": "yesterday", "sender": "assistant"}]}]',
            "conversation 1 ('Trip'), message 2: not an ISO 8601 date-time",
        ),
        ("claude", "", "line 1, column 1"),
    ],
)
def test_malformed_input_names_the_place_and_stores_nothing(
    home: Path, tmp_path: Path, fmt: str, text: str, message: str
) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(text)
    done = run_rheo("import-history", fmt, str(path))
    assert done.returncode == 2
    err = done.stderr.decode()
    assert err.startswith("rheo: ") and message in err and err.count("\n") == 1, err
    assert "Traceback" not in err
    assert not (home / "rheo.db").exists() or db_rows(home, "SELECT count(*) FROM turns")[0][0] == 0


@pytest.mark.boundary
def test_a_file_that_is_not_an_llm_database(home: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    sqlite3.connect(other).execute("CREATE TABLE notes (x)").connection.commit()
    done = run_rheo("import-history", "llm", str(other))
    assert done.returncode == 2 and b"not an llm logs.db" in done.stderr
    done = run_rheo("import-history", "llm", str(CHATGPT))
    assert done.returncode == 2 and b"not an SQLite database" in done.stderr
    done = run_rheo("import-history", "mbox", str(CHATGPT))
    assert done.returncode == 2 and b"unknown history format" in done.stderr
    done = run_rheo("import-history", "claude", str(tmp_path / "missing.json"))
    assert done.returncode == 2 and b"no such file" in done.stderr


def test_a_refused_row_rolls_back_the_whole_import(home: Path) -> None:
    conn = db.open_store(home / "rheo.db")
    when = datetime(2024, 1, 1, tzinfo=UTC)
    good = Conversation("x:1", "ok", [Message("user", "kept?", when, "x:m1")])
    bad = Conversation(
        "x:2", "bad", [Message("user", "fine", when, "x:m2"), Message("system", "no", when, "x:m3")]
    )
    with pytest.raises(InvalidInput):
        import_history(conn, "default", Parsed("x", [good, bad]), gap_s=7200, now="2024")
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM sessions").fetchone()[0] == 0
    conn.close()


def test_the_format_is_recognised_from_the_file(llm_db: Path) -> None:
    assert sniff(CHATGPT) == "chatgpt"
    assert sniff(CLAUDE) == "claude"
    assert sniff(llm_db) == "llm"
    assert sniff(DATA / "llm_logs.sql") is None


@pytest.mark.boundary
def test_a_terminal_sees_a_progress_bar(home: Path) -> None:
    import os
    import pty
    import subprocess
    import sys

    import netguard
    from helpers import REPO

    leader, follower = pty.openpty()
    env = netguard.subprocess_env({**os.environ, "RHEO_HOME": str(home), "COLUMNS": "80"})
    proc = subprocess.run(
        [sys.executable, "-m", "rheo_cli", "import-history", "chatgpt", str(CHATGPT)],
        stderr=follower,
        stdout=subprocess.PIPE,
        env=env,
        cwd=str(REPO),
        timeout=60,
    )
    os.close(follower)
    seen = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(leader)
    assert proc.returncode == 0
    assert b"importing" in seen and b"6/6" in seen
    assert b"imported 6 turns" in proc.stdout


@pytest.fixture
def llm036_db(tmp_path: Path) -> Path:
    """A logs.db as llm 0.36 writes it (message store), with two legacy rows."""
    path = tmp_path / "logs036.db"
    conn = sqlite3.connect(path)
    conn.executescript((DATA / "llm036_logs.sql").read_text())
    conn.commit()
    conn.close()
    return path


@pytest.mark.boundary
def test_llm_message_store_of_current_llm_is_imported(home: Path, llm036_db: Path) -> None:
    summary = imported("llm", str(llm036_db))
    # 4 turns of the message store + the legacy row from before the upgrade; the legacy row
    # that repeats a turn (same id) is read once, from the turn.
    assert summary["conversations"] == 4 and summary["turns"] == 10
    turns = db_rows(home, "SELECT role, content, ts, model, source_key FROM turns ORDER BY ts, id")
    contents = [t["content"] for t in turns]
    assert contents[:2] == [
        "How often should I feed a sourdough starter?",
        "Once a day at room temperature.",
    ]
    assert contents[2] == "I live in Porto and bake sourdough."
    assert contents[4] == "My starter is called Bubbles."
    assert "What is 17 * 23?" in contents and "the same exchange, logged twice" not in contents
    # a prompt that borrows a fragment (llm -f) gets the fragment's text back
    assert contents[8] == (
        "Porto is a city in the north of Portugal, on the Douro river.\n\nSummarise this for me."
    )
    assert turns[3]["role"] == "assistant" and turns[3]["model"] == "echo"
    assert turns[2]["ts"] == "2026-12-01T11:30:11.217Z"
    assert turns[2]["source_key"] == "llm:01m8rnx4mh8cxrpax3jeykafa3:prompt"
    sessions = db_rows(
        home,
        "SELECT session_id FROM turns WHERE source_key LIKE 'llm:01m8rnx4mh%' "
        "OR source_key LIKE 'llm:01m8rnx6es%'",
    )
    assert len({s[0] for s in sessions}) == 1  # llm -c continued the thread: one session
    again = imported("llm", str(llm036_db))
    assert again["turns"] == 0 and again["skipped"]["already imported"] == 10


@pytest.mark.boundary
def test_a_file_with_no_readable_conversation_is_an_error(home: Path, tmp_path: Path) -> None:
    empty = tmp_path / "logs.db"
    conn = sqlite3.connect(empty)
    conn.executescript((DATA / "llm036_logs.sql").read_text())
    for table in ("responses", "conversations", "turns", "threads", "parts", "messages"):
        conn.execute(f"DELETE FROM {table}")  # a fresh llm 0.36 logs.db: no exchange yet
    conn.commit()
    conn.close()
    done = run_rheo("import-history", "llm", str(empty))
    err = done.stderr.decode()
    assert done.returncode == 1, (done.stdout, err)
    assert err.startswith("rheo: ") and "no llm conversation rheo can read" in err
    assert err.count("\n") == 1 and done.stdout == b""
    chats = tmp_path / "conversations.json"
    chats.write_text("[]")
    done = run_rheo("import-history", "chatgpt", str(chats))
    assert done.returncode == 1 and b"no chatgpt conversation" in done.stderr


def renamed_ids(fmt: str, path: Path, out: Path) -> Path:
    """A copy of the history ``path`` with every message id changed (the same messages)."""
    if fmt == "llm":
        import shutil

        shutil.copy(path, out)
        with sqlite3.connect(out) as conn:
            conn.execute("UPDATE responses SET id = 'renamed-' || id")
        return out
    data = json.loads(path.read_text())
    for conversation in data:
        if fmt == "chatgpt":
            for node in conversation["mapping"].values():
                if node.get("message"):
                    node["message"]["id"] = "renamed-" + str(node["message"].get("id"))
        else:
            for message in conversation["chat_messages"]:
                message["uuid"] = "renamed-" + message["uuid"]
    out.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize("fmt", ["chatgpt", "claude", "llm"])
def test_the_same_messages_under_other_ids_are_already_imported(
    rheo, home: Path, llm_db: Path, tmp_path: Path, fmt: str
) -> None:
    path = {"chatgpt": CHATGPT, "claude": CLAUDE, "llm": llm_db}[fmt]
    first = json.loads(rheo("import-history", fmt, str(path), "--json").stdout)
    before = store(home)
    for n in range(2):  # three imports in all, the ids changed each time
        other = renamed_ids(fmt, path, tmp_path / f"renamed-{n}-{path.name}")
        if n:
            other = renamed_ids(fmt, other, tmp_path / f"renamed-again-{path.name}")
        again = json.loads(rheo("import", str(other), "--from", fmt, "--json").stdout)
        assert again["turns"] == 0, again
        assert again["skipped"]["already imported"] == first["turns"]
    assert store(home) == before


@pytest.mark.parametrize("fmt", ["chatgpt", "claude"])
def test_a_purged_message_is_not_imported_again(rheo, home: Path, fmt: str) -> None:
    path = {"chatgpt": CHATGPT, "claude": CLAUDE}[fmt]
    first = json.loads(rheo("import-history", fmt, str(path), "--json").stdout)
    gone = db_rows(home, "SELECT id, content FROM turns ORDER BY id LIMIT 1")[0]
    assert rheo("purge", "turn", str(gone["id"]), "--yes").exit_code == 0
    again = json.loads(rheo("import-history", fmt, str(path), "--json").stdout)
    erased = "erased by 'rheo purge' (--include-purged brings them back)"
    assert again["turns"] == 0 and again["skipped"][erased] == 1
    assert again["skipped"]["already imported"] == first["turns"] - 1
    assert gone["content"] not in [r[0] for r in db_rows(home, "SELECT content FROM turns")]
    text = rheo("import-history", fmt, str(path))
    assert f"1  {erased}" in text.stdout
    back = json.loads(rheo("import-history", fmt, str(path), "--include-purged", "--json").stdout)
    assert back["turns"] == 1
    assert gone["content"] in [r[0] for r in db_rows(home, "SELECT content FROM turns")]
