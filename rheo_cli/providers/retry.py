"""What every HTTP provider shares: when to retry, how long to wait, one-line messages."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from .base import ProviderError
from .redact import redact

RETRY_AFTER_MAX_S = 30.0
"""A retry-after longer than this (seconds) is not waited for: the error is reported."""


def one_line(text: str, limit: int = 300) -> str:
    """``text`` redacted, on one line, at most ``limit`` characters."""
    flat = " ".join(redact(str(text)).split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def retry_after(headers: Mapping[str, Any] | None) -> float | None:
    """Seconds the server asked to wait (``retry-after-ms`` or ``retry-after``), if it did."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except (TypeError, ValueError):
            continue
        if value >= 0:
            return value
    return None


def seconds_text(value: float) -> str:
    """``60 s``, ``2 min 5 s``: a wait as a person reads it."""
    whole = round(value)
    if whole < 120:
        return f"{whole} s"
    minutes, seconds = divmod(whole, 60)
    return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"


def name_wait(error: ProviderError) -> ProviderError:
    """A rate limit (429) or overload (529) whose server asked for a wait of a second or more,
    reworded to name it: "rate limited (429): the API asked to wait 60 s". Others unchanged."""
    wait = error.retry_after_s
    if wait is None or wait < 1 or error.kind not in ("rate_limit", "overloaded"):
        return error
    what = "rate limited (429)" if error.kind == "rate_limit" else "the API is overloaded (529)"
    return ProviderError(
        error.kind,
        f"{what}: the API asked to wait {seconds_text(wait)}",
        status=error.status,
        retry_after_s=wait,
    )


def backoff(attempt: int, error: ProviderError) -> float | None:
    """Seconds to wait before retry ``attempt`` after ``error`` (None: don't retry): the
    server's retry-after up to 30 s, else 0.5 s doubling, with jitter."""
    if error.retry_after_s is not None:
        after = float(error.retry_after_s)
        return after if after <= RETRY_AFTER_MAX_S else None
    return 0.5 * float(2**attempt) + random.uniform(0, 0.25)


def next_wait(error: ProviderError, attempt: int, max_retries: int) -> float | None:
    """Seconds to wait before trying again, or None to report ``error`` now. Timeouts and
    broken streams are reported, not retried (the person already waited)."""
    if attempt >= max_retries or not error.retryable:
        return None
    if error.kind in ("timeout", "stream_broken"):
        return None
    return backoff(attempt, error)


def wait(seconds: float, error: ProviderError, on_retry: Callable[[str], None] | None) -> None:
    """Sleep ``seconds``, telling ``on_retry`` in one line when the wait is noticeable."""
    if on_retry is not None and seconds >= 2:
        on_retry(f"{error}; retrying in {seconds:.0f} s")
    time.sleep(seconds)
