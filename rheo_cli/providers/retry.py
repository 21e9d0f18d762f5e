"""What every HTTP provider shares: when to retry, how long to wait, the retry loops around a
call and a stream, one-line messages."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any, TypeVar

from .base import Event, ProviderError, TextDelta
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


T = TypeVar("T")
Translate = Callable[[Exception, bool], ProviderError]
"""Turns what a call raised into a ProviderError; the flag says reply text had arrived."""


def call_with_retries(
    call: Callable[[], T],
    translate: Translate,
    *,
    max_retries: int,
    on_retry: Callable[[str], None] | None,
) -> T:
    """``call()``'s result, trying again after a failure worth retrying (`next_wait`) up to
    ``max_retries`` times. Raises the translated ProviderError of the last failure."""
    attempt = 0
    while True:
        try:
            return call()
        except ProviderError:
            raise
        except Exception as exc:  # noqa: BLE001 - every SDK/transport failure: one line
            error = translate(exc, False)
            delay = next_wait(error, attempt, max_retries)
            if delay is None:
                raise error from None
            wait(delay, error, on_retry)
            attempt += 1


def stream_with_retries(
    attempt: Callable[[], Generator[Event, None, None]],
    translate: Translate,
    *,
    max_retries: int,
    on_retry: Callable[[str], None] | None,
) -> Iterator[Event]:
    """The events of ``attempt()`` (one streamed call), starting it again after a failure
    worth retrying as long as no reply text has arrived (text already shown is never sent
    twice), up to ``max_retries`` times. Raises the translated ProviderError of a failure,
    and a ProviderError ``attempt`` raises itself as it is."""
    tries = 0
    while True:
        started = False
        events = attempt()
        try:
            for event in events:
                if isinstance(event, TextDelta):
                    started = True
                yield event
            return
        except ProviderError:
            raise
        except Exception as exc:  # noqa: BLE001 - every SDK/transport failure: one line
            error = translate(exc, started)
            delay = None if started else next_wait(error, tries, max_retries)
            if delay is None:
                raise error from None
            wait(delay, error, on_retry)
            tries += 1
        finally:
            events.close()
