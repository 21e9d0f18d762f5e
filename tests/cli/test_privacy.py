"""Privacy: pasted secrets never reach memory, digests or the extraction request; incognito
stores and learns nothing; files are private."""

from __future__ import annotations

import io
import json
import stat
from datetime import datetime, timedelta

import pytest
from fakeprovider import facts
from helpers import db_rows, kind_of, request_text, route

from rheo_cli.memory.text.safety import MASK, has_secret, mask

T0 = datetime.fromisoformat("2026-08-20T18:00:00+02:00")

SECRETS = {
    "anthropic": "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Jh1",
    "openai": "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234",
    "github": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "slack": "xoxb-123456789012-abcdefghijkl",
    "aws": "AKIAIOSFODNN7EXAMPLE",
    "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAxyz\n-----END RSA PRIVATE KEY-----",
}


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_usual_shapes_are_recognised(name):
    secret = SECRETS[name]
    masked = mask(f"here it is: {secret} thanks")
    assert secret not in masked and MASK in masked and masked.endswith(" thanks")


@pytest.mark.parametrize(
    "phrase, hidden",
    [
        ("password: hunter2!", "hunter2!"),
        ("my password is correct-horse-battery", "correct-horse-battery"),
        ('{"api_key": "abcd1234efgh"}', "abcd1234efgh"),
        ("DB_PASSWORD=s3cr3tpw", "s3cr3tpw"),
        ("postgres://bob:pa55word@db.example.com/app", "pa55word"),
        ("Authorization: Bearer abcdefghijklmnop", "abcdefghijklmnop"),
    ],
)
def test_labelled_secrets_keep_the_label(phrase, hidden):
    masked = mask(phrase)
    assert hidden not in masked and MASK in masked


@pytest.mark.parametrize(
    "plain",
    [
        "the token bucket algorithm limits rates",
        "the token is valid until Friday",
        "I like skiing: sk-8 is my team",
        "meeting at 10:30, ratio 3:1",
        "Ask Ana about the AKIA conference",
    ],
)
def test_ordinary_text_is_left_alone(plain):
    assert not has_secret(plain)


def test_pasted_secret_is_kept_in_the_ledger_but_not_in_memory_digest_or_requests(
    rheo, fake_model, monkeypatch, home
):
    key = SECRETS["anthropic"]
    route(
        fake_model,
        chat="Noted.",
        extract=facts(
            {
                "category": "operations",
                "topic": "deploy key",
                "label": f"The deploy key is {key}",
                "properties": {"value": key},
                "confidence": 0.9,
                "reason": f"said {key}",
            }
        ),
        digest=json.dumps(
            {
                "narrative": f"The person shared the deploy key {key}.",
                "decisions": [f"use {key}"],
                "facts": [],
            }
        ),
    )
    monkeypatch.setenv("RHEO_NOW", T0.isoformat())
    assert rheo("ask", f"Our deploy key is {key}, password: hunter2!").exit_code == 0
    assert rheo("maintain").exit_code == 0
    monkeypatch.setenv("RHEO_NOW", (T0 + timedelta(hours=5)).isoformat())
    assert rheo("maintain").exit_code == 0
    # The ledger keeps what the person typed.
    assert key in db_rows(home, "SELECT content FROM turns WHERE role = 'user'")[0][0]
    extraction = [r for r in fake_model.requests if kind_of(r) == "extract"]
    digest = [r for r in fake_model.requests if kind_of(r) == "digest"]
    assert extraction and digest
    for rec in extraction + digest:
        sent = request_text(rec)
        assert key not in sent and "hunter2!" not in sent and MASK in sent
    items = json.dumps([dict(r) for r in db_rows(home, "SELECT * FROM memory_items")])
    assert items != "[]" and key not in items and MASK in items
    digests = json.dumps([dict(r) for r in db_rows(home, "SELECT * FROM digests")])
    assert digests != "[]" and key not in digests and MASK in digests
    events = json.dumps([dict(r) for r in db_rows(home, "SELECT * FROM memory_events")])
    assert key not in events


def test_memory_add_masks_a_pasted_secret(rheo, home):
    assert rheo("memory", "add", "wifi password: Tr0ub4dor&3", "-t", "wifi").exit_code == 0
    label = db_rows(home, "SELECT label FROM memory_items")[0][0]
    assert "Tr0ub4dor" not in label and label == f"wifi password: {MASK}"


def test_ask_incognito_stores_and_learns_nothing_but_reads_memory(
    rheo, fake_model, monkeypatch, home
):
    monkeypatch.setenv("RHEO_NOW", T0.isoformat())
    assert rheo("memory", "add", "Ana's cat is called Tom", "-t", "cat").exit_code == 0
    before = {t: db_rows(home, f"SELECT count(*) FROM {t}")[0][0] for t in ("turns", "jobs")}
    fake_model.add("Your cat is Tom.")
    result = rheo("ask", "--incognito", "what is my cat called?", "--json")
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["reply"] == "Your cat is Tom."
    assert out["turn_ids"] == [] and out["session_id"] is None
    assert "Ana's cat is called Tom" in request_text(fake_model.last)  # context still injected
    assert fake_model.last.tools == []  # no tool could write memory
    after = {t: db_rows(home, f"SELECT count(*) FROM {t}")[0][0] for t in ("turns", "jobs")}
    assert after == before == {"turns": 0, "jobs": 0}
    assert db_rows(home, "SELECT count(*) FROM sessions")[0][0] == 0
    assert rheo("maintain").exit_code == 0
    assert len(fake_model.requests) == 1  # nothing was extracted later either


def test_repl_incognito_toggle(fake_model, home):
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from rheo_cli.app import app as runtime
    from rheo_cli.repl.app import run_repl

    fake_model.add("one", "two", "three")
    with create_pipe_input() as pipe:
        pipe.send_text("kept first\r/incognito\rprivate words\r/incognito\rkept again\r\x04")
        out = io.StringIO()
        rt = runtime.build()
        try:
            run_repl(rt, input=pipe, output=DummyOutput(), out=out, rendered=False)
        finally:
            rt.close()
    assert "Incognito" in out.getvalue() and "two" in out.getvalue()
    contents = [r[0] for r in db_rows(home, "SELECT content FROM turns ORDER BY id")]
    assert contents == ["kept first", "one", "kept again", "three"]
    history = (home / "history" / "default").read_text()
    assert "kept first" in history and "kept again" in history
    assert "private words" not in history
    assert db_rows(home, "SELECT count(*) FROM jobs WHERE kind = 'extract'")[0][0] == 2


def test_files_are_0600_and_folders_0700(rheo, fake_model, home):
    fake_model.add("hi")
    assert rheo("ask", "hello").exit_code == 0
    (home / "backups").mkdir(mode=0o700)  # backup refuses a folder that does not exist
    assert rheo("backup", str(home / "backups" / "copy.db")).exit_code == 0
    assert rheo("export", "-o", str(home / "out.jsonl")).exit_code == 0
    for path in [home, *home.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        if path.is_dir():
            assert mode == 0o700, path
        else:
            assert mode == 0o600, path
