"""Speed at scale: rheo's own work on stores of 10k, 100k and 1M turns, and whole commands.

    python bench/scale.py [--size N] [--runs R] [--llm PATH] [--keep DIR] [--json]
                          [--backend sqlite|postgres] [--database-url URL]

For each size a store is generated (seeded, reproducible) through the engine's bulk write path:
about 10 turns per session, sessions spread over 5 years, varied lengths and a Zipf-shaped
vocabulary with names and numbers, a second profile, 10,000 memory items with their events and
1,000 digests. Then, min / median / p95 over repeated runs:

- engine: bulk ingest (turns/s), context assembly for varied messages, history search, memory
  list (ms); database size; this process's peak RSS;
- whole processes: ``rheo --help``, ``rheo memory list``, ``rheo history search``, and
  ``rheo ask`` against a local Messages-API server (process start -> request received by the
  server, and total), with the ask's peak RSS; side by side, the ``llm`` CLI
  (``pip install llm llm-anthropic``) asking the same server, and the ratio.

Nothing leaves the machine: the model calls go to ``tests/fakeapi.py`` on 127.0.0.1.

``--backend postgres`` builds each store in a fresh schema on the PostgreSQL server at
``--database-url`` (or $RHEO_BENCH_DATABASE_URL / $RHEO_TEST_DATABASE_URL; see
``bench/backends.py``), through the same engine calls, then runs ``VACUUM ANALYZE`` on it (what
autovacuum does to a freshly loaded table, done at once so the measures do not depend on
when it wakes up); the whole-process commands get ``RHEO_DATABASE_URL``. The schema is
dropped at the end.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from backends import Stores, add_arguments, database_url

from rheo_cli.memory.bulk import ItemIn, TurnIn, import_items, import_turns
from rheo_cli.memory.context import assemble as context
from rheo_cli.memory.facts import items
from rheo_cli.memory.ledger import digests
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.retrieval.baseline import plain_bm25
from rheo_cli.memory.store.errors import StoreError
from rheo_cli.memory.store.settings import Settings

SIZES = (10_000, 100_000, 1_000_000)
PROFILE = "default"
OTHER = "work"
START = datetime(2021, 12, 1, 8, 0, tzinfo=UTC)
YEARS = 5

COMMON = """the be to of and a in that have i it for not on with he as you do at this but his by
from they we say her she or an will my one all would there their what so up out if
about who get which go me when make can like time no just him know take people into
year your good some could them see other than then now look only come its over think
also back after use two how our work first well way even new want because any these
give day most us is was are were had has did said got made went thought told asked
feel need really should very much still here where why more many little great right
old big high different small large next early young important few public bad same able
last long own other week month plan call meeting email send idea problem question
project team money home family friend kids school doctor car house trip book film
music food dinner lunch coffee tea weekend morning evening""".split()  # noqa: SIM905
SYLLABLES = """ka ri to mo ne sa lu vi pe ra no ti ma ko re zu bel dor fin gar hel jon kel lim mar
nor pol quin ros sel tan ul ver wil xan yor zel ant bri cor dru eth fal gri hol isk
jal kro lon mev nix orb pry qua rud sty tor urn vex wim yel zor""".split()  # noqa: SIM905


def _word(rng: random.Random, parts: int) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(parts))


@dataclass
class Vocabulary:
    """Words drawn with Zipf-like weights, plus names."""

    words: list[str]
    cum_weights: list[float]
    names: list[str]


def vocabulary(rng: random.Random) -> Vocabulary:
    """Common English words first, then 6,000 invented words, heavier at the top (Zipf)."""
    invented = list(dict.fromkeys(_word(rng, rng.choice((2, 2, 3, 3, 4))) for _ in range(7000)))
    words = COMMON + [w for w in invented if w not in COMMON][:6000]
    weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(words))]
    names = list(dict.fromkeys(_word(rng, 2).capitalize() for _ in range(400)))[:300]
    return Vocabulary(words, list(itertools.accumulate(weights)), names)


def sentence(rng: random.Random, vocab: Vocabulary) -> str:
    """One sentence of 4-18 words, sometimes with a name or a number."""
    n = rng.randint(4, 18)
    words = rng.choices(vocab.words, cum_weights=vocab.cum_weights, k=n)
    if rng.random() < 0.25:
        words[rng.randrange(n)] = rng.choice(vocab.names)
    if rng.random() < 0.1:
        words[rng.randrange(n)] = str(rng.choice((rng.randint(1, 31), rng.randint(1990, 2030))))
    text = " ".join(words)
    return text[0].upper() + text[1:] + rng.choice(".?.!.")


def turn_text(rng: random.Random, vocab: Vocabulary, role: str) -> str:
    """A turn: a few sentences; replies are longer; one turn in a hundred is a long paste."""
    if rng.random() < 0.01:
        count = rng.randint(30, 80)
    elif role == "user":
        count = rng.randint(1, 3)
    else:
        count = rng.randint(2, 8)
    return " ".join(sentence(rng, vocab) for _ in range(count))


def generate_turns(
    n: int, rng: random.Random, vocab: Vocabulary
) -> tuple[list[TurnIn], list[TurnIn]]:
    """``n`` turns in sessions of about 10 over 5 years, 5% of them in a second profile."""
    lengths: list[int] = []
    planned = 0
    while planned < n:
        lengths.append(min(max(2, min(40, int(rng.expovariate(0.1)))), n - planned))
        planned += lengths[-1]
    span = YEARS * 365 * 86400
    starts = sorted(rng.uniform(0, span) for _ in lengths)
    main: list[TurnIn] = []
    other: list[TurnIn] = []
    for length, offset in zip(lengths, starts, strict=True):
        when = START + timedelta(seconds=offset)
        target = other if rng.random() < 0.05 else main
        for i in range(length):
            role = "user" if i % 2 == 0 else "assistant"
            when += timedelta(seconds=rng.randint(20, 240))
            target.append(
                TurnIn(
                    role,
                    turn_text(rng, vocab, role),
                    when,
                    model="claude-sonnet-5-5" if role == "assistant" else None,
                    status="ok" if role == "assistant" else None,
                )
            )
    return main, other


def _act_for(conn: Any, profile: str) -> None:
    """On PostgreSQL a connection writes for one tenant: switch it (SQLite: nothing to do)."""
    if hasattr(conn, "set_tenant"):
        conn.set_tenant(profile)


def build(
    stores: Stores, name: str, n: int, seed: int = 7, *, items_count: int = 10_000
) -> dict[str, Any]:
    """Generate a store of ``n`` turns (and ``items_count`` memory items, 50 of them active)
    as ``stores``' store ``name``; return build figures."""
    rng = random.Random(seed)
    vocab = vocabulary(rng)
    main, other = generate_turns(n, rng, vocab)
    conn = stores.open(name, PROFILE)
    settings = Settings()
    started = time.perf_counter()
    done = import_turns(conn, PROFILE, main, gap_s=settings.gap_s)
    _act_for(conn, OTHER)
    import_turns(conn, OTHER, other, gap_s=settings.gap_s)
    _act_for(conn, PROFILE)
    ingest_s = time.perf_counter() - started
    first, last = done.first_id or 1, done.last_id or 1
    user_ids = [
        r[0]
        for r in conn.execute(
            "SELECT id FROM turns WHERE profile = ? AND role = 'user' AND id % 7 = 0", (PROFILE,)
        )
    ]
    statuses = ["superseded"] * 60 + ["evicted"] * 30 + ["retracted"] * 5 + ["done"] * 5
    topics = [
        f"{rng.choice(vocab.words[200:1200])} {rng.choice(vocab.words[200:3000])}"
        for _ in range(3000)
    ]
    facts = []
    for i in range(items_count):
        source = rng.choice(user_ids) if user_ids else None
        when = START + timedelta(seconds=rng.uniform(0, YEARS * 365 * 86400))
        status = "active" if i >= items_count - 50 else rng.choice(statuses)
        later = when + timedelta(days=rng.randint(1, 90))
        history = tuple(
            [("reinforced", when + timedelta(days=1), "mentioned again")] * rng.randint(0, 2)
            + (
                [(status if status != "done" else "done", later, "bench")]
                if status != "active"
                else []
            )
        )
        facts.append(
            ItemIn(
                category=rng.choice(items.CATEGORIES),
                topic=rng.choice(topics),
                label=sentence(rng, vocab)[:200],
                when=when,
                source_turn_id=source,
                confidence=round(rng.uniform(0.5, 1.0), 2),
                reinforcements=1 + len(history),
                pinned=rng.random() < 0.02,
                status=status,
                events=history,
            )
        )
    import_items(conn, PROFILE, facts)
    session_ids = [
        r[0]
        for r in conn.execute("SELECT id FROM sessions WHERE profile = ? ORDER BY id", (PROFILE,))
    ]
    for session_id in rng.sample(session_ids, min(1000, len(session_ids))):
        ids = [t.id for t in ledger.session_turns(conn, PROFILE, session_id)]
        digests.store_digest(
            conn,
            profile=PROFILE,
            session_id=session_id,
            narrative=" ".join(sentence(rng, vocab) for _ in range(3)),
            facts=[],
            procedures=[],
            decisions=[sentence(rng, vocab)],
            source_turn_ids=ids,
            model="bench",
            created_at="2026-11-01T00:00:00.000Z",
        )
    if stores.backend == "sqlite":
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    stores.settle(name)
    return {
        "turns": n,
        "ingest_s": ingest_s,
        "ingest_turns_per_s": n / ingest_s,
        "first_id": first,
        "last_id": last,
        "vocab": vocab,
    }


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"min": ordered[0], "median": statistics.median(ordered), "p95": p95}


