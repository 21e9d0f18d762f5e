"""Terminal craft: version, completion, config, retry, continuing, dates, wording,
numbering per profile, help that teaches."""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta, timezone

import pytest
from fakeprovider import Canned, api_error
from helpers import db_rows, run_rheo

from rheo_cli.memory.retrieval.timeexpr import future_date
from rheo_cli.providers.base import Usage

NOW = "2026-11-25T10:00:00+00:00"  # a Wednesday


# --- 1. the basics -----------------------------------------------------------------------


def test_version(rheo):
    result = rheo("--version")
    assert result.exit_code == 0
    assert result.stdout.startswith("rheo ") and result.stdout.split()[1][0].isdigit()


def _complete(home, words: str, **env: str) -> str:
    """What the shell would offer for ``words`` (zsh protocol: the line so far)."""
    full = dict(os.environ, RHEO_HOME=str(home), _RHEO_COMPLETE="complete_zsh")
    full["_TYPER_COMPLETE_ARGS"] = words
    full.update(env)
    result = run_rheo(env=full)
    assert result.returncode == 0, result.stderr
    return result.stdout.decode()


def test_show_completion_prints_a_script_for_each_shell(rheo):
    for shell in ("bash", "zsh", "fish"):
        result = rheo("--show-completion", shell)
        assert result.exit_code == 0
        assert "_RHEO_COMPLETE" in result.stdout, shell


def test_install_completion_writes_the_shell_setup(rheo, tmp_path):
    result = rheo("--install-completion", "bash")
    assert result.exit_code == 0, result.stdout
    assert "_RHEO_COMPLETE" in (tmp_path / ".bash_completions" / "rheo.sh").read_text()
    assert "rheo.sh" in (tmp_path / ".bashrc").read_text()


@pytest.mark.boundary
def test_completion_of_commands_options_profiles_and_memory_ids(rheo, home):
    rheo("memory", "add", "Ana likes green tea", "-t", "ana.drink")
    rheo("-p", "work", "memory", "add", "Deploys happen on Fridays", "-t", "deploy")
    commands = _complete(home, "rheo mem")
    assert '"memory"' in commands
    options = _complete(home, "rheo ask --con")
    assert "--continue" in options
    profiles = _complete(home, "rheo -p ")
    assert '"default"' in profiles and '"work"' in profiles
    ids = _complete(home, "rheo memory pin ")
    assert '"1":"Ana likes green tea"' in ids and "Deploys" not in ids
    work_ids = _complete(home, "rheo -p work memory pin ")
    assert "Deploys happen on Fridays" in work_ids and "Ana" not in work_ids


@pytest.mark.boundary
def test_completion_creates_no_store(home):
    _complete(home, "rheo memory pin ")
    assert not (home / "rheo.db").exists()


# --- 2. rheo config ----------------------------------------------------------------------


def test_config_path_and_show_sources(rheo, home, monkeypatch):
    assert rheo("config", "path").stdout.strip() == str(home / "config.toml")
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("[session]\ngap_hours = 4\n")
    monkeypatch.setenv("RHEO_MODEL", "claude-from-env")
    shown = json.loads(rheo("config", "show", "--json").stdout)
    by_name = {s["name"]: s for s in shown["settings"]}
    assert by_name["session.gap_hours"] == {
        "name": "session.gap_hours",
        "value": 4.0,
        "source": "file",
    }
    assert by_name["memory.cap"]["source"] == "default"
    assert by_name["model"]["source"] == "environment (RHEO_MODEL)"
    flagged = json.loads(rheo("-m", "claude-flag", "config", "show", "--json").stdout)
    model = next(s for s in flagged["settings"] if s["name"] == "model")
    assert model == {"name": "model", "value": "claude-flag", "source": "flag (--model)"}
    text_out = rheo("config", "show").stdout
    assert "session.gap_hours" in text_out and "file" in text_out


def test_config_set_validates_and_keeps_comments(rheo, home):
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text('# my settings\nmodel = "claude-x"   # chat\n\n[memory]\ncap = 20\n')
    ok = rheo("config", "set", "memory.cap", "80")
    assert ok.exit_code == 0, ok.stderr
    assert "memory.cap = 80" in ok.stdout
    assert rheo("config", "set", "session.gap_hours", "3.5").exit_code == 0
    saved = path.read_text()
    assert "# my settings" in saved and "cap = 80" in saved and "cap = 20" not in saved
    assert "[session]\ngap_hours = 3.5" in saved
    before = path.read_text()
    bad = rheo("config", "set", "memory.cap", "0")
    assert bad.exit_code == 2 and "memory.cap '0' refused" in bad.stderr
    assert rheo("config", "set", "memory.cap", "lots").exit_code == 2
    unknown = rheo("config", "set", "memory.size", "3")
    assert unknown.exit_code == 2 and "unknown setting" in unknown.stderr
    assert path.read_text() == before


