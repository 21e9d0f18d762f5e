"""Full-text search on the PostgreSQL store: the counterparts of the engine's FTS5 queries.

Each function returns rows with the same columns, order and score convention as the SQLite
query it stands in for (``rank``/``score`` lower is better: minus the row's bm25), so the store's
methods (`PostgresStore`) give the engine the same rows on both stores. Words come from
`text.fts.terms` (FTS5 strings); `tsquery` turns them into ``phraseto_tsquery`` / prefix
``to_tsquery`` calls on the ``english`` configuration (stemming like FTS5's porter
tokenizer), so any text a person types is a safe query here too.

Ranking is FTS5's bm25, computed in the query (`bm25_query`), not PostgreSQL's ``ts_rank_cd``
(a proximity score without inverse document frequency, which ranks a match on a word every
row holds as high as one on a rare word): the same formula, constants and clamping as
SQLite's ``bm25()``, over the tenant's own rows. Turns found by history search are ranked by
the engine itself (`ledger.turns`), on both stores.

Row-level security already limits every query to the connection's tenant; every query here
names the profile too, as every engine query does, so a connection that row-level security
does not bind (a superuser, a role with BYPASSRLS) still reads one profile's rows. A cost to
know: PostgreSQL applies a
policy before any condition of the query that is not LEAKPROOF, and neither ``@@``
(``ts_match_vq``) nor ``LIKE`` is, so under rheo's policies these searches read every row
of the tenant instead of using the GIN and trigram indexes (the time grows with the ledger;
BENCHMARKS.md measures it). A superuser can mark ``ts_match_vq`` LEAKPROOF, after which
the planner uses the index; the results are the same either way.
"""

from __future__ import annotations

from typing import Any

from ..api import Connection
from .schema import CJK_CLASS

CJK_MATCH = f"content ~ '{CJK_CLASS}'"
"""The partial trigram index's predicate, repeated in queries so the planner uses it."""


def _term(term: str) -> tuple[str, str, bool]:
    """``(SQL tsquery call with one ? parameter, its parameter, prefix)`` for one FTS5 term."""
    prefix = term.endswith("*")
    body = term[:-1] if prefix else term
    text = body[1:-1].replace('""', '"') if body.startswith('"') else body
    if prefix and text.replace("_", "").isalnum():
        return "to_tsquery('rheo_english', ?)", f"'{text}':*", True
    return "phraseto_tsquery('rheo_english', ?)", text, False


def tsquery(terms: list[str], joiner: str = "||") -> tuple[str, list[str]]:
    """``(SQL tsquery expression, parameters)`` for FTS5 terms (``"word"``, ``"two words"``,
    ``"pre"*``): ``||`` accepts any term, ``&&`` requires all."""
    parts: list[str] = []
    params: list[str] = []
    for term in terms:
        call, param, _prefix = _term(term)
        parts.append(call)
        params.append(param)
    if not parts:
        return "''::tsquery", []
    return "(" + f" {joiner} ".join(parts) + ")", params


K1 = 1.2
B = 0.75
"""bm25's constants, FTS5's (``k1`` saturates a word's count, ``b`` normalises by length)."""
MIN_IDF = 1e-6
"""FTS5 gives a word held by half the rows or more this inverse document frequency."""