def messages(vocab: Vocabulary, rng: random.Random) -> list[str]:
    """Varied messages: follow-ups, questions with rare words or names, time expressions,
    common words only, CJK, and a long paste."""
    rare = vocab.words[2000:6000]
    out = [
        "thanks, that helps",
        "and what about the other one?",
        f"what did we discuss about {rng.choice(vocab.names)} last month?",
        f"remind me about the {rng.choice(rare)} {rng.choice(rare)} plan",
        f"when is the meeting with {rng.choice(vocab.names)} about {rng.choice(rare)}?",
        "what did we talk about last week?",
        f"{rng.choice(vocab.words[200:800])} {rng.choice(vocab.words[200:800])} idea",
        "what should I cook for dinner with the kids this weekend?",
        f"did I send the email to {rng.choice(vocab.names)} in March?",
        "東京の会議はいつですか",
        " ".join(sentence(rng, vocab) for _ in range(40)),
    ]
    out += [
        f"{rng.choice(rare)} {rng.choice(vocab.words[100:1000])} {rng.choice(rare)}?"
        for _ in range(9)
    ]
    return out


def engine_measures(stores: Stores, name: str, info: dict[str, Any], runs: int) -> dict[str, Any]:
    """Context assembly, history search and memory list through the engine, in ms."""
    rng = random.Random(11)
    vocab: Vocabulary = info["vocab"]
    conn = stores.reopen(name, PROFILE)
    settings = Settings()
    last_ts = conn.execute("SELECT max(ts) FROM turns WHERE profile = ?", (PROFILE,)).fetchone()[0]
    now = datetime.fromisoformat(last_ts.replace("Z", "+00:00")) + timedelta(minutes=5)
    texts = messages(vocab, rng)
    assembly: list[float] = []
    plain_messages: list[float] = []
    for _ in range(runs):
        for text in texts:
            started = time.perf_counter()
            context.assemble(conn, profile=PROFILE, message=text, now=now, settings=settings)
            assembly.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            plain_bm25(conn, PROFILE, text, limit=50)
            plain_messages.append((time.perf_counter() - started) * 1000)
    queries = [rng.choice(vocab.words[1500:6000]) for _ in range(6)] + [
        rng.choice(vocab.names),
        "meeting",
        "project plan",
        '"the meeting"',
    ]
    search: list[float] = []
    plain_searches: list[float] = []
    for _ in range(runs):
        for q in queries:
            started = time.perf_counter()
            ledger.search_turns(conn, PROFILE, q, limit=20)
            search.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            plain_bm25(conn, PROFILE, q, limit=50)
            plain_searches.append((time.perf_counter() - started) * 1000)
    listing: list[float] = []
    for _ in range(runs * 5):
        started = time.perf_counter()
        found = items.list_items(conn, PROFILE)
        [i.to_json(now, settings) for i in found]
        listing.append((time.perf_counter() - started) * 1000)
    conn.close()
    size = stores.size_bytes(name)
    context_ms, search_ms = _stats(assembly), _stats(search)
    plain_m, plain_s = _stats(plain_messages), _stats(plain_searches)
    return {
        "context_ms": context_ms,
        "plain_bm25_messages_ms": plain_m,
        "context_vs_plain_p95": context_ms["p95"] / max(plain_m["p95"], 1e-6),
        "search_ms": search_ms,
        "plain_bm25_searches_ms": plain_s,
        "search_vs_plain_p95": search_ms["p95"] / max(plain_s["p95"], 1e-6),
        "memory_list_ms": _stats(listing),
        "db_bytes": size,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


GNU_TIME = "/usr/bin/time" if Path("/usr/bin/time").exists() else None


def _run(argv: list[str], env: dict[str, str], *, rss: bool = False) -> tuple[float, float]:
    """Run a command; return (wall seconds, peak RSS MB or NaN).

    The peak RSS comes from GNU time (a child forked by this big process would report this
    process's memory as its own), so it is NaN where /usr/bin/time is missing."""
    wrapped = [GNU_TIME, "-f", "%M", *argv] if rss and GNU_TIME else argv
    started = time.monotonic()
    proc = subprocess.run(wrapped, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.monotonic() - started
    err = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])}... exited {proc.returncode}: {err[-300:]}")
    peak = float("nan")
    if rss and GNU_TIME:
        peak = int(err.strip().splitlines()[-1]) / 1024
    return wall, peak


