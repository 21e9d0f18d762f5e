"""Full-text search on the SQLite store: FTS5 queries, the counterparts of `postgres.search`.

Each function returns what the `api.Store` method of the same name promises (ids, or rows
with the same columns, order and score convention as PostgreSQL's: ``rank``/``score`` lower
is better, FTS5's bm25). Terms come from `text.fts.terms`, already FTS5-safe strings
(``"word"``, ``"two words"``, ``"pre"*``), joined here with ``OR`` or ``AND``.

Isolation: the turns' word index holds each row's profile as one token (migration m011), so
a search of the ledger is scoped inside MATCH (`scoped`): candidates are chosen among the
profile's own turns before any LIMIT, whatever other profiles hold. The other indexes are
joined to their tables and filtered by profile.
"""

from __future__ import annotations

from typing import Any

from ..api import Connection


def tenant_token(profile: str) -> str:
    """The word-index token standing for ``profile`` (migration m011): ``p`` + the name's
    UTF-8 bytes in hex + ``x`` — one token, no stemming can change it, no other name shares
    it."""
    return "p" + profile.encode("utf-8").hex() + "x"


def scoped(expr: str, profile: str) -> str:
    """``expr`` (a MATCH expression over turns' text) limited to ``profile``'s turns, inside
    the index: ``tenant : <token> AND content : (expr)``."""
    return f"tenant : {tenant_token(profile)} AND content : ({expr})"


def _any(terms: list[str]) -> str:
    return " OR ".join(terms)


def _plain_ids(conn: Connection, sql: str, args: tuple[Any, ...]) -> list[int]:
    plain = conn.cursor()
    plain.row_factory = None
    plain.execute(sql, args)
    return [r[0] for r in plain.fetchall()]


def turn_ids(
    conn: Connection,
    profile: str,
    terms: list[str],
    *,
    any_term: bool,
    newer_than: int | None,
    up_to: int | None,
    limit: int,
) -> list[int]:
    """See `api.Store.turn_ids`."""
    expr = scoped((" OR " if any_term else " AND ").join(terms), profile)
    sql = "SELECT rowid FROM turns_fts WHERE turns_fts MATCH ?"
    args: list[Any] = [expr]
    if newer_than is not None:
        sql += " AND rowid > ?"
        args.append(newer_than)
    if up_to is not None:
        sql += " AND rowid <= ?"
        args.append(up_to)
    return _plain_ids(conn, sql + " ORDER BY rowid DESC LIMIT ?", (*args, limit))


def term_turn_ids(conn: Connection, profile: str, term: str, cap: int) -> list[int]:
    """See `api.Store.term_turn_ids`."""
    return _plain_ids(
        conn,
        "SELECT rowid FROM turns_fts WHERE turns_fts MATCH ? LIMIT ?",
        (scoped(term, profile), cap),
    )


def newest_turn_ids(conn: Connection, profile: str, terms: list[str], limit: int) -> list[int]:
    """See `api.Store.newest_turn_ids`."""
    return _plain_ids(
        conn,
        "SELECT rowid FROM turns_fts WHERE turns_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
        (scoped(_any(terms), profile), limit),
    )


def cjk_turn_ids(conn: Connection, profile: str, run: str, limit: int) -> list[int]:
    """See `api.Store.cjk_turn_ids` (the trigram index ``turns_cjk``)."""
    return _plain_ids(
        conn,
        "SELECT f.rowid FROM turns_cjk f JOIN turns t ON t.id = f.rowid "
        "WHERE turns_cjk MATCH ? AND t.profile = ? ORDER BY f.rowid DESC LIMIT ?",
        ('"' + run.replace('"', '""') + '"', profile, limit),
    )


