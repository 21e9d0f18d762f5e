"""Choosing a provider: provider:model specs, the order of flags, environment and config, the
automatic pick, guidance when nothing is configured, ``rheo providers``, the extraction
fallback chain across providers."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from fakeapi import FakeAnthropic, error, text
from fakeopenai import FakeOpenAI
from fakeopenai import error as oai_error
from fakeopenai import text as oai_text
from helpers import db_rows, route

from rheo_cli.providers import factory
from rheo_cli.providers.settings import Endpoint, ProviderSettings

BIN = Path(__file__).resolve().parent.parent / "bin"


def choose(settings=None, **kw):
    env = kw.pop("environ", {})
    env.setdefault("PATH", "/nonexistent")
    return factory.choose_chat(settings or ProviderSettings(), environ=env, **kw)


def test_parse_spec():
    assert factory.parse_spec("openai:gpt-5-mini") == ("openai", "gpt-5-mini")
    assert factory.parse_spec("claude-code") == ("claude-code", "")
    assert factory.parse_spec("ollama:llama3.2:8b") == ("ollama", "llama3.2:8b")
    assert factory.parse_spec("llama3.2:8b") == (None, "llama3.2:8b")
    assert factory.parse_spec("claude-sonnet-5-5") == (None, "claude-sonnet-5-5")


def test_automatic_pick_order():
    both = {"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "o", "PATH": str(BIN)}
    assert choose(environ=dict(both)).kind == "anthropic"
    assert choose(environ={"ANTHROPIC_AUTH_TOKEN": "t"}).kind == "anthropic"
    no_anthropic = {"OPENAI_API_KEY": "o", "PATH": str(BIN)}
    pick = choose(environ=no_anthropic)
    assert (pick.kind, pick.model, pick.source) == (
        "claude-code",
        "default",
        "auto: claude is on PATH",
    )
    assert choose(environ={"OPENAI_API_KEY": "o"}).name == "openai:gpt-5-mini"
    with pytest.raises(factory.NoProvider):
        choose(environ={})


def test_flags_beat_environment_beat_config():
    cfg = ProviderSettings(provider="ollama", model="qwen3")
    env = {"ANTHROPIC_API_KEY": "k"}
    assert choose(cfg, environ=dict(env)).name == "ollama:qwen3"  # config beats auto
    env["RHEO_PROVIDER"] = "openai"
    assert choose(cfg, environ=dict(env)).name == "openai:gpt-5-mini"  # config model is ollama's
    env["RHEO_MODEL"] = "gpt-4.1"
    assert choose(cfg, environ=dict(env)).name == "openai:gpt-4.1"
    assert choose(cfg, environ=dict(env), flag_model="claude-code:opus").name == "claude-code:opus"
    assert choose(cfg, environ=dict(env), flag_provider="anthropic").name == "anthropic:gpt-4.1"
    got = choose(cfg, environ=dict(env), flag_provider="anthropic", flag_model="claude-x")
    assert got.name == "anthropic:claude-x" and got.source == "--provider"
    with pytest.raises(factory.SelectionError) as caught:
        choose(cfg, environ=dict(env), flag_provider="anthropic", flag_model="openai:x")
    assert caught.value.usage


def test_extraction_chain_defaults_follow_the_chat_provider():
    s = ProviderSettings(fallback=("openai:gpt-fb", "ollama"))
    chain, problems = factory.extraction_chain(s, factory.Choice("claude-code", "default"))
    assert [c.name for c in chain] == ["claude-code:haiku", "openai:gpt-fb", "ollama:llama3.2"]
    assert problems == []
    chain, problems = factory.extraction_chain(s, None)
    assert [c.name for c in chain] == ["openai:gpt-fb", "ollama:llama3.2"] and problems
    chain, _ = factory.extraction_chain(ProviderSettings(), factory.Choice("ollama", "qwen3"))
    assert [c.name for c in chain] == ["ollama:qwen3"]


def test_nothing_configured_prints_guidance_exit_2_and_stores_nothing(rheo, home):
    result = rheo("ask", "remember that I like tea")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0] == "rheo: no model provider is configured"
    guidance = result.stderr
    for needle in ("ANTHROPIC_API_KEY", "claude", "OPENAI_API_KEY", "ollama", "base_url"):
        assert needle in guidance
    assert "Traceback" not in guidance
    db = home / "rheo.db"
    assert not db.exists() or db_rows(home, "SELECT count(*) FROM turns")[0][0] == 0


def test_unknown_provider_flag_is_a_usage_error(rheo, home):
    result = rheo("ask", "--provider", "gemini", "q")
    assert result.exit_code == 2
    assert "unknown provider 'gemini'" in result.stderr and len(result.stderr.splitlines()) == 1


def test_contradicting_provider_and_model_is_a_usage_error(rheo, home):
    result = rheo("ask", "--provider", "anthropic", "-m", "openai:gpt-5", "q")
    assert result.exit_code == 2 and "does not match" in result.stderr


def test_bad_config_provider_is_one_line(rheo, home):
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('provider = "gemini"\n')
    result = rheo("ask", "q")
    assert result.exit_code == 1 and "provider 'gemini'" in result.stderr


def _closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.mark.boundary
def test_providers_command_lists_reachability_without_keys(rheo, home, monkeypatch):
    secret_a = "sk-ant-supersecretvalue123"
    secret_o = "sk-openai-supersecretvalue456"
    with FakeOpenAI() as server, FakeAnthropic() as anthropic:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic.base_url)
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(
            f'[ollama]\nbase_url = "http://127.0.0.1:{_closed_port()}/v1"\n'
        )
        monkeypatch.setenv("ANTHROPIC_API_KEY", secret_a)
        monkeypatch.setenv("OPENAI_API_KEY", secret_o)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        result = rheo("providers")
        assert result.exit_code == 0, result.stderr
        out = result.stdout
        assert secret_a not in out and secret_o not in out
        assert "chat:       anthropic:claude-sonnet-5-5  (auto: ANTHROPIC_API_KEY is set)" in out
        assert "ok  anthropic" in out and "key in ANTHROPIC_API_KEY; " in out
        assert "answered (1 model)" in out.split("ok  anthropic")[1].splitlines()[0]
        # the Anthropic API was asked, as the SDK asks it, without spending tokens
        listed = anthropic.requests[-1]
        assert (listed.method, listed.path) == ("GET", "/v1/models")
        assert listed.headers["x-api-key"] == secret_a and listed.headers["anthropic-version"]
        assert anthropic.message_requests == []
        assert "ok  openai" in out and "answered (1 model)" in out
        assert "--  ollama" in out and "cannot reach" in out
        assert "--  claude-code" in out
        # the models check sent the key, as the server needs it
        assert server.requests[-1].headers["authorization"] == f"Bearer {secret_o}"
        data = json.loads(rheo("providers", "--json").stdout)
        refused = rheo("providers", ANTHROPIC_BASE_URL=f"http://127.0.0.1:{_closed_port()}")
        assert data["chat"]["provider"] == "anthropic"
        assert data["extraction"] == ["anthropic:claude-haiku-5-5"]
        assert {p["provider"]: p["ready"] for p in data["providers"]} == {
            "anthropic": True,
            "claude-code": False,
            "openai": True,
            "ollama": False,
        }
    # an Anthropic API that cannot be reached is reported as such, not "ok"
    assert "--  anthropic" in refused.stdout and "cannot reach" in refused.stdout


def test_providers_command_with_nothing_configured_shows_guidance(rheo, home):
    result = rheo("providers")
    assert result.exit_code == 0
    assert "none configured" in result.stdout and "OPENAI_API_KEY" in result.stdout


# -- the extraction fallback chain across providers (Solid# article) ----------------------


def _config(home: Path, base_url: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f'[extraction]\nfallback = ["openai:gpt-fb"]\n\n[openai]\nbase_url = "{base_url}"\n'
    )


@pytest.mark.boundary
def test_primary_overloaded_every_time_then_the_fallback_serves(rheo, api, home, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fallback-key-000")
    route(api, chat=text("Porto is lovely."), extract=error(529, "overloaded_error", "busy"))
    with FakeOpenAI() as server:
        _config(home, server.base_url)
        facts = {"facts": [{"topic": "city", "label": "Lives in Porto", "confidence": 0.9}]}
        server.default = oai_text(json.dumps(facts))
        assert rheo("ask", "I live in Porto.").exit_code == 0
        out = json.loads(rheo("maintain", "--json").stdout)
    notes = out["done"][0]["notes"]
    assert any(n.startswith("fallback used after: anthropic:claude-haiku-5-5") for n in notes)
    assert "openai:gpt-fb: 1 fact" in notes  # the job records which model served it
    extract_calls = [r for r in api.message_requests if r.body["model"] == "claude-haiku-5-5"]
    assert len(extract_calls) == 3  # the primary was tried with its retries first
    listed = json.loads(rheo("memory", "list", "--json").stdout)
    assert listed[0]["content"]["label"] == "Lives in Porto"


@pytest.mark.boundary
def test_every_extractor_down_leaves_the_chat_alone_and_stores_nothing(
    rheo, api, home, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fallback-key-000")
    route(
        api,
        chat=text("Noted."),
        extract=error(529, "overloaded_error", "busy"),
        digest=error(529, "overloaded_error", "busy"),
    )
    with FakeOpenAI() as server:
        _config(home, server.base_url)
        server.default = oai_error(500, "down")
        result = rheo("ask", "I live in Porto.")
        assert result.exit_code == 0 and "Noted." in result.stdout  # the chat is unaffected
        for _ in range(5):
            rheo("maintain")
    job = json.loads(rheo("jobs", "list", "--json").stdout)[0]
    assert job["status"] == "failed" and job["attempts"] == 5
    assert "anthropic:claude-haiku-5-5" in job["last_error"]
    assert "openai:gpt-fb" in job["last_error"]
    assert json.loads(rheo("memory", "list", "--json").stdout) == []  # nothing half stored
    assert [tuple(r) for r in db_rows(home, "SELECT role, status FROM turns")] == [
        ("user", None),
        ("assistant", "ok"),
    ]


def test_runtime_provider_raises_guidance_before_the_repl(home):
    from rheo_cli.app import app as runtime
    from rheo_cli.errors import NoProviderConfigured

    rt = runtime.build(environ={**os.environ, "PATH": "/nonexistent"})
    with pytest.raises(NoProviderConfigured) as caught:
        rt.provider()
    assert "ANTHROPIC_API_KEY" in caught.value.detail


# -- an OpenAI-compatible server of one's own (llama.cpp, vLLM) -----------------------------


def test_extraction_on_a_custom_openai_server_uses_its_chat_model(monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    local = ProviderSettings(
        provider="openai",
        openai=Endpoint("http://localhost:8080/v1", "", model="my-model"),
    )
    chat = factory.Choice("openai", "my-model")
    chain, problems = factory.extraction_chain(local, chat)
    assert [c.name for c in chain] == ["openai:my-model"] and problems == []
    assert "localhost:8080" in chain[0].source
    # a named extraction_model still wins; OpenAI's own server keeps its small model
    named = ProviderSettings(
        openai=Endpoint("http://localhost:8080/v1", "", "my-model", extraction_model="small")
    )
    assert [c.name for c in factory.extraction_chain(named, chat)[0]] == ["openai:small"]
    chain, _ = factory.extraction_chain(ProviderSettings(), chat)
    assert [c.name for c in chain] == ["openai:gpt-5-nano"]
    # a bare "openai" fallback on the custom server: its chat model too
    fb = ProviderSettings(
        fallback=("openai",), openai=Endpoint("http://localhost:8080/v1", "", model="my-model")
    )
    chain, _ = factory.extraction_chain(fb, factory.Choice("anthropic", "claude-x"))
    assert [c.name for c in chain] == ["anthropic:claude-haiku-5-5", "openai:my-model"]


@pytest.mark.boundary
def test_readme_llama_cpp_setup_learns_with_the_chat_model(rheo, home):
    facts = {"facts": [{"topic": "city", "label": "Lives in Porto", "confidence": 0.9}]}
    with FakeOpenAI() as server:
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(
            'provider = "openai"\n[openai]\n'
            f'base_url = "{server.base_url}"\napi_key_env = ""\nmodel = "my-model"\n'
        )
        server.queue(oai_text("Porto is lovely."), oai_text(json.dumps(facts)))
        assert rheo("ask", "I live in Porto.").exit_code == 0
        out = json.loads(rheo("maintain", "--json").stdout)
        assert any("openai:my-model: 1 fact" in n for n in out["done"][0]["notes"]), out
        assert server.completions[-1].body["model"] == "my-model"
        shown = rheo("providers")
    assert "extraction: openai:my-model" in shown.stdout
    assert "the chat model" in shown.stdout
    listed = json.loads(rheo("memory", "list", "--json").stdout)
    assert listed[0]["content"]["label"] == "Lives in Porto"


def test_providers_command_explains_its_marks(rheo, home):
    listed = rheo("providers").stdout
    marks = {line[:4] for line in listed.splitlines() if line[:4] in ("ok  ", "--  ")}
    assert marks, listed
    assert "ok = ready to use" in listed and "-- = not ready" in listed
