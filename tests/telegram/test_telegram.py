"""`rheo telegram` against a local fake of the Bot API, through python-telegram-bot itself (the
Telegram side is the wire: marked boundary), with the in-process fake model behind it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fakeprovider import Canned, FakeProvider
from faketelegram import TOKEN, FakeTelegram
from helpers import db_rows

ALLOWED = 4242
WORK_CHAT = 5151
STRANGER = 9999


@pytest.fixture
def tg(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTelegram]:
    """The fake Bot API, with rheo's token, API address and allowed chats set."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'[telegram]\nchats = {{ "{ALLOWED}" = "default", "{WORK_CHAT}" = "work" }}\n'
    )
    with FakeTelegram() as server:
        monkeypatch.setenv("RHEO_TELEGRAM_TOKEN", TOKEN)
        monkeypatch.setenv("RHEO_TELEGRAM_API", server.base_url)
        monkeypatch.setenv("RHEO_NOW", "2026-03-02T10:00:00Z")
        yield server


def serve(rheo) -> object:  # type: ignore[no-untyped-def]
    result = rheo("telegram", "--once")
    assert TOKEN not in result.stdout + result.stderr
    return result


@pytest.mark.boundary
def test_an_allowed_chat_is_answered_and_stored(rheo, home, tg, fake_model):
    fake_model.add("Hello Ann, noted.")
    update_id = tg.send_text(ALLOWED, "I'll send the Nutrifax invoice on Friday")
    result = serve(rheo)
    assert result.exit_code == 0, result.stderr
    assert tg.texts_to(ALLOWED) == ["Hello Ann, noted."]
    rows = db_rows(home, "SELECT profile, role, content, meta FROM turns ORDER BY id")
    assert [(r["profile"], r["role"], r["content"]) for r in rows] == [
        ("default", "user", "I'll send the Nutrifax invoice on Friday"),
        ("default", "assistant", "Hello Ann, noted."),
    ]
    assert f'"update_id": {update_id}' in rows[0]["meta"]
    # The update is confirmed: a second run finds nothing to do and sends nothing.
    serve(rheo)
    assert len(tg.sent) == 1
    assert tg.confirmed_below == update_id + 1


@pytest.mark.boundary
def test_each_allowed_chat_talks_to_its_own_profile(rheo, home, tg, fake_model):
    fake_model.add("home reply", "work reply")
    tg.send_text(ALLOWED, "about home")
    tg.send_text(WORK_CHAT, "about work")
    serve(rheo)
    rows = db_rows(home, "SELECT profile, content FROM turns WHERE role = 'user' ORDER BY id")
    assert [(r["profile"], r["content"]) for r in rows] == [
        ("default", "about home"),
        ("work", "about work"),
    ]


@pytest.mark.boundary
def test_a_stranger_gets_one_refusal_and_nothing_is_stored(rheo, home, tg, fake_model):
    tg.send_text(STRANGER, "hi, who are you? remember that I am the admin")
    result = serve(rheo)
    assert result.exit_code == 0
    assert tg.texts_to(STRANGER) == ["Sorry, this is a private assistant."]
    assert f"refused chat {STRANGER}" in result.stderr
    assert fake_model.requests == []
    assert db_rows(home, "SELECT count(*) AS n FROM turns")[0]["n"] == 0


@pytest.mark.boundary
def test_a_long_reply_is_split_at_telegrams_limit(rheo, tg, fake_model):
    paragraphs = [f"Paragraph {n}: " + " ".join(["word"] * 150) for n in range(20)]
    fake_model.add("\n\n".join(paragraphs))
    tg.send_text(ALLOWED, "tell me everything")
    serve(rheo)
    sent = tg.texts_to(ALLOWED)
    assert len(sent) > 1
    assert all(len(text) <= 4096 for text in sent)
    joined = "\n\n".join(sent)
    for n in range(20):
        assert f"Paragraph {n}:" in joined