def bm25_query(
    profile: str,
    *,
    select: str,
    source: str,
    alias: str,
    table: str,
    where: str,
    args: list[Any],
    terms: list[str],
    any_term: bool,
    order: str,
    limit: int,
    weighted: bool = False,
    total: str | None = None,
    score: str = "score",
) -> tuple[str, list[Any]]:
    """``(SQL, parameters)`` of a search ranked by bm25 as SQLite FTS5 computes it.

    For each term i (a word, a phrase or a prefix), over the rows of ``table`` the tenant
    holds: ``idf_i = max(ln((N - n_i + 0.5) / (n_i + 0.5)), 1e-6)`` with N rows and n_i of
    them matching term i; a row's score is ``sum_i idf_i * f_i * (k1 + 1) / (f_i + k1 * (1 - b
    + b * |D| / avgdl))``, where f_i is how often the term occurs in the row (a phrase: its
    rarest word's count; a prefix: every word it starts), |D| the row's indexed words and
    avgdl their average over the rows holding any of the words, whatever ``where`` keeps
    (FTS5 takes the whole table's; reading every row's length would cost a scan per
    search). ``weighted``: a word in the ``A`` part of the vector (a heading) counts twice in
    f_i (not in |D|), as ``bm25(fts, 2.0, 1.0)`` weighs the first column.

    ``select`` are the result columns (of ``source``, whose row alias is ``alias`` and has
    ``fts`` and ``profile`` columns), among ``profile``'s rows; ``where`` extra conditions
    (``" AND ..."``) with their ``args``; the rows come best first, ties by ``order``
    (columns of ``hits``, the matching rows), at most ``limit``, each with ``score`` (or the
    name given) = minus its bm25 (lower is better, like FTS5's ``rank``). ``total`` is SQL
    for N with one ``?`` (the profile) instead of counting ``table`` (the ledger's size comes
    from its sessions). The terms travel as arrays, so the statement's text is the same
    whatever the query (psycopg prepares it once per connection). Raises ValueError without
    terms.
    """
    if not terms:
        raise ValueError("bm25_query needs at least one term")
    calls = [_term(t) for t in terms]
    texts = [c[1] for c in calls]
    words = [c[1][1:-3] if c[2] else c[1] for c in calls]
    prefixes = [c[2] for c in calls]
    joiner = " | " if any_term else " & "
    occurrences = (
        "(SELECT sum(CASE WHEN w = 'A' THEN 2 ELSE 1 END) FROM unnest(u.weights) w)"
        if weighted
        else "cardinality(u.positions)"
    )
    total_sql = total or f"SELECT count(*) FROM {table} WHERE profile = ?"
    average = "SELECT greatest(avg(dl), 1) AS avgdl FROM hits"
    average_args: list[Any] = []
    if where:  # the average over every row holding the words, whatever the filters keep
        average = (
            "SELECT greatest(avg((SELECT sum(cardinality(u.positions)) FROM unnest(x.fts) u)), 1) "
            f"AS avgdl FROM {table} x WHERE x.fts @@ (SELECT q FROM qa) AND x.profile = ?"
        )
        average_args = [profile]
    sql = (
        # Each term: its tsquery, its words (lexemes) and how many of the tenant's rows hold it.
        "WITH qt AS MATERIALIZED (SELECT a.i, a.p, "
        "CASE WHEN a.p THEN to_tsquery('rheo_english', a.s) "
        "ELSE phraseto_tsquery('rheo_english', a.s) END AS q, "
        "tsvector_to_array(to_tsvector('rheo_english', a.w)) AS l "
        "FROM unnest(?::text[], ?::text[], ?::boolean[]) WITH ORDINALITY AS a(s, w, p, i)), "
        f"qs AS MATERIALIZED (SELECT qt.*, (SELECT count(*) FROM {table} x "
        "WHERE x.fts @@ qt.q AND x.profile = ?)::float8 AS n FROM qt), "
        # The whole query (any term, or all) and N.
        "qa AS MATERIALIZED (SELECT (string_agg('(' || q::text || ')', ?) "
        "FILTER (WHERE numnode(q) > 0))::tsquery AS q, "
        f"({total_sql})::float8 AS n FROM qt), "
        # The matching rows, each with its length and each term's count in it.
        f"hits AS MATERIALIZED (SELECT {select}, "
        f"(SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest({alias}.fts) u)"
        "::float8 AS dl, "
        f"(SELECT array_agg(CASE WHEN {alias}.fts @@ qs.q THEN greatest(1, "
        f"(SELECT CASE WHEN qs.p THEN sum({occurrences}) ELSE min({occurrences}) END "
        f"FROM unnest({alias}.fts) u WHERE CASE WHEN qs.p THEN starts_with(u.lexeme, qs.l[1]) "
        "ELSE u.lexeme = ANY(qs.l) END)) ELSE 0 END ORDER BY qs.i) FROM qs)::float8[] AS tf "
        f"FROM {source} WHERE {alias}.fts @@ (SELECT q FROM qa) AND {alias}.profile = ?{where}), "
        f"av AS MATERIALIZED ({average}) "
        f"SELECT hits.*, -(SELECT sum(greatest(ln((qa.n - qs.n + 0.5) / (qs.n + 0.5)), "
        f"{MIN_IDF}) * hits.tf[qs.i] * {K1 + 1} / (hits.tf[qs.i] + {K1} * (1 - {B} + {B} * "
        f"hits.dl / av.avgdl))) FROM qs, qa) AS {score} "
        f"FROM hits, av ORDER BY {score}, {order} LIMIT ?"
    )
    params = [texts, words, prefixes, profile, joiner, profile, profile, *args, *average_args]
    return sql, [*params, limit]


def window_turn_ids(
    conn: Connection,
    profile: str,
    terms: list[str],
    *,
    any_term: bool,
    newer_than: int | None,
    up_to: int | None,
    limit: int,
) -> list[int]:
    """Ids of ``profile``'s turns matching ``terms`` (any of them, or all), newest first: those
    with id > ``newer_than`` or id <= ``up_to`` (None: no bound), at most ``limit``. The
    engine ranks them itself (`ledger.turns.search_turns`), as on SQLite."""
    q, params = tsquery(terms, "||" if any_term else "&&")
    sql = f"SELECT id FROM turns WHERE fts @@ {q} AND profile = ?"
    args: list[Any] = [*params, profile]
    if newer_than is not None:
        sql += " AND id > ?"
        args.append(newer_than)
    if up_to is not None:
        sql += " AND id <= ?"
        args.append(up_to)
    rows = conn.execute(sql + " ORDER BY id DESC LIMIT ?", (*args, limit)).fetchall()
    return [int(r[0]) for r in rows]