def process_measures(
    folder: Path, runs: int, llm: str | None, store_url: str | None = None
) -> dict[str, Any]:
    """Whole-process wall times of rheo commands, and rheo ask vs llm on the fake API; with
    ``store_url`` the commands use that PostgreSQL store (RHEO_DATABASE_URL)."""
    from fakeapi import FakeAnthropic, text

    rheo = [sys.executable, "-m", "rheo_cli"]
    exe = shutil.which("rheo", path=str(Path(sys.executable).parent))
    if exe:
        rheo = [exe]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("RHEO_", "ANTHROPIC_"))}
    env = {**base_env, "RHEO_HOME": str(folder), "RHEO_WORKER": "off", "NO_COLOR": "1"}
    if store_url:
        env["RHEO_DATABASE_URL"] = store_url
    out: dict[str, Any] = {}
    for name, args in (
        ("help", ["--help"]),
        ("memory_list", ["memory", "list"]),
        ("history_search", ["history", "search", "meeting"]),
    ):
        walls = [_run(rheo + args, env)[0] * 1000 for _ in range(runs)]
        out[f"{name}_ms"] = _stats(walls)
    with FakeAnthropic() as api:
        api.default = text("A short reply from the fake API.")
        ask_env = {**env, "ANTHROPIC_BASE_URL": api.base_url, "ANTHROPIC_API_KEY": "bench-key"}
        to_request, totals, rss = [], [], []
        for n in range(runs):
            before = len(api.requests)
            started = time.monotonic()
            wall, peak = _run(
                rheo + ["ask", f"what did we decide about the meeting {n}?"], ask_env, rss=True
            )
            request = api.requests[before]
            to_request.append((request.received_at - started) * 1000)
            totals.append(wall * 1000)
            rss.append(peak)
        out["ask_to_request_ms"] = _stats(to_request)
        out["ask_total_ms"] = _stats(totals)
        out["ask_peak_rss_mb"] = _stats(rss)
        if llm:
            llm_env = {
                **base_env,
                "ANTHROPIC_BASE_URL": api.base_url,
                "ANTHROPIC_API_KEY": "bench-key",
                "LLM_USER_PATH": str(folder / "llm"),
            }
            llm_totals, llm_req = [], []
            for n in range(runs):
                before = len(api.requests)
                started = time.monotonic()
                wall, _ = _run(
                    [
                        llm,
                        "-m",
                        "claude-sonnet-4.5",
                        "--no-log",
                        f"what did we decide about the meeting {n}?",
                    ],
                    llm_env,
                )
                llm_req.append((api.requests[before].received_at - started) * 1000)
                llm_totals.append(wall * 1000)
            out["llm_to_request_ms"] = _stats(llm_req)
            out["llm_total_ms"] = _stats(llm_totals)
            out["ask_vs_llm_ratio"] = statistics.median(totals) / statistics.median(llm_totals)
    return out


