"""A session read back as a transcript: plain text for the terminal, or Markdown to share."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from .output import local, safe
from .wording import plural


def transcript(session: Any, turns: list[Any], now: datetime, *, markdown: bool = False) -> str:
    """The whole session ``session`` (with its ``turns``, oldest first) as text.

    Each turn says who spoke and when; an assistant reply that failed, was interrupted or was
    cut at the max_tokens limit says so. Plain text has stored control characters made
    harmless; Markdown is meant for files and keeps the replies' own Markdown.
    """
    start, end = local(session.started_at, now), local(session.last_turn_at, now)
    lines: list[str] = []
    if markdown:
        lines.append(f"# Session s{session.number}: {start} → {end}")
        lines.append("")
    else:
        lines.append(
            f"session s{session.number} · {start} → {end} · {plural(session.turns, 'turn')}"
        )
        lines.append("")
    for turn in turns:
        who = "You" if turn.role == "user" else "rheo"
        status = ""
        if turn.role == "assistant" and turn.status not in (None, "ok"):
            meta = turn.meta if isinstance(turn.meta, dict) else {}
            error = meta.get("error")
            why = f": {error.get('message')}" if isinstance(error, dict) else ""
            if meta.get("stop_reason") == "max_tokens":
                why = ": cut at the max_tokens limit"
            status = f" ({turn.status}{why})"
        when = local(turn.ts, now)
        body = turn.content if markdown else safe(turn.content)
        if markdown:
            lines.append(f"## {who} · {when}{status}")
            lines.append("")
            lines.append(body.strip() or "_(no text)_")
        else:
            lines.append(f"── {who} · {when}{status}")
            lines.append(body.strip() or "(no text)")
        lines.append("")
    return "\n".join(lines)
