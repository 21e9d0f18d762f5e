"""Full-text search on the PostgreSQL store: the counterparts of the engine's FTS5 queries.

Each function returns rows with the same columns, order and score convention as the SQLite
query it stands in for (``rank``/``score`` lower is better, as FTS5's bm25: here
``-ts_rank_cd``), so a caller branches in one line on `store.pg.dialect` and reads the rows
the same way. Words come from `text.fts.terms` (FTS5 strings); `tsquery` turns them into
``phraseto_tsquery`` / prefix ``to_tsquery`` calls on the ``english`` configuration (stemming
like FTS5's porter tokenizer), so any text a person types is a safe query here too.
Row-level security already limits every query to the connection's tenant; every query here
names the profile too, as every engine query does, so a connection that row-level security
does not bind (a superuser, a role with BYPASSRLS) still reads one profile's rows.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from .store.pg_schema import CJK_CLASS

CJK_MATCH = f"content ~ '{CJK_CLASS}'"
"""The partial trigram index's predicate, repeated in queries so the planner uses it."""


def tsquery(terms: list[str], joiner: str = "||") -> tuple[str, list[str]]:
    """``(SQL tsquery expression, parameters)`` for FTS5 terms (``"word"``, ``"two words"``,
    ``"pre"*``): ``||`` accepts any term, ``&&`` requires all."""
    parts: list[str] = []
    params: list[str] = []
    for term in terms:
        prefix = term.endswith("*")
        body = term[:-1] if prefix else term
        text = body[1:-1].replace('""', '"') if body.startswith('"') else body
        if prefix and text.replace("_", "").isalnum():
            parts.append("to_tsquery('rheo_english', ?)")
            params.append(f"'{text}':*")
        else:
            parts.append("phraseto_tsquery('rheo_english', ?)")
            params.append(text)
    if not parts:
        return "''::tsquery", []
    return "(" + f" {joiner} ".join(parts) + ")", params


def search_turns(
    conn: sqlite3.Connection,
    profile: str,
    columns: str,
    terms: list[str],
    *,
    any_term: bool,
    limit: int,
    window: int,
    ranked_max: int,
) -> tuple[list[Any], bool]:
    """The ledger's best matches (columns ``columns`` of ``turns t`` plus ``score``): among the
    newest ``window`` turns first, then older ones; ``(rows, too_common)`` — too_common when
    more than ``ranked_max`` of the newest turns match (the caller lists the newest matches,
    `newest_turn_matches`, instead of ranking them all)."""
    q, params = tsquery(terms, "||" if any_term else "&&")
    newest = int(
        conn.execute(
            "SELECT coalesce(max(id), 0) FROM turns WHERE profile = ?", (profile,)
        ).fetchone()[0]
    )
    cutoff = max(0, newest - window)
    probe = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM turns WHERE fts @@ {q} AND id > ? "
        "AND profile = ? LIMIT ?) s",
        (*params, cutoff, profile, ranked_max + 1),
    ).fetchone()[0]
    if int(probe) > ranked_max:
        return [], True
    sql = (
        f"SELECT {columns}, -ts_rank_cd(t.fts, {q}) AS score FROM turns t "
        f"WHERE t.fts @@ {q} AND t.id {{cmp}} ? AND t.profile = ? ORDER BY score, t.id DESC "
        "LIMIT ?"
    )
    rows = conn.execute(sql.format(cmp=">"), (*params, *params, cutoff, profile, limit)).fetchall()
    if len(rows) < limit and cutoff > 0:
        rows += conn.execute(
            sql.format(cmp="<="), (*params, *params, cutoff, profile, limit - len(rows))
        ).fetchall()
    return rows, False


def newest_turn_matches(
    conn: sqlite3.Connection, profile: str, columns: str, terms: list[str], limit: int
) -> list[Any]:
    """The profile's newest turns matching all ``terms`` (too common to rank), newest first."""
    q, params = tsquery(terms, "&&")
    return conn.execute(
        f"SELECT {columns} FROM turns t WHERE t.fts @@ {q} AND t.profile = ? "
        "ORDER BY t.id DESC LIMIT ?",
        (*params, profile, limit),
    ).fetchall()


def cjk_turn_ids(conn: sqlite3.Connection, profile: str, run: str, limit: int) -> list[int]:
    """Ids of ``profile``'s turns containing ``run`` (three or more CJK characters; the
    trigram index), newest first."""
    pattern = "%" + run.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = conn.execute(
        f"SELECT id FROM turns WHERE {CJK_MATCH} AND content LIKE ? AND profile = ? "
        "ORDER BY id DESC LIMIT ?",
        (pattern, profile, limit),
    ).fetchall()
    return [int(r[0]) for r in rows]


