"""The model request for an assembled context, laid out for the prompt cache: what stays the
same between turns comes first, what changes comes last."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from .. import prompts
from ..memory.context.assemble import Context
from ..providers.base import ChatRequest, SystemBlock


def clock_text(now: datetime) -> str:
    """The system prompt's clock line, e.g. ``Sunday 29 November 2026, 21:30 (UTC+01:00)``."""
    offset = now.strftime("%z")
    zone = f"UTC{offset[:3]}:{offset[3:]}" if offset else "UTC"
    name = now.tzname()
    if name and not name.startswith(("UTC", "+", "-")):
        zone += f", {name}"
    return (
        f"Current date and time: {now.strftime('%A')} {now.day} {now.strftime('%B %Y, %H:%M')} "
        f"({zone})."
    )


def build_request(
    ctx: Context,
    *,
    model: str,
    max_tokens: int,
    now: datetime,
    tools: list[Any] | None = None,
    extra_system: str | None = None,
    assistant_prompt: str = "",
) -> ChatRequest:
    """The Messages-API request for an assembled context.

    Prompt-cache layout, stable parts first: tools and the static system prompt, then the
    assistant's own prompt when one is chosen (cache breakpoint after the last of them), then
    the clock line and the person's ``extra_system`` instructions for this call (``rheo ask
    -s``), then what rheo did for the message's explicit memory requests (`requests_done`);
    in the user message the stable sections (OPEN ITEMS, EPISODIC MEMORY; second
    breakpoint), then the rest, ``---`` and the message.
    """
    system = [SystemBlock(prompts.load("system"), cache=not assistant_prompt)]
    if assistant_prompt:
        system.append(SystemBlock(assistant_prompt, cache=True))
    system.append(SystemBlock(clock_text(now)))
    if extra_system and extra_system.strip():
        system.append(SystemBlock(extra_system.strip()))
    if ctx.requests:
        system.append(SystemBlock(requests_done(ctx.requests)))
    content: list[dict[str, Any]] = []
    stable = ctx.stable_text()
    if stable:
        content.append(
            {"type": "text", "text": stable + "\n\n", "cache_control": {"type": "ephemeral"}}
        )
    content.append({"type": "text", "text": ctx.volatile_text()})
    return ChatRequest(
        model=model,
        system=system,
        messages=[{"role": "user", "content": content}],
        max_tokens=max_tokens,
        tools=list(tools or []),
    )


_FORGOTTEN = re.compile(r"#(\d+) \([^()]*\)")


def requests_done(done: list[str]) -> str:
    """The system text telling the model what rheo already did for the person's explicit
    memory requests in this message: ``stored memory #12``, ``forgot #3`` — never the words
    of what was forgotten (they are not shown to it again) — or that nothing matched."""
    lines = [_FORGOTTEN.sub(r"#\1", line) for line in done]
    return (
        "rheo already acted on the person's memory request in this message, before your "
        "reply: " + "; ".join(lines) + ". Tell the person in a few words what was done "
        "(or that nothing matched, and the command to look). Never repeat or guess what "
        "was forgotten: it is no longer shown to you."
    )