def _editor(tmp_path, content: str) -> str:
    script = tmp_path / "editor.py"
    script.write_text(f"import sys\nopen(sys.argv[1], 'w').write({content!r})\n")
    return f"{sys.executable} {script}"


def test_config_edit_saves_a_good_edit_and_keeps_the_old_file_on_a_bad_one(
    rheo, home, tmp_path, monkeypatch
):
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text("max_tokens = 1000\n")
    monkeypatch.setenv("EDITOR", _editor(tmp_path, "max_tokens = 2000\n"))
    monkeypatch.delenv("VISUAL", raising=False)
    good = rheo("config", "edit")
    assert good.exit_code == 0, good.stderr
    assert path.read_text() == "max_tokens = 2000\n"
    monkeypatch.setenv("EDITOR", _editor(tmp_path, "max_tokens = 'many'\n"))
    bad = rheo("config", "edit")
    assert bad.exit_code == 1 and "max_tokens" in bad.stderr and "unchanged" in bad.stderr
    assert path.read_text() == "max_tokens = 2000\n"
    assert (home / "config.toml.edit.toml").read_text() == "max_tokens = 'many'\n"


# --- 3. first run and retry --------------------------------------------------------------


def test_ask_retry_resends_the_failed_question_without_storing_it_again(rheo, fake_model, home):
    fake_model.add(Canned(error=api_error(400, "invalid_request_error", "bad request")))
    failed = rheo("ask", "what is the plan?")
    assert failed.exit_code == 1 and "--retry" in failed.stderr
    fake_model.add("Here is the plan.")
    retried = rheo("ask", "--retry")
    assert retried.exit_code == 0, retried.stderr
    assert "Here is the plan." in retried.stdout
    rows = [tuple(r) for r in db_rows(home, "SELECT role, content, status FROM turns")]
    assert rows == [
        ("user", "what is the plan?", None),
        ("assistant", "", "error"),
        ("assistant", "Here is the plan.", "ok"),
    ]
    assert "what is the plan?" in fake_model.last.messages[0]["content"][-1]["text"]
    again = rheo("ask", "--retry")
    assert again.exit_code == 2 and "nothing to retry" in again.stderr
    assert rheo("ask", "--retry", "new question").exit_code == 2


# --- 4. continuing -----------------------------------------------------------------------


def test_continue_keeps_the_session_past_the_gap_and_session_picks_one(
    rheo, fake_model, home, monkeypatch
):
    fake_model.default = "ok"
    monkeypatch.setenv("RHEO_NOW", "2026-11-25T09:00:00+00:00")
    rheo("ask", "first")
    monkeypatch.setenv("RHEO_NOW", "2026-11-25T15:00:00+00:00")  # 6 h later: past the gap
    assert rheo("ask", "-c", "second").exit_code == 0
    monkeypatch.setenv("RHEO_NOW", "2026-11-25T22:00:00+00:00")
    rheo("ask", "third")  # a new session, s2
    rheo("ask", "--session", "1", "fourth")
    sessions = {r["content"]: r["session_id"] for r in db_rows(home, "SELECT * FROM turns")}
    assert sessions["first"] == sessions["second"] == sessions["fourth"]
    assert sessions["third"] != sessions["first"]
    missing = rheo("ask", "--session", "9", "x")
    assert missing.exit_code == 2 and "no session s9" in missing.stderr


def test_sessions_show_prints_a_transcript_and_markdown(rheo, fake_model, monkeypatch):
    monkeypatch.setenv("RHEO_NOW", NOW)
    fake_model.add("Tomatoes like **sun**.")
    rheo("ask", "How do tomatoes grow?")
    plain = rheo("sessions", "show", "1")
    assert plain.exit_code == 0
    assert "session s1" in plain.stdout
    assert plain.stdout.index("How do tomatoes grow?") < plain.stdout.index("Tomatoes like")
    md = rheo("sessions", "show", "s1", "--markdown").stdout
    assert md.startswith("# Session s1") and "## You ·" in md and "## rheo ·" in md
    assert "**sun**" in md
    assert rheo("sessions", "show", "2").exit_code == 2
    assert rheo("sessions", "show", "x").exit_code == 2


