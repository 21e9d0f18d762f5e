"""What the ``anthropic`` and ``openai`` SDKs' exceptions mean in rheo's terms.

Both SDKs come from the same generator and raise the same family: ``APITimeoutError``,
``APIConnectionError`` (the server not reached, or the stream cut), ``APIStatusError`` (an
HTTP status with a JSON error body, or an error event inside an Anthropic stream) and
``APIError`` (an error event inside an OpenAI stream). `translate` turns any of them, and the
transport's own exceptions, into one `ProviderError` with one wording per kind; only the
`Endpoint` named in it differs between providers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from .base import ErrorKind, ProviderError
from .retry import one_line, retry_after, seconds_text


@dataclass(frozen=True)
class Endpoint:
    """Who a message names: ``name`` answers (``the API``, or a server's redacted URL),
    ``address`` is where rheo connects (for "cannot reach ..."), ``key_env`` the variable
    holding the key that a 401 points to (``""``: the server needs none)."""

    name: str
    address: str
    key_env: str = ""


_CODES: dict[str, ErrorKind] = {
    "authentication_error": "auth",
    "permission_error": "permission",
    "rate_limit_error": "rate_limit",
    "overloaded_error": "overloaded",
    "request_too_large": "too_large",
    "context_length_exceeded": "too_large",
    "not_found_error": "not_found",
    "invalid_request_error": "bad_request",
    "api_error": "server",
}
"""Error types (Anthropic's ``error.type``) and codes (OpenAI's ``error.code``) that name a
kind: they decide for an error event inside a stream (which arrives with status 200), and
refine a generic 4xx (too large) or 5xx (overloaded)."""

_STATUSES: dict[int, ErrorKind] = {
    401: "auth",
    403: "permission",
    404: "not_found",
    413: "too_large",
    429: "rate_limit",
    529: "overloaded",
}
_SHOWN: dict[ErrorKind, int] = {kind: status for status, kind in _STATUSES.items()}
_SHOWN["bad_request"] = 400
"""The status a kind is shown with when the response's own is not an error status."""


def classify(status: int, codes: Iterable[str], detail: str) -> ErrorKind:
    """The kind of an HTTP error. An error status decides (401 auth, 403 permission, 404 not
    found, 413 too large, 429 rate limit, 529 overload, another 4xx a bad request — too large
    when the body's code or a "too long" message says so —, 5xx a server error, overload
    when the body says so); without one, the body's error type or code (`_CODES`), else
    ``other``."""
    named = [_CODES[c] for c in codes if c in _CODES]
    if "too long" in detail.lower():
        named.append("too_large")
    if status in _STATUSES:
        return _STATUSES[status]
    if 400 <= status < 500:
        return "too_large" if "too_large" in named else "bad_request"
    if status >= 500:
        return "overloaded" if "overloaded" in named else "server"
    return named[0] if named else "other"


def status_error(
    endpoint: Endpoint,
    status: int,
    codes: Iterable[str],
    detail: str,
    headers: Mapping[str, Any] | None = None,
) -> ProviderError:
    """The `ProviderError` for an HTTP error (``status``, the body's error type/code and
    message ``detail``, already one line), with the wait the ``headers`` ask for; a rate
    limit or overload asking for a second or more names that wait (see `name_wait`)."""
    codes = [c for c in codes if c]
    kind = classify(status, codes, detail)
    shown: int | str = status if status >= 400 else _SHOWN.get(kind, codes[0] if codes else status)
    name = endpoint.name
    if kind == "auth":
        hint = f"check {endpoint.key_env}" if endpoint.key_env else "the server wants a key"
        message = f"{name} refused the key ({shown}): {hint}"
    elif kind == "permission":
        message = f"{name} denied access ({shown}): {detail}"
    elif kind == "rate_limit":
        message = f"rate limited by {name} ({shown}): {detail}; try again shortly"
    elif kind == "overloaded":
        message = f"{name} is overloaded ({shown}); try again in a moment"
    elif kind == "too_large":
        message = f"the request is too large for the model ({shown}): {detail}"
    elif kind == "not_found":
        message = f"not found at {name} ({shown}): {detail}"
    elif kind == "bad_request":
        message = f"{name} refused the request ({shown}): {detail}"
    elif kind == "server":
        message = f"{name} failed ({shown}): {detail}"
    else:
        message = f"{name} answered {status}: {detail}"
    error = ProviderError(kind, message, status=status, retry_after_s=retry_after(headers))
    return name_wait(error, endpoint, shown)


def name_wait(error: ProviderError, endpoint: Endpoint, shown: int | str) -> ProviderError:
    """A rate limit or overload whose server asked for a wait of a second or more, reworded to
    name it: "rate limited (429): the API asked to wait 60 s". Others unchanged."""
    wait = error.retry_after_s
    if wait is None or wait < 1 or error.kind not in ("rate_limit", "overloaded"):
        return error
    name = endpoint.name
    what = (
        f"rate limited ({shown})"
        if error.kind == "rate_limit"
        else f"{name} is overloaded ({shown})"
    )
    return ProviderError(
        error.kind,
        f"{what}: {name} asked to wait {seconds_text(wait)}",
        status=error.status,
        retry_after_s=wait,
    )


def translate(
    exc: Exception, sdk: ModuleType, *, endpoint: Endpoint, started: bool, timeout_s: float
) -> ProviderError:
    """``exc``, raised by a call through ``sdk`` (the imported ``anthropic`` or ``openai``
    module) or by the transport under it, as one `ProviderError`. ``started``: reply text
    had arrived, so a cut is a broken stream; ``timeout_s`` is named in a timeout."""
    timed_out = ProviderError("timeout", f"the model call timed out (no data for {timeout_s:g} s)")
    if isinstance(exc, sdk.APITimeoutError):
        return timed_out
    if isinstance(exc, sdk.APIConnectionError):
        if started:
            return ProviderError("stream_broken", "the reply stream broke off before it ended")
        cause = exc.__cause__ or exc.__context__ or exc
        return ProviderError(
            "connection", f"cannot reach {endpoint.address}: {one_line(str(cause), 160)}"
        )
    if isinstance(exc, sdk.APIStatusError):
        status = int(getattr(exc, "status_code", 0) or 0)
        codes, detail = _body(getattr(exc, "body", None))
        detail = one_line(detail or str(getattr(exc, "message", "")) or str(exc), 200)
        headers = getattr(getattr(exc, "response", None), "headers", None)
        return status_error(endpoint, status, codes, detail, headers)
    if isinstance(exc, sdk.APIError):  # an error event inside an OpenAI stream
        return ProviderError(
            "server",
            f"{endpoint.name} reported an error mid-reply: {one_line(str(exc.message))}",
        )
    if isinstance(exc, AssertionError | AttributeError):
        # the SDK reading a reply of the wrong shape (a 200 that is not JSON or SSE, an empty
        # stream, a null message): the service's reply, not rheo, is at fault
        return ProviderError(
            "stream_broken" if started else "malformed",
            f"{endpoint.name} sent a reply rheo cannot read "
            f"({type(exc).__name__}{': ' + one_line(str(exc), 100) if str(exc) else ''})",
        )
    if isinstance(exc, ValueError):  # json.JSONDecodeError: a malformed event
        return ProviderError(
            "stream_broken" if started else "malformed",
            f"{endpoint.name} sent a malformed event ({one_line(str(exc), 120)})",
        )
    transport = type(exc).__module__.split(".")[0].startswith(("httpx", "httpcore", "h11"))
    if transport and "Timeout" in type(exc).__name__:
        return timed_out
    if started or transport:
        return ProviderError(
            "stream_broken", f"the reply stream broke off: {one_line(str(exc), 160)}"
        )
    detail = one_line(str(exc)) or type(exc).__name__
    return ProviderError("other", f"the model call failed ({type(exc).__name__}): {detail}")


def _body(body: Any) -> tuple[list[str], str]:
    """The error type/code(s) and message of an error body (``{"error": {...}}`` or the error
    object itself; a plain string is the message)."""
    if not isinstance(body, dict):
        return [], ""
    err = body.get("error", body)
    if isinstance(err, str):
        return [], err
    if not isinstance(err, dict):
        return [], ""
    codes = [str(err[k]) for k in ("code", "type") if err.get(k)]
    return codes, str(err.get("message", ""))
