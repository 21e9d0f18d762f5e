"""Reading another tool's SQLite history, read-only: the ``llm`` command-line tool's
``logs.db`` (its ``conversations`` and ``responses`` tables, as written by llm 0.x before the
0.32 message store). The file is opened with ``mode=ro``: rheo never writes to it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from .errors import InvalidInput

LLM_COLUMNS = ("id", "model", "prompt", "response", "conversation_id", "datetime_utc")
"""Columns of llm's ``responses`` table an import reads; all must exist."""


def read_llm_responses(path: str | Path) -> list[dict[str, Any]]:
    """Every logged prompt/response of an llm ``logs.db``, oldest first (by ``datetime_utc``,
    then row order): dicts with `LLM_COLUMNS` plus ``conversation_name`` (or None).

    Raises InvalidInput when the file is not an SQLite database or lacks the
    ``responses`` table or one of its columns (naming what is missing)."""
    uri = Path(path).resolve().as_uri() + "?mode=ro"
    try:
        conn = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise InvalidInput(f"cannot open {path}: {exc}") from None
    conn.row_factory = sqlite3.Row
    try:
        try:
            columns = {r[1] for r in conn.execute("PRAGMA table_info(responses)").fetchall()}
        except sqlite3.DatabaseError as exc:
            raise InvalidInput(f"{path} is not an SQLite database: {exc}") from None
        if not columns:
            raise InvalidInput(f"{path} has no 'responses' table: not an llm logs.db")
        missing = [c for c in LLM_COLUMNS if c not in columns]
        if missing:
            raise InvalidInput(f"{path}: table 'responses' lacks column(s) {', '.join(missing)}")
        has_names = bool(conn.execute("PRAGMA table_info(conversations)").fetchall())
        name = "c.name" if has_names else "NULL"
        join = "LEFT JOIN conversations c ON c.id = r.conversation_id" if has_names else ""
        rows = conn.execute(
            f"SELECT r.rowid AS row_order, r.id, r.model, r.prompt, r.response, "
            f"r.conversation_id, r.datetime_utc, {name} AS conversation_name "
            f"FROM responses r {join} ORDER BY r.datetime_utc, r.rowid"
        ).fetchall()
        return [dict(r) for r in rows]
    except sqlite3.DatabaseError as exc:
        raise InvalidInput(f"cannot read {path}: {exc}") from None
    finally:
        conn.close()
