"""What a new user reads: whole sentences, singular for one, rheo's own one-line usage errors,
columns that never run together."""

from __future__ import annotations

import json

from rheo_cli.cli.main import run


def test_usage_errors_about_numbers_are_in_rheos_words(capsys):
    assert run(["memory", "pin", "abc"]) == 2
    err = capsys.readouterr().err
    assert (
        err
        == "rheo: ITEM_ID must be a whole number from 1, not 'abc' (see 'rheo memory pin --help')\n"
    )
    assert run(["history", "recent", "-n", "0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rheo: --limit must be a whole number from 1 to ")
    assert err.endswith(", not 0 (see 'rheo history recent --help')\n")
    assert "int range" not in err and "<=x<=" not in err


def test_one_chunk_is_one_chunk(rheo, tmp_path):
    doc = tmp_path / "note.md"
    doc.write_text("# Refunds\nWithin 30 days.\n")
    added = rheo("kb", "add", str(doc))
    assert added.exit_code == 0, added.stderr
    assert "(1 chunk)" in added.stdout
    assert " 1 chunk " in rheo("kb", "list").stdout


def test_purging_a_profile_names_it_once(rheo):
    assert rheo("--profile", "work", "memory", "add", "Drinks tea", "-t", "tea").exit_code == 0
    done = rheo("purge", "profile", "work", "--yes")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.startswith("purged profile work: ")
    assert "of profile" not in done.stdout


def test_a_job_done_without_a_retry_says_done(rheo, home):
    from rheo_cli.app import app as runtime
    from rheo_cli.cli.digests_cmd import job_line
    from rheo_cli.memory import jobs

    rt = runtime.build()
    jobs.enqueue(rt.conn, profile="default", kind="extract", ref_id=4, ts="2026-11-25T10:00:00Z")
    rt.conn.execute("UPDATE jobs SET status='done', attempts=0")
    rt.conn.commit()
    assert job_line(jobs.list_jobs(rt.conn, "default")[0]).endswith("turn #4        done")
    rt.close()


def test_config_show_columns_never_run_together(rheo, monkeypatch):
    from rheo_cli.cli.config_cmd import VALUE_COLUMN, aligned

    long = "anthropic:" + "x" * 60
    monkeypatch.setenv("RHEO_MODEL", long)
    lines = rheo("config", "show").stdout.splitlines()[1:]
    at = next(i for i, ln in enumerate(lines) if ln.startswith("model "))
    assert lines[at].split() == ["model", long]
    assert lines[at + 1].strip() == "environment (RHEO_MODEL)"
    base = next(ln for ln in lines if ln.startswith("openai.base_url"))
    assert base.split() == ["openai.base_url", "https://api.openai.com/v1", "default"]
    rows = aligned([("a", "short", "default"), ("bb", "y" * (VALUE_COLUMN + 5), "file")])
    assert rows[0] == "a   " + "short".ljust(VALUE_COLUMN) + "  default"
    assert rows[1:] == ["bb  " + "y" * (VALUE_COLUMN + 5), " " * (4 + VALUE_COLUMN + 2) + "file"]


def test_context_explain_shows_an_excerpt_and_the_matched_words(rheo):
    assert rheo("memory", "add", "Ana prefers green tea", "-t", "ana.tea").exit_code == 0
    out = rheo("context", "--explain", "what tea does Ana like").stdout
    line = next(ln for ln in out.splitlines() if "item:1" in ln)
    assert "Ana prefers green tea" in line and "matched:" in line and "tea" in line
    assert json.loads(rheo("context", "--json", "tea").stdout)["sections"]


def test_counts_agree_with_their_nouns(rheo, tmp_path):
    from rheo_cli.ui.wording import plural

    assert [plural(n, "turn") for n in (0, 1, 2, 1204)] == [
        "0 turns",
        "1 turn",
        "2 turns",
        "1,204 turns",
    ]
    assert plural(1, "digest job") == "1 digest job"
    assert rheo("memory", "add", "Ana likes tea", "-t", "ana").exit_code == 0
    told = rheo("export", "-o", str(tmp_path / "e.jsonl")).stderr
    assert "records of default" in told and "record(s)" not in told
