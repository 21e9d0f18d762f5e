"""LoCoMo evidence recall of rheo's injected context, against two baselines, per token budget.

    python bench/locomo.py [--data PATH] [--budgets 500,1000,2000,4000] [--limit N] [--json]
                           [--conversations 1-5] [--held-out 6-10] [--explain-misses]

For each conversation of the data set (default ``../shared/bench/locomo10.json``; LoCoMo,
Maharana et al., ACL 2024, CC BY-NC 4.0 — read from there, never copied into this repository):

1. a fresh store; every session's turns written through the engine's own write path with the
   clock at the session's date (speaker A as the person, speaker B as the assistant), the
   file's ``observation`` facts written as memory items (source turn = their dialogue id) and
   its ``session_summary`` as digests — no model involved;
2. for each question of categories 1-4 (any category but 5 in other files), the context is
   assembled with the question as the message, a day after the last session, under each
   budget, and scored by **evidence recall**: the share of the question's evidence turns present
   in the context, verbatim or through an item or digest whose source turns include it.
   ``strict`` recall counts only turns shown verbatim or through an item.

Baselines, same budgets and line format: ``recent`` (the conversation's last turns only) and
``bm25`` (plain FTS5 bm25 top-k over turns, best first until the budget is full).

``--explain-misses`` also classifies every evidence turn rheo's context misses, at each budget
(`classify_misses`): never a candidate, a candidate ranked out, displaced by a section's
share, or crowded out by lines that repeat what other kept lines already stand for.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from backends import Stores, add_arguments, database_url  # noqa: E402  (bench/backends.py)

from rheo_cli.memory.context import assemble as context
from rheo_cli.memory.context.budget import section_overhead
from rheo_cli.memory.context.sources import turn_prefix
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.ledger import digests
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.retrieval.baseline import plain_bm25
from rheo_cli.memory.store.errors import StoreError
from rheo_cli.memory.store.settings import Settings
from rheo_cli.memory.store.timeutil import to_stored
from rheo_cli.memory.text.render import entry
from rheo_cli.memory.text.tokens import estimate

_DATA_PLACES = (
    ROOT.parent / "shared" / "bench" / "locomo10.json",  # beside the checkout
    Path("/work/shared/bench/locomo10.json"),  # beside a worktree of it
)
DEFAULT_DATA = next((p for p in _DATA_PLACES if p.exists()), _DATA_PLACES[0])
BUDGETS = (500, 1000, 2000, 4000)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
TURN_STEP_S = 30
PROFILE = "bench"


def parse_date(raw: str) -> datetime:
    """A session date: LoCoMo's ``1:56 pm on 8 May, 2023`` or ISO 8601 (UTC if no offset)."""
    text = raw.strip()
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            pass
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


_DIA = re.compile(r"D:?(\d+):0*(\d+)")


def parse_evidence(raw: Any) -> list[str]:
    """Normalise evidence ids: ``"D8:6; D9:17"``, ``"D:11:26"``, ``"D30:05"`` ->
    ``["D8:6", "D9:17"]``, ``["D11:26"]``, ``["D30:5"]``; junk like ``"D"`` is dropped."""
    items = raw if isinstance(raw, list) else [raw]
    out: list[str] = []
    for item in items:
        for session, turn in _DIA.findall(str(item)):
            ident = f"D{int(session)}:{int(turn)}"
            if ident not in out:
                out.append(ident)
    return out


def session_numbers(conv: dict[str, Any]) -> list[int]:
    """The session numbers that have turns (conv-26 has dates without sessions)."""
    nums = [int(m.group(1)) for k in conv if (m := re.fullmatch(r"session_(\d+)", k))]
    return sorted(
        n for n in nums if isinstance(conv[f"session_{n}"], list) and conv[f"session_{n}"]
    )


def turn_text(turn: dict[str, Any]) -> str:
    """A turn's text, with the caption of a shared photo (the only usable trace of it)."""
    text = str(turn.get("text", ""))
    if turn.get("blip_caption"):
        text += f" [shares a photo: {turn['blip_caption']}]"
    return text


@dataclass
class Store:
    """One conversation loaded into a fresh rheo store."""

    conn: Any
    dia_to_turn: dict[str, int]
    end: datetime
    write_s: float
    turns: int