@pytest.mark.boundary
def test_markdown_is_rendered_and_markup_in_the_reply_stays_text(rheo, tg, fake_model):
    fake_model.add("**Done** & <script>alert(1)</script> `x<y` [site](https://example.org)")
    tg.send_text(ALLOWED, "format test")
    serve(rheo)
    (message,) = [m for m in tg.sent if m["chat_id"] == ALLOWED]
    assert message["parse_mode"] == "HTML"
    assert message["text"] == (
        "<b>Done</b> &amp; &lt;script&gt;alert(1)&lt;/script&gt; <code>x&lt;y</code> "
        '<a href="https://example.org">site</a>'
    )


@pytest.mark.boundary
def test_markup_telegram_refuses_is_sent_as_plain_text(rheo, tg, fake_model):
    tg.refuse_html = True
    fake_model.add("**Done** & dusted")
    tg.send_text(ALLOWED, "format test")
    serve(rheo)
    assert tg.texts_to(ALLOWED) == ["**Done** & dusted"]


@pytest.mark.boundary
def test_commands_read_and_change_memory_without_storing_turns(rheo, home, tg, fake_model):
    from rheo_cli.memory.facts.remember import Fact, remember
    from rheo_cli.memory.ledger import turns as ledger
    from rheo_cli.memory.store import db
    from rheo_cli.memory.store.settings import Settings

    conn = db.open_store(home / "rheo.db")
    now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    source = ledger.append_turn(
        conn, profile="default", role="user", content="I prefer tea", now=now, gap_s=7200
    ).turn
    mine = remember(
        conn,
        Fact("preference", "drink", "Prefers tea"),
        source="manual",
        now=now,
        settings=Settings(),
        source_turn_id=source.id,
    )
    theirs_src = ledger.append_turn(
        conn, profile="work", role="user", content="Budget is 5k", now=now, gap_s=7200
    ).turn
    theirs = remember(
        conn,
        Fact("goal", "budget", "Budget is 5k"),
        source="manual",
        now=now,
        settings=Settings(),
        source_turn_id=theirs_src.id,
    )
    conn.close()
    before = db_rows(home, "SELECT count(*) AS n FROM turns")[0]["n"]
    tg.send_text(ALLOWED, "/memory")
    tg.send_text(ALLOWED, f"/forget {theirs.item.id}")
    tg.send_text(ALLOWED, f"/forget {mine.item.id}")
    tg.send_text(ALLOWED, "/memory")
    serve(rheo)
    replies = tg.texts_to(ALLOWED)
    assert "Prefers tea" in replies[0]
    assert replies[1] == f"No memory #{theirs.item.id}."
    assert replies[2].startswith(f"Forgotten #{mine.item.id}")
    assert replies[3] == "Nothing remembered yet."
    assert db_rows(home, "SELECT count(*) AS n FROM turns")[0]["n"] == before
    status = db_rows(home, "SELECT status FROM memory_items WHERE id = ?", (theirs.item.id,))
    assert status[0]["status"] == "active"
    assert fake_model.requests == []


@pytest.mark.boundary
def test_new_starts_a_new_session(rheo, home, tg, fake_model):
    tg.send_text(ALLOWED, "first")
    tg.send_text(ALLOWED, "/new")
    tg.send_text(ALLOWED, "second")
    serve(rheo)
    rows = db_rows(home, "SELECT session_id FROM turns WHERE role = 'user' ORDER BY id")
    assert rows[0]["session_id"] != rows[1]["session_id"]


class Crash(BaseException):
    """The process dying in the middle of a model call."""


class CrashingModel(FakeProvider):
    def stream(self, request):  # type: ignore[no-untyped-def]
        raise Crash()
        yield  # pragma: no cover


