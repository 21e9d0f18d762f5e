"""The in-process fake model drives a whole turn through the CLI: context in, reply stored."""

from __future__ import annotations

import json

import pytest
from fakeprovider import Canned, FakeProvider
from helpers import db_rows

from rheo_cli.providers.base import ProviderError


def test_a_turn_through_the_fake_model_is_stored_and_sees_its_context(rheo, home, fake_model):
    fake_model.add("Noted: the Nutrifax invoice goes out Friday.", "Friday, as planned.")
    first = rheo("ask", "The Nutrifax invoice goes out Friday", RHEO_NOW="2026-03-02T10:00:00Z")
    assert first.exit_code == 0, first.stderr
    assert "Nutrifax invoice goes out Friday" in first.stdout
    second = rheo("ask", "when does it go out?", RHEO_NOW="2026-03-02T10:05:00Z")
    assert second.exit_code == 0, second.stderr
    assert "Friday, as planned." in second.stdout
    # The second request carried the first exchange as the current session.
    assert "The Nutrifax invoice goes out Friday" in fake_model.asked()[1]
    rows = db_rows(home, "SELECT role, content, status FROM turns ORDER BY id")
    assert [(r["role"], r["status"]) for r in rows] == [
        ("user", None),
        ("assistant", "ok"),
        ("user", None),
        ("assistant", "ok"),
    ]


def test_a_failing_fake_model_keeps_the_question_and_the_partial_reply(rheo, home, fake_model):
    fake_model.add(Canned("Half of an ans", error=ProviderError("server", "boom (500)")))
    result = rheo("ask", "a question")
    assert result.exit_code == 1
    assert "boom" in result.stderr
    rows = db_rows(home, "SELECT role, content, status FROM turns ORDER BY id")
    assert [(r["role"], r["content"], r["status"]) for r in rows] == [
        ("user", "a question", None),
        ("assistant", "Half of an ans", "error"),
    ]


# --- the fake model answers as the real provider does ---------------------------------------


def _request(**kw):
    from rheo_cli.providers.base import ChatRequest, SystemBlock

    return ChatRequest(
        model=kw.pop("model", "claude-x"),
        system=[SystemBlock("You are rheo.")],
        messages=[{"role": "user", "content": "hi"}],
        **kw,
    )


def test_a_canned_reply_streams_text_then_tool_calls_then_one_finished():
    from rheo_cli.providers.base import Finished, TextDelta, ToolCall, Usage

    usage = Usage(input_tokens=1200, output_tokens=30, cache_read_tokens=1000)
    fake = FakeProvider(
        Canned("Let me look.", tool_calls=[("chat_search", {"query": "x"})], usage=usage)
    )
    events = list(fake.stream(_request()))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    [call] = [e for e in events if isinstance(e, ToolCall)]
    finished = events[-1]
    assert text == "Let me look." and (call.name, call.input) == ("chat_search", {"query": "x"})
    assert isinstance(finished, Finished) and finished.stop_reason == "tool_use"
    assert finished.usage == usage and finished.model == "claude-x"
    assert finished.content == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": call.id, "name": "chat_search", "input": {"query": "x"}},
    ]
    assert fake.streamed == [True] and fake.last.model == "claude-x"


def test_a_cut_reply_and_the_serving_model_are_reported():
    from rheo_cli.providers.base import Finished

    fake = FakeProvider(Canned("Half a rep", stop_reason="max_tokens", model="claude-served"))
    *_, finished = fake.stream(_request())
    assert isinstance(finished, Finished)
    assert (finished.stop_reason, finished.model) == ("max_tokens", "claude-served")


def test_a_forced_tool_call_completes_as_its_input_in_json():
    from fakeprovider import facts

    fake = FakeProvider(
        Canned(tool_calls=[("record_facts", {"facts": [{"label": "Lives in Porto"}]})]),
        facts({"label": "Has a cat"}),
    )
    text, usage, model = fake.complete(_request(tool_choice="record_facts"))
    assert json.loads(text) == {"facts": [{"label": "Lives in Porto"}]}
    assert (usage.input_tokens, usage.output_tokens, model) == (10, 5, "claude-x")
    text, _, _ = fake.complete(_request(tool_choice="record_facts"))
    assert json.loads(text) == {"facts": [{"label": "Has a cat"}]}
    # Nothing queued: the extractor finds nothing; a chat gets the default.
    assert fake.complete(_request(tool_choice="record_facts"))[0] == '{"facts": []}'
    assert fake.complete(_request())[0] == "ok"
    assert fake.streamed == [False, False, False, False]