def _quote(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def trigram_turns(
    conn: Connection, profile: str, columns: str, grams: list[str], limit: int
) -> list[Any]:
    """See `api.Store.trigram_turns` (``rank``: FTS5's over the trigram index)."""
    if not grams:
        return []
    return conn.execute(
        f"SELECT {columns}, f.rank AS rank FROM turns_cjk f JOIN turns t "
        "ON t.id = f.rowid WHERE turns_cjk MATCH ? AND t.profile = ? ORDER BY f.rank "
        "LIMIT ?",
        (" OR ".join(_quote(g) for g in grams), profile, limit),
    ).fetchall()


def item_source_turns(conn: Connection, profile: str, terms: list[str], limit: int) -> list[Any]:
    """See `api.Store.item_source_turns`."""
    if not terms:
        return []
    return conn.execute(
        "SELECT m.source_turn_id AS tid, f.rank AS rank FROM memory_items_fts f "
        "JOIN memory_items m ON m.id = f.rowid WHERE memory_items_fts MATCH ? "
        "AND m.profile = ? AND m.status != 'retracted' AND m.source_turn_id IS NOT NULL "
        "ORDER BY f.rank LIMIT ?",
        (_any(terms), profile, limit),
    ).fetchall()


def search_items(
    conn: Connection,
    profile: str,
    terms: list[str],
    *,
    any_term: bool,
    statuses: tuple[str, ...] | None,
    limit: int,
    view: tuple[str, list[Any]] = ("", []),
) -> list[Any]:
    """See `api.Store.search_items` (``score``: FTS5's rank)."""
    if not terms:
        return []
    sql = (
        "SELECT m.*, f.rank AS score FROM memory_items_fts f "
        "JOIN memory_items m ON m.id = f.rowid WHERE memory_items_fts MATCH ? AND m.profile = ?"
    )
    args: list[Any] = [(" OR " if any_term else " AND ").join(terms), profile]
    if statuses is not None:
        sql += f" AND m.status IN ({','.join('?' * len(statuses))})"
        args.extend(statuses)
    sql += view[0]
    args.extend(view[1])
    sql += " ORDER BY f.rank LIMIT ?"
    args.append(limit)
    return conn.execute(sql, args).fetchall()


def search_digests(conn: Connection, profile: str, terms: list[str], limit: int) -> list[Any]:
    """See `api.Store.search_digests`."""
    if not terms:
        return []
    return conn.execute(
        "SELECT d.*, f.rank AS rank FROM digests_fts f JOIN digests d ON d.id = f.rowid "
        "WHERE digests_fts MATCH ? AND d.profile = ? ORDER BY f.rank LIMIT ?",
        (_any(terms), profile, limit),
    ).fetchall()


def search_chunks(
    conn: Connection, profile: str, terms: list[str], *, any_term: bool, limit: int
) -> list[Any]:
    """See `api.Store.search_chunks` (``bm25(kb_chunks_fts, 2.0, 1.0)``)."""
    if not terms:
        return []
    return conn.execute(
        "SELECT c.id, c.document_id, d.source, d.title, d.version, c.heading, c.content, "
        "bm25(kb_chunks_fts, 2.0, 1.0) AS score "
        "FROM kb_chunks_fts JOIN kb_chunks c ON c.id = kb_chunks_fts.rowid "
        "JOIN kb_documents d ON d.id = c.document_id "
        "WHERE kb_chunks_fts MATCH ? AND c.profile = ? AND d.status = 'active' "
        "ORDER BY score LIMIT ?",
        ((" OR " if any_term else " AND ").join(terms), profile, limit),
    ).fetchall()


def plain_turn_ids(conn: Connection, profile: str, terms: list[str], limit: int) -> list[int]:
    """See `api.Store.plain_turn_ids` (FTS5's own ``bm25()`` order)."""
    if not terms:
        return []
    return _plain_ids(
        conn,
        "SELECT rowid FROM turns_fts WHERE turns_fts MATCH ? ORDER BY rank LIMIT ?",
        (scoped(_any(terms), profile), limit),
    )
