"""Any OpenAI-compatible Chat Completions server (OpenAI, Ollama, llama.cpp, vLLM) through the
``openai`` SDK (the optional extra ``openai``).

rheo's requests are Messages-API shaped (see `base`); this module translates them to Chat
Completions (system blocks -> one system message, ``tool_use``/``tool_result`` blocks ->
``tool_calls`` and ``tool`` messages, `ToolSpec` -> functions) and the streamed reply back.
The stable parts of the prompt come first, so servers that cache long prefixes (OpenAI does
so automatically) reuse them; cached prompt tokens are reported as ``cache_read_tokens``.

The SDK takes about 0.35 s to import here, so it is imported only for a call and `preload`
starts that import on a thread (as ``rheo ask`` does for ``anthropic``).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any

from .base import (
    ChatRequest,
    Event,
    Finished,
    ProviderError,
    TextDelta,
    ToolCall,
    Usage,
)
from .redact import add_secret_env, redact
from .retry import call_with_retries, one_line, stream_with_retries
from .sdk_errors import Endpoint, translate

_preload_thread: threading.Thread | None = None

_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def preload() -> None:
    """Start importing the ``openai`` SDK on a daemon thread (idempotent; an import failure
    is reported when the provider is used)."""
    global _preload_thread
    if _preload_thread is not None:
        return

    def _import() -> None:
        with contextlib.suppress(Exception):
            import openai  # noqa: F401

    _preload_thread = threading.Thread(target=_import, name="rheo-openai-import", daemon=True)
    _preload_thread.start()


class OpenAICompatProvider:
    """`Provider` over ``openai.OpenAI(base_url=...)`` Chat Completions.

    ``api_key_env`` names the environment variable holding the key (``""``: the server needs
    none, as Ollama, llama.cpp and vLLM by default). ``timeout_s`` bounds connecting and each
    wait for data (seconds). Rate limits, server errors and refused connections are retried
    up to ``max_retries`` times before any text arrived, honouring ``retry-after``.
    """

    def __init__(
        self,
        *,
        name: str = "openai",
        base_url: str,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 120.0,
        max_retries: int = 2,
    ) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.on_retry: Callable[[str], None] | None = None
        """Told, in one line, when rheo waits before retrying (e.g. a rate limit)."""
        self._client: Any = None
        add_secret_env(api_key_env)

    # -- client -------------------------------------------------------------------------

    def _sdk_client(self) -> Any:
        if self._client is not None:
            return self._client
        key = ""
        if self.api_key_env:
            key = os.environ.get(self.api_key_env, "").strip()
            if not key:
                raise ProviderError(
                    "no_key",
                    f"{self.api_key_env} is not set: export the key for {self._where()} "
                    f'(or set api_key_env = "" under [{self.name}] for a server without keys)',
                )
            if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in key):
                raise ProviderError(
                    "auth", f"{self.api_key_env} contains spaces or control characters"
                )
        try:
            import openai
        except ImportError as exc:
            raise ProviderError(
                "unavailable",
                f"the openai SDK is not installed ({exc}): install rheo's 'openai' extra",
            ) from None
        self._client = openai.OpenAI(
            api_key=key or "no-key",  # the SDK insists on one; local servers ignore it
            base_url=self.base_url,
            timeout=self.timeout_s,
            max_retries=0,
        )
        return self._client

    def _where(self) -> str:
        return redact(self.base_url)

    def close(self) -> None:
        """Close the SDK client's connections (idempotent)."""
        if self._client is not None:
            with contextlib.suppress(Exception):
                self._client.close()
            self._client = None

    # -- requests -----------------------------------------------------------------------

    def _params(self, request: ChatRequest, *, stream: bool) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model,
            "messages": to_chat_messages(request),
        }
        # OpenAI's newer models refuse max_tokens; most local servers only know it.
        if "api.openai.com" in self.base_url:
            params["max_completion_tokens"] = request.max_tokens
        else:
            params["max_tokens"] = request.max_tokens
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    },
                }
                for t in request.tools
            ]
            if request.tool_choice is not None:
                params["tool_choice"] = {
                    "type": "function",
                    "function": {"name": request.tool_choice},
                }
        if stream:
            params["stream"] = True
            params["stream_options"] = {"include_usage": True}
        return params

    def stream(self, request: ChatRequest) -> Iterator[Event]:
        """Stream one call: TextDelta events as they arrive, then ToolCall events for the
        tool calls the model made, then Finished. Raises ProviderError (``stream_broken``
        when the stream ends or breaks before its finish reason)."""
        client = self._sdk_client()

        def attempt() -> Generator[Event, None, None]:
            acc = _Accumulator()
            chunks = client.chat.completions.create(**self._params(request, stream=True))
            try:
                for chunk in chunks:
                    text = acc.add(chunk)
                    if text:
                        yield TextDelta(text)
            finally:
                with contextlib.suppress(Exception):
                    chunks.close()
            if acc.finish_reason is None:
                raise ProviderError(
                    "stream_broken", "the reply stream ended before the reply was complete"
                )
            yield from acc.events(request.model)

        yield from stream_with_retries(
            attempt, self._translate, max_retries=self.max_retries, on_retry=self.on_retry
        )

    def complete(self, request: ChatRequest) -> tuple[str, Usage, str]:
        """One non-streamed call: ``(text, usage, model)``. With ``request.tool_choice`` the
        text is the forced function call's arguments (JSON text) when the model made it, else
        the reply's text. Raises ProviderError."""
        client = self._sdk_client()
        reply = call_with_retries(
            lambda: client.chat.completions.create(**self._params(request, stream=False)),
            self._translate,
            max_retries=self.max_retries,
            on_retry=self.on_retry,
        )
        choices = getattr(reply, "choices", None) or []
        if not choices:
            raise ProviderError("malformed", f"{self._where()} answered without a choice")
        message = choices[0].message
        text = getattr(message, "content", None) or ""
        for call in getattr(message, "tool_calls", None) or []:
            function = getattr(call, "function", None)
            if request.tool_choice is not None and getattr(function, "name", "") == (
                request.tool_choice
            ):
                text = getattr(function, "arguments", "") or text
                break
        return str(text), usage_of(getattr(reply, "usage", None)), str(reply.model or "")

    # -- errors -------------------------------------------------------------------------

    def _translate(self, exc: Exception, started: bool) -> ProviderError:
        try:
            import openai
        except ImportError:  # pragma: no cover - the call could not have been made
            return ProviderError("other", one_line(str(exc)))
        where = self._where()
        return translate(
            exc,
            openai,
            endpoint=Endpoint(where, where, self.api_key_env),
            started=started,
            timeout_s=self.timeout_s,
        )


