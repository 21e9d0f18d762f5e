"""Reading the ``llm`` command-line tool's ``logs.db``, another program's SQLite file, opened
read-only. The one module of rheo with SQL outside the engine (`tests/test_architecture.py`
names it): that SQL is about llm's tables, never rheo's store. Two schemas, both read:

- the message store of llm 0.32 and later (migration m023): ``threads`` (a conversation),
  ``turns`` (one model call: ``parent_message_hash`` is the last message it was given,
  ``tip_message_hash`` the last one it appended), ``messages`` (content-addressed, each with
  its ``parent_hash`` and ``role``), ``parts`` (a message's text parts; text that borrows a
  fragment is a ``text_ref`` payload of literals and ``fragments`` ids);
- the legacy ``responses`` and ``conversations`` tables (llm 0.4 to 0.31; kept by later
  versions, which no longer write them). A legacy row whose id is also a turn is the same
  exchange and is read once, from the turn (as ``llm logs`` does).

The file is opened with ``mode=ro``: rheo never writes to it. Errors are MalformedHistory
(a one-line usage error naming the file), raised before anything is imported."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .history import MalformedHistory

LLM_COLUMNS = ("id", "model", "prompt", "response", "conversation_id", "datetime_utc")
"""Columns of llm's ``responses`` table an import reads; all must exist."""


TURN_COLUMNS = ("id", "thread_id", "parent_message_hash", "tip_message_hash", "model")
"""Columns of llm's ``turns`` table (message store) an import reads, with ``datetime_utc``."""


def read_llm_responses(path: str | Path) -> list[dict[str, Any]]:
    """Every logged prompt/response of an llm ``logs.db``, from the message store and the
    legacy table alike, oldest first (by ``datetime_utc``, then the order they were logged):
    dicts with `LLM_COLUMNS` (for a turn ``conversation_id`` is its thread, ``prompt`` the
    text of the person's message(s) it answered, ``response`` the text it appended) plus
    ``conversation_name`` (or None) and ``row_order`` (the row's number in its table).

    Raises MalformedHistory when the file is not an SQLite database, has neither a ``turns`` nor
    a ``responses`` table, lacks a column rheo reads, or a turn names a message that is not
    there (naming what is missing)."""
    conn = _open(path)
    try:
        try:
            columns = _columns(conn, "responses")
        except sqlite3.DatabaseError as exc:
            raise MalformedHistory(f"{path} is not an SQLite database: {exc}") from None
        turn_columns = _columns(conn, "turns")
        has_store = {*TURN_COLUMNS, "datetime_utc"} <= turn_columns and bool(
            _columns(conn, "messages") and _columns(conn, "parts")
        )
        if not columns and not has_store:
            raise MalformedHistory(
                f"{path} has no 'responses' table and no message store "
                "('turns', 'messages', 'parts'): not an llm logs.db"
            )
        rows = _turn_rows(conn, path) if has_store else []
        if columns:
            missing = [c for c in LLM_COLUMNS if c not in columns]
            if missing:
                raise MalformedHistory(
                    f"{path}: table 'responses' lacks column(s) {', '.join(missing)}"
                )
            taken = {r["id"] for r in rows}
            rows += [r for r in _legacy_rows(conn) if r["id"] not in taken]
        rows.sort(key=_logged_at)
        for row in rows:
            row.pop("_turn", None)
        return rows
    except sqlite3.DatabaseError as exc:
        raise MalformedHistory(f"cannot read {path}: {exc}") from None
    finally:
        conn.close()