def word_turn_ids(
    conn: sqlite3.Connection, profile: str, terms: list[str], limit: int
) -> list[int]:
    """Ids of ``profile``'s turns holding any of ``terms`` (the word's postings), at most
    ``limit``."""
    q, params = tsquery(terms)
    rows = conn.execute(
        f"SELECT id FROM turns WHERE fts @@ {q} AND profile = ? LIMIT ?",
        (*params, profile, limit),
    ).fetchall()
    return [int(r[0]) for r in rows]


def newest_word_turn_ids(
    conn: sqlite3.Connection, profile: str, terms: list[str], limit: int
) -> list[int]:
    """Ids of ``profile``'s newest turns holding any of ``terms``."""
    q, params = tsquery(terms)
    rows = conn.execute(
        f"SELECT id FROM turns WHERE fts @@ {q} AND profile = ? ORDER BY id DESC LIMIT ?",
        (*params, profile, limit),
    ).fetchall()
    return [int(r[0]) for r in rows]


def trigram_turns(
    conn: sqlite3.Connection, profile: str, columns: str, grams: list[str], limit: int
) -> list[Any]:
    """Turns in scripts without spaces holding any of ``grams`` (three-character pieces of the
    message), most pieces first (``columns`` of ``turns t`` plus ``rank``: minus the number
    held), found through the partial trigram index."""
    patterns = [
        "%" + g.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%" for g in grams
    ]
    if not patterns:
        return []
    any_of = " OR ".join("t.content LIKE ?" for _ in patterns)
    return conn.execute(
        f"SELECT {columns}, -(SELECT count(*) FROM unnest(?::text[]) AS g(p) "
        f"WHERE t.content LIKE g.p) AS rank FROM turns t "
        f"WHERE t.{CJK_MATCH} AND ({any_of}) AND t.profile = ? ORDER BY rank, t.id DESC LIMIT ?",
        (patterns, *patterns, profile, limit),
    ).fetchall()


def item_source_turns(
    conn: sqlite3.Connection, profile: str, terms: list[str], limit: int
) -> list[Any]:
    """``(tid, rank)`` of memory items matching any of ``terms`` (not retracted, with a
    source turn), best first."""
    q, params = tsquery(terms)
    return conn.execute(
        f"SELECT m.source_turn_id AS tid, -ts_rank_cd(m.fts, {q}) AS rank FROM memory_items m "
        f"WHERE m.fts @@ {q} AND m.profile = ? AND m.status != 'retracted' "
        "AND m.source_turn_id IS NOT NULL ORDER BY rank LIMIT ?",
        (*params, *params, profile, limit),
    ).fetchall()


def search_items(
    conn: sqlite3.Connection,
    profile: str,
    terms: list[str],
    *,
    any_term: bool,
    statuses: tuple[str, ...] | None,
    limit: int,
    view: tuple[str, list[Any]] = ("", []),
) -> list[Any]:
    """Memory items (every column plus ``score``) matching ``terms``, best first; ``view`` is
    an extra ``(" AND ...", args)`` condition on ``m`` (an assistant's view of memory)."""
    q, params = tsquery(terms, "||" if any_term else "&&")
    sql = f"SELECT m.*, -ts_rank_cd(m.fts, {q}) AS score FROM memory_items m "
    sql += f"WHERE m.fts @@ {q} AND m.profile = ?"
    args: list[Any] = [*params, *params, profile]
    if statuses is not None:
        sql += f" AND m.status IN ({','.join('?' * len(statuses))})"
        args.extend(statuses)
    sql += view[0]
    args.extend(view[1])
    sql += " ORDER BY score, m.id DESC LIMIT ?"
    args.append(limit)
    return conn.execute(sql, args).fetchall()


def search_digests(
    conn: sqlite3.Connection, profile: str, terms: list[str], limit: int
) -> list[Any]:
    """Digests (every column plus ``rank``) whose narrative or decisions match any term."""
    q, params = tsquery(terms)
    return conn.execute(
        f"SELECT d.*, -ts_rank_cd(d.fts, {q}) AS rank FROM digests d "
        f"WHERE d.fts @@ {q} AND d.profile = ? ORDER BY rank, d.id DESC LIMIT ?",
        (*params, *params, profile, limit),
    ).fetchall()


def search_chunks(
    conn: sqlite3.Connection, profile: str, terms: list[str], *, any_term: bool, limit: int
) -> list[Any]:
    """Active knowledge-base chunks matching ``terms``, best first, the heading weighted
    twice the body (weights A = 1.0, B = 0.5), with their document's source, title, version."""
    q, params = tsquery(terms, "||" if any_term else "&&")
    return conn.execute(
        "SELECT c.id, c.document_id, d.source, d.title, d.version, c.heading, c.content, "
        f"-ts_rank_cd('{{0.1, 0.2, 0.5, 1.0}}', c.fts, {q}) AS score "
        "FROM kb_chunks c JOIN kb_documents d ON d.id = c.document_id "
        f"WHERE c.fts @@ {q} AND c.profile = ? AND d.status = 'active' "
        "ORDER BY score, c.id LIMIT ?",
        (*params, *params, profile, limit),
    ).fetchall()