def test_the_handler_answers_when_nothing_is_queued_and_route_answers_by_kind():
    from helpers import kind_of, route

    from rheo_cli.providers.base import ChatRequest, SystemBlock

    fake = FakeProvider("queued first")
    route(fake, chat=["one", Canned("two")], extract='{"facts": [1]}')
    extract = ChatRequest(
        model="m",
        system=[SystemBlock("You extract durable facts about a person.")],
        messages=[{"role": "user", "content": "x"}],
        tool_choice="record_facts",
    )
    assert kind_of(extract) == "extract" and kind_of(_request()) == "chat"
    assert [fake.complete(_request())[0] for _ in range(4)] == ["queued first", "one", "two", "two"]
    assert fake.complete(extract)[0] == '{"facts": [1]}'


def test_api_error_words_an_http_error_as_the_anthropic_provider_does():
    from fakeprovider import api_error, broken

    down = api_error(500, "api_error", "down")
    assert (down.kind, down.status, down.retryable) == ("server", 500, True)
    assert str(down) == "the API failed (500): down"
    refused = api_error(401, "authentication_error", "invalid x-api-key")
    assert refused.kind == "auth" and "check ANTHROPIC_API_KEY" in str(refused)
    assert api_error(529, "overloaded_error", "Overloaded").kind == "overloaded"
    cut = broken()
    assert cut.kind == "stream_broken" and cut.retryable
    fake = FakeProvider(Canned("Half", error=cut), Canned(error=down))
    with pytest.raises(ProviderError) as raised:
        list(fake.stream(_request()))
    assert raised.value is cut
    with pytest.raises(ProviderError) as raised:
        fake.complete(_request())
    assert raised.value is down


def test_the_fixture_serves_the_extractors_too(rheo, home, fake_model, monkeypatch):
    from fakeprovider import facts
    from helpers import kind_of, route

    monkeypatch.setenv("RHEO_WORKER", "inline")
    route(
        fake_model,
        chat="Porto, lovely.",
        extract=facts(
            {"category": "fact", "topic": "home", "label": "Lives in Porto", "confidence": 0.9}
        ),
    )
    assert rheo("ask", "I live in Porto.").exit_code == 0
    assert [kind_of(r) for r in fake_model.requests] == ["chat", "extract"]
    assert fake_model.requests[1].tool_choice == "record_facts"
    listed = json.loads(rheo("memory", "list", "--json").stdout)
    assert [m["content"]["label"] for m in listed] == ["Lives in Porto"]


def test_a_slow_reply_is_asked_first_and_answers_after_its_delay():
    import threading
    import time

    fake = FakeProvider(Canned("late", delay=0.5))
    answers: list[str] = []
    worker = threading.Thread(target=lambda: answers.append(fake.complete(_request())[0]))
    start = time.monotonic()
    worker.start()
    fake.wait_for_requests(1, timeout=5)
    assert answers == []  # asked, not answered yet
    worker.join(timeout=5)
    assert answers == ["late"] and time.monotonic() - start >= 0.5
    with pytest.raises(TimeoutError):
        fake.wait_for_requests(2, timeout=0.1)


def test_a_slowly_streamed_reply_waits_between_its_pieces():
    import time

    from rheo_cli.providers.base import TextDelta

    fake = FakeProvider(Canned("one two three", chunks=3, chunk_delay=0.2))
    start = time.monotonic()
    pieces = [e.text for e in fake.stream(_request()) if isinstance(e, TextDelta)]
    assert "".join(pieces) == "one two three" and len(pieces) == 3
    assert time.monotonic() - start >= 0.4  # two waits, between three pieces