def build_store(
    sample: dict[str, Any],
    stores: Stores | Path,
    settings: Settings,
    *,
    turns_only: bool = False,
) -> Store:
    """Write a conversation, its observations and its summaries through the engine into a
    fresh store of ``stores`` (a SQLite file or a PostgreSQL schema); with ``turns_only`` only
    its turns (a store before extraction has run, or where it failed)."""
    if isinstance(stores, Path):
        stores = Stores("sqlite", folder=stores)
    conv = sample["conversation"]
    speaker_a = conv.get("speaker_a")
    conn = stores.open(str(sample.get("sample_id", "conv")), PROFILE)
    dia_to_turn: dict[str, int] = {}
    session_turn_ids: dict[int, list[int]] = {}
    session_ids: dict[int, int] = {}
    end = datetime(1970, 1, 1, tzinfo=UTC)
    started = time.perf_counter()
    count = 0
    for n in session_numbers(conv):
        start = parse_date(conv[f"session_{n}_date_time"])
        previous = None
        for i, turn in enumerate(conv[f"session_{n}"]):
            role = "user" if turn.get("speaker") == speaker_a else "assistant"
            when = start + timedelta(seconds=TURN_STEP_S * i)
            appended = ledger.append_turn(
                conn,
                profile=PROFILE,
                role=role,
                content=turn_text(turn),
                now=when,
                gap_s=settings.gap_s,
                session_id=previous,
                status="ok" if role == "assistant" else None,
                new_session=previous is None,
            )
            previous = appended.turn.session_id
            session_ids[n] = previous
            dia_to_turn[str(turn.get("dia_id"))] = appended.turn.id
            session_turn_ids.setdefault(n, []).append(appended.turn.id)
            end = max(end, when)
            count += 1
    extras = not turns_only
    for key, per_speaker in ((sample.get("observation") or {}) if extras else {}).items():
        m = re.fullmatch(r"session_(\d+)_observation", key)
        if not m or not isinstance(per_speaker, dict):
            continue
        when = parse_date(conv[f"session_{m.group(1)}_date_time"])
        for facts in per_speaker.values():
            for fact in facts:
                if not isinstance(fact, list) or len(fact) < 2:
                    continue
                ids = parse_evidence(fact[1])
                source = dia_to_turn.get(ids[0]) if ids else None
                if source is None:
                    continue
                label = " ".join(str(fact[0]).split())[:480]
                remember(
                    conn,
                    Fact(category="fact", topic="", label=label, reason="observation"),
                    source="import",
                    now=when,
                    settings=settings,
                    source_turn_id=source,
                )
    for key, summary in ((sample.get("session_summary") or {}) if extras else {}).items():
        m = re.fullmatch(r"session_(\d+)_summary", key)
        if not m or int(m.group(1)) not in session_ids or not str(summary).strip():
            continue
        n = int(m.group(1))
        digests.store_digest(
            conn,
            profile=PROFILE,
            session_id=session_ids[n],
            narrative=str(summary),
            facts=[],
            procedures=[],
            decisions=[],
            source_turn_ids=session_turn_ids[n],
            model="locomo session_summary",
            created_at=to_stored(end),
        )
    return Store(conn, dia_to_turn, end, time.perf_counter() - started, count)


def _fill(lines: list[tuple[str, int]], budget: int) -> tuple[set[int], int]:
    """Take ``(line, turn_id)`` in order while the budget allows; ids and tokens used."""
    used = estimate("=== HISTORY ===") + 2
    ids: set[int] = set()
    for text, turn_id in lines:
        cost = estimate(text) + 1
        if used + cost > budget:
            continue
        used += cost
        ids.add(turn_id)
    return ids, used if ids else 0


def recent_baseline(store: Store, question: str, budget: int) -> tuple[set[int], set[int], int]:
    """The conversation's last 12 turns, newest kept first."""
    turns = ledger.recent_turns(store.conn, PROFILE, 12)
    lines = [(entry(turn_prefix(t, UTC), t.content), t.id) for t in reversed(turns)]
    ids, used = _fill(lines, budget)
    return ids, ids, used


def bm25_baseline(store: Store, question: str, budget: int) -> tuple[set[int], set[int], int]:
    """Plain FTS5 bm25 over turns (any word of the question), best first."""
    best = plain_bm25(store.conn, PROFILE, question, limit=200)
    found = {t.id: t for t in ledger.get_turns(store.conn, PROFILE, best)}
    lines = [(entry(turn_prefix(found[i], UTC), found[i].content), i) for i in best]
    ids, used = _fill(lines, budget)
    return ids, ids, used