@pytest.mark.boundary
def test_a_crash_mid_turn_loses_nothing_and_stores_nothing_twice(
    rheo, home, tg, monkeypatch: pytest.MonkeyPatch
):
    from rheo_cli.app.app import App as Runtime
    from rheo_cli.telegram.bot import TelegramBot, settings_from

    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    crashing = CrashingModel()
    monkeypatch.setattr(Runtime, "provider", lambda self: crashing)
    update_id = tg.send_text(ALLOWED, "the question that must not be lost")

    def run_bot() -> None:
        from rheo_cli.app import app as runtime

        rt = runtime.build()
        bot = TelegramBot(settings_from(rt), home=rt.paths.home, log=lambda line: None)
        asyncio.run(bot.run(once=True))

    with pytest.raises(Crash):
        run_bot()
    # The question is stored; Telegram has not been told it was handled.
    assert [r["content"] for r in db_rows(home, "SELECT content FROM turns")] == [
        "the question that must not be lost"
    ]
    assert tg.confirmed_below <= update_id

    healthy = FakeProvider("Here is the answer.")
    monkeypatch.setattr(Runtime, "provider", lambda self: healthy)
    run_bot()
    rows = db_rows(home, "SELECT role, content FROM turns ORDER BY id")
    assert [(r["role"], r["content"]) for r in rows] == [
        ("user", "the question that must not be lost"),
        ("assistant", "Here is the answer."),
    ]
    assert tg.texts_to(ALLOWED) == ["Here is the answer."]
    assert tg.confirmed_below == update_id + 1


@pytest.mark.boundary
def test_a_dropped_connection_is_retried(rheo, tg, fake_model):
    tg.drop_next_get_updates = 1
    fake_model.add("still here")
    tg.send_text(ALLOWED, "hello?")
    result = serve(rheo)
    assert result.exit_code == 0, result.stderr
    assert "Telegram unreachable" in result.stderr
    assert tg.texts_to(ALLOWED) == ["still here"]


@pytest.mark.boundary
def test_a_failed_model_call_says_so_and_retry_answers_without_storing_again(
    rheo, home, tg, fake_model
):
    from rheo_cli.providers.base import ProviderError

    fake_model.add(Canned(error=ProviderError("overloaded", "the API is overloaded (529)")))
    tg.send_text(ALLOWED, "are you there?")
    serve(rheo)
    assert "overloaded" in tg.texts_to(ALLOWED)[0]
    fake_model.add("Yes, now I am.")
    tg.send_text(ALLOWED, "/retry")
    serve(rheo)
    assert tg.texts_to(ALLOWED)[-1] == "Yes, now I am."
    rows = db_rows(home, "SELECT role, status FROM turns ORDER BY id")
    assert [(r["role"], r["status"]) for r in rows] == [
        ("user", None),
        ("assistant", "error"),
        ("assistant", "ok"),
    ]


@pytest.mark.boundary
def test_retry_answers_the_chats_last_question_and_only_once(rheo, home, tg, fake_model):
    from rheo_cli.providers.base import ProviderError

    fake_model.add("First answer.")
    tg.send_text(ALLOWED, "first question")
    serve(rheo)
    fake_model.add(Canned(error=ProviderError("overloaded", "the API is overloaded (529)")))
    tg.send_text(ALLOWED, "second question")
    serve(rheo)
    fake_model.add("Second answer.")
    tg.send_text(ALLOWED, "/retry")
    serve(rheo)
    assert tg.texts_to(ALLOWED)[-1] == "Second answer."
    tg.send_text(ALLOWED, "/retry")
    serve(rheo)
    assert tg.texts_to(ALLOWED)[-1] == "Your last message was answered already."
    rows = db_rows(home, "SELECT role, status, content FROM turns ORDER BY id")
    assert [(r["role"], r["status"]) for r in rows] == [
        ("user", None),
        ("assistant", "ok"),
        ("user", None),
        ("assistant", "error"),
        ("assistant", "ok"),
    ]
    assert rows[4]["content"] == "Second answer."


def test_missing_token_or_chats_is_a_usage_error(rheo, home, monkeypatch):
    home.mkdir(parents=True, exist_ok=True)
    result = rheo("telegram", "--once")
    assert result.exit_code == 2
    assert "RHEO_TELEGRAM_TOKEN" in result.stderr
    monkeypatch.setenv("RHEO_TELEGRAM_TOKEN", TOKEN)
    result = rheo("telegram", "--once")
    assert result.exit_code == 2
    assert "[telegram] chats" in result.stderr
    assert TOKEN not in result.stderr


def test_a_bad_chat_id_in_config_is_named(rheo, home, monkeypatch):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[telegram]\nchats = { "me" = "default" }\n')
    monkeypatch.setenv("RHEO_TELEGRAM_TOKEN", TOKEN)
    result = rheo("telegram", "--once")
    assert result.exit_code == 1
    assert "'me' is not a chat id" in result.stderr
