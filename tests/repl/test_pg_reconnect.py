"""The REPL on PostgreSQL outlives its connection: when the server ends it (a restart,
``pg_terminate_backend``, an idle timeout), the next statement reconnects once, as the same
tenant, and the chat carries on. Against the real test server; skipped without
RHEO_TEST_DATABASE_URL."""

from __future__ import annotations

import io
import os
import socket
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from conftest import pg_schema_url
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from rheo_cli.app import app as runtime
from rheo_cli.memory.ledger import turns
from rheo_cli.memory.store import db
from rheo_cli.memory.store.db import write
from rheo_cli.memory.store.errors import Unavailable
from rheo_cli.repl.app import run_repl

pytestmark = pytest.mark.skipif(
    not os.environ.get("RHEO_TEST_DATABASE_URL"),
    reason="PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)",
)

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def tagged() -> Iterator[tuple[str, str]]:
    """(URL of a fresh schema whose connections carry a unique application_name, that name)."""
    name = "rheo-test-" + uuid.uuid4().hex[:10]
    with pg_schema_url() as url:
        yield f"{url}&application_name={name}", name


def terminate(name: str) -> int:
    """End every server connection named ``name``, as an administrator would; how many."""
    import psycopg

    with psycopg.connect(os.environ["RHEO_TEST_DATABASE_URL"], autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (name,),
        ).fetchall()
    return len(rows)


def test_a_terminated_connection_is_reopened_for_the_same_tenant(tagged):
    url, name = tagged
    conn = db.open_url(url, tenant="acme")
    turns.append_turn(conn, profile="acme", role="user", content="mine", now=T0, gap_s=60)
    conn.set_tenant("other")
    turns.append_turn(conn, profile="other", role="user", content="theirs", now=T0, gap_s=60)
    conn.set_tenant("acme")
    before = conn.execute("SELECT current_user").fetchone()[0]
    assert terminate(name) == 1
    # A read outside a transaction: reconnected and run again, nothing to report.
    assert [t.content for t in turns.recent_turns(conn, "acme")] == ["mine"]
    row = conn.execute(
        "SELECT current_setting('rheo.tenant'), current_user, current_setting('is_superuser')"
    ).fetchone()
    assert tuple(row) == ("acme", before, "off")  # the same role, held by row-level security
    assert conn.execute("SELECT count(*) FROM turns").fetchone()[0] == 1  # not "theirs"
    # A write whose BEGIN finds the connection gone: begun again on a new one.
    assert terminate(name) == 1
    turns.append_turn(conn, profile="acme", role="user", content="again", now=T0, gap_s=60)
    # Dropped inside a transaction: that write fails (nothing half-stored), the next works.
    with pytest.raises(Unavailable), write(conn):
        conn.execute("SELECT 1")
        terminate(name)
        conn.execute("SELECT 1")
    assert not conn.in_transaction
    turns.append_turn(conn, profile="acme", role="user", content="after", now=T0, gap_s=60)
    assert [t.content for t in turns.recent_turns(conn, "acme")] == ["mine", "again", "after"]
    conn.close()


def test_the_repl_carries_on_after_its_connection_is_terminated(tagged, fake_model, monkeypatch):
    url, name = tagged
    monkeypatch.setenv("RHEO_DATABASE_URL", url)
    killed: list[int] = []

    def answer(request):
        killed.append(terminate(name))  # while the turn waits for its reply
        return f"reply {len(killed)}"

    fake_model.handler = answer
    with create_pipe_input() as pipe:
        pipe.send_text("first question\rsecond question\r/history question\r\x04")
        out = io.StringIO()
        rt = runtime.build()
        try:
            run_repl(rt, input=pipe, output=DummyOutput(), out=out, rendered=False)
            stored = [(t.role, t.content) for t in turns.recent_turns(rt.conn, rt.profile)]
        finally:
            rt.close()
    shown = out.getvalue()
    assert killed == [1, 1]
    assert "reply 1" in shown and "reply 2" in shown
    assert "not stored" not in shown and "Traceback" not in shown
    assert stored == [
        ("user", "first question"),
        ("assistant", "reply 1"),
        ("user", "second question"),
        ("assistant", "reply 2"),
    ]


def test_the_repl_says_one_line_while_the_server_is_down_and_carries_on(
    tagged, fake_model, monkeypatch
):
    """The server goes away during a turn (its address now refuses connections): the reply
    is shown, one line says the exchange could not be stored, the REPL goes on; once the
    server is back the same runtime reconnects."""
    url, name = tagged
    monkeypatch.setenv("RHEO_DATABASE_URL", url)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        nowhere = f"postgresql://rheo@127.0.0.1:{s.getsockname()[1]}/rheo_test"  # refused
    rt = runtime.build()
    real = rt.conn._url  # type: ignore[attr-defined]

    def answer(request):
        rt.conn._url = nowhere  # type: ignore[attr-defined]
        terminate(name)
        return "the reply"

    fake_model.handler = answer
    with create_pipe_input() as pipe:
        pipe.send_text("first question\r/help\r\x04")
        out = io.StringIO()
        try:
            run_repl(rt, input=pipe, output=DummyOutput(), out=out, rendered=False)
            rt.conn._url = real  # type: ignore[attr-defined]
            stored = [(t.role, t.content) for t in turns.recent_turns(rt.conn, rt.profile)]
        finally:
            rt.close()
    shown = out.getvalue()
    assert "the reply" in shown and "Traceback" not in shown
    lines = [line for line in shown.splitlines() if "PostgreSQL is not reachable" in line]
    assert len(lines) == 1, shown
    assert "/exit" in shown  # /help answered after the failure: the REPL went on
    assert stored == [("user", "first question")]