def rheo_context(
    store: Store, question: str, budget: int, settings: Settings, now: datetime
) -> context.Context:
    """rheo's assembled context for ``question`` (its candidates included)."""
    return context.assemble(
        store.conn, profile=PROFILE, message=question, now=now, settings=settings, budget=budget
    )


def context_ids(ctx: context.Context) -> tuple[set[int], set[int], int]:
    """Every turn a context stands for, the strict subset (no digests), and its tokens."""
    strict = {
        tid
        for s in ctx.sections
        for ln in s.lines
        if not ln.source.startswith("digest:")
        for tid in ln.turn_ids
    }
    return ctx.source_turn_ids(), strict, ctx.context_tokens


def rheo_method(
    store: Store, question: str, budget: int, settings: Settings, now: datetime
) -> tuple[set[int], set[int], int]:
    """rheo's assembled context: every turn it stands for, and the strict subset."""
    return context_ids(rheo_context(store, question, budget, settings, now))


MISS_KINDS = ("never", "ranked", "share", "duplicate")
"""How an evidence turn missing from the context was lost (see `classify_misses`)."""
MISS_NAMES = {
    "never": "never a candidate",
    "ranked": "candidate ranked out",
    "share": "displaced by a share",
    "duplicate": "crowded out by duplicates",
}


def redundant_tokens(ctx: context.Context) -> int:
    """Tokens of kept lines that add no turn: every turn such a line stands for is also
    stood for by another kept line (an item and its own source turn, a digest whose turns are
    all shown...). Lines are considered lowest rank first, and one found redundant no longer
    covers the others, so of two lines standing for the same turns one counts."""
    kept = sorted(
        (ln for s in ctx.sections for ln in s.lines if ln.turn_ids), key=lambda ln: ln.rank
    )
    alive = list(kept)
    total = 0
    for line in kept:
        others: set[int] = set()
        for other in alive:
            if other is not line:
                others.update(other.turn_ids)
        if set(line.turn_ids) <= others:
            alive.remove(line)
            total += line.tokens
    return total


def classify_misses(ctx: context.Context, missing: set[int]) -> dict[int, str]:
    """Why each of ``missing`` (evidence turn ids absent from ``ctx``) is absent, one of
    `MISS_KINDS`, decided in this order:

    - ``never``: no candidate line of any section stands for the turn;
    - ``share``: its best candidate line ranks above lines of other sections that were kept
      only because their section's guaranteed share took them in the first pass
      (`budget.allocate`), and would have fit in their tokens plus the budget left;
    - ``duplicate``: its best line would have fit in the budget left plus the tokens of kept
      lines that add no turn (`redundant_tokens`);
    - ``ranked``: otherwise — a candidate that ranked below what the budget could hold.
    """
    if not missing:
        return {}
    best: dict[int, tuple[str, Any]] = {}
    for name, lines in ctx.candidates.items():
        for line in lines:
            for tid in line.turn_ids:
                if tid in missing and (tid not in best or line.rank > best[tid][1].rank):
                    best[tid] = (name, line)
    kept_ids = {id(ln) for s in ctx.sections for ln in s.lines}
    by_share = [
        (name, line)
        for name, lines in ctx.by_share.items()
        for line in lines
        if id(line) in kept_ids
    ]
    # The budget left as the allocator counts it (line estimates plus section overheads; the
    # rendered text can estimate a few tokens less).
    charged = sum(
        section_overhead(s.name, s.preamble) + sum(ln.tokens for ln in s.lines)
        for s in ctx.sections
    )
    left = max(0, ctx.budget - charged)
    spare = left + redundant_tokens(ctx)
    out: dict[int, str] = {}
    for tid in missing:
        if tid not in best:
            out[tid] = "never"
            continue
        name, line = best[tid]
        below = sum(
            kept.tokens for other, kept in by_share if other != name and kept.rank < line.rank
        )
        if below and line.tokens <= left + below:
            out[tid] = "share"
        elif line.tokens <= spare:
            out[tid] = "duplicate"
        else:
            out[tid] = "ranked"
    return out


