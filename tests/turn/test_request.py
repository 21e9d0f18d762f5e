"""What rheo sends: system prompt with the clock, prompt-cache layout, model choice, usage."""

from __future__ import annotations

import json

from fakeprovider import Canned
from helpers import db_rows

from rheo_cli.providers.base import Usage


def test_system_prompt_gives_date_time_and_zone(rheo, fake_model, monkeypatch):
    monkeypatch.setenv("RHEO_NOW", "2026-11-29T21:30:00+01:00")
    fake_model.add("ok")
    assert rheo("ask", "what day is it?").exit_code == 0
    system = fake_model.requests[-1].system
    assert system[0].text.startswith("You are rheo")
    assert system[1].text == ("Current date and time: Sunday 29 November 2026, 21:30 (UTC+01:00).")


def test_stable_parts_first_with_cache_control(rheo, fake_model, home):
    fake_model.add("one", "two")
    rheo("ask", "first")
    rheo("ask", "second")
    request = fake_model.requests[-1]
    # Cache breakpoint on the static system prompt: tools + system prefix is identical.
    # (How a cached block goes over the wire: tests/providers/test_anthropic_wire.py.)
    assert request.system[0].cache is True
    assert request.system[1].cache is False
    first, second = fake_model.requests
    assert first.system[0] == second.system[0]
    assert first.tools == second.tools


def test_usage_with_cache_reads_and_writes_is_recorded(rheo, fake_model, home):
    # (The API's usage fields as the provider reads them: tests/providers/test_anthropic_wire.py.)
    fake_model.add(
        Canned(
            "hi",
            usage=Usage(
                input_tokens=1200, output_tokens=30, cache_read_tokens=1000, cache_write_tokens=150
            ),
        )
    )
    rheo("ask", "hello")
    row = db_rows(
        home,
        "SELECT model, input_tokens, output_tokens, cache_read_tokens, "
        "cache_write_tokens FROM turns WHERE role = 'assistant'",
    )[0]
    assert tuple(row) == ("claude-sonnet-5-5", 1200, 30, 1000, 150)


def test_model_precedence_flag_env_config_default(rheo, fake_model, home, monkeypatch):
    home.mkdir(parents=True, exist_ok=True)
    rheo("ask", "a")
    assert fake_model.requests[-1].model == "claude-sonnet-5-5"
    (home / "config.toml").write_text('model = "from-config"\n')
    rheo("ask", "b")
    assert fake_model.requests[-1].model == "from-config"
    monkeypatch.setenv("RHEO_MODEL", "from-env")
    rheo("ask", "c")
    assert fake_model.requests[-1].model == "from-env"
    rheo("ask", "-m", "from-flag", "d")
    assert fake_model.requests[-1].model == "from-flag"
    rheo("--model", "global-flag", "ask", "e")
    assert fake_model.requests[-1].model == "global-flag"


def test_json_output_carries_status_and_model(rheo, fake_model):
    fake_model.add(Canned("x", model="claude-served"))
    out = json.loads(rheo("ask", "--json", "q").stdout)
    assert out["status"] == "ok" and out["model"] == "claude-served"


def test_bad_config_is_one_line_exit_1(rheo, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("model = [\n")
    result = rheo("history", "recent")
    assert result.exit_code == 1
    assert result.stderr.startswith("rheo: ") and "not valid TOML" in result.stderr
    (home / "config.toml").write_text("[memory]\ncap = 'many'\n")
    result = rheo("history", "recent")
    assert result.exit_code == 1 and "[memory] cap must be a number" in result.stderr
    (home / "config.toml").write_text("[memory]\ncolour = 1\n")
    result = rheo("history", "recent")
    assert result.exit_code == 1 and "unknown setting [memory] 'colour'" in result.stderr


def test_bad_rheo_now_is_a_usage_error(rheo, monkeypatch):
    monkeypatch.setenv("RHEO_NOW", "yesterday-ish")
    result = rheo("history", "recent")
    assert result.exit_code == 2 and "RHEO_NOW" in result.stderr


def test_gap_hours_from_config(rheo, fake_model, home, monkeypatch):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[session]\ngap_hours = 0.5\n")
    monkeypatch.setenv("RHEO_NOW", "2026-01-01T10:00:00Z")
    rheo("ask", "one")
    monkeypatch.setenv("RHEO_NOW", "2026-01-01T10:31:00Z")
    rheo("ask", "two")
    sessions = [r[0] for r in db_rows(home, "SELECT session_id FROM turns ORDER BY id")]
    assert sessions == [1, 1, 2, 2]


def test_new_flag_forces_a_session(rheo, fake_model, home):
    rheo("ask", "one")
    rheo("ask", "--new", "two")
    rheo("ask", "three")
    sessions = [r[0] for r in db_rows(home, "SELECT session_id FROM turns ORDER BY id")]
    assert sessions == [1, 1, 2, 2, 2, 2]
