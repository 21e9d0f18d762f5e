"""What ``claude -p --output-format stream-json --verbose`` prints, read as rheo's events and
errors.

The events (one JSON object a line), as Claude Code 2.1.197 and 2.1.332 print them:

- ``system``/``init``: ``model``, ``apiKeySource`` (``ANTHROPIC_API_KEY``, ``apiKeyHelper``...
  or ``none`` for a subscription login), ``mcp_servers`` (``[{"name", "status"}]``: ``connected``,
  ``pending``, ``failed``) and ``tools`` (``mcp__rheo__write_memory``...).
- ``system``/``api_retry``: Claude Code is about to retry a failed API call: ``attempt``,
  ``max_retries``, ``retry_delay_ms``, ``error_status`` (401, 429, 529...) and ``error``
  (``authentication_failed``, ``rate_limit``, ``overloaded``, ``server_error``...).
- ``system``/``status`` and others: progress, ignored.
- ``stream_event``: a Messages-API stream event (``content_block_delta`` with ``text_delta``,
  ``message_delta`` with the stop reason), with ``--include-partial-messages``.
- ``assistant``: a whole model message; an error comes as one whose model is ``<synthetic>``,
  with ``error`` naming it.
- ``result``: the end: ``is_error``, ``result`` (text), ``api_error_status``, ``usage``,
  ``total_cost_usd``, ``stop_reason``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .base import ErrorKind, ProviderError, TextDelta, Usage
from .retry import one_line, seconds_text

STOP_AT_ONCE = {401: "auth", 403: "permission"}
"""Statuses no retry can mend: on the first ``api_retry`` for one, rheo stops Claude Code."""

_STATUS_KINDS: dict[int, ErrorKind] = {
    400: "bad_request",
    401: "auth",
    403: "permission",
    404: "not_found",
    413: "too_large",
    429: "rate_limit",
    529: "overloaded",
}
_ERROR_KINDS: dict[str, ErrorKind] = {
    "authentication_failed": "auth",
    "authentication_error": "auth",
    "rate_limit": "rate_limit",
    "rate_limit_error": "rate_limit",
    "overloaded": "overloaded",
    "overloaded_error": "overloaded",
    "server_error": "server",
    "api_error": "server",
    "permission_error": "permission",
    "billing_error": "permission",
    "invalid_request": "bad_request",
    "invalid_request_error": "bad_request",
}
"""Claude Code's ``error`` names (and the API's error types) that say what failed."""
_RETRIED: dict[str, str] = {
    "rate_limit": "rate or usage limit",
    "overloaded": "the API is overloaded",
    "server": "the API failed",
}
"""How a retry notice names what Claude Code is retrying."""
_LOGGED_OUT = ("/login", "not logged in", "invalid api key", "oauth token", "authentication")
_LIMITED = ("rate limit", "rate_limit", "usage limit", "limit reached")


def kind_of(status: int | None, error: str, text: str) -> ErrorKind:
    """The kind of a failure Claude Code reported: by its HTTP ``status`` when there is one,
    else by its ``error`` name, else by words of its ``text`` (``other`` when none says)."""
    if status:
        if status in _STATUS_KINDS:
            return _STATUS_KINDS[status]
        if status >= 500:
            return "server"
    if error in _ERROR_KINDS:
        return _ERROR_KINDS[error]
    lowered = text.lower()
    if any(word in lowered for word in _LOGGED_OUT):
        return "auth"
    if any(word in lowered for word in _LIMITED):
        return "rate_limit"
    if "overloaded" in lowered:
        return "overloaded"
    return "other"


def failure(kind: ErrorKind, said: str, *, status: int | None, key_source: str) -> ProviderError:
    """The one line for a failed call: ``said`` is what Claude Code said (may be empty);
    ``key_source`` its init event's ``apiKeySource`` (``none``: a subscription login), which
    decides whether a refused credential is a key to check or a login to renew."""
    shown = f" ({status})" if status else ""
    said = one_line(said, 200)
    tail = f" (it said: {said})" if said else ""
    if kind == "auth":
        if key_source and key_source != "none":
            message = f"Claude Code's API key was refused{shown}: check {key_source}{tail}"
        else:
            message = f"Claude Code is not logged in: run 'claude' and /login{tail}"
    elif kind == "permission":
        message = f"Claude Code was denied access{shown}{tail}"
    elif kind == "rate_limit":
        message = f"Claude Code hit a rate or usage limit{shown}{tail}; try again later"
    elif kind == "overloaded":
        message = f"the API is overloaded{shown} (through Claude Code); try again in a moment"
    elif kind == "server":
        message = f"the API failed{shown} (through Claude Code){tail}"
    elif kind == "too_large":
        message = f"the request is too large for the model{shown}{tail}"
    else:
        message = f"Claude Code failed{shown}: {said or 'no message'}"
    return ProviderError(kind, message, status=status)


class StreamState:
    """What the events said so far: model, text streamed or whole, the result event, the
    credential in use. `take` turns one event into rheo's events; ``on_retry`` is told of
    Claude Code's retries (waits of 2 s or more, as rheo's own retries are)."""

    def __init__(self, model: str, on_retry: Callable[[str], None] | None = None) -> None:
        self.model = "" if model == "default" else model
        self.on_retry = on_retry
        self.text: list[str] = []
        self.streamed = False
        self.partial_in_message = False
        self.result: dict[str, Any] | None = None
        self.key_source = ""
        """``apiKeySource`` of the init event: ``none`` for a subscription login."""
        self.mcp_servers: list[dict[str, Any]] = []
        self.error_name = ""
        """The ``error`` of the last synthetic (error) message."""
        self.last_stop = ""
        """The stop reason of the last model message streamed (``message_delta``)."""

    def take(self, event: dict[str, Any]) -> Iterator[TextDelta]:
        """The text deltas ``event`` carries. Raises ProviderError when Claude Code is
        retrying a call no retry can mend (401, 403): the caller stops it."""
        kind = event.get("type")
        if kind == "system":
            self._system(event)
        elif kind == "stream_event":
            yield from self._stream_event(event.get("event"))
        elif kind == "assistant":
            yield from self._assistant(event)
        elif kind == "result":
            self.result = event

    def _system(self, event: dict[str, Any]) -> None:
        subtype = event.get("subtype")
        if subtype == "init":
            self.model = str(event.get("model") or self.model)
            self.key_source = str(event.get("apiKeySource") or "")
            servers = event.get("mcp_servers")
            self.mcp_servers = [s for s in servers if isinstance(s, dict)] if servers else []
        elif subtype == "api_retry":
            status = _int(event.get("error_status")) or None
            name = str(event.get("error") or "")
            kind = kind_of(status, name, "")
            if status in STOP_AT_ONCE or kind in ("auth", "permission"):
                raise failure(kind, "", status=status, key_source=self.key_source)
            delay = _float(event.get("retry_delay_ms")) / 1000
            if self.on_retry is not None and delay >= 2:
                shown = f" ({status})" if status else ""
                what = _RETRIED.get(kind, "the call failed")
                attempt, most = _int(event.get("attempt")), _int(event.get("max_retries"))
                count = f" ({attempt} of {most})" if attempt and most else ""
                self.on_retry(
                    f"Claude Code: {what}{shown}; retrying in {seconds_text(delay)}{count}"
                )

    def _stream_event(self, inner: Any) -> Iterator[TextDelta]:
        if not isinstance(inner, dict):
            return
        delta = inner.get("delta")
        if not isinstance(delta, dict):
            delta = {}
        if inner.get("type") == "message_delta":
            self.last_stop = str(delta.get("stop_reason") or "")
        if delta.get("type") == "text_delta":
            piece = str(delta.get("text") or "")
            if piece:
                self.streamed = self.partial_in_message = True
                self.text.append(piece)
                yield TextDelta(piece)

    def _assistant(self, event: dict[str, Any]) -> Iterator[TextDelta]:
        message = event.get("message") or {}
        synthetic = bool(event.get("error")) or message.get("model") == "<synthetic>"
        if synthetic:
            # An error (logged out, a refused key, a limit) comes as a synthetic message:
            # the result reports it, and its text is never the reply.
            self.error_name = str(event.get("error") or "")
        else:
            self.model = str(message.get("model") or self.model)
            if not self.partial_in_message:  # no deltas came: show it whole
                for block in message.get("content") or []:
                    if isinstance(block, dict) and block.get("type") == "text" and block["text"]:
                        self.streamed = True
                        self.text.append(str(block["text"]))
                        yield TextDelta(str(block["text"]))
        self.partial_in_message = False

    def result_error(self, exit_code: int) -> ProviderError | None:
        """The failure the result event reports, or None when the call succeeded."""
        result = self.result or {}
        if not result.get("is_error") and str(result.get("subtype", "success")) == "success":
            return None
        said = str(result.get("result") or "") or str(result.get("subtype") or "")
        status = _int(result.get("api_error_status")) or None
        kind = kind_of(status, self.error_name, said)
        if kind == "other":
            return ProviderError(
                "other", f"Claude Code failed (status {exit_code}): {one_line(said, 200)}"
            )
        return failure(kind, said, status=status, key_source=self.key_source)

    def stop_reason(self) -> str:
        """``max_tokens`` when the reply stopped at the output token limit — as the result's
        ``stop_reason`` says or, without it, the last streamed message's — else ``end_turn``
        (Claude Code runs its own tool loop: what reaches rheo is the end of it)."""
        said = (self.result or {}).get("stop_reason")
        reason = said if isinstance(said, str) and said else self.last_stop
        return "max_tokens" if reason == "max_tokens" else "end_turn"

    def usage(self) -> Usage:
        """Tokens and cost of the whole call, as the result event reports them."""
        result = self.result or {}
        raw = result.get("usage") or {}
        cost = result.get("total_cost_usd")
        return Usage(
            input_tokens=_int(raw.get("input_tokens")),
            output_tokens=_int(raw.get("output_tokens")),
            cache_read_tokens=_int(raw.get("cache_read_input_tokens")),
            cache_write_tokens=_int(raw.get("cache_creation_input_tokens")),
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
        )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _float(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