@dataclass
class Tally:
    """Recall sums for one method and budget."""

    recall: list[float] = field(default_factory=list)
    strict: list[float] = field(default_factory=list)
    by_category: dict[int, list[float]] = field(default_factory=dict)
    tokens: list[int] = field(default_factory=list)
    ms: list[float] = field(default_factory=list)
    evidence: int = 0
    misses: dict[str, int] = field(default_factory=dict)
    section_tokens: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        q = sorted(self.ms)
        extra: dict[str, Any] = {}
        if self.misses or self.section_tokens:
            n = len(self.recall) or 1
            extra = {
                "evidence_turns": self.evidence,
                "misses": {k: self.misses.get(k, 0) for k in MISS_KINDS},
                "mean_section_tokens": {
                    k: round(v / n, 1) for k, v in sorted(self.section_tokens.items())
                },
            }
        return {
            "recall": _mean(self.recall),
            "strict_recall": _mean(self.strict),
            "by_category": {str(c): _mean(v) for c, v in sorted(self.by_category.items())},
            "mean_tokens": round(statistics.fmean(self.tokens), 1) if self.tokens else 0.0,
            "p50_ms": round(_pct(q, 50), 3),
            "p95_ms": round(_pct(q, 95), 3),
            "questions": len(self.recall),
            **extra,
        }


def _mean(values: list[float]) -> float:
    return round(statistics.fmean(values), 4) if values else 0.0


def _pct(sorted_values: list[float], pct: float) -> float:
    if not sorted_values:
        return 0.0
    k = max(0, min(len(sorted_values) - 1, round(pct / 100 * (len(sorted_values) - 1))))
    return sorted_values[k]


def evaluate(
    samples: list[dict[str, Any]],
    budgets: tuple[int, ...],
    settings: Settings,
    *,
    turns_only: bool = False,
    backend: str = "sqlite",
    database_url: str | None = None,
    leakproof_match: bool = False,
    explain_misses: bool = False,
    held_out: frozenset[int] = frozenset(),
) -> dict[str, Any]:
    """Run every method at every budget, each conversation in a fresh store on ``backend``
    (``sqlite``: a file in a temporary folder; ``postgres``: a schema on the server at
    ``database_url``, dropped at the end); return the JSON-able results. With
    ``explain_misses`` rheo's results also hold ``evidence_turns``, ``misses`` (kind -> count
    of missed evidence turns, `classify_misses`) and ``mean_section_tokens``. ``held_out``
    (0-based positions in ``samples``) are also tallied apart, under ``held_out_results``
    (the same shape as ``results``), in the same run."""
    methods = ("rheo", "recent", "bm25")
    tallies = {(m, b): Tally() for m in methods for b in budgets}
    apart = {(m, b): Tally() for m in methods for b in budgets}
    loaded: dict[str, Any] = {"conversations": 0, "turns": 0, "write_s": 0.0, "skipped": 0}
    with tempfile.TemporaryDirectory(prefix="rheo-locomo-") as tmp:
        stores = Stores(
            backend, folder=Path(tmp), url=database_url, leakproof_match=leakproof_match
        )
        try:
            for index, sample in enumerate(samples):
                _evaluate_in(
                    [sample],
                    budgets,
                    settings,
                    stores,
                    [tallies, apart] if index in held_out else [tallies],
                    loaded,
                    turns_only,
                    explain_misses,
                )
        finally:
            stores.close()
    results: dict[str, Any] = {m: {} for m in methods}
    for (method, budget), tally in tallies.items():
        results[method][str(budget)] = tally.to_json()
    extra: dict[str, Any] = {}
    if held_out:
        extra["held_out_results"] = {m: {} for m in methods}
        for (method, budget), tally in apart.items():
            extra["held_out_results"][method][str(budget)] = tally.to_json()
    return {
        "results": results,
        **extra,
        "skipped_questions": loaded.pop("skipped"),
        "loaded": {**loaded, "write_s": round(loaded["write_s"], 2)},
        "backend": backend,
    }


