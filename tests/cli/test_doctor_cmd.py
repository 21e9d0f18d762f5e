"""``rheo doctor`` on a new user's setup: the assistant prompt file the README has them write
is theirs (its permissions are not rheo's business) but must exist; a refused ``config edit``
leaves a private draft, not a problem."""

from __future__ import annotations

import json
import os
import sys


def _setup(home, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o700)
    (home / "config.toml").write_text('[assistants.sarah]\nprompt_file = "sarah.md"\n')
    os.chmod(home / "config.toml", 0o600)


def _doctor(rheo):
    result = rheo("doctor", "--json")
    return result.exit_code, {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def test_a_readable_prompt_file_is_fine_whatever_its_mode(rheo, home, monkeypatch):
    _setup(home, monkeypatch)
    (home / "sarah.md").write_text("You are Sarah.\n")
    os.chmod(home / "sarah.md", 0o644)
    code, checks = _doctor(rheo)
    assert code == 0, checks
    assert checks["permissions"]["ok"] and checks["assistants"]["ok"]
    assert rheo("doctor", "--repair").exit_code == 0
    assert os.stat(home / "sarah.md").st_mode & 0o777 == 0o644  # the person's file, untouched


def test_a_missing_prompt_file_is_a_problem(rheo, home, monkeypatch):
    _setup(home, monkeypatch)
    code, checks = _doctor(rheo)
    assert code == 1
    assert not checks["assistants"]["ok"]
    assert "sarah.md" in checks["assistants"]["detail"]


def test_a_refused_config_edit_leaves_a_private_draft(rheo, home, tmp_path, monkeypatch):
    _setup(home, monkeypatch)
    (home / "sarah.md").write_text("You are Sarah.\n")
    old = os.umask(0o022)  # the usual umask: a plain write would be 0644
    try:
        script = tmp_path / "editor.py"
        script.write_text("import sys\nopen(sys.argv[1], 'w').write(\"max_tokens = 'x'\\n\")\n")
        monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
        monkeypatch.delenv("VISUAL", raising=False)
        assert rheo("config", "edit").exit_code == 1
    finally:
        os.umask(old)
    draft = home / "config.toml.edit.toml"
    assert draft.read_text() == "max_tokens = 'x'\n"  # the edit is kept for the person
    assert draft.stat().st_mode & 0o777 == 0o600
    code, checks = _doctor(rheo)
    assert code == 0 and checks["permissions"]["ok"], checks
