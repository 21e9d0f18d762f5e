"""``rheo memory``, ``rheo items`` and ``rheo kb`` alone list, and take the list command's
options (README: "`rheo items` alone lists", "every listing command takes --json")."""

from __future__ import annotations

import json

import pytest


@pytest.mark.parametrize(
    "args",
    [
        ("items", "--json"),
        ("items", "--all", "--json"),
        ("memory", "--json"),
        ("memory", "--all", "--json"),
        ("memory", "--category", "fact", "--json"),
        ("kb", "--json"),
        ("kb", "--all", "--json"),
    ],
)
def test_the_bare_group_takes_the_list_options(rheo, args):
    assert (
        rheo("memory", "add", "Send invoice to Acme", "-t", "acme", "--due", "friday").exit_code
        == 0
    )
    alone = rheo(*args)
    listed = rheo(args[0], "list", *args[1:])
    assert alone.exit_code == 0, alone.stderr
    assert json.loads(alone.stdout) == json.loads(listed.stdout)


def test_the_bare_group_still_lists_and_helps(rheo):
    assert rheo("memory", "add", "Drinks tea", "-t", "tea").exit_code == 0
    assert "Drinks tea" in rheo("memory").stdout
    assert rheo("kb").exit_code == 0
    helped = rheo("items", "--help")
    assert helped.exit_code == 0 and "done" in helped.stdout and "Commands" in helped.stdout
    unknown = rheo("memory", "--bogus")
    assert unknown.exit_code == 2 and "--bogus" in unknown.stderr


def _offered(home, words: str) -> str:
    """What zsh would offer for the command line ``words``."""
    import os

    from helpers import run_rheo

    env = dict(os.environ, RHEO_HOME=str(home), _RHEO_COMPLETE="complete_zsh")
    env["_TYPER_COMPLETE_ARGS"] = words
    result = run_rheo(env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode()


@pytest.mark.boundary
@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("rheo memory ", ['"list"', '"add"', '"forget"']),
        ("rheo memory l", ['"list"']),
        ("rheo items ", ['"list"', '"done"']),
        ("rheo kb ", ['"add"', '"list"', '"remove"']),
    ],
)
def test_completion_offers_the_group_commands_not_file_names(home, words, expected):
    offered = _offered(home, words)
    assert "_files" not in offered
    for name in expected:
        assert name in offered, (words, offered)


def test_install_completion_says_which_startup_file_it_edits(rheo, tmp_path):
    result = rheo("--install-completion", "bash")
    assert result.exit_code == 0, result.stdout
    assert f"edited {tmp_path / '.bashrc'}" in result.stdout
    assert str(tmp_path / ".bash_completions" / "rheo.sh") in result.stdout
    assert "rheo.sh" in (tmp_path / ".bashrc").read_text()
    assert "~/.bashrc" in rheo("--help").stdout
