"""Rendering speed of a long reply on a terminal: rheo's own time to show a streamed reply.

    python bench/render.py [--words 500,1000,3000] [--delta-words 3] [--runs 3] [--json]

A Markdown reply (headings, paragraphs, lists, code blocks; seeded, the same every run) is cut
into deltas of a few words, as the Messages API streams them, and fed to the reply renderer
(`rheo_cli.ui.stream.ReplyWriter`, rendered mode) writing to a pseudo-terminal (pty) of
100x40 whose other end is drained by a thread. Reported per size: deltas, bytes written to the
terminal, and rheo's time (wall and CPU of this process; median over runs) from the first
delta to the end of `finish()`. No model, no network: only rendering is measured. The
``--whole`` column re-renders the whole reply on every delta (what a naive live Markdown view
does), for comparison.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import pty
import random
import statistics
import struct
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rheo_cli.ui.stream import ReplyWriter

WORDS = " ".join(
    [
        "memory session digest ledger context budget token profile retrieval decay confidence",
        "commitment review garden tomato deploy friday report draft meeting budget travel",
        "sister water plants daily tests release notes schema index query window cache reply",
    ]
).split()


def reply(words: int, seed: int = 7) -> str:
    """A Markdown reply of about ``words`` words, mixing the block kinds models write."""
    rnd = random.Random(seed)
    out: list[str] = []
    count = 0

    def sentence(n: int) -> str:
        text = " ".join(rnd.choice(WORDS) for _ in range(n))
        return text[0].upper() + text[1:] + "."

    section = 0
    while count < words:
        kind = rnd.random()
        if count == 0 or kind < 0.1:
            section += 1
            out.append(f"## Part {section}: {sentence(3)[:-1]}")
            count += 5
        elif kind < 0.55:
            para = " ".join(sentence(rnd.randint(8, 16)) for _ in range(rnd.randint(2, 5)))
            out.append(para)
            count += len(para.split())
        elif kind < 0.8:
            items = [f"- **{rnd.choice(WORDS)}**: {sentence(rnd.randint(5, 12))}" for _ in range(4)]
            out.append("\n".join(items))
            count += sum(len(i.split()) for i in items)
        else:
            lines = [
                f"    value_{i} = {rnd.randint(0, 999)}  # {rnd.choice(WORDS)}" for i in range(5)
            ]
            out.append("```python\ndef step():\n" + "\n".join(lines) + "\n    return value_0\n```")
            count += 30
    return "\n\n".join(out) + "\n"


def deltas(text: str, per: int) -> list[str]:
    """``text`` cut into pieces of ``per`` words (whitespace kept), as a stream delivers it."""
    pieces: list[str] = []
    words = text.split(" ")
    for i in range(0, len(words), per):
        piece = " ".join(words[i : i + per])
        pieces.append(piece if i + per >= len(words) else piece + " ")
    return pieces


class Terminal:
    """A pseudo-terminal of ``cols`` x ``rows``; a thread reads (and counts) what is shown."""

    def __init__(self, cols: int = 100, rows: int = 40) -> None:
        self.master, self.slave = pty.openpty()
        fcntl.ioctl(self.slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        self.out = os.fdopen(self.slave, "w", encoding="utf-8", buffering=1)
        self.received = 0
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.received += len(data)

    def close(self) -> None:
        self.out.close()
        self._reader.join(timeout=5)
        os.close(self.master)


class WholeRerender(ReplyWriter):
    """The naive view for comparison: the whole reply re-rendered live on every delta."""

    def _render(self) -> None:
        if self._console is None:
            from rich.console import Console
            from rich.live import Live

            self._console = Console(file=self.out)
            self._live = Live(console=self._console, auto_refresh=False, transient=False)
            self._live.start()
        self._live.update(self._markdown(self.text), refresh=True)

    def finish(self) -> None:
        if self._live is not None:
            self._live.stop()
        self.finished = True


def measure(text: str, per: int, writer_class: type[ReplyWriter]) -> dict[str, float]:
    """Feed ``text`` in deltas to a rendered writer on a fresh pty; wall and CPU seconds."""
    term = Terminal()
    pieces = deltas(text, per)
    os.environ.setdefault("TERM", "xterm-256color")
    try:
        writer = writer_class(rendered=True, out=term.out)
        wall, cpu = time.perf_counter(), time.process_time()
        for piece in pieces:
            writer(piece)
        writer.finish()
        term.out.flush()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    finally:
        term.close()
    return {"deltas": len(pieces), "bytes": term.received, "wall_s": wall, "cpu_s": cpu}


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a table (or JSON)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", default="500,1000,3000", help="reply sizes, comma-separated")
    parser.add_argument("--delta-words", type=int, default=3, help="words per streamed delta")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--whole", action="store_true", help="also time the naive re-render")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    for size in (int(w) for w in args.words.split(",")):
        text = reply(size)
        runs = [measure(text, args.delta_words, ReplyWriter) for _ in range(args.runs)]
        row: dict[str, Any] = {
            "words": len(text.split()),
            "deltas": runs[0]["deltas"],
            "bytes": int(statistics.median(r["bytes"] for r in runs)),
            "wall_s": statistics.median(r["wall_s"] for r in runs),
            "cpu_s": statistics.median(r["cpu_s"] for r in runs),
        }
        if args.whole:
            naive = measure(text, args.delta_words, WholeRerender)
            row["whole_wall_s"] = naive["wall_s"]
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    head = f"{'words':>6} {'deltas':>7} {'bytes':>9} {'wall s':>8} {'cpu s':>8} {'µs/word':>8}"
    if args.whole:
        head += f" {'whole-rerender s':>17}"
    print(head)
    for r in rows:
        line = (
            f"{r['words']:>6} {r['deltas']:>7} {r['bytes']:>9,} {r['wall_s']:>8.3f} "
            f"{r['cpu_s']:>8.3f} {r['wall_s'] / r['words'] * 1e6:>8.0f}"
        )
        if args.whole:
            line += f" {r['whole_wall_s']:>17.3f}"
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
