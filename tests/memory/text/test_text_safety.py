"""The one text-safety module: the cases of each former copy (provider redaction, the
config's URL redaction, memory masking, the terminal display filter, the export's escaping,
the extractor's cleaning) run through it, with one recogniser and one threshold for all."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rheo_cli.memory.text import safety
from rheo_cli.memory.text.safety import MASK, REDACTED, clean, mask, redact, redact_url, safe
from rheo_cli.transfer import rheo_jsonl

KEYS = [
    "sk-ant-abcdef",  # the shortest Anthropic key shape both used to differ on (6 vs 8)
    "sk-" + "a1" * 8,  # sixteen characters after sk- (16 vs 20)
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9",
]


@pytest.mark.parametrize("key", KEYS)
def test_one_threshold_for_messages_and_memory(key):
    sentence = f"use {key} now"
    assert redact(sentence) == f"use {REDACTED} now"
    assert mask(sentence) == f"use {MASK} now"


# --- the cases of the provider redactor (providers/redact.py) ------------------------------


def test_redact_covers_urls_queries_and_headers():
    assert redact("http://u:p4ss@h:1/x") == f"http://{REDACTED}@h:1/x"
    assert redact("https://h/x?api_key=AAA&b=2&access_token=BBB") == (
        f"https://h/x?api_key={REDACTED}&b=2&access_token={REDACTED}"
    )
    assert "CCC" not in redact("Authorization: Bearer CCC")
    assert "DDD" not in redact("x-api-key: DDD")
    assert (
        redact("see https://example.com/a@b and ?page=2")
        == "see https://example.com/a@b and ?page=2"
    )
    assert redact("user:secretB2@127.0.0.1:1") == f"{REDACTED}@127.0.0.1:1"
    assert "secretC3" not in redact("http://user:p@secretC3@127.0.0.1:1")


def test_redact_removes_escape_sequences_and_invisible_characters():
    out = redact("bad key \x1b[31mred\x1b[0m \x1b]52;c;ZXZpbA==\x07 a\u202eb\u200bc\U000e0041")
    assert out == "bad key red  abc"


def test_redact_replaces_the_literals_it_is_given_longest_first():
    assert redact("token 123:ABCdef in /bot123:ABCdef/send", ("123:ABCdef", "")) == (
        f"token {REDACTED} in /bot{REDACTED}/send"
    )


def test_the_provider_wrapper_adds_the_environments_keys(monkeypatch):
    from rheo_cli.providers.redact import redact as provider_redact

    monkeypatch.setenv("ANTHROPIC_API_KEY", "plainkey12345")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://alice:hunter2secret@host/v1")
    out = provider_redact("key plainkey12345 for alice and hunter2secret")
    assert "plainkey12345" not in out and "alice" not in out and "hunter2secret" not in out


# --- the cases of the config's URL redaction (config_keys.redacted_url) --------------------


@pytest.mark.parametrize(
    "url, shown",
    [
        (
            "postgresql://rheo:s3cret-pw@db.example:5432/rheo?options=-csearch_path%3Dmyrheo",
            "postgresql://rheo:***@db.example:5432/rheo?options=-csearch_path%3Dmyrheo",
        ),
        ("redis://:hush@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("postgresql://me@other/rheo?password=pw2", "postgresql://me@other/rheo?password=***"),
        (
            "postgresql://me@h/d?sslpassword=x&sslmode=require",
            "postgresql://me@h/d?sslpassword=***&sslmode=require",
        ),
        ("postgresql://a:p@ss@h/d", "postgresql://a:***@h/d"),
        ("postgresql://rheo@db/rheo", "postgresql://rheo@db/rheo"),
    ],
)
def test_redact_url_hides_the_password_and_keeps_the_rest(url, shown):
    assert redact_url(url) == shown


# --- the cases of memory masking (memory/text/secrets.py) ---------------------------------


def test_mask_value_masks_keys_and_nested_values():
    value = {"sk-ant-api03-Zx9Yw8Vu7": ["password: hunter2!", {"n": 1}], "k": None}
    assert safety.mask_value(value) == {MASK: [f"password: {MASK}", {"n": 1}], "k": None}


@pytest.mark.parametrize(
    "plain",
    [
        "a basic understanding of French",
        "Basic Training starts Monday",
        "my favourite cookie: oatmeal raisin",
        "the token bucket algorithm limits rates",
        "meeting at 10:30, ratio 3:1",
    ],
)
def test_ordinary_words_after_a_label_like_word_stay(plain):
    assert mask(plain) == plain and redact(plain) == plain


def test_credentials_after_basic_and_cookie_headers_are_caught():
    assert "dXNlcjpwYXNz" not in mask("Authorization: Basic dXNlcjpwYXNz")
    assert "dXNlcjpwYXNz" not in mask("send Basic dXNlcjpwYXNz to it")
    assert "abc123" not in mask("Cookie: session=abc123")


# --- the cases of the display filter (ui/output.py) and the export (io/rheo_jsonl.py) ------


def test_safe_shows_controls_and_invisible_characters():
    assert safe("a\x1b[2Jb\u202ec\U000e0041\n\t") == "a␛[2Jb<U+202E>c<U+E0041>\n\t"
    assert safe("☺\ufe0f") == "☺\ufe0f"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, categories=None), max_size=40))
def test_an_export_line_holds_nothing_a_terminal_acts_on_and_reads_back_the_same(value):
    line = rheo_jsonl.dumps({"type": "turn", "content": value})
    assert "\n" not in line and "\u2028" not in line
    assert safe(line) == line  # nothing left for the display filter to show
    line.encode("utf-8")  # lone surrogates are escaped too
    assert json.loads(line)["content"] == value


def test_an_export_escapes_tag_characters_it_used_to_write_raw():
    smuggled = "".join(chr(0xE0000 + ord(c)) for c in "IGNORE")
    line = rheo_jsonl.dumps({"content": f"hi{smuggled}\u00ad"})
    assert smuggled not in line and "\u00ad" not in line and "\\udb40\\udc49" in line
    assert safe(line) == line
    out = io.StringIO()
    rheo_jsonl.write([{"content": smuggled}], out)
    assert json.loads(out.getvalue())["content"] == smuggled


# --- the cases of the extractor's cleaning (memory/facts/parsing.py) -----------------------


def test_clean_replaces_controls_and_lone_surrogates_and_keeps_line_breaks():
    assert clean("a\x00b\x1bc\x85d\ud800e\tf\ng\rh") == "a\ufffdb\ufffdc\ufffdd\ufffde\tf\ng\rh"


def test_the_telegram_bot_redacts_its_token_and_other_credentials():
    from types import SimpleNamespace

    from rheo_cli.telegram.bot import TelegramBot

    bot = TelegramBot.__new__(TelegramBot)
    bot.settings = SimpleNamespace(token="123456:ABCdefGHI")  # type: ignore[assignment]
    line = bot.clean(RuntimeError("POST https://api/bot123456:ABCdefGHI/getMe\nBearer xyz"))
    assert "ABCdefGHI" not in line and "xyz" not in line and "\n" not in line


def test_a_telegram_bot_token_is_caught_alone_and_inside_the_bot_api_url():
    token = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
    for text in (token, f"https://api.telegram.org/bot{token}/getUpdates"):
        assert "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw" not in redact(text)
    for plain in ("at 12:30 on 2026-12-03 10:31:33", "chat 123456:abc", "ratio 100000:1"):
        assert redact(plain) == plain