def _evaluate_in(
    samples: list[dict[str, Any]],
    budgets: tuple[int, ...],
    settings: Settings,
    stores: Stores,
    every: list[dict[tuple[str, int], Tally]],
    loaded: dict[str, Any],
    turns_only: bool,
    explain_misses: bool = False,
) -> None:
    for sample in samples:
        store = build_store(sample, stores, settings, turns_only=turns_only)
        loaded["conversations"] += 1
        loaded["turns"] += store.turns
        loaded["write_s"] += store.write_s
        now = store.end + timedelta(days=1)
        for qa in sample.get("qa") or []:
            category = qa.get("category")
            if category == 5 or not isinstance(category, int):
                continue
            wanted = {
                store.dia_to_turn[e]
                for e in parse_evidence(qa.get("evidence", []))
                if e in store.dia_to_turn
            }
            if not wanted:
                loaded["skipped"] += 1
                continue
            question = str(qa.get("question", ""))
            for budget in budgets:
                for method in ("rheo", "recent", "bm25"):
                    started = time.perf_counter()
                    ctx = None
                    if method == "rheo":
                        ctx = rheo_context(store, question, budget, settings, now)
                        ids, strict, used = context_ids(ctx)
                    elif method == "recent":
                        ids, strict, used = recent_baseline(store, question, budget)
                    else:
                        ids, strict, used = bm25_baseline(store, question, budget)
                    elapsed = (time.perf_counter() - started) * 1000
                    kinds = (
                        list(classify_misses(ctx, wanted - ids).values())
                        if explain_misses and ctx is not None
                        else []
                    )
                    for tallies in every:
                        tally = tallies[(method, budget)]
                        share = len(wanted & ids) / len(wanted)
                        tally.recall.append(share)
                        tally.strict.append(len(wanted & strict) / len(wanted))
                        tally.by_category.setdefault(category, []).append(share)
                        tally.tokens.append(used)
                        tally.ms.append(elapsed)
                        if explain_misses and ctx is not None:
                            _explain(tally, ctx, len(wanted), kinds)
        store.conn.close()


def _explain(tally: Tally, ctx: context.Context, evidence: int, kinds: list[str]) -> None:
    """Add one question's missed-evidence kinds and section tokens to ``tally``."""
    tally.evidence += evidence
    for kind in kinds:
        tally.misses[kind] = tally.misses.get(kind, 0) + 1
    for section in ctx.sections:
        tally.section_tokens[section.name] = (
            tally.section_tokens.get(section.name, 0) + section.tokens + 1
        )


def print_tables(out: dict[str, Any], budgets: tuple[int, ...], *, footer: bool = True) -> None:
    """One table per budget: recall overall and per category, tokens, latency (then, with
    ``footer``, what was loaded)."""
    cats = sorted(
        {int(c) for m in out["results"].values() for r in m.values() for c in r["by_category"]}
    )
    for budget in budgets:
        print(f"\nbudget {budget} tokens")
        head = (
            f"{'method':<8} {'recall':>7} {'strict':>7} "
            + " ".join(f"{CATEGORY_NAMES.get(c, f'cat {c}'):>11}" for c in cats)
            + f" {'tokens':>7} {'p50 ms':>7} {'p95 ms':>7} {'n':>5}"
        )
        print(head)
        print("-" * len(head))
        for method in ("rheo", "recent", "bm25"):
            r = out["results"][method][str(budget)]
            print(
                f"{method:<8} {r['recall']:>7.1%} {r['strict_recall']:>7.1%} "
                + " ".join(f"{r['by_category'].get(str(c), 0):>11.1%}" for c in cats)
                + f" {r['mean_tokens']:>7.0f} {r['p50_ms']:>7.2f} {r['p95_ms']:>7.2f}"
                f" {r['questions']:>5}"
            )
    rheo = out["results"]["rheo"]
    if any("misses" in rheo[str(b)] for b in budgets):
        print_misses(out, budgets)
    if not footer:
        return
    loaded = out["loaded"]
    print(
        f"\n{out.get('backend', 'sqlite')}: {loaded['conversations']} conversation(s), "
        f"{loaded['turns']} turns written in "
        f"{loaded['write_s']} s; {out['skipped_questions']} question(s) without usable evidence"
    )


