"""The one table of settings: `config.load` accepts exactly its keys, each reaches the
Config, ``rheo config show`` shows each one (secrets hidden), ``set``/``unset`` change each
one in place with comments kept, and the README's table is written from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rheo_cli import config as config_mod
from rheo_cli import config_keys as keys
from rheo_cli.config_keys import ASSISTANT, KEYS, toml_value
from rheo_cli.errors import ConfigError

README = Path(__file__).resolve().parent.parent / "README.md"
CONCRETE = [k.at("sarah") if k.section == ASSISTANT else k for k in KEYS]
"""Every key, the assistant keys for an assistant named sarah."""


def full_config() -> str:
    """A config.toml that sets every key of the table to its example value."""
    sections: dict[str, list[str]] = {}
    for key in CONCRETE:
        sections.setdefault(key.section, []).append(f"{key.key} = {toml_value(key.example)}")
    lines = [*sections.pop("")]
    for section, body in sections.items():
        lines += ["", f"[{section}]", *body]
    return "\n".join(lines) + "\n"


@pytest.fixture
def quiet_env(home, monkeypatch):
    """No variable of the table set: every value comes from the file or a default."""
    for key in KEYS:
        if key.env:
            monkeypatch.delenv(key.env, raising=False)
    monkeypatch.delenv("RHEO_ASSISTANT", raising=False)
    home.mkdir(parents=True, exist_ok=True)
    return home


def test_every_key_has_an_example_that_differs_from_its_default():
    for key in KEYS:
        assert key.example is not None, key.name
        assert key.example != key.default, key.name
        assert key.read(key.example) is not None, key.name
        assert key.help and key.kind in ("str", "int", "float", "list", "map"), key.name


def test_a_missing_file_gives_the_table_defaults_and_the_config_defaults(tmp_path):
    assert config_mod.load(tmp_path / "none.toml") == config_mod.Config()
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert config_mod.load(empty) == config_mod.Config()


@pytest.mark.parametrize("key", CONCRETE, ids=lambda k: k.name)
def test_each_key_reaches_the_config_and_a_wrong_type_names_it(tmp_path, key):
    path = tmp_path / "config.toml"
    body = f"{key.key} = {toml_value(key.example)}\n"
    path.write_text(body if not key.section else f"[{key.section}]\n{body}")
    assert config_mod.load(path) != config_mod.Config(), f"{key.name} changes nothing"
    wrong = '"text"' if key.kind in ("int", "float", "list", "map") else "[1, 2]"
    path.write_text(
        f"{key.key} = {wrong}\n" if not key.section else f"[{key.section}]\n{key.key} = {wrong}\n"
    )
    with pytest.raises(ConfigError) as refused:
        config_mod.load(path)
    assert key.where in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("section", keys.SECTIONS, ids=lambda s: s or "top")
def test_a_key_outside_the_table_is_refused_in_every_table(tmp_path, section):
    path = tmp_path / "config.toml"
    table = "assistants.sarah" if section == ASSISTANT else section
    path.write_text(f"[{table}]\ncolour = 1\n" if table else "colour = 1\n")
    with pytest.raises(ConfigError, match="unknown setting"):
        config_mod.load(path)


def test_the_full_config_loads_and_config_show_shows_every_key_from_the_file(rheo, quiet_env):
    (quiet_env / "config.toml").write_text(full_config())
    cfg = config_mod.load(quiet_env / "config.toml")
    assert cfg.assistants["sarah"].description == "customer service"
    assert cfg.telegram_chats == ((123456789, "default"),) and cfg.redis_ttl_s == 7 * 86400
    result = rheo("config", "show", "--json")
    assert result.exit_code == 0, result.stderr
    shown = {s["name"]: s for s in json.loads(result.stdout)["settings"]}
    assert set(shown) == {k.name for k in CONCRETE}
    for key in CONCRETE:
        if key.name in ("provider", "model"):
            continue  # the chat's: checked below
        assert shown[key.name]["source"] == "file", key.name
        assert shown[key.name]["value"] == key.shown(key.read(key.example)), key.name
    assert shown["provider"] == {"name": "provider", "value": "anthropic", "source": "file"}
    assert shown["model"] == {"name": "model", "value": "claude-sonnet-5-5", "source": "file"}
    assert shown["telegram.token"]["value"] == "***"
    text = rheo("config", "show").stdout
    assert "123456:ABC-bot-token" not in text + result.stdout
    for key in CONCRETE:
        assert f"\n{key.name} " in text, key.name


def test_config_show_names_the_provider_and_model_a_chat_would_use(rheo, quiet_env, monkeypatch):
    none = {s["name"]: s for s in json.loads(rheo("config", "show", "--json").stdout)["settings"]}
    assert none["provider"]["value"] == "none" and "rheo providers" in none["provider"]["source"]
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0000")
    auto = {s["name"]: s for s in json.loads(rheo("config", "show", "--json").stdout)["settings"]}
    assert auto["provider"] == {
        "name": "provider",
        "value": "anthropic",
        "source": "auto-detected: ANTHROPIC_API_KEY is set",
    }
    assert auto["model"] == {
        "name": "model",
        "value": "claude-sonnet-5-5",
        "source": "default for anthropic",
    }
    assert auto["extraction.model"]["value"] == "anthropic:claude-haiku-5-5"
    (quiet_env / "config.toml").write_text(
        '[openai]\nmodel = "gpt-mine"\n[assistants.sarah]\nmodel = "ollama:llama9"\n'
    )
    flagged = json.loads(rheo("--provider", "openai", "config", "show", "--json").stdout)
    rows = {s["name"]: s for s in flagged["settings"]}
    assert rows["provider"]["source"] == "flag (--provider)"
    assert rows["model"] == {
        "name": "model",
        "value": "gpt-mine",
        "source": "file ([openai] model)",
    }
    persona = json.loads(rheo("-a", "sarah", "config", "show", "--json").stdout)
    rows = {s["name"]: s for s in persona["settings"]}
    assert rows["provider"] == {
        "name": "provider",
        "value": "ollama",
        "source": "assistant sarah (its model)",
    }
    assert rows["model"]["value"] == "ollama:llama9"


@pytest.mark.parametrize("key", CONCRETE, ids=lambda k: k.name)
def test_every_key_can_be_set_and_unset_keeping_the_rest_of_the_file(rheo, quiet_env, key):
    path = quiet_env / "config.toml"
    original = "# mine\nmax_tokens = 999   # long replies\n\n[memory]\nfloor = 0.2  # low\n"
    path.write_text(original)
    typed = key.example
    if isinstance(typed, list):
        typed = ",".join(typed)
    elif isinstance(typed, dict):
        typed = ",".join(f"{k}={v}" for k, v in typed.items())
    result = rheo("config", "set", key.name, str(typed))
    assert result.exit_code == 0, result.stderr
    saved = path.read_text()
    assert "# mine" in saved and "# long replies" in saved and "# low" in saved
    shown = {s["name"]: s for s in json.loads(rheo("config", "show", "--json").stdout)["settings"]}
    if key.name not in ("provider", "model"):
        assert shown[key.name]["source"] == "file", key.name
        assert shown[key.name]["value"] == key.shown(key.read(key.example)), key.name
    assert config_mod.load(path) != config_mod.load(_written(quiet_env, original))
    if key.secret:
        assert str(key.example) not in result.stdout and "***" in result.stdout
    removed = rheo("config", "unset", key.name)
    assert removed.exit_code == 0 and "removed" in removed.stdout, removed.stderr
    if key.name in ("max_tokens", "memory.floor"):
        return
    assert path.read_text() == original, key.name
    again = rheo("config", "unset", key.name)
    assert again.exit_code == 0 and "not set" in again.stdout


def _written(home: Path, text: str) -> Path:
    other = home / "other.toml"
    other.write_text(text)
    return other


def test_unset_of_a_whole_assistant_and_errors_are_one_line(rheo, quiet_env):
    path = quiet_env / "config.toml"
    path.write_text('[assistants.sarah]\nmodel = "x"\n\n[assistants.marcus]\nmodel = "y"\n')
    assert rheo("config", "unset", "assistants.sarah").exit_code == 0
    assert path.read_text() == '[assistants.marcus]\nmodel = "y"\n'
    for args in (
        ("config", "set", "nonsense", "1"),
        ("config", "unset", "memory.size"),
        ("config", "unset", "assistants.Bad Name!"),
        ("config", "set", "assistants.Bad Name!.model", "x"),
        ("config", "set", "telegram.chats", "me=default"),
        ("config", "set", "telegram.chats", "123"),
        ("config", "set", "timeout", "0"),
        ("config", "set", "extraction.fallback", "nope:model"),
    ):
        result = rheo(*args)
        assert result.exit_code == 2, (args, result.stdout)
        assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert path.read_text() == '[assistants.marcus]\nmodel = "y"\n'
    path.write_text("[memory]\ncap = 'many'\n")
    broken = rheo("config", "set", "memory.floor", "0.4")
    assert broken.exit_code == 1 and "[memory] cap" in broken.stderr
    assert rheo("config", "show").exit_code == 1


def test_a_secret_or_a_urls_password_never_appears_in_a_refusal(rheo, quiet_env):
    bad = rheo("config", "set", "store.redis_url", "http://me:hunter22@cache")
    assert bad.exit_code == 2 and "hunter22" not in bad.stderr
    assert rheo("config", "set", "telegram.token", "123:SECRETTOKEN").exit_code == 0
    shown = rheo("config", "show").stdout + rheo("config", "show", "--json").stdout
    assert "SECRETTOKEN" not in shown


def test_an_environment_value_is_checked_by_its_key(rheo, quiet_env, monkeypatch):
    monkeypatch.setenv("RHEO_DATABASE_URL", "mysql://root:hunter22@db/x")
    result = rheo("history", "recent")
    assert result.exit_code == 2 and "RHEO_DATABASE_URL" in result.stderr
    assert "postgresql://" in result.stderr and "hunter22" not in result.stderr


def test_every_settings_variable_is_checked_for_utf8_at_startup():
    from rheo_cli.cli.inputs import ENV_TEXT

    assert {k.env for k in KEYS if k.env} <= set(ENV_TEXT)


def test_the_edit_template_sets_every_key_once_uncommented(tmp_path):
    text = keys.template()
    path = tmp_path / "config.toml"
    path.write_text(text)
    assert config_mod.load(path) == config_mod.Config()  # every line commented out
    for key in KEYS:
        assert f"# {key.key} = {toml_value(key.template_value)}" in text, key.name


def test_the_readme_lists_every_key_from_the_table():
    readme = README.read_text(encoding="utf-8")
    begin, end = "<!-- settings table: begin -->\n", "<!-- settings table: end -->"
    block = readme[readme.index(begin) + len(begin) : readme.index(end)]
    assert block == keys.markdown_table(), "README's settings table: paste markdown_table()"
