"""What the thin client decides with the standard library alone: the same RHEO_HOME as
rheo's paths, and whether the resident is on, which command it is asked to run."""

from __future__ import annotations

from rheo_cli import paths
from rheo_cli.resident import client, protocol


def test_the_home_is_the_one_rheo_uses(tmp_path):
    env = {"RHEO_HOME": str(tmp_path / "h"), "HOME": str(tmp_path)}
    assert protocol.home(env) == str(paths.resolve("default", env).home)
    env = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    assert protocol.home(env) == str(tmp_path / "data" / "rheo")


def test_the_variable_wins_over_the_config_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert client.enabled({}, str(tmp_path))  # no config.toml: on
    (tmp_path / "config.toml").write_text('[resident]\nmode = "off"\n')
    assert not client.enabled({}, str(tmp_path))
    assert client.enabled({"RHEO_RESIDENT": "1"}, str(tmp_path))
    (tmp_path / "config.toml").write_text("[resident]\nidle_minutes = 5\n")
    assert client.enabled({}, str(tmp_path))
    assert not client.enabled({"RHEO_RESIDENT": "off"}, str(tmp_path))
    (tmp_path / "config.toml").write_text("[resident\n")  # broken: rheo reports it in-process
    assert not client.enabled({}, str(tmp_path))


def test_the_command_is_the_first_word_that_is_not_an_option_or_its_value():
    assert protocol.command_of(["ask", "mcp"]) == "ask"  # a question "mcp" is still an ask
    assert protocol.command_of(["-p", "mcp", "--model", "x", "mcp", "--log-turns"]) == "mcp"
    assert protocol.command_of(["--json"]) == ""
    assert protocol.command_of(["ask", "--help"]) == "ask"
    assert protocol.command_of(["--help", "ask"]) is None
    assert protocol.command_of(["-a", "mcp", "ask", "hi"]) == "ask"  # an assistant named mcp
    assert protocol.command_of(["--provider", "anthropic", "mcp"]) == "mcp"


def test_the_options_skipped_are_the_top_level_options_that_take_a_value():
    import typer.main

    from rheo_cli.cli.main import app

    root = typer.main.get_command(app)
    taking = {
        name
        for param in root.params
        if param.param_type_name == "option" and not getattr(param, "is_flag", False)
        for name in (*param.opts, *param.secondary_opts)
    }
    assert taking == protocol._VALUE_OPTIONS
