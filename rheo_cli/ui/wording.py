"""One wording per outcome, shared by the command line and the REPL.

The person sees the same sentence for the same thing whichever way they asked: marking an item
done, an interrupted reply, a failed one, nothing to retry.
"""

from __future__ import annotations

from typing import Any

from ..app.errors import DatabaseError, database_message
from ..app.text import plural as plural  # for the front ends that import it from here
from .output import preview

ROW_NOUNS = {
    "memory_items": "memory item",
    "memory_events": "memory event",
    "kb_documents": "knowledge document",
    "kb_document": "knowledge document",
    "kb_chunks": "knowledge passage",
    "kb_chunk": "knowledge passage",
    "kb_document_versions": "knowledge document version",
    "summaries": "summary",
}
"""What one row of each kind is called, where it is not the kind's name less its ``s``."""


def counted(counts: dict[str, int]) -> str:
    """``2 sessions, 1 memory item`` for counts by kind of record (table names: ``turns``,
    ``memory_items``, or one row's: ``memory_item``), leaving out the zeros; ``""`` when all
    are zero."""
    parts = []
    for kind, count in counts.items():
        if count:
            noun = ROW_NOUNS.get(kind) or kind.replace("_", " ").removesuffix("s")
            parts.append(plural(count, noun))
    return ", ".join(parts)


CHANGED = {
    "pin": "pinned",
    "unpin": "unpinned",
    "forget": "forgotten (history kept)",
    "resolve": "kept",
    "done": "done",
}
"""What each change to a memory item made of it, as the line after ``#ID`` says."""


ALREADY = {"unpin": "not pinned", "forget": "already forgotten"}
"""How a change that was already made reads (else ``already <CHANGED>``)."""


def change_line(action: str, item: Any, *, already: bool = False) -> str:
    """``#12 done: call Ana`` (or ``#12 already done: ...``) for a change to a memory item."""
    state = CHANGED[action]
    if already:
        state = ALREADY.get(action) or f"already {state}"
    tail = " (the other version is superseded)" if action == "resolve" else ""
    return f"#{item.id} {state}: {preview(item.content_text(), 80)}{tail}"


def interrupted_line(turn_id: int) -> str:
    """What is said when the person stops a reply (Ctrl-C); ``turn_id`` 0: not stored."""
    if not turn_id:
        return "interrupted: the partial reply is not stored"
    return f"interrupted: the partial reply is kept as turn #{turn_id}"


def failed_line(error: object) -> str:
    """What is said when the model call failed (the question is stored; --retry resends)."""
    return f"{error} (the question is kept: 'rheo ask --retry' or /retry sends it again)"


MAX_TOKENS_CEILING = 1_000_000
"""The highest ``max_tokens`` config.toml accepts."""


def cut_line(result: Any) -> str:
    """What is said when a reply stopped at the model's output limit (a `TurnResult` whose
    ``cut`` is true): the limit, that the reply is incomplete, and the setting that raises
    it — ``max_tokens`` for the API providers, Claude Code's own environment variable for
    Claude Code (rheo does not pass its limit to ``claude``)."""
    if getattr(result, "provider", "") == "claude-code":
        return (
            "the reply was cut at Claude Code's output token limit and is incomplete; "
            "raise the limit with the CLAUDE_CODE_MAX_OUTPUT_TOKENS environment variable"
        )
    limit = int(getattr(result, "max_tokens", 0) or 0)
    more = min(max(limit * 2, 1024), MAX_TOKENS_CEILING)
    size = f" ({limit:,} tokens)" if limit else ""
    return (
        f"the reply was cut at the max_tokens limit{size} and is incomplete; "
        f"raise it with 'rheo config set max_tokens {more}'"
    )


def not_stored_line(not_stored: Any) -> str:
    """What is said when a turn that should have been stored was not (a `NotStored`): the
    store could not be opened (answered without memory), the person's message could not be
    written (the whole exchange is unstored), or only the reply could not be."""
    error = not_stored.error
    why = database_message(error) if isinstance(error, DatabaseError) else str(error)
    why = " ".join(why.split())[:240]
    if not_stored.unopened:
        return f"memory unavailable: {why}; answered without it, and this exchange was not stored"
    if not_stored.reply_only:
        return f"the reply was not stored: {why} (the question is kept)"
    return f"this exchange was not stored: {why}"


NOTHING_TO_RETRY = "nothing to retry: the last question was answered"