def print_misses(out: dict[str, Any], budgets: tuple[int, ...]) -> None:
    """The table of rheo's missed evidence turns per budget and kind, and where the budget
    went (mean tokens per section)."""
    print("\nrheo's missed evidence turns (share of all evidence turns)")
    head = f"{'budget':>6} {'evidence':>8} {'missed':>13} " + " ".join(
        f"{MISS_NAMES[k]:>26}" for k in MISS_KINDS
    )
    print(head)
    print("-" * len(head))
    for budget in budgets:
        r = out["results"]["rheo"][str(budget)]
        n = r["evidence_turns"] or 1
        missed = sum(r["misses"].values())
        cells = " ".join(f"{r['misses'][k]:>17} ({r['misses'][k] / n:>5.1%})" for k in MISS_KINDS)
        print(f"{budget:>6} {r['evidence_turns']:>8} {missed:>5} ({missed / n:>5.1%}) {cells}")
    print("\nmean tokens per section")
    names = sorted(
        {k for b in budgets for k in out["results"]["rheo"][str(b)]["mean_section_tokens"]}
    )
    print(f"{'budget':>6} " + " ".join(f"{k:>17}" for k in names))
    for budget in budgets:
        tokens = out["results"]["rheo"][str(budget)]["mean_section_tokens"]
        print(f"{budget:>6} " + " ".join(f"{tokens.get(k, 0):>17.0f}" for k in names))


def pick(spec: str, count: int) -> list[int]:
    """Conversation numbers (1-based) from ``1-5``, ``6-10`` or ``1,3,7``; raises ValueError
    for anything else or a number outside 1..``count``."""
    chosen: list[int] = []
    for part in spec.split(","):
        low, _, high = part.strip().partition("-")
        first, last = int(low), int(high or low)
        if not 1 <= first <= last <= count:
            raise ValueError(spec)
        chosen.extend(n for n in range(first, last + 1) if n not in chosen)
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        type=Path,
        default=DEFAULT_DATA,
        help=f"LoCoMo-format JSON (default {DEFAULT_DATA})",
    )
    parser.add_argument(
        "--budgets", default=",".join(map(str, BUDGETS)), help="comma-separated token budgets"
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N conversations")
    parser.add_argument(
        "--conversations",
        default=None,
        help="which conversations, 1-based: 1-5, 6-10 or 1,3,7 (default all)",
    )
    parser.add_argument(
        "--turns-only",
        action="store_true",
        help="ignore the file's observation and session_summary (no memory items, no digests)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--explain-misses",
        action="store_true",
        help="classify every evidence turn rheo's context misses (never a candidate, ranked "
        "out, displaced by a share, crowded out by duplicates) and print the table",
    )
    parser.add_argument(
        "--held-out",
        default=None,
        help="conversations (1-based, as --conversations) also reported on their own, from "
        "the same run: e.g. 6-10",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    url = database_url(args.database_url)
    if args.backend == "postgres" and not url:
        print(
            "locomo: --backend postgres needs --database-url or RHEO_BENCH_DATABASE_URL",
            file=sys.stderr,
        )
        return 2
    try:
        samples = json.loads(args.data.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"locomo: cannot read {args.data}: {exc}", file=sys.stderr)
        return 1
    if isinstance(samples, dict):
        samples = [samples]
    try:
        budgets = tuple(int(b) for b in args.budgets.split(",") if b.strip())
    except ValueError:
        print("locomo: --budgets takes integers, e.g. 500,1000", file=sys.stderr)
        return 2
    if args.limit is not None:
        samples = samples[: args.limit]
    if args.conversations:
        try:
            chosen = pick(args.conversations, len(samples))
        except ValueError:
            print("locomo: --conversations takes 1-5, 6-10 or 1,3,7", file=sys.stderr)
            return 2
        samples = [samples[i - 1] for i in chosen]
    else:
        chosen = list(range(1, len(samples) + 1))
    held_out: frozenset[int] = frozenset()
    if args.held_out:
        try:
            apart = set(pick(args.held_out, max(chosen, default=0)))
        except ValueError:
            print("locomo: --held-out takes 6-10 or 1,3,7", file=sys.stderr)
            return 2
        held_out = frozenset(pos for pos, n in enumerate(chosen) if n in apart)
    try:
        out = evaluate(
            samples,
            budgets,
            Settings(),
            turns_only=args.turns_only,
            backend=args.backend,
            database_url=url,
            leakproof_match=args.pg_leakproof_match,
            explain_misses=args.explain_misses,
            held_out=held_out,
        )
    except StoreError as exc:
        print(f"locomo: {exc}", file=sys.stderr)
        return 1
    out["budgets"] = list(budgets)
    out["turns_only"] = args.turns_only
    out["conversations"] = args.conversations or "all"
    out["data"] = str(args.data)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print_tables(out, budgets)
        if "held_out_results" in out:
            print(f"\n=== conversations {args.held_out} alone (the same run) ===")
            print_tables({**out, "results": out["held_out_results"]}, budgets, footer=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