def cjk_turn_ids(conn: Connection, profile: str, run: str, limit: int) -> list[int]:
    """Ids of ``profile``'s turns containing ``run`` (three or more CJK characters; the
    trigram index), newest first."""
    pattern = "%" + run.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = conn.execute(
        f"SELECT id FROM turns WHERE {CJK_MATCH} AND content LIKE ? AND profile = ? "
        "ORDER BY id DESC LIMIT ?",
        (pattern, profile, limit),
    ).fetchall()
    return [int(r[0]) for r in rows]


def word_turn_ids(conn: Connection, profile: str, terms: list[str], limit: int) -> list[int]:
    """Ids of ``profile``'s turns holding any of ``terms`` (the word's postings), at most
    ``limit``."""
    q, params = tsquery(terms)
    rows = conn.execute(
        f"SELECT id FROM turns WHERE fts @@ {q} AND profile = ? LIMIT ?",
        (*params, profile, limit),
    ).fetchall()
    return [int(r[0]) for r in rows]


def newest_word_turn_ids(conn: Connection, profile: str, terms: list[str], limit: int) -> list[int]:
    """Ids of ``profile``'s newest turns holding any of ``terms``."""
    q, params = tsquery(terms)
    rows = conn.execute(
        f"SELECT id FROM turns WHERE fts @@ {q} AND profile = ? ORDER BY id DESC LIMIT ?",
        (*params, profile, limit),
    ).fetchall()
    return [int(r[0]) for r in rows]


def trigram_turns(
    conn: Connection, profile: str, columns: str, grams: list[str], limit: int
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


def item_source_turns(conn: Connection, profile: str, terms: list[str], limit: int) -> list[Any]:
    """``(tid, rank)`` of memory items matching any of ``terms`` (not retracted, with a
    source turn), best first by bm25."""
    if not terms:
        return []
    sql, args = bm25_query(
        profile,
        select="m.id, m.source_turn_id AS tid",
        source="memory_items m",
        alias="m",
        table="memory_items",
        where=" AND m.status != 'retracted' AND m.source_turn_id IS NOT NULL",
        args=[],
        terms=terms,
        any_term=True,
        order="hits.id",
        limit=limit,
        score="rank",
    )
    return conn.execute(sql, args).fetchall()


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
    """Memory items (every column plus ``score``) matching ``terms``, best first by bm25;
    ``view`` is an extra ``(" AND ...", args)`` condition on ``m`` (an assistant's view of
    memory)."""
    if not terms:
        return []
    where = ""
    args: list[Any] = []
    if statuses is not None:
        where += f" AND m.status IN ({','.join('?' * len(statuses))})"
        args.extend(statuses)
    where += view[0]
    args.extend(view[1])
    sql, params = bm25_query(
        profile,
        select="m.*",
        source="memory_items m",
        alias="m",
        table="memory_items",
        where=where,
        args=args,
        terms=terms,
        any_term=any_term,
        order="hits.id DESC",
        limit=limit,
    )
    return conn.execute(sql, params).fetchall()


def search_digests(conn: Connection, profile: str, terms: list[str], limit: int) -> list[Any]:
    """Digests (every column plus ``rank``) whose narrative or decisions match any term, best
    first by bm25."""
    if not terms:
        return []
    sql, args = bm25_query(
        profile,
        select="d.*",
        source="digests d",
        alias="d",
        table="digests",
        where="",
        args=[],
        terms=terms,
        any_term=True,
        order="hits.id DESC",
        limit=limit,
        score="rank",
    )
    return conn.execute(sql, args).fetchall()


def search_chunks(
    conn: Connection, profile: str, terms: list[str], *, any_term: bool, limit: int
) -> list[Any]:
    """Active knowledge-base chunks matching ``terms``, best first by bm25 with the heading
    weighted twice the body (FTS5's ``bm25(kb_chunks_fts, 2.0, 1.0)``), with their document's
    source, title, version."""
    if not terms:
        return []
    sql, args = bm25_query(
        profile,
        select="c.id, c.document_id, d.source, d.title, d.version, c.heading, c.content",
        source="kb_chunks c JOIN kb_documents d ON d.id = c.document_id",
        alias="c",
        table="kb_chunks",
        where=" AND d.status = 'active'",
        args=[],
        terms=terms,
        any_term=any_term,
        order="hits.id",
        limit=limit,
        weighted=True,
    )
    return conn.execute(sql, args).fetchall()


def plain_turn_ids(conn: Connection, profile: str, terms: list[str], limit: int) -> list[int]:
    """Ids of ``profile``'s best ``limit`` turns holding any of ``terms`` by bm25 over every
    match (the plain baseline of `retrieval.baseline`), best first."""
    if not terms:
        return []
    sql, args = bm25_query(
        profile,
        select="t.id",
        source="turns t",
        alias="t",
        table="turns",
        where="",
        args=[],
        terms=terms,
        any_term=True,
        order="hits.id DESC",
        limit=limit,
        total="SELECT coalesce(sum(turns), 0) FROM sessions WHERE profile = ?",
    )
    return [int(r["id"]) for r in conn.execute(sql, args).fetchall()]
