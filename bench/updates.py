"""Knowledge updates: does the context show a changed fact's current value, never the old alone?

    python bench/updates.py [--data bench/data/updates.json] [--budgets 500,2000] [--json]

Each case of ``bench/data/updates.json`` (rheo's own cases, written for this benchmark) states
a value, later changes it (a price, an address, a date moved, a person replaced), with
unrelated turns around, and asks a question after. The turns are written through the engine's
write path at their dates; the facts an extractor would have stored from them are written
with ``remember`` (source turn = the turn they came from), so the newer one supersedes the
older by rheo's own rules. Then the context for the question is assembled, a day after the
last turn, and scored:

- **current-value recall**: the current value appears in the context;
- **stale-only rate**: an older value appears without the current one (the failure this
  guards against: the model answering with what is no longer true); also counted within
  RELEVANT HISTORY alone (CURRENT MEMORY usually carries the current fact; history must not
  contradict it with an unmarked old line).

``--turns-only`` stores no facts (a store before extraction has run).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rheo_cli.memory.context import assemble as context
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.retrieval.lines import RELEVANT_HISTORY
from rheo_cli.memory.store import db
from rheo_cli.memory.store.settings import Settings

DEFAULT_DATA = ROOT / "bench" / "data" / "updates.json"
BUDGETS = (500, 2000)
PROFILE = "bench"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
FILLER = (
    "Can you suggest a recipe with lentils and spinach?",
    "I watched a documentary about deep sea fish last night.",
    "What's a good way to learn Spanish verbs quickly?",
    "The kids want a trampoline for the garden, any safety tips?",
    "Write me a short thank-you note for my neighbour.",
    "How long should I boil an egg for a soft yolk?",
    "I'm reading a novel set in 1920s Shanghai, it's gripping.",
    "Any ideas for a rainy Sunday afternoon?",
)
"""Unrelated turns written around each case's own, a few a day."""
OTHER_FACTS = tuple(
    f"Enjoys {thing}"
    for thing in (
        "jazz records",
        "hiking in the Alps",
        "Korean cooking",
        "chess puzzles",
        "sea swimming",
        "old maps",
        "board games",
        "sourdough baking",
        "birdwatching",
        "crime podcasts",
        "woodworking",
        "salsa dancing",
        "film photography",
        "growing chillies",
        "sci-fi novels",
        "trail running",
        "pottery",
        "ceramics fairs",
        "vintage bikes",
        "opera",
    )
)
"""Other stored facts, so CURRENT MEMORY cannot simply show every fact at a small budget."""


def build(case: dict[str, Any], folder: Path, settings: Settings, *, facts: bool) -> Any:
    """A fresh store holding the case's turns (with filler around them) and, with
    ``facts``, the facts drawn from them; returns ``(conn, time of the question)``."""
    conn = db.open_store(folder / f"case{case['id']}.db")
    ids: list[int] = []
    last = START
    for n, turn in enumerate(case["turns"]):
        day = START + timedelta(days=turn["day"])
        for k in range(2):
            ledger.append_turn(
                conn,
                profile=PROFILE,
                role="user",
                content=FILLER[(n * 2 + k + len(case["id"])) % len(FILLER)],
                now=day - timedelta(hours=3 - k),
                gap_s=settings.gap_s,
            )
        appended = ledger.append_turn(
            conn,
            profile=PROFILE,
            role=turn["role"],
            content=turn["text"],
            now=day,
            gap_s=settings.gap_s,
            status="ok" if turn["role"] == "assistant" else None,
        )
        ids.append(appended.turn.id)
        last = day
    if facts:
        for n, label in enumerate(OTHER_FACTS):
            remember(
                conn,
                Fact(category="preference", topic=f"hobby {n}", label=label),
                source="tool",
                now=START + timedelta(minutes=n),
                settings=settings,
                source_turn_id=ids[0],
            )
        for fact in case["facts"]:
            when = START + timedelta(days=case["turns"][fact["turn"]]["day"], minutes=1)
            remember(
                conn,
                Fact(category="fact", topic=fact["topic"], label=fact["label"]),
                source="tool",
                now=when,
                settings=settings,
                source_turn_id=ids[fact["turn"]],
            )
    return conn, last + timedelta(days=1)


def score(cases: list[dict[str, Any]], budgets: tuple[int, ...], *, facts: bool) -> dict[str, Any]:
    """Current-value recall and stale-only rate per budget, with the failing case ids."""
    settings = Settings()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="rheo-updates-") as tmp:
        built = [build(case, Path(tmp), settings, facts=facts) for case in cases]
        for budget in budgets:
            current = stale_only = 0
            missed: list[str] = []
            stale_cases: list[str] = []
            history_stale: list[str] = []
            for case, (conn, now) in zip(cases, built, strict=True):
                ctx = context.assemble(
                    conn,
                    profile=PROFILE,
                    message=case["question"],
                    now=now,
                    settings=settings,
                    budget=budget,
                )
                body = "\n".join(s.render() for s in ctx.sections)
                history = ctx.section(RELEVANT_HISTORY)
                shown = history.render() if history else ""
                if any(v in shown for v in case["stale"]) and not any(
                    v in shown for v in case["current"]
                ):
                    history_stale.append(case["id"])
                has_current = any(v in body for v in case["current"])
                has_stale = any(v in body for v in case["stale"])
                current += has_current
                if not has_current:
                    missed.append(case["id"])
                if has_stale and not has_current:
                    stale_only += 1
                    stale_cases.append(case["id"])
            out[str(budget)] = {
                "current_value_recall": round(current / len(cases), 4),
                "stale_only_rate": round(stale_only / len(cases), 4),
                "missed": missed,
                "stale_only": stale_cases,
                "history_stale_only_rate": round(len(history_stale) / len(cases), 4),
                "history_stale_only": history_stale,
                "cases": len(cases),
            }
        for conn, _ in built:
            conn.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--budgets", default=",".join(map(str, BUDGETS)))
    parser.add_argument("--turns-only", action="store_true", help="store no facts")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    try:
        cases = json.loads(args.data.read_text(encoding="utf-8"))["cases"]
        budgets = tuple(int(b) for b in args.budgets.split(",") if b.strip())
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"updates: cannot read {args.data} or --budgets: {exc}", file=sys.stderr)
        return 2
    out = score(cases, budgets, facts=not args.turns_only)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"{'budget':>7} {'current-value recall':>21} {'stale-only':>11} "
        f"{'stale-only in history':>22}  current value missing in"
    )
    for budget in budgets:
        r = out[str(budget)]
        fails = ", ".join(r["missed"]) or "-"
        print(
            f"{budget:>7} {r['current_value_recall']:>21.1%} {r['stale_only_rate']:>11.1%} "
            f"{r['history_stale_only_rate']:>22.1%}  {fails}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