def _open(path: str | Path) -> sqlite3.Connection:
    """``path`` opened read-only (``mode=ro``), rows by name. Raises MalformedHistory."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise MalformedHistory(f"cannot open {path}: {exc}") from None
    conn.row_factory = sqlite3.Row
    return conn


def tables(path: str | Path) -> dict[str, set[str]] | None:
    """The tables of the SQLite file ``path`` with their columns, read-only; None when it is
    not an SQLite database rheo can open."""
    try:
        conn = _open(path)
    except MalformedHistory:
        return None
    try:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            ).fetchall()
        ]
        return {name: _columns(conn, name) for name in names}
    except sqlite3.DatabaseError:
        return None
    finally:
        conn.close()


def is_llm_log(schema: dict[str, set[str]]) -> bool:
    """True when tables ``schema`` (`tables`) are llm's: a ``responses`` table with every
    column of `LLM_COLUMNS`, or the message store (``turns``, ``messages``, ``parts``)."""
    legacy = set(LLM_COLUMNS) <= schema.get("responses", set())
    store = {*TURN_COLUMNS, "datetime_utc"} <= schema.get("turns", set())
    return legacy or (store and "messages" in schema and "parts" in schema)


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f"PRAGMA table_info({table})").fetchall()}


def _logged_at(row: dict[str, Any]) -> tuple[datetime, int, int]:
    """Sort key: the row's time (an unreadable one first: the parser names it), then turns
    before legacy rows, then row order."""
    value = row["datetime_utc"]
    moment = datetime.min.replace(tzinfo=UTC)
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            pass
        else:
            moment = parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed
    return (moment, 0 if row.get("_turn") else 1, int(row["row_order"] or 0))


def _legacy_rows(conn: sqlite3.Connection) -> list[dict[str, Any]]:
    has_names = bool(_columns(conn, "conversations"))
    name = "c.name" if has_names else "NULL"
    join = "LEFT JOIN conversations c ON c.id = r.conversation_id" if has_names else ""
    rows = conn.execute(
        f"SELECT r.rowid AS row_order, r.id, r.model, r.prompt, r.response, "
        f"r.conversation_id, r.datetime_utc, {name} AS conversation_name "
        f"FROM responses r {join} ORDER BY r.datetime_utc, r.rowid"
    ).fetchall()
    return [dict(r) for r in rows]


class _Messages:
    """llm's message store read once: each message's parent and role, its text parts, and
    the fragments those parts name (read when first needed)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.links = {
            r[0]: (r[1], r[2])
            for r in conn.execute("SELECT hash, parent_hash, role FROM messages").fetchall()
        }
        self.texts: dict[str, list[tuple[int, Any, Any]]] = {}
        for r in conn.execute(
            "SELECT message_hash, position, text, payload FROM parts WHERE type = 'text' "
            "ORDER BY message_hash, position"
        ).fetchall():
            self.texts.setdefault(r[0], []).append((r[1], r[2], r[3]))
        self.fragments: dict[int, str] = {}

    def fragment(self, ident: Any) -> str:
        """A fragment's content ('' when it is missing)."""
        if ident not in self.fragments:
            found = self.conn.execute("SELECT content FROM fragments WHERE id = ?", (ident,))
            row = found.fetchone()
            self.fragments[ident] = str(row[0]) if row is not None and row[0] is not None else ""
        return self.fragments[ident]

    def text_of(self, message: str, here: str) -> str:
        """A message's text: its literal parts and JSON payloads joined, fragments read in.
        Raises MalformedHistory for a payload that is not JSON."""
        out = []
        for _, literal, payload in self.texts.get(message, []):
            if literal is not None:
                out.append(str(literal))
                continue
            try:
                data = json.loads(payload) if payload else {}
            except (ValueError, RecursionError):
                raise MalformedHistory(
                    f"{here}: a text part of message {message} is not JSON"
                ) from None
            if not isinstance(data, dict):
                raise MalformedHistory(
                    f"{here}: a text part of message {message} is not a JSON object"
                )
            if isinstance(data.get("text"), str):
                out.append(data["text"])
            for piece in data.get("text_ref") or []:
                if isinstance(piece, dict):
                    literal = piece.get("literal")
                    out.append(
                        literal
                        if isinstance(literal, str)
                        else self.fragment(piece.get("fragment"))
                    )
        return "".join(out)

    def _link(self, at: str, here: str) -> tuple[Any, str]:
        if at not in self.links:
            raise MalformedHistory(f"{here}: message {at} is not in the log")
        return self.links[at]

    def appended(self, tip: Any, parent: Any, here: str) -> list[str]:
        """The assistant messages a turn appended, from its tip back to its parent."""
        found: list[str] = []
        at = tip
        while at is not None and at != parent:
            up, role = self._link(at, here)
            if role == "assistant":
                found.append(at)
            at = up
        return found

    def given(self, parent: Any, here: str) -> list[str]:
        """The person's input: the run of user (and tool) messages the turn answered."""
        found: list[str] = []
        at = parent
        while at is not None:
            up, role = self._link(at, here)
            if role not in ("user", "tool"):
                break
            if role == "user":
                found.append(at)
            at = up
        return found


def _turn_rows(conn: sqlite3.Connection, path: str | Path) -> list[dict[str, Any]]:
    """The message store's turns as rows shaped like the legacy ones."""
    store = _Messages(conn)
    has_threads = bool(_columns(conn, "threads"))
    name = "th.name" if has_threads else "NULL"
    join = "LEFT JOIN threads th ON th.id = t.thread_id" if has_threads else ""
    rows = []
    for r in conn.execute(
        f"SELECT t.rowid AS row_order, t.id, t.model, t.thread_id, t.parent_message_hash, "
        f"t.tip_message_hash, t.datetime_utc, {name} AS conversation_name "
        f"FROM turns t {join} ORDER BY t.datetime_utc, t.rowid"
    ).fetchall():
        here = f"{path}: turn {r['id']!r}"
        parent, tip = r["parent_message_hash"], r["tip_message_hash"]
        appended = store.appended(tip, parent, here)
        given = store.given(parent, here)
        rows.append(
            {
                "row_order": r["row_order"],
                "id": r["id"],
                "model": r["model"],
                "prompt": "".join(store.text_of(m, here) for m in reversed(given)),
                "response": "".join(store.text_of(m, here) for m in reversed(appended)),
                "conversation_id": r["thread_id"],
                "datetime_utc": r["datetime_utc"],
                "conversation_name": r["conversation_name"],
                "_turn": True,
            }
        )
    return rows