# -- translation ------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def to_chat_messages(request: ChatRequest) -> list[dict[str, Any]]:
    """Messages-API request -> Chat Completions ``messages``: the system blocks joined in
    order (stable first), text blocks joined, ``tool_use`` -> ``tool_calls``, each
    ``tool_result`` -> a ``tool`` message right after the call it answers."""
    out: list[dict[str, Any]] = []
    system = "".join(
        b.text if i == len(request.system) - 1 else b.text.rstrip("\n") + "\n\n"
        for i, b in enumerate(request.system)
    )
    if system:
        out.append({"role": "system", "content": system})
    for message in request.messages:
        role, content = message["role"], message["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        if role == "assistant":
            item: dict[str, Any] = {"role": "assistant", "content": _text_of(blocks) or None}
            calls = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {
                        "name": b["name"],
                        "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False),
                    },
                }
                for b in blocks
                if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            if calls:
                item["tool_calls"] = calls
            out.append(item)
            continue
        for b in blocks:
            if isinstance(b, dict) and b.get("type") == "tool_result":
                result = b.get("content", "")
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": b["tool_use_id"],
                        "content": result if isinstance(result, str) else _text_of(result),
                    }
                )
        text = _text_of(blocks)
        if text:
            out.append({"role": "user", "content": text})
    return out


def usage_of(raw: Any) -> Usage:
    """Chat Completions usage -> `Usage` (cached prompt tokens as ``cache_read_tokens``,
    the rest of ``prompt_tokens`` as ``input_tokens``)."""
    if raw is None:
        return Usage()
    prompt = int(getattr(raw, "prompt_tokens", 0) or 0)
    details = getattr(raw, "prompt_tokens_details", None)
    cached = int(getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    return Usage(
        input_tokens=max(prompt - cached, 0),
        output_tokens=int(getattr(raw, "completion_tokens", 0) or 0),
        cache_read_tokens=cached,
    )


class _Accumulator:
    """Collects a streamed completion: text, tool calls by index, finish reason, usage."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: dict[int, dict[str, str]] = {}
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.model = ""

    def add(self, chunk: Any) -> str:
        """Take one chunk; returns its reply text ('' if none)."""
        self.model = str(getattr(chunk, "model", "") or self.model)
        if getattr(chunk, "usage", None) is not None:
            self.usage = usage_of(chunk.usage)
        text = ""
        for choice in getattr(chunk, "choices", None) or []:
            delta = choice.delta
            if delta is not None and delta.content:
                text += delta.content
            for call in (getattr(delta, "tool_calls", None) or []) if delta else []:
                slot = self.calls.setdefault(
                    int(call.index or 0), {"id": "", "name": "", "arguments": ""}
                )
                if call.id:
                    slot["id"] = call.id
                fn = call.function
                if fn is not None:
                    slot["name"] += fn.name or ""
                    slot["arguments"] += fn.arguments or ""
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        if text:
            self.text.append(text)
        return text

    def events(self, requested_model: str) -> Iterator[Event]:
        """ToolCall events, then Finished with Messages-API content blocks."""
        content: list[dict[str, Any]] = []
        joined = "".join(self.text)
        if joined:
            content.append({"type": "text", "text": joined})
        for index in sorted(self.calls):
            slot = self.calls[index]
            try:
                parsed = json.loads(slot["arguments"] or "{}")
            except ValueError:
                parsed = {}
            tool_input = parsed if isinstance(parsed, dict) else {}
            call_id = slot["id"] or f"call_{index}"
            content.append(
                {"type": "tool_use", "id": call_id, "name": slot["name"], "input": tool_input}
            )
            yield ToolCall(id=call_id, name=slot["name"], input=tool_input)
        reason = _STOP_REASONS.get(self.finish_reason or "", self.finish_reason or "end_turn")
        if self.calls and reason == "end_turn":  # some servers say "stop" after tool calls
            reason = "tool_use"
        yield Finished(
            stop_reason=reason,
            usage=self.usage,
            model=self.model or requested_model,
            content=content,
        )
