"""The OpenAI-compatible provider end to end: rheo -> the real ``openai`` SDK -> a local
server speaking /v1/chat/completions (tests/fakeopenai.py)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from fakeopenai import FakeOpenAI, drop, error, hang, malformed, text, tool_call, truncate
from helpers import db_rows

from rheo_cli.providers.base import ChatRequest, ProviderError, SystemBlock, ToolSpec
from rheo_cli.providers.openai_compat import OpenAICompatProvider, to_chat_messages


@pytest.fixture
def oai(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAI]:
    """The fake server, with OPENAI_BASE_URL and a test key pointing rheo at it."""
    with FakeOpenAI() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
        yield server


def turns(home):
    return [
        (r["role"], r["content"], r["status"])
        for r in db_rows(home, "SELECT role, content, status FROM turns ORDER BY id")
    ]


def one_line_failure(result, pattern):
    assert result.exit_code == 1, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and pattern in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert "sk-test-0123456789" not in result.stderr


def test_ask_streams_through_the_sdk_and_records_usage(rheo, oai, home):
    oai.queue(text("Hello from GPT.", usage={"prompt_tokens": 900, "cached_tokens": 640}))
    result = rheo("ask", "--provider", "openai", "-m", "gpt-test", "--json", "hi there")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["reply"] == "Hello from GPT." and out["model"] == "gpt-test"
    assert out["usage"]["cache_read_tokens"] == 640
    assert out["usage"]["input_tokens"] == 260  # uncached part, as Anthropic counts it
    body = oai.last.body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert oai.last.headers["authorization"] == "Bearer sk-test-0123456789abcdefghij"
    # stable first: the system prompt, then the clock; then the context and the message
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][0]["content"].index("Current date and time") > 100
    assert body["messages"][-1]["role"] == "user" and "hi there" in body["messages"][-1]["content"]
    assert {t["function"]["name"] for t in body["tools"]} >= {"write_memory"}
    row = db_rows(home, "SELECT model, cache_read_tokens FROM turns WHERE role='assistant'")[0]
    assert tuple(row) == ("gpt-test", 640)


def test_model_prefix_alone_selects_openai(rheo, oai, home):
    oai.queue(text("ok"))
    assert rheo("ask", "-m", "openai:gpt-other", "q").exit_code == 0
    assert oai.last.body["model"] == "gpt-other"


def test_write_memory_tool_call_stores_a_fact(rheo, oai, home):
    oai.queue(
        tool_call(
            "write_memory",
            {
                "category": "preference",
                "topic": "coffee",
                "label": "Drinks oat-milk flat whites",
                "confidence": 0.9,
            },
        ),
        text("Noted: oat-milk flat whites."),
    )
    result = rheo("ask", "--provider", "openai", "I only drink oat-milk flat whites.")
    assert result.exit_code == 0, result.stderr
    assert "oat-milk flat whites" in result.stdout
    listed = json.loads(rheo("memory", "list", "--json").stdout)
    assert [m["content"]["label"] for m in listed] == ["Drinks oat-milk flat whites"]
    # the second call carried the assistant's tool call and its result, OpenAI-style
    second = oai.completions[1].body["messages"]
    assistant = next(m for m in second if m["role"] == "assistant")
    call_id = assistant["tool_calls"][0]["id"]
    tool_msg = next(m for m in second if m["role"] == "tool")
    assert tool_msg["tool_call_id"] == call_id and tool_msg["content"]


def test_extraction_runs_on_openai(rheo, oai, home, monkeypatch):
    facts = {"facts": [{"topic": "city", "label": "Lives in Porto", "confidence": 0.9}]}

    def handler_replies():
        oai.queue(text("Porto is lovely."), text(json.dumps(facts)))

    handler_replies()
    assert rheo("ask", "--provider", "openai", "I live in Porto.").exit_code == 0
    out = json.loads(rheo("maintain", "--json", RHEO_PROVIDER="openai").stdout)
    assert out["done"], out
    notes = out["done"][0]["notes"]
    assert any(n.startswith("openai:") and "1 fact" in n for n in notes), notes
    extract = oai.completions[-1].body
    # the server is not OpenAI's (a loopback base_url), so extraction uses the chat model
    assert extract["model"] == "gpt-5-mini" and "stream" not in extract
    assert extract["messages"][0]["content"].startswith("You extract durable facts")
    listed = json.loads(rheo("memory", "list", "--json").stdout)
    assert listed[0]["content"]["label"] == "Lives in Porto"


@pytest.mark.parametrize(
    ("reply", "pattern", "calls"),
    [
        (
            error(401, "Incorrect API key provided: sk-test-0123456789abcdefghij"),
            "refused the key (401): check OPENAI_API_KEY",
            1,
        ),
        (error(403, "no access to model"), "denied access (403)", 1),
        (error(404, "The model `gpt-x` does not exist"), "not found at", 1),
        (error(400, "bad things", code="invalid_value"), "refused the request (400)", 1),
        (error(400, "too long", code="context_length_exceeded"), "too large", 1),
        (error(500, "boom"), "failed (500)", 3),
        (error(429, "slow down", retry_after="0"), "rate limited", 3),
    ],
)
def test_http_errors_are_one_line_and_the_turn_is_kept(rheo, oai, home, reply, pattern, calls):
    oai.default = reply
    result = rheo("ask", "--provider", "openai", "q")
    one_line_failure(result, pattern)
    assert len(oai.completions) == calls  # retried only when it may help
    assert turns(home) == [("user", "q", None), ("assistant", "", "error")]


@pytest.mark.parametrize(
    ("status", "header", "said"),
    [
        (429, "60", "rate limited (429): {where} asked to wait 60 s"),
        (529, "45", "{where} is overloaded (529): {where} asked to wait 45 s"),
        (429, "600", "rate limited (429): {where} asked to wait 10 min"),
    ],
)
def test_a_long_wait_asked_by_the_server_is_named(rheo, oai, home, status, header, said):
    oai.default = error(status, "slow down", retry_after=header)
    result = rheo("ask", "--provider", "openai", "q")
    one_line_failure(result, said.format(where=oai.base_url))
    assert len(oai.completions) == 1  # not waited for: reported at once
    assert turns(home) == [("user", "q", None), ("assistant", "", "error")]


def test_a_long_wait_is_named_for_the_extractor_too(oai, home):
    provider = OpenAICompatProvider(base_url=oai.base_url, max_retries=2)
    oai.default = error(429, "slow down", retry_after="90")
    request = ChatRequest(
        model="gpt-5-nano", system=[], messages=[{"role": "user", "content": "x"}]
    )
    with pytest.raises(ProviderError) as caught:
        provider.complete(request)
    assert str(caught.value) == f"rate limited (429): {oai.base_url} asked to wait 90 s"
    assert caught.value.kind == "rate_limit" and caught.value.retry_after_s == 90
    assert len(oai.completions) == 1


def test_rate_limit_waits_what_retry_after_asks_then_succeeds(rheo, oai, home):
    oai.queue(error(429, "slow down", retry_after="1"), text("after the wait"))
    result = rheo("ask", "--provider", "openai", "q")
    assert result.exit_code == 0 and "after the wait" in result.stdout


def test_dropped_stream_keeps_the_partial_reply(rheo, oai, home):
    oai.default = drop("Half of the ", after_chunks=1)
    result = rheo("ask", "--provider", "openai", "q")
    one_line_failure(result, "broke off")
    assert len(oai.completions) == 1  # text had arrived: not retried
    assert turns(home)[1][0] == "assistant" and turns(home)[1][2] == "error"
    assert turns(home)[1][1].startswith("Half")


def test_stream_without_finish_is_broken(rheo, oai, home):
    oai.default = truncate("cut ")
    one_line_failure(rheo("ask", "--provider", "openai", "q"), "ended before")


def test_malformed_event(rheo, oai, home):
    oai.default = malformed("so far ")
    one_line_failure(rheo("ask", "--provider", "openai", "q"), "malformed event")
    assert turns(home)[0] == ("user", "q", None)


def test_slow_server_times_out(rheo, oai, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("timeout = 1\n")
    oai.default = hang(5)
    one_line_failure(rheo("ask", "--provider", "openai", "q"), "timed out")
    assert turns(home) == [("user", "q", None), ("assistant", "", "error")]


def test_connection_refused_names_the_server_without_credentials(rheo, home, monkeypatch):
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://user:hunter2secret@127.0.0.1:{port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
    result = rheo("ask", "--provider", "openai", "q")
    one_line_failure(result, f"cannot reach http://[redacted]@127.0.0.1:{port}/v1")
    assert "hunter2" not in result.stderr


def test_missing_key_is_one_line(rheo, home):
    one_line_failure(rheo("ask", "--provider", "openai", "q"), "OPENAI_API_KEY is not set")
    assert turns(home)[0] == ("user", "q", None)


@pytest.mark.boundary
def test_ollama_preset_needs_no_key(rheo, home):
    with FakeOpenAI() as server:
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(f'[ollama]\nbase_url = "{server.base_url}"\n')
        server.queue(text("local llama here"))
        result = rheo("ask", "-m", "ollama:llama3.2:3b", "q")
        assert result.exit_code == 0, result.stderr
        assert "local llama here" in result.stdout
        assert server.last.body["model"] == "llama3.2:3b"  # the tag's colon kept
        assert server.last.body["max_tokens"] > 0  # local servers get max_tokens
        assert server.last.headers["authorization"] == "Bearer no-key"


def test_translation_pairs_tool_results_with_their_calls():
    request = ChatRequest(
        model="m",
        system=[SystemBlock("stable", cache=True), SystemBlock("clock")],
        messages=[
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "let me note that"},
                    {"type": "tool_use", "id": "t1", "name": "write_memory", "input": {"x": 1}},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "stored"}],
            },
        ],
        tools=[ToolSpec("write_memory", "d", {"type": "object"})],
    )
    assert to_chat_messages(request) == [
        {"role": "system", "content": "stable\n\nclock"},
        {"role": "user", "content": "ab"},
        {
            "role": "assistant",
            "content": "let me note that",
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "write_memory", "arguments": '{"x": 1}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "content": "stored"},
    ]


def test_complete_for_digests_and_close(oai, monkeypatch):
    oai.queue(text("a digest"))
    provider = OpenAICompatProvider(base_url=oai.base_url, timeout_s=5)
    request = ChatRequest(
        model="m", system=[SystemBlock("s")], messages=[{"role": "user", "content": "x"}]
    )
    reply, usage, model = provider.complete(request)
    assert (reply, model, usage.output_tokens) == ("a digest", "m", 5)
    provider.close()
    provider.close()  # idempotent


def test_a_forced_tool_call_returns_its_arguments_as_the_text(oai):
    facts = {"facts": [{"topic": "drink", "label": "Prefers tea", "relation": "new"}]}
    oai.queue(tool_call("record_facts", facts))
    provider = OpenAICompatProvider(base_url=oai.base_url, timeout_s=5)
    tool = ToolSpec("record_facts", "Record facts.", {"type": "object", "properties": {}})
    request = ChatRequest(
        model="m",
        system=[SystemBlock("extract")],
        messages=[{"role": "user", "content": "I prefer tea"}],
        tools=[tool],
        tool_choice="record_facts",
    )
    reply, _usage, _model = provider.complete(request)
    assert json.loads(reply) == facts
    body = oai.requests[-1].body
    assert body["tool_choice"] == {"type": "function", "function": {"name": "record_facts"}}
    provider.close()