def test_system_usage_and_no_stream(rheo, fake_model):
    fake_model.add(
        Canned(
            "Short answer.",
            usage=Usage(input_tokens=10, output_tokens=5, cache_read_tokens=1234),
        )
    )
    result = rheo("ask", "-s", "Answer like a pirate.", "-u", "--no-stream", "hi")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "Short answer."
    system = [b.text for b in fake_model.last.system]
    assert system[-1] == "Answer like a pirate."
    assert len(system) >= 3  # rheo's own prompt and clock come first
    assert "1,234 read from cache" in result.stderr and "tokens:" in result.stderr


# --- 6. dates ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "day"),
    [
        ("friday", "2026-11-27"),
        ("wednesday", "2026-11-25"),
        ("next wednesday", "2026-12-02"),
        ("next monday", "2026-11-30"),
        ("in 2 weeks", "2026-12-09"),
        ("in a month", "2026-12-25"),
        ("tomorrow", "2026-11-26"),
        ("2026-12-24", "2026-12-24"),
        ("24 dec", "2026-12-24"),
        ("jan 3rd", "2027-01-03"),
        ("end of month", "2026-11-30"),
    ],
)
def test_future_date(words, day):
    now = datetime(2026, 11, 25, 10, 0, tzinfo=timezone(timedelta(hours=1)))
    found = future_date(words, now)
    assert found is not None and found.date().isoformat() == day


def test_future_date_refuses_what_is_not_a_date():
    now = datetime(2026, 11, 25, tzinfo=UTC)
    assert future_date("feb 30", now) is None
    assert future_date("someday", now) is None


def test_due_takes_words_echoes_the_date_and_overdue_items_are_marked(rheo, monkeypatch):
    monkeypatch.setenv("RHEO_NOW", NOW)
    added = rheo("memory", "add", "call Ana", "-t", "ana", "-c", "open_item", "--due", "friday")
    assert added.exit_code == 0, added.stderr
    assert "due Fri 27 Nov 2026" in added.stdout
    shown = json.loads(rheo("items", "list", "--json").stdout)
    assert shown[0]["due_at"].startswith("2026-11-27T23:59")
    bad = rheo("memory", "add", "x", "-t", "x", "-c", "open_item", "--due", "someday")
    assert bad.exit_code == 2 and "friday, next monday" in bad.stderr
    monkeypatch.setenv("RHEO_NOW", "2026-11-29T10:00:00+00:00")
    listed = rheo("items", "list").stdout
    assert "OVERDUE" in listed and "call Ana" in listed
    context = rheo("context", "anything").stdout
    assert "due 2026-11-27, OVERDUE" in context


# --- 7. consistency ----------------------------------------------------------------------


def test_items_done_is_idempotent_and_worded_once(rheo):
    rheo("memory", "add", "send the report", "-t", "report", "-c", "open_item")
    first = rheo("items", "done", "1")
    assert first.exit_code == 0 and first.stdout.strip() == "#1 done: send the report"
    second = rheo("items", "done", "1")
    assert second.exit_code == 0
    assert second.stdout.strip() == "#1 already done: send the report"


def test_memory_list_all_is_sorted_like_list(rheo):
    rheo("memory", "add", "low", "-t", "a", "--confidence", "0.4")
    rheo("memory", "add", "high", "-t", "b", "--confidence", "0.9")
    rheo("memory", "add", "gone", "-t", "c", "--confidence", "0.95")
    rheo("memory", "forget", "3")
    listed = [i["content"]["label"] for i in json.loads(rheo("memory", "list", "--json").stdout)]
    everything = [
        i["content"]["label"] for i in json.loads(rheo("memory", "list", "--all", "--json").stdout)
    ]
    assert listed == ["high", "low"]
    assert everything[:2] == listed and len(everything) == 3


def test_session_and_job_numbers_are_per_profile(rheo, fake_model, home):
    fake_model.default = "ok"
    rheo("ask", "in default")
    rheo("-p", "work", "ask", "in work")
    listed = rheo("-p", "work", "sessions", "list").stdout
    assert listed.splitlines()[1].startswith("s1 ")
    assert "in work" in rheo("-p", "work", "sessions", "show", "1").stdout
    assert "in default" in rheo("sessions", "show", "1").stdout
    recent = rheo("-p", "work", "history", "recent").stdout
    assert " s1 " in recent
    jobs = rheo("-p", "work", "jobs", "list").stdout
    assert jobs.startswith("#1 "), jobs
    ids = db_rows(home, "SELECT id FROM jobs WHERE profile = 'work'")
    assert ids[0][0] == 2  # the store's id is 2: the person sees 1


