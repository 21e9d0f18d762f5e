"""What `AnthropicProvider` puts on the wire and reads back, through the real SDK against the
fake Messages API: the cache breakpoint, limits and forced tools it sends; usage (cache reads
and writes), the serving model, stop reasons and tool calls it reports. The turns above it
are tested with the in-process fake model, which answers in these terms."""

from __future__ import annotations

import json

from fakeapi import structured, text, tool_use

from rheo_cli.providers.anthropic_api import AnthropicProvider
from rheo_cli.providers.base import (
    ChatRequest,
    Finished,
    SystemBlock,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
)

SEARCH = ToolSpec("chat_search", "Search past turns.", {"type": "object", "properties": {}})


def request(**kw) -> ChatRequest:
    return ChatRequest(
        model="claude-asked",
        system=[SystemBlock("You are rheo.", cache=True), SystemBlock("Current date: today.")],
        messages=[{"role": "user", "content": [{"type": "text", "text": "hello"}]}],
        **kw,
    )


def test_the_cached_block_carries_the_breakpoint_and_the_limits_go_as_asked(api):
    api.queue(text("ok"))
    provider = AnthropicProvider(max_retries=0)
    list(provider.stream(request(max_tokens=700, tools=[SEARCH])))
    provider.close()
    body = api.last.body
    assert body["system"] == [
        {"type": "text", "text": "You are rheo.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Current date: today."},
    ]
    assert (body["model"], body["max_tokens"], body["stream"]) == ("claude-asked", 700, True)
    assert [t["name"] for t in body["tools"]] == ["chat_search"] and "tool_choice" not in body


def test_usage_with_cache_reads_and_writes_and_the_serving_model_are_read(api):
    api.queue(
        text(
            "hi",
            model="claude-served",
            usage={
                "input_tokens": 1200,
                "output_tokens": 30,
                "cache_read_input_tokens": 1000,
                "cache_creation_input_tokens": 150,
            },
        )
    )
    provider = AnthropicProvider(max_retries=0)
    *deltas, finished = provider.stream(request())
    provider.close()
    assert "".join(d.text for d in deltas if isinstance(d, TextDelta)) == "hi"
    assert isinstance(finished, Finished) and finished.model == "claude-served"
    assert finished.usage == Usage(
        input_tokens=1200, output_tokens=30, cache_read_tokens=1000, cache_write_tokens=150
    )


def test_a_reply_cut_at_max_tokens_keeps_its_stop_reason(api):
    api.queue(text("The first three steps are: one, two, thr", stop_reason="max_tokens"))
    provider = AnthropicProvider(max_retries=0)
    *_, finished = provider.stream(request())
    provider.close()
    assert isinstance(finished, Finished) and finished.stop_reason == "max_tokens"


def test_a_tool_call_is_one_event_and_its_block_goes_back_as_content(api):
    api.queue(tool_use("chat_search", {"query": "invoice"}, id="toolu_1", text_before="Looking."))
    provider = AnthropicProvider(max_retries=0)
    events = list(provider.stream(request(tools=[SEARCH])))
    provider.close()
    assert ToolCall("toolu_1", "chat_search", {"query": "invoice"}) in events
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.stop_reason == "tool_use"
    assert finished.content == [
        {"type": "text", "text": "Looking."},
        {"type": "tool_use", "id": "toolu_1", "name": "chat_search", "input": {"query": "invoice"}},
    ]


def test_a_forced_tool_is_sent_as_tool_choice_and_its_input_is_the_text(api):
    record = ToolSpec("record_facts", "Record facts.", {"type": "object", "properties": {}})
    api.queue(structured({"facts": [{"label": "Lives in Porto"}]}))
    provider = AnthropicProvider(max_retries=0)
    text_out, usage, model = provider.complete(request(tools=[record], tool_choice="record_facts"))
    provider.close()
    assert api.last.body["tool_choice"] == {"type": "tool", "name": "record_facts"}
    assert json.loads(text_out) == {"facts": [{"label": "Lives in Porto"}]}
    assert (usage.input_tokens, usage.output_tokens, model) == (10, 5, "claude-asked")


def test_the_provider_returns_the_forced_call_as_json(api, monkeypatch):
    from rheo_cli.providers.anthropic_api import AnthropicProvider
    from rheo_cli.providers.base import ChatRequest, SystemBlock, ToolSpec

    spec = ToolSpec("record_facts", "Record facts.", {"type": "object", "properties": {}})
    request = ChatRequest(
        model="claude-test",
        system=[SystemBlock("Extract.")],
        messages=[{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        tools=[spec],
        tool_choice="record_facts",
    )
    api.queue(structured({"facts": [{"label": "x"}]}), text('{"facts": []}'))
    provider = AnthropicProvider(timeout_s=10)
    out, _usage, _model = provider.complete(request)
    assert json.loads(out) == {"facts": [{"label": "x"}]}
    assert api.last.body["tool_choice"] == {"type": "tool", "name": "record_facts"}
    # A model that answers in text anyway: the text comes back, for the repair path.
    assert provider.complete(request)[0] == '{"facts": []}'
    provider.close()