def sdk_import_ms(runs: int) -> dict[str, float]:
    """How long ``import anthropic`` takes in a fresh interpreter (ms)."""
    walls = []
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", "import anthropic"], check=True)
        walls.append((time.monotonic() - started) * 1000)
    bare = []
    for _ in range(runs):
        started = time.monotonic()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        bare.append((time.monotonic() - started) * 1000)
    return {"import_anthropic_ms": statistics.median(walls) - statistics.median(bare)}


def _fmt(stat: dict[str, float]) -> str:
    return f"{stat['min']:8.2f} {stat['median']:8.2f} {stat['p95']:8.2f}"


def print_table(size: int, r: dict[str, Any]) -> None:
    """One table for one store size."""
    print(f"\n{size:,} turns ({r.get('backend', 'sqlite')})")
    print(f"{'measure':<34} {'min':>8} {'median':>8} {'p95':>8}")
    print("-" * 62)
    print(f"{'ingest (turns/s)':<34} {r['ingest_turns_per_s']:>26,.0f}")
    for key, label in (
        ("context_ms", "context assembly (ms)"),
        ("plain_bm25_messages_ms", "plain bm25 top-50, messages (ms)"),
        ("search_ms", "history search (ms)"),
        ("plain_bm25_searches_ms", "plain bm25 top-50, searches (ms)"),
        ("memory_list_ms", "memory list (ms)"),
        ("help_ms", "rheo --help, whole (ms)"),
        ("memory_list_ms_proc", "rheo memory list, whole (ms)"),
        ("history_search_ms", "rheo history search, whole (ms)"),
        ("ask_to_request_ms", "rheo ask: start -> request (ms)"),
        ("ask_total_ms", "rheo ask, whole (ms)"),
        ("ask_peak_rss_mb", "rheo ask peak RSS (MB)"),
        ("llm_to_request_ms", "llm: start -> request (ms)"),
        ("llm_total_ms", "llm, whole (ms)"),
    ):
        if key in r:
            print(f"{label:<34} {_fmt(r[key])}")
    print(f"{'assembly p95 / plain bm25 p95':<34} {r['context_vs_plain_p95']:>26.2f}")
    print(f"{'search p95 / plain bm25 p95':<34} {r['search_vs_plain_p95']:>26.2f}")
    if "ask_vs_llm_ratio" in r:
        print(f"{'rheo ask / llm (median, whole)':<34} {r['ask_vs_llm_ratio']:>26.2f}")
    print(f"{'database on disk (MB)':<34} {r['db_bytes'] / 1e6:>26.1f}")
    if r.get("server"):
        srv = r["server"]
        print(
            f"server: PostgreSQL {srv['server_version']} as {srv['role']} (superuser: "
            f"{'yes' if srv['superuser'] else 'no'}, BYPASSRLS: "
            f"{'yes' if srv['bypassrls'] else 'no'}, ts_match_vq LEAKPROOF: "
            f"{'yes' if srv['ts_match_vq_leakproof'] else 'no'})"
        )
    print(f"load average before / after: {r['load_before']} / {r['load_after']}")
    print(f"{'bench process peak RSS (MB)':<34} {r['peak_rss_mb']:>26.1f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--size",
        type=int,
        action="append",
        help="store size in turns (repeatable; default 10k, 100k and 1M)",
    )
    parser.add_argument("--runs", type=int, default=5, help="repetitions of each measure")
    parser.add_argument(
        "--llm",
        default=shutil.which("llm"),
        help="path of the llm CLI to compare with (default: on PATH)",
    )
    parser.add_argument("--keep", type=Path, help="build stores here and keep them")
    parser.add_argument(
        "--pg-keep",
        action="store_true",
        help="PostgreSQL: keep each store (schema rheo_bench_keep_rheo_<size>) and measure it "
        "again on the next run instead of building it anew",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--engine-only",
        action="store_true",
        help="only the in-process engine measures (no whole-process runs, no llm)",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    sizes = tuple(args.size or SIZES)
    if any(n < 100 for n in sizes) or args.runs < 1:
        print("scale: --size must be at least 100 and --runs at least 1", file=sys.stderr)
        return 2
    url = database_url(args.database_url)
    if args.backend == "postgres" and not url:
        print(
            "scale: --backend postgres needs --database-url or RHEO_BENCH_DATABASE_URL",
            file=sys.stderr,
        )
        return 2
    if args.backend == "postgres" and args.keep:
        print("scale: --keep keeps SQLite files only (PostgreSQL: --pg-keep)", file=sys.stderr)
        return 2
    try:
        return _run_sizes(args, sizes, url)
    except StoreError as exc:
        print(f"scale: {exc}", file=sys.stderr)
        return 1


def _run_sizes(args: argparse.Namespace, sizes: tuple[int, ...], url: str | None) -> int:
    sdk = {"import_anthropic_ms": float("nan")} if args.engine_only else sdk_import_ms(args.runs)
    results: dict[str, Any] = {"sdk": sdk, "sizes": {}}
    for size in sizes:
        holder = tempfile.TemporaryDirectory(prefix=f"rheo-scale-{size}-")
        folder = (args.keep / str(size)) if args.keep else Path(holder.name)
        folder.mkdir(parents=True, exist_ok=True)
        keep = args.backend == "postgres" and args.pg_keep
        stores = Stores(
            args.backend,
            folder=folder,
            url=url,
            leakproof_match=args.pg_leakproof_match,
            keep=keep,
        )
        name = f"rheo_{size}" if keep else "rheo"
        load_before = os.getloadavg()
        try:
            if keep:
                reuse = stores.built(name)
            else:  # a SQLite file kept by --keep is measured again
                reuse = args.backend == "sqlite" and stores.path(name).exists()
            if not reuse:
                info = build(stores, name, size)
                stores.mark_built(name)
            else:
                info = {
                    "turns": size,
                    "ingest_turns_per_s": float("nan"),
                    "vocab": vocabulary(random.Random(7)),
                }
            r: dict[str, Any] = {
                "backend": args.backend,
                "ingest_turns_per_s": info["ingest_turns_per_s"],
                "server": stores.describe(),
                "load_before": [round(x, 2) for x in load_before],
            }
            r.update(engine_measures(stores, name, info, args.runs))
            r["load_after"] = [round(x, 2) for x in os.getloadavg()]
            if not args.engine_only:
                store_url = stores.store_url(name) if args.backend == "postgres" else None
                proc = process_measures(folder, args.runs, args.llm, store_url)
                proc["memory_list_ms_proc"] = proc.pop("memory_list_ms")
                r.update(proc)
        finally:
            stores.close()
            holder.cleanup()
        results["sizes"][str(size)] = r
        if not args.json:
            print_table(size, r)
    if args.json:
        flat = {
            size: {
                "ingest_turns_per_s": round(r["ingest_turns_per_s"], 1),
                "context_p50_ms": round(r["context_ms"]["median"], 3),
                "context_p95_ms": round(r["context_ms"]["p95"], 3),
                "search_p50_ms": round(r["search_ms"]["median"], 3),
                "search_p95_ms": round(r["search_ms"]["p95"], 3),
                "plain_bm25_messages_p95_ms": round(r["plain_bm25_messages_ms"]["p95"], 3),
                "plain_bm25_searches_p95_ms": round(r["plain_bm25_searches_ms"]["p95"], 3),
                "context_vs_plain_p95": round(r["context_vs_plain_p95"], 3),
                "search_vs_plain_p95": round(r["search_vs_plain_p95"], 3),
                "db_bytes": r["db_bytes"],
                "peak_rss_mb": round(r["peak_rss_mb"], 1),
                "server": r["server"],
                "load_before": r["load_before"],
                "load_after": r["load_after"],
                "detail": {k: v for k, v in r.items() if isinstance(v, dict | float | int)},
            }
            for size, r in results["sizes"].items()
        }
        print(json.dumps({"backend": args.backend, "sdk": results["sdk"], "sizes": flat}, indent=2))
    else:
        print(f"\nimport anthropic alone: {results['sdk']['import_anthropic_ms']:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