def test_jobs_list_shows_the_last_attempt_not_an_earlier_error(rheo, home):
    from rheo_cli.app import app as runtime
    from rheo_cli.cli.digests_cmd import job_line
    from rheo_cli.memory import jobs

    rt = runtime.build()
    jobs.enqueue(rt.conn, profile="default", kind="extract", ref_id=4, ts="2026-11-25T10:00:00Z")
    rt.conn.execute("UPDATE jobs SET status='done', attempts=2, last_error='timed out'")
    rt.conn.commit()
    done = jobs.list_jobs(rt.conn, "default")[0]
    assert job_line(done) == "#1     extract  turn #4        done (2 attempts)"
    rt.conn.execute("UPDATE jobs SET status='pending'")
    rt.conn.commit()
    pending = job_line(jobs.list_jobs(rt.conn, "default")[0])
    assert "will retry (2 attempts so far): timed out" in pending
    rt.close()


# --- 8. help that teaches ----------------------------------------------------------------


def _commands():
    import typer.main

    from rheo_cli.cli.main import app

    root = typer.main.get_command(app)
    found = []

    def walk(cmd, path):
        subs = getattr(cmd, "commands", None)
        found.append((path, cmd))
        for name, sub in (subs or {}).items():
            walk(sub, [*path, name])

    walk(root, ["rheo"])
    return found


def test_every_command_has_help_text_and_an_example(rheo):
    commands = _commands()
    assert len(commands) > 25
    for path, _cmd in commands:
        result = rheo(*path[1:], "--help")
        assert result.exit_code == 0, path
        summary = result.stdout.split("\n\n")[1].strip()
        assert len(summary) > 10, (path, result.stdout)
        assert "Example" in result.stdout and "rheo " in result.stdout.split("Example")[1], path


@pytest.mark.boundary
def test_root_help_groups_commands():
    result = run_rheo("--help")
    out = result.stdout.decode()
    heads = [out.index(f"\n{h}:\n") for h in ("Chat", "Memory", "History", "Maintenance")]
    assert heads == sorted(heads)
    chat = out[heads[0] : heads[1]]
    assert "ask" in chat and "chat" in chat and "memory" not in chat


def test_store_urls_are_settings_shown_with_the_password_hidden(rheo, home, monkeypatch):
    url = "postgresql://rheo:s3cret-pw@db.example:5432/rheo?options=-csearch_path%3Dmyrheo"
    ok = rheo("config", "set", "store.url", url)
    assert ok.exit_code == 0, ok.stderr
    assert "s3cret-pw" not in ok.stdout and "rheo:***@db.example:5432/rheo" in ok.stdout
    assert f'url = "{url}"' in (home / "config.toml").read_text()  # stored as given
    assert rheo("config", "set", "store.redis_url", "redis://:hush@127.0.0.1:6379/0").exit_code == 0
    shown = json.loads(rheo("config", "show", "--json").stdout)
    by_name = {s["name"]: s for s in shown["settings"]}
    assert by_name["store.url"]["value"] == (
        "postgresql://rheo:***@db.example:5432/rheo?options=-csearch_path%3Dmyrheo"
    )
    assert by_name["store.url"]["source"] == "file"
    assert by_name["store.redis_url"]["value"] == "redis://:***@127.0.0.1:6379/0"
    text_out = rheo("config", "show").stdout
    assert "store.url" in text_out and "s3cret-pw" not in text_out and "hush" not in text_out
    monkeypatch.setenv("RHEO_DATABASE_URL", "postgresql://me@other/rheo?password=pw2")
    env = {s["name"]: s for s in json.loads(rheo("config", "show", "--json").stdout)["settings"]}
    assert env["store.url"] == {
        "name": "store.url",
        "value": "postgresql://me@other/rheo?password=***",
        "source": "environment (RHEO_DATABASE_URL)",
    }
    bad = rheo("config", "set", "store.url", "mysql://root:topsecret@x/db")
    assert bad.exit_code == 2 and "topsecret" not in bad.stderr and "refused" in bad.stderr


def test_paths_on_postgres_show_the_store_url_not_a_file(rheo, home, monkeypatch):
    monkeypatch.setenv("RHEO_DATABASE_URL", "postgresql://rheo:pw9@db.example/rheo")
    out = json.loads(rheo("paths", "--json").stdout)
    assert out["db"] == "postgresql://rheo:***@db.example/rheo"
    assert "rheo.db" not in rheo("paths").stdout
    monkeypatch.delenv("RHEO_DATABASE_URL")
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[store]\nurl = "postgresql://a:b@h/d"\n')
    assert json.loads(rheo("paths", "--json").stdout)["db"] == "postgresql://a:***@h/d"
    (home / "config.toml").write_text("model = [")  # broken: the local paths still show
    assert json.loads(rheo("paths", "--json").stdout)["db"].endswith("rheo.db")
