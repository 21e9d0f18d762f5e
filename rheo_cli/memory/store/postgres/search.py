"""Full-text search on the PostgreSQL store: the counterparts of the engine's FTS5 queries,
read from the ``postings`` table.

Each function returns rows with the same columns, order and score convention as the SQLite
query it stands in for (``rank``/``score`` lower is better: minus the row's bm25), so the
store's methods (`PostgresStore`) give the engine the same rows on both stores. Words come from
`text.fts.terms` (FTS5 strings: ``"word"``, ``"two words"``, ``"pre"*``); the server turns
each into lexemes with the same text-search configuration the documents were indexed with
(``rheo_english``: PostgreSQL's English stemming and stop words, accents removed), so any
text a person types is a safe query here too.

Why postings and not ``tsvector @@ tsquery``: under row-level security PostgreSQL evaluates a
table's policy before any condition of the query that is not LEAKPROOF, and neither ``@@``
(``ts_match_vq``) nor ``LIKE`` is, so the GIN and trigram indexes could not be used: every
search read all of the tenant's rows (0.8 s per context at 100,000 turns). ``postings``
(`schema.M008_POSTINGS`: tenant, kind of document, lexeme, document, term frequency,
document length, positions; kept by triggers in the writer's transaction, under the same
policy) is read here with leakproof conditions only — text equality (``lexeme = ?``), a
``COLLATE "C"`` range for a prefix (``lexeme >= 'pre' AND lexeme < 'prf'``), integer
comparisons on the document — which the planner may use as index conditions beside the
policy's: a search costs what its words' postings cost, never the ledger's size. A phrase is
matched by positions (each word at its offset from the first), text without spaces (CJK) by
its character trigrams (kind ``c``), then checked against the text of the few candidates.

Ranking is FTS5's bm25 computed in the query (`_ranked`), with the tenant's own statistics
from its own postings: the same formula, constants and clamping as SQLite's ``bm25()``. Turns
found by history search are ranked by the engine itself (`ledger.turns`), on both stores.

Every query names the profile too, as every engine query does, so a connection that
row-level security does not bind (a superuser, a role with BYPASSRLS) still reads one
profile's rows.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass
from typing import Any

from ..api import Connection
from .schema import POSTING_KINDS, TRIGRAM_KIND

K1 = 1.2
B = 0.75
"""bm25's constants, FTS5's (``k1`` saturates a word's count, ``b`` normalises by length)."""
MIN_IDF = 1e-6
"""FTS5 gives a word held by half the rows or more this inverse document frequency."""

TURNS = POSTING_KINDS["turns"]
ITEMS = POSTING_KINDS["memory_items"]
DIGESTS = POSTING_KINDS["digests"]
CHUNKS = POSTING_KINDS["kb_chunks"]


@dataclass(frozen=True)
class Term:
    """One search term as lexemes: ``parts`` are ``(lexeme, offset)`` pairs, the offset being
    the word's position after the first one's (0 for the first; a phrase has several, stop
    words leaving gaps), ``prefix`` a term ending in ``*`` (each lexeme matches every lexeme
    it starts)."""

    parts: tuple[tuple[str, int], ...]
    prefix: bool


def _fts5_term(term: str) -> tuple[str, bool]:
    """``(text, prefix)`` of one FTS5 term (``"word"``, ``"two words"``, ``"pre"*``)."""
    prefix = term.endswith("*")
    body = term[:-1] if prefix else term
    text = body[1:-1].replace('""', '"') if body.startswith('"') else body
    return text, prefix and text.replace("_", "").isalnum()


_CACHE: weakref.WeakKeyDictionary[Any, tuple[float, dict[tuple[str, bool], Term | None]]] = (
    weakref.WeakKeyDictionary()
)
"""Per server connection, terms already turned into lexemes, with when the cache began (the
text-search configuration is the store's: a new connection asks again)."""
_CACHE_MAX = 4096
CACHE_S = 300.0
"""How long (seconds) a connection's terms are reused before the server is asked again (a
dictionary changed meanwhile, e.g. by a server upgrade, is seen after this long)."""


def forget(conn: object) -> None:
    """Drop ``conn``'s cached terms (after its text-search configuration changed)."""
    _CACHE.pop(getattr(conn, "raw", conn), None)


def _cache(conn: Connection) -> dict[tuple[str, bool], Term | None]:
    raw = getattr(conn, "raw", conn)
    now = time.monotonic()
    try:
        began, cache = _CACHE.get(raw, (now, {}))
        if now - began > CACHE_S or len(cache) > _CACHE_MAX:
            began, cache = now, {}
        _CACHE[raw] = (began, cache)
    except TypeError:  # not weakly referable: no cache
        cache = {}
    return cache


def resolve(conn: Connection, terms: list[str]) -> list[Term]:
    """The lexemes of FTS5 ``terms`` as the server's ``rheo_english`` gives them (one round
    trip for the ones this connection has not seen lately), in order; a term without any
    (stop words only, punctuation) is left out, as PostgreSQL leaves an empty query out."""
    wanted = [_fts5_term(t) for t in terms]
    cache = _cache(conn)
    missing = list(dict.fromkeys(w for w in wanted if w not in cache))
    if missing:
        rows = conn.execute(
            "SELECT a.i, u.lexeme, p.x FROM unnest(?::text[]) WITH ORDINALITY AS a(s, i) "
            "CROSS JOIN LATERAL unnest(to_tsvector('rheo_english', a.s)) AS u "
            "CROSS JOIN LATERAL unnest(u.positions) AS p(x)",
            ([text for text, _ in missing],),
        ).fetchall()
        found: dict[int, list[tuple[int, str]]] = {}
        for i, lexeme, position in rows:
            found.setdefault(int(i) - 1, []).append((int(position), str(lexeme)))
        for index, key in enumerate(missing):
            placed = sorted(found.get(index, []))
            if not placed:
                cache[key] = None
                continue
            first = placed[0][0]
            cache[key] = Term(tuple((lex, pos - first) for pos, lex in placed), key[1])
    out: list[Term] = []
    for key in wanted:
        term = cache.get(key)
        if term is not None:
            out.append(term)
    return out


def successor(prefix: str) -> str | None:
    """The least string greater than every string starting with ``prefix`` in code-point
    (``COLLATE "C"``) order: its last character incremented (surrogates skipped); None when
    there is none (every character is U+10FFFF)."""
    chars = list(prefix)
    while chars:
        code = ord(chars[-1]) + 1
        if code == 0xD800:
            code = 0xE000
        if code <= 0x10FFFF:
            chars[-1] = chr(code)
            return "".join(chars)
        chars.pop()
    return None


def _lexeme_cond(alias: str, lexeme: str, prefix: bool) -> tuple[str, list[Any]]:
    """A leakproof condition on ``alias.lexeme``: equality, or a ``COLLATE "C"`` range."""
    if not prefix:
        return f"{alias}.lexeme = ?", [lexeme]
    upper = successor(lexeme)
    if upper is None:
        return f"{alias}.lexeme >= ?", [lexeme]
    return f"{alias}.lexeme >= ? AND {alias}.lexeme < ?", [lexeme, upper]


def _bounds(alias: str, newer_than: int | None, up_to: int | None) -> tuple[str, list[Any]]:
    sql, args = "", []
    if newer_than is not None:
        sql += f" AND {alias}.doc > ?"
        args.append(newer_than)
    if up_to is not None:
        sql += f" AND {alias}.doc <= ?"
        args.append(up_to)
    return sql, args


def match_sql(
    profile: str,
    kind: str,
    term: Term,
    *,
    newer_than: int | None = None,
    up_to: int | None = None,
) -> tuple[str, list[Any]]:
    """``(SELECT doc, tf, dl ..., parameters)``: the tenant's documents of ``kind`` matching
    ``term`` (with ``newer_than < doc <= up_to`` where given), each with the term's count in
    it (a prefix: every lexeme it starts; a phrase: its rarest word's count, as FTS5 counts
    a phrase's tokens) and the document's length.

    Every condition on ``postings`` is leakproof (text and integer comparisons), so each is
    an index condition under row-level security. A single lexeme reads its postings in
    document order (``ORDER BY doc DESC LIMIT n`` stops early); a phrase reads its first
    word's postings and probes the others' by document, then checks the positions."""
    where = f"p0.profile = ? AND p0.kind = '{kind}'"
    args: list[Any] = [profile]
    cond, cargs = _lexeme_cond("p0", term.parts[0][0], term.prefix)
    bounds, bargs = _bounds("p0", newer_than, up_to)
    if len(term.parts) == 1:
        if not term.prefix:
            return (
                f"SELECT p0.doc, p0.tf, p0.dl FROM postings p0 WHERE {where} AND {cond}{bounds}",
                [*args, *cargs, *bargs],
            )
        return (
            "SELECT p0.doc, sum(p0.tf)::integer AS tf, max(p0.dl) AS dl FROM postings p0 "
            f"WHERE {where} AND {cond}{bounds} GROUP BY p0.doc",
            [*args, *cargs, *bargs],
        )
    # A phrase: one row per posting of each word, all at offsets consistent with one start.
    joins = ""
    jargs: list[Any] = []
    tfs = ["p0.tf"]
    checks = []
    for j, (lexeme, offset) in enumerate(term.parts[1:], start=1):
        jc, ja = _lexeme_cond(f"p{j}", lexeme, term.prefix)
        joins += (
            f" JOIN postings p{j} ON p{j}.profile = p0.profile AND p{j}.kind = p0.kind "
            f"AND {jc} AND p{j}.doc = p0.doc"
        )
        jargs += ja
        tfs.append(f"p{j}.tf")
        checks.append(f"(x + {int(offset)}) = ANY(p{j}.positions)")
    phrase = f"EXISTS (SELECT 1 FROM unnest(p0.positions) AS x WHERE {' AND '.join(checks)})"
    sql = (
        f"SELECT p0.doc, least({', '.join(tfs)}) AS tf, p0.dl FROM postings p0{joins} "
        f"WHERE {where} AND {cond}{bounds} AND {phrase}"
    )
    if term.prefix:  # several lexemes per word may match: one row per document
        sql = f"SELECT doc, max(tf) AS tf, max(dl) AS dl FROM ({sql}) AS ph GROUP BY doc"
    return sql, [*jargs, *args, *cargs, *bargs]


def _docs(conn: Connection, sql: str, args: list[Any]) -> list[int]:
    plain = conn.cursor()
    plain.row_factory = None
    plain.execute(sql, args)
    return [int(r[0]) for r in plain.fetchall()]


def newest_docs(
    conn: Connection,
    profile: str,
    kind: str,
    terms: list[Term],
    *,
    any_term: bool,
    newer_than: int | None = None,
    up_to: int | None = None,
    limit: int,
) -> list[int]:
    """Ids of the tenant's documents of ``kind`` matching any (or all) of ``terms``, newest
    first, at most ``limit``, within ``newer_than < id <= up_to`` where given. Any: each
    term's newest ``limit`` (a backward read of its postings that stops there), merged; all:
    the terms' documents joined on the id (the planner drives from the rarest)."""
    if not terms or limit <= 0:
        return []
    parts = [match_sql(profile, kind, t, newer_than=newer_than, up_to=up_to) for t in terms]
    args: list[Any] = []
    if any_term:
        selects = []
        for sql, sargs in parts:
            selects.append(f"(SELECT m.doc FROM ({sql}) AS m ORDER BY m.doc DESC LIMIT ?)")
            args += [*sargs, limit]
        sql = f"SELECT doc FROM ({' UNION '.join(selects)}) AS u ORDER BY doc DESC LIMIT ?"
        return _docs(conn, sql, [*args, limit])
    joined = ""
    for j, (sql, sargs) in enumerate(parts):
        joined += f"({sql}) AS m{j}" if j == 0 else f" JOIN ({sql}) AS m{j} USING (doc)"
        args += sargs
    return _docs(conn, f"SELECT doc FROM {joined} ORDER BY doc DESC LIMIT ?", [*args, limit])


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
    engine ranks them itself (`ledger.turns.search_turns`), as on SQLite. Terms without a
    lexeme (stop words) are left out; none left: []."""
    found = resolve(conn, terms)
    return newest_docs(
        conn,
        profile,
        TURNS,
        found,
        any_term=any_term,
        newer_than=newer_than,
        up_to=up_to,
        limit=limit,
    )


def word_turn_ids(conn: Connection, profile: str, terms: list[str], limit: int) -> list[int]:
    """Ids of ``profile``'s turns holding any of ``terms`` (the words' postings), at most
    ``limit``, in no particular order (a document frequency, capped)."""
    found = resolve(conn, terms)
    if not found or limit <= 0:
        return []
    if len(found) == 1:
        sql, args = match_sql(profile, TURNS, found[0])
        return _docs(conn, f"SELECT m.doc FROM ({sql}) AS m LIMIT ?", [*args, limit])
    return newest_docs(conn, profile, TURNS, found, any_term=True, limit=limit)


def newest_word_turn_ids(conn: Connection, profile: str, terms: list[str], limit: int) -> list[int]:
    """Ids of ``profile``'s newest ``limit`` turns holding any of ``terms``, newest first."""
    return newest_docs(conn, profile, TURNS, resolve(conn, terms), any_term=True, limit=limit)


