"""Search ranks by bm25 on both stores: the scores PostgreSQL computes are FTS5's.

Each test runs on SQLite and on PostgreSQL (the ``conn`` fixture) and checks the scores
against bm25 worked out by hand (FTS5's formula: k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) /
(n + 0.5)), at least 1e-6). The texts are chosen so both stores see the same words (no stop
words, stems both stemmers agree on) and every row matches the query, so the average length
is the same whether it is taken over the table (FTS5) or the matching rows (PostgreSQL).
PostgreSQL's own ``ts_rank_cd`` fails these: it has no inverse document frequency, so a row
repeating a word every row holds outranks the one row holding the rare word.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from rheo_cli.memory.facts import items, remember
from rheo_cli.memory.facts.remember import Fact
from rheo_cli.memory.kb import documents
from rheo_cli.memory.kb.search import search_chunks
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.retrieval.baseline import plain_bm25
from rheo_cli.memory.store.settings import Settings

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
S = Settings()


def bm25(tf: list[float], df: list[int], total: int, length: int, average: float) -> float:
    """FTS5's bm25 of one row: term counts ``tf``, rows holding each term ``df``."""
    out = 0.0
    for f, n in zip(tf, df, strict=True):
        idf = max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6)
        out += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * length / average))
    return out


def test_item_search_scores_are_fts5_bm25(conn):
    labels = [
        "garden garden garden tomatoes ripen",  # the common word, three times
        "garden fence painted green",
        "zucchini seeds ordered",  # the rare word, once
    ]
    for n, label in enumerate(labels):
        remember.remember(
            conn,
            Fact(category="fact", topic="garden", label=label),
            source="manual",
            now=T0 + timedelta(minutes=n),
            settings=S,
            profile="default",
        )
    found = items.search_items(conn, "default", "garden zucchini")
    assert [i.label for i, _ in found][0] == "zucchini seeds ordered"
    lengths = {labels[0]: 6, labels[1]: 5, labels[2]: 4}  # the topic's word + the label's
    average = sum(lengths.values()) / 3
    tf = {labels[0]: [4, 0], labels[1]: [2, 0], labels[2]: [1, 1]}
    for item, score in found:
        expected = bm25(tf[item.label], [3, 1], 3, lengths[item.label], average)
        assert -score == pytest.approx(expected, rel=1e-9), item.label


def test_knowledge_search_weighs_the_heading_twice_as_fts5_does(conn):
    text = (
        "# Garden\n\ngarden tomatoes ripen\n\n"
        "# Zucchini\n\ngarden seeds ordered\n\n"
        "# Fence\n\ngarden fence painted green zucchini\n"
    )
    documents.add_document(conn, "default", "/notes/garden.md", text, T0)
    found = search_chunks(conn, "default", "zucchini garden")
    assert [p.heading for p in found] == ["Zucchini", "Fence", "Garden"]
    # heading words count twice in a term's count, once in the length
    rows = {
        "Garden": ([2 * 1 + 1, 0], 4),
        "Zucchini": ([1, 2 * 1], 4),
        "Fence": ([1, 1], 6),
    }
    average = sum(length for _, length in rows.values()) / 3
    for passage in found:
        counts, length = rows[passage.heading]
        expected = bm25(counts, [3, 2], 3, length, average)
        assert -passage.score == pytest.approx(expected, rel=1e-9), passage.heading


def _turns(conn, texts):
    ids = []
    for n, text in enumerate(texts):
        appended = ledger.append_turn(
            conn,
            profile="default",
            role="user",
            content=text,
            now=T0 + timedelta(minutes=n),
            gap_s=S.gap_s,
        )
        ids.append(appended.turn.id)
    return ids


def test_the_plain_baseline_ranks_by_bm25_on_both_stores(conn):
    ids = _turns(
        conn,
        [
            "garden garden garden garden tomatoes",
            "garden zucchini",
            "garden fence painted",
            "garden hose",
        ],
    )
    # zucchini (one turn in four) outweighs garden (every turn) however often it is said
    assert plain_bm25(conn, "default", "garden zucchini", limit=4)[0] == ids[1]


def test_history_search_ranks_the_rare_word_first_on_both_stores(conn):
    ids = _turns(
        conn,
        [
            "garden garden garden garden tomatoes",
            "garden zucchini",
            "garden fence painted",
            "garden hose",
        ],
    )
    found = ledger.search_turns(conn, "default", "garden zucchini", any_term=True, limit=4)
    assert [t.id for t, _ in found][0] == ids[1]
    assert len({round(s, 9) for _, s in found}) > 1  # ranked, not listed newest first
