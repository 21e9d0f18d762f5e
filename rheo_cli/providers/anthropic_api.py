"""The Anthropic Messages API through the official ``anthropic`` SDK (the default provider).

The SDK takes about two seconds to import on a small machine, so it is imported only for a
model call; `preload` starts that import on a thread so ``rheo ask`` can open the store and
assemble the context meanwhile. ``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``) and
``ANTHROPIC_BASE_URL`` are read by the SDK itself; rheo never stores or prints the key.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any

from . import preconnect
from .base import (
    ChatRequest,
    Event,
    Finished,
    ProviderError,
    TextDelta,
    ToolCall,
    Usage,
)
from .redact import redact
from .retry import call_with_retries, one_line, stream_with_retries
from .sdk_errors import Endpoint, translate

_preload_thread: threading.Thread | None = None


def preload() -> None:
    """Start importing the SDK on a daemon thread (idempotent; errors surface at call time)."""
    global _preload_thread
    if _preload_thread is not None:
        return

    def _import() -> None:
        # An import failure is reported when the provider is used, not here.
        with contextlib.suppress(Exception):
            import anthropic  # noqa: F401

    _preload_thread = threading.Thread(target=_import, name="rheo-sdk-import", daemon=True)
    _preload_thread.start()


_TLS: Any = None
"""The TLS context `warm` prepared (a resident's requests share it, rather than each
reading the CA file again); None in a plain ``rheo`` process."""
_TLS_FOR: tuple[str, str] | None = None
"""``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` when `_TLS` was made: it serves only requests
that name the same."""

_WARM_EVENTS = (
    ("message_start", {"type": "message_start", "message": {"id": "m", "type": "message",
     "role": "assistant", "model": "warm", "content": [], "stop_reason": None,
     "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 0}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0,
     "content_block": {"type": "text", "text": ""}}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0,
     "delta": {"type": "text_delta", "text": "ok"}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn",
     "stop_sequence": None}, "usage": {"output_tokens": 1}}),
    ("message_stop", {"type": "message_stop"}),
)  # fmt: skip


_WARMED: list[Any] = []
"""Classes `warm` made the SDK build (pydantic's parametrised generics such as
``ParsedMessage[ResponseFormatT]``), held here: pydantic caches them weakly, so a class no one
holds is gone again before the first request and built anew in every forked request."""


def warm() -> None:
    """Prepare this process to fork requests that call Claude (the resident does): import
    the SDK, build the TLS context once, and stream one reply from an in-memory transport (no
    network) so the SDK's lazily built validators exist before the first real call. Never
    raises: anything left undone is done by the first call, as without it."""
    global _TLS, _TLS_FOR
    with contextlib.suppress(Exception):
        import anthropic
        import httpx2
        from httpcore2._ssl import default_ssl_context

        _TLS = default_ssl_context()
        _TLS_FOR = _cert_settings()
        body = b"".join(
            f"event: {name}\ndata: {json.dumps(data)}\n\n".encode() for name, data in _WARM_EVENTS
        )

        def answer(request: Any) -> Any:
            headers = {"content-type": "text/event-stream"}
            return httpx2.Response(200, headers=headers, content=body)

        transport = httpx2.MockTransport(answer)
        with anthropic.Anthropic(
            api_key="warm",
            base_url="http://warm.invalid",
            http_client=httpx2.Client(transport=transport),
            max_retries=0,
        ) as client:
            params: Any = {"model": "warm", "max_tokens": 1, "messages": []}
            with client.messages.stream(**params) as stream:
                for _ in stream:
                    pass
                stream.get_final_message()
    with contextlib.suppress(Exception):
        # the stream casts to ``ParsedMessage[ResponseFormatT]`` at every event
        from anthropic.lib._parse._response import ResponseFormatT
        from anthropic.types.parsed_message import ParsedMessage

        _WARMED.append(ParsedMessage[ResponseFormatT])  # type: ignore[valid-type]


def _cert_settings() -> tuple[str, str]:
    return os.environ.get("SSL_CERT_FILE", ""), os.environ.get("SSL_CERT_DIR", "")


def _http_client() -> Any:
    """An SDK HTTP client over the TLS context `warm` prepared (unless ``SSL_CERT_FILE`` or
    ``SSL_CERT_DIR`` now name other CAs) that connects through the connection the resident
    handed this process, if any (`preconnect`); None (the SDK builds its own) when there is
    neither."""
    tls = _TLS if _TLS is not None and _cert_settings() == _TLS_FOR else None
    if tls is None and not preconnect.HANDED:
        return None
    import anthropic

    client = anthropic.DefaultHttpxClient(verify=tls) if tls else anthropic.DefaultHttpxClient()
    preconnect.install(client)
    return client


def has_credentials(environ: dict[str, str] | None = None) -> bool:
    """True when ``ANTHROPIC_API_KEY`` or ``ANTHROPIC_AUTH_TOKEN`` is set and not blank."""
    env = os.environ if environ is None else environ
    return bool(
        env.get("ANTHROPIC_API_KEY", "").strip() or env.get("ANTHROPIC_AUTH_TOKEN", "").strip()
    )


class AnthropicProvider:
    """`Provider` over ``anthropic.Anthropic``.

    ``timeout_s`` bounds connecting and each wait for data (seconds), once: a timed-out call
    is reported, not retried. Rate limits, overload, server errors and refused connections are
    retried up to ``max_retries`` times before any reply text arrived, waiting what the API's
    ``retry-after-ms``/``retry-after`` headers ask (up to 30 s) or an exponential backoff.
    """

    name = "anthropic"

    def __init__(self, *, timeout_s: float = 120.0, max_retries: int = 2) -> None:
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self._client: Any = None
        self.on_retry: Callable[[str], None] | None = None
        """Told, in one line, when rheo waits before retrying (e.g. a rate limit)."""

    def _sdk_client(self) -> Any:
        if self._client is not None:
            return self._client
        if not has_credentials():
            raise ProviderError(
                "no_key", "ANTHROPIC_API_KEY is not set: export your API key to chat with Claude"
            )
        key = os.environ.get("ANTHROPIC_API_KEY", "").strip() or None
        token = None if key else os.environ.get("ANTHROPIC_AUTH_TOKEN", "").strip()
        secret = key or token or ""
        if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in secret):
            name = "ANTHROPIC_API_KEY" if key else "ANTHROPIC_AUTH_TOKEN"
            raise ProviderError("auth", f"{name} contains spaces or control characters")
        try:
            import anthropic
        except ImportError as exc:
            raise ProviderError(
                "unavailable", f"the anthropic SDK is not installed: {exc}"
            ) from None
        base_url = os.environ.get("ANTHROPIC_BASE_URL", "").strip() or None
        try:
            self._client = anthropic.Anthropic(
                api_key=key,
                auth_token=token,
                base_url=base_url,
                timeout=self.timeout_s,
                max_retries=0,
                http_client=_http_client(),
            )
        except Exception as exc:  # noqa: BLE001 - e.g. httpx.InvalidURL for "http://[::1"
            where = redact(base_url or "")
            raise ProviderError(
                "bad_request",
                f"ANTHROPIC_BASE_URL ({where}) is not a usable URL: {one_line(str(exc), 120)}",
            ) from None
        return self._client

    def close(self) -> None:
        """Close the SDK client's connections (idempotent)."""
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None

    @staticmethod
    def _params(request: ChatRequest) -> dict[str, Any]:
        system = []
        for block in request.system:
            item: dict[str, Any] = {"type": "text", "text": block.text}
            if block.cache:
                item["cache_control"] = {"type": "ephemeral"}
            system.append(item)
        params: dict[str, Any] = {
            "model": request.model,
            "max_tokens": request.max_tokens,
            "system": system,
            "messages": request.messages,
        }
        if request.tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in request.tools
            ]
        if request.tool_choice is not None:
            params["tool_choice"] = {"type": "tool", "name": request.tool_choice}
        return params

    def stream(self, request: ChatRequest) -> Iterator[Event]:
        """Stream one call: TextDelta events as they arrive, then ToolCall events for any
        tool_use blocks, then Finished. Raises ProviderError (kind ``stream_broken`` when the
        connection drops after text began)."""
        client = self._sdk_client()

        def attempt() -> Generator[Event, None, None]:
            with client.messages.stream(**self._params(request)) as stream:
                for event in stream:
                    if event.type == "text" and event.text:
                        yield TextDelta(event.text)
                final = stream.get_final_message()
            if final.stop_reason is None:
                # The SDK accepts a stream that ends without message_stop; rheo does not.
                raise ProviderError(
                    "stream_broken", "the reply stream ended before the reply was complete"
                )
            yield from _final_events(final)

        yield from stream_with_retries(
            attempt, self._translate, max_retries=self.max_retries, on_retry=self.on_retry
        )

    def complete(self, request: ChatRequest) -> tuple[str, Usage, str]:
        """One non-streamed call; returns the concatenated text blocks, usage and model (with
        ``request.tool_choice``: the forced tool call's input as JSON text, when present)."""
        client = self._sdk_client()
        message = call_with_retries(
            lambda: client.messages.create(**self._params(request)),
            self._translate,
            max_retries=self.max_retries,
            on_retry=self.on_retry,
        )
        text = "".join(b.text for b in message.content if getattr(b, "type", "") == "text")
        for block in message.content:
            if (
                request.tool_choice is not None
                and getattr(block, "type", "") == "tool_use"
                and block.name == request.tool_choice
                and isinstance(block.input, dict)
            ):
                text = json.dumps(block.input, ensure_ascii=False)
                break
        return text, _usage(message.usage), str(message.model)

    def _translate(self, exc: Exception, started: bool) -> ProviderError:
        try:
            import anthropic
        except ImportError:  # pragma: no cover - the call could not have been made
            return ProviderError("other", one_line(str(exc)))
        base = redact(os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com")
        endpoint = Endpoint("the API", f"the API at {base}", "ANTHROPIC_API_KEY")
        return translate(
            exc, anthropic, endpoint=endpoint, started=started, timeout_s=self.timeout_s
        )


def _usage(raw: Any) -> Usage:
    if raw is None:
        return Usage()
    return Usage(
        input_tokens=int(getattr(raw, "input_tokens", 0) or 0),
        output_tokens=int(getattr(raw, "output_tokens", 0) or 0),
        cache_read_tokens=int(getattr(raw, "cache_read_input_tokens", 0) or 0),
        cache_write_tokens=int(getattr(raw, "cache_creation_input_tokens", 0) or 0),
    )


def _final_events(final: Any) -> Iterator[Event]:
    content: list[dict[str, Any]] = []
    for block in final.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            content.append({"type": "text", "text": block.text})
        elif kind == "tool_use":
            tool_input = block.input if isinstance(block.input, dict) else {}
            content.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": tool_input}
            )
            yield ToolCall(id=block.id, name=block.name, input=tool_input)
    yield Finished(
        stop_reason=str(final.stop_reason or "end_turn"),
        usage=_usage(final.usage),
        model=str(final.model),
        content=content,
    )