def _trigrams(run: str) -> list[str]:
    return list(dict.fromkeys(run[i : i + 3] for i in range(len(run) - 2)))


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def cjk_turn_ids(conn: Connection, profile: str, run: str, limit: int) -> list[int]:
    """Ids of ``profile``'s turns containing ``run`` (three or more characters of a script
    written without spaces), newest first, at most ``limit``: the turns holding every one of
    its character trigrams (their postings), then checked against the text (the pieces may
    be apart)."""
    grams = _trigrams(run)
    if not grams or limit <= 0:
        return []
    return _docs(
        conn,
        "SELECT t.id FROM turns t WHERE t.id = ANY(ARRAY(SELECT p.doc FROM postings p "
        f"WHERE p.profile = ? AND p.kind = '{TRIGRAM_KIND}' AND p.lexeme = ANY(?) "
        "GROUP BY p.doc HAVING count(*) = ?)) AND t.profile = ? AND t.content LIKE ? "
        "ORDER BY t.id DESC LIMIT ?",
        [profile, grams, len(grams), profile, _like(run), limit],
    )


def trigram_turns(
    conn: Connection, profile: str, columns: str, grams: list[str], limit: int
) -> list[Any]:
    """Turns in scripts without spaces holding any of ``grams`` (three-character pieces of the
    message), most pieces first, then newest (``columns`` of ``turns t`` plus ``rank``: minus
    the number held), from the trigram postings."""
    if not grams or limit <= 0:
        return []
    return conn.execute(
        f"WITH g AS MATERIALIZED (SELECT p.doc, count(*) AS n FROM postings p "
        f"WHERE p.profile = ? AND p.kind = '{TRIGRAM_KIND}' AND p.lexeme = ANY(?) "
        "GROUP BY p.doc ORDER BY n DESC, p.doc DESC LIMIT ?) "
        f"SELECT {columns}, -g.n AS rank FROM g JOIN turns t ON t.id = g.doc "
        "WHERE t.profile = ? ORDER BY rank, t.id DESC",
        (profile, list(dict.fromkeys(grams)), limit, profile),
    ).fetchall()


