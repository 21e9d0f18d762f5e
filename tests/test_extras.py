"""The install hint for an optional extra: rheo is installed from its folder (README), not
from PyPI, so every hint names that folder and this environment's pip."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import db_rows

from rheo_cli import extras

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("extra", sorted(extras.EXTRAS))
def test_every_hint_installs_from_the_folder_rheo_came_from(extra):
    hint = extras.install_hint(extra)
    assert "rheo-cli[" not in hint
    assert hint.endswith(f"install '{REPO}[{extra}]'"), hint
    if sys.prefix != sys.base_prefix:
        assert hint.startswith(str(Path(sys.prefix) / "bin" / "pip")), hint


def test_chat_on_openai_without_the_sdk_says_how_to_install_it(rheo, home, monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # import openai now fails
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    result = rheo("ask", "--provider", "openai", "hello")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"rheo: openai needs the openai SDK: {extras.install_hint('openai')}"
    ]
    db = home / "rheo.db"
    assert not db.exists() or db_rows(home, "SELECT count(*) FROM turns")[0][0] == 0


def test_postgresql_without_psycopg_says_how_to_install_it(rheo, monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.setenv("RHEO_DATABASE_URL", "postgresql://rheo@127.0.0.1:1/rheo")
    result = rheo("memory", "list", "--json")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"rheo: PostgreSQL needs psycopg: {extras.install_hint('postgres')}"
    ]
    assert json.dumps(extras.EXTRAS)  # every extra of pyproject.toml is known
    text = (REPO / "pyproject.toml").read_text()
    for extra in extras.EXTRAS:
        assert f"\n{extra} = [" in text, extra