def _ranked(
    conn: Connection,
    profile: str,
    kind: str,
    terms: list[str],
    *,
    any_term: bool,
    select: str,
    source: str,
    alias: str,
    where: str = "",
    args: list[Any] | None = None,
    total: str,
    descending: bool,
    limit: int,
    score: str = "score",
) -> list[Any]:
    """Rows of ``source`` (row alias ``alias``, columns ``select``) matching ``terms`` (any of
    them, or all), ranked by bm25 as SQLite FTS5 computes it, best first, ties by id (newest
    first when ``descending``), at most ``limit``, each with ``score`` (or the name given) =
    minus its bm25 (lower is better, like FTS5's ``rank``).

    Over the tenant's own documents of ``kind``, from its postings alone: for each term i,
    ``idf_i = max(ln((N - n_i + 0.5) / (n_i + 0.5)), 1e-6)`` with N documents (``total``:
    SQL with one ``?``, the profile) and n_i of them matching term i; a document's score is
    ``sum_i idf_i * f_i * (k1 + 1) / (f_i + k1 * (1 - b + b * |D| / avgdl))``, f_i the term's
    count in it (a knowledge heading's words counting twice, stored so in the postings),
    |D| its length, avgdl the average length of the documents matching the query, whatever
    ``where`` (extra conditions on the rows, ``" AND ..."``, with ``args``) keeps (FTS5 takes
    the whole table's; reading every row's length would cost a scan per search). Terms
    without a lexeme are left out; none left: [].
    """
    found = resolve(conn, terms)
    if not found or limit <= 0:
        return []
    matches = []
    params: list[Any] = []
    for i, term in enumerate(found, start=1):
        sql, sargs = match_sql(profile, kind, term)
        matches.append(f"SELECT {i} AS i, m.doc, m.tf, m.dl FROM ({sql}) AS m")
        params += sargs
    having = "" if any_term else f" HAVING count(*) = {len(found)}"
    order = f"{alias}.id DESC" if descending else f"{alias}.id"
    sql = (
        f"WITH pm AS MATERIALIZED ({' UNION ALL '.join(matches)}), "
        "pn AS MATERIALIZED (SELECT i, count(*)::float8 AS n FROM pm GROUP BY i), "
        f"pd AS MATERIALIZED (SELECT doc, max(dl)::float8 AS dl FROM pm GROUP BY doc{having}), "
        "pav AS MATERIALIZED (SELECT greatest(avg(dl), 1) AS avgdl FROM pd), "
        f"pt AS MATERIALIZED (SELECT ({total})::float8 AS n), "
        "ps AS MATERIALIZED (SELECT pm.doc, sum(greatest(ln((pt.n - pn.n + 0.5) / "
        f"(pn.n + 0.5)), {MIN_IDF}) * pm.tf * {K1 + 1} / (pm.tf + {K1} * (1 - {B} + {B} * "
        "pd.dl / pav.avgdl))) AS bm25 FROM pm JOIN pn USING (i) JOIN pd USING (doc), pt, pav "
        "GROUP BY pm.doc) "
        f"SELECT {select}, -ps.bm25 AS {score} FROM ps JOIN {source} ON {alias}.id = ps.doc "
        f"WHERE {alias}.profile = ?{where} ORDER BY {score}, {order} LIMIT ?"
    )
    return conn.execute(sql, [*params, profile, profile, *(args or []), limit]).fetchall()


def item_source_turns(conn: Connection, profile: str, terms: list[str], limit: int) -> list[Any]:
    """``(id, tid, rank)`` of memory items matching any of ``terms`` (not retracted, with a
    source turn), best first by bm25."""
    return _ranked(
        conn,
        profile,
        ITEMS,
        terms,
        any_term=True,
        select="m.id, m.source_turn_id AS tid",
        source="memory_items m",
        alias="m",
        where=" AND m.status != 'retracted' AND m.source_turn_id IS NOT NULL",
        total="SELECT count(*) FROM memory_items WHERE profile = ?",
        descending=False,
        limit=limit,
        score="rank",
    )


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
    where = ""
    args: list[Any] = []
    if statuses is not None:
        where += f" AND m.status IN ({','.join('?' * len(statuses))})"
        args.extend(statuses)
    where += view[0]
    args.extend(view[1])
    return _ranked(
        conn,
        profile,
        ITEMS,
        terms,
        any_term=any_term,
        select="m.*",
        source="memory_items m",
        alias="m",
        where=where,
        args=args,
        total="SELECT count(*) FROM memory_items WHERE profile = ?",
        descending=True,
        limit=limit,
    )


def search_digests(conn: Connection, profile: str, terms: list[str], limit: int) -> list[Any]:
    """Digests (every column plus ``rank``) whose narrative or decisions match any term, best
    first by bm25."""
    return _ranked(
        conn,
        profile,
        DIGESTS,
        terms,
        any_term=True,
        select="g.*",
        source="digests g",
        alias="g",
        total="SELECT count(*) FROM digests WHERE profile = ?",
        descending=True,
        limit=limit,
        score="rank",
    )


def search_chunks(
    conn: Connection, profile: str, terms: list[str], *, any_term: bool, limit: int
) -> list[Any]:
    """Active knowledge-base chunks matching ``terms``, best first by bm25 with the heading
    weighted twice the body (FTS5's ``bm25(kb_chunks_fts, 2.0, 1.0)``), with their document's
    source, title, version."""
    return _ranked(
        conn,
        profile,
        CHUNKS,
        terms,
        any_term=any_term,
        select="c.id, c.document_id, d.source, d.title, d.version, c.heading, c.content",
        source="kb_chunks c JOIN kb_documents d ON d.id = c.document_id",
        alias="c",
        where=" AND d.status = 'active'",
        total="SELECT count(*) FROM kb_chunks WHERE profile = ?",
        descending=False,
        limit=limit,
    )


def plain_turn_ids(conn: Connection, profile: str, terms: list[str], limit: int) -> list[int]:
    """Ids of ``profile``'s best ``limit`` turns holding any of ``terms`` by bm25 over every
    match (the plain baseline of `retrieval.baseline`), best first."""
    rows = _ranked(
        conn,
        profile,
        TURNS,
        terms,
        any_term=True,
        select="t.id",
        source="turns t",
        alias="t",
        total="SELECT coalesce(sum(turns), 0) FROM sessions WHERE profile = ?",
        descending=True,
        limit=limit,
    )
    return [int(r["id"]) for r in rows]
