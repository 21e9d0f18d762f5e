"""Every rheo command closes the store it opens.

Each command is run in-process (CliRunner; the in-process fake model where a model is
needed) after a little history was stored, with every store the engine opens (SQLite's
`SqliteStore`, `PostgresStore`) recorded; afterwards each one must be closed —
by the command's ``with runtime_for(...) as app:`` or by whatever opened it. A meta-test
holds that every command of ``rheo --help`` (hidden ones too) has a case here.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from helpers import mcp_session


@dataclass
class Stores:
    """The stores opened while ``counting``, in order."""

    counting: bool = False
    opened: list[Any] = field(default_factory=list)

    def left_open(self) -> list[str]:
        """A description of each recorded store that is still open."""
        return [f"store #{i + 1}: {conn!r}" for i, conn in enumerate(self.opened) if is_open(conn)]


def is_open(conn: Any) -> bool:
    """Whether a connection the engine returned is still open (either store)."""
    raw = getattr(conn, "raw", None)
    if raw is not None:  # PostgreSQL: the psycopg connection inside the adapter
        return not raw.closed
    try:
        conn.total_changes  # noqa: B018 - sqlite3 raises once the connection is closed
    except sqlite3.ProgrammingError:
        return False
    return True


@pytest.fixture
def stores(monkeypatch: pytest.MonkeyPatch) -> Stores:
    """Record the connection of every store opened (either implementation, however it is
    reached: `store.open`, `db.open_store`, `open_again`) once ``counting`` is set."""
    from rheo_cli.memory.store.postgres import PostgresStore
    from rheo_cli.memory.store.sqlite import SqliteStore

    found = Stores()
    for cls in (SqliteStore, PostgresStore):
        real = cls.__init__

        def counted(self: Any, *args: Any, _real: Callable[..., None] = real, **kw: Any) -> None:
            _real(self, *args, **kw)
            if found.counting:
                found.opened.append(self.conn)

        monkeypatch.setattr(cls, "__init__", counted)
    return found


def _mcp_lines() -> str:
    """An MCP client's session on stdin: initialize, then one tool call that opens the store."""
    call = {"name": "memory_list", "arguments": {}}
    return mcp_session({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})


@dataclass(frozen=True)
class Case:
    """A command's arguments (``{tmp}``: the test's folder), its stdin, the exit statuses it
    may end with, and whether it must open a store."""

    args: tuple[str, ...]
    stdin: str | None = None
    exits: tuple[int, ...] = (0,)
    opens: bool = True


CASES: dict[str, Case] = {
    "ask": Case(("ask", "what did I promise Jorge?")),
    "chat": Case(("chat",)),
    "context": Case(("context", "report")),
    "memory list": Case(("memory", "list")),
    "memory show": Case(("memory", "show", "1")),
    "memory search": Case(("memory", "search", "tea")),
    "memory audit": Case(("memory", "audit")),
    "memory add": Case(("memory", "add", "Ana likes green tea", "-t", "ana.tea")),
    "memory pin": Case(("memory", "pin", "1")),
    "memory unpin": Case(("memory", "unpin", "1")),
    "memory forget": Case(("memory", "forget", "1")),
    "memory conflicts": Case(("memory", "conflicts")),
    "memory resolve": Case(("memory", "resolve", "1"), exits=(0, 2)),
    "items list": Case(("items", "list")),
    "items done": Case(("items", "done", "2")),
    "history search": Case(("history", "search", "report")),
    "history recent": Case(("history", "recent")),
    "sessions list": Case(("sessions", "list")),
    "sessions show": Case(("sessions", "show", "1")),
    "digests list": Case(("digests", "list")),
    "digests show": Case(("digests", "show", "1"), exits=(2,)),
    "maintain": Case(("maintain",)),
    "jobs list": Case(("jobs", "list")),
    "doctor": Case(("doctor", "--repair"), exits=(0, 1)),
    "config show": Case(("config", "show"), opens=False),
    "config path": Case(("config", "path"), opens=False),
    "config edit": Case(("config", "edit"), opens=False),
    "config set": Case(("config", "set", "session.gap_hours", "4"), opens=False),
    "config unset": Case(("config", "unset", "session.gap_hours"), opens=False),
    "paths": Case(("paths",), opens=False),
    "providers": Case(("providers",), opens=False),
    "kb add": Case(("kb", "add", "{tmp}/more.md")),
    "kb list": Case(("kb", "list")),
    "kb show": Case(("kb", "show", "1")),
    "kb search": Case(("kb", "search", "invoice")),
    "kb remove": Case(("kb", "remove", "1")),
    "mcp": Case(("mcp",), stdin=_mcp_lines()),
    "telegram": Case(("telegram", "--once")),
    "purge": Case(("purge", "session", "s1", "--yes")),
    "backup": Case(("backup", "{tmp}/copy.db")),
    "export": Case(("export", "-o", "{tmp}/out.jsonl")),
    "import": Case(("import", "{tmp}/setup.jsonl")),
    "import-history": Case(("import-history", "{tmp}/setup.jsonl")),
    # A SQLite store has no logins: refused before anything is opened (exit 2); on
    # PostgreSQL `team list` opens the store for no profile, and closes it.
    "usage": Case(("usage", "--by", "model")),
    "team list": Case(("team", "list"), exits=(0, 2), opens=False),
    "team grant": Case(("team", "grant", "alice", "acme"), exits=(2,), opens=False),
    "team revoke": Case(("team", "revoke", "alice", "acme"), exits=(2,), opens=False),
}


def command_names() -> set[str]:
    """Every command of ``rheo`` (hidden ones too), subcommands as ``group name``."""
    import typer.main

    from rheo_cli.cli.main import app

    def walk(command: Any, prefix: str) -> Iterator[str]:
        for name, sub in getattr(command, "commands", {}).items():
            if getattr(sub, "commands", None):
                yield from walk(sub, f"{prefix}{name} ")
            else:
                yield f"{prefix}{name}"

    return set(walk(typer.main.get_command(app), ""))


def test_every_command_has_a_case():
    assert command_names() == set(CASES)


def _store_a_little(rheo: Any, fake_model: Any, tmp: Path) -> None:
    """A session of two turns, a fact, an open item, a knowledge-base document and an export
    of all of it (``{tmp}/setup.jsonl``)."""
    fake_model.add("Noted: the report goes to Jorge by Friday.")
    steps = [
        ("ask", "I'll send the report to Jorge by friday"),
        ("memory", "add", "Ana prefers tea", "-t", "ana.drink"),
        ("memory", "add", "call the plumber", "-t", "plumber", "--due", "friday"),
        ("kb", "add", str(tmp / "notes.md")),
        ("export", "-o", str(tmp / "setup.jsonl")),
    ]
    (tmp / "notes.md").write_text("# Invoices\nThe Nutrifax invoice is due in March.\n")
    (tmp / "more.md").write_text("# Trips\nLisbon in May.\n")
    for args in steps:
        done = rheo(*args)
        assert done.exit_code == 0, (args, done.stderr)


@pytest.fixture
def prepared(
    rheo: Any,
    fake_model: Any,
    tmp_path: Path,
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """A store with a little in it, and what the chat, Telegram and config edit need."""
    _store_a_little(rheo, fake_model, tmp_path)
    monkeypatch.setenv("EDITOR", "true")
    monkeypatch.setattr("rheo_cli.ui.signals.install", lambda: None)
    return tmp_path


def _chat_on_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    """``rheo chat`` on a terminal: stdin counts as one, and the REPL reads a message and
    Ctrl-D from a prompt-toolkit pipe."""
    import typer.testing
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    from rheo_cli.repl import app as repl_app

    real = repl_app.run_repl

    def on_pipe(rt: Any, **kwargs: Any) -> None:
        with create_pipe_input() as pipe:
            pipe.send_text("where were we?\r\x04")
            real(rt, input=pipe, output=DummyOutput(), **kwargs)

    monkeypatch.setattr(typer.testing._NamedTextIOWrapper, "isatty", lambda self: True)
    monkeypatch.setattr(repl_app, "run_repl", on_pipe)


@pytest.fixture
def telegram(
    home: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[None]:
    """The fake Bot API with one message waiting from an allowed chat (boundary tests)."""
    from conftest import require_boundary
    from faketelegram import TOKEN, FakeTelegram

    require_boundary(request)

    with (home / "config.toml").open("a") as config:
        config.write('[telegram]\nchats = { "4242" = "default" }\n')
    with FakeTelegram() as server:
        monkeypatch.setenv("RHEO_TELEGRAM_TOKEN", TOKEN)
        monkeypatch.setenv("RHEO_TELEGRAM_API", server.base_url)
        server.send_text(4242, "what is due?")
        yield


WIRE_CASES = ("providers", "telegram")
"""Cases that speak HTTP through a real SDK (the Anthropic API ``rheo providers`` asks, the
Bot API): boundary tests."""


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.boundary) if n in WIRE_CASES else n for n in sorted(CASES)],
)
def test_every_command_closes_the_store_it_opens(
    name: str,
    prepared: Path,
    rheo: Any,
    stores: Stores,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    case = CASES[name]
    if name == "chat":
        _chat_on_a_pipe(monkeypatch)
    if name == "telegram":
        request.getfixturevalue("telegram")
    if name == "providers":
        request.getfixturevalue("api")  # the Anthropic API it asks is the local fake
    args = [a.replace("{tmp}", str(prepared)) for a in case.args]
    stores.counting = True
    result = rheo(*args, input=case.stdin)
    stores.counting = False
    assert result.exit_code in case.exits, (args, result.stdout, result.stderr)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if case.opens:
        assert stores.opened, f"rheo {name} opened no store: the case no longer tests it"
    assert stores.left_open() == [], f"rheo {name} left its store open"


PG_CASES = ("ask", "backup", "doctor", "export", "import", "purge", "team list")
"""Commands whose store work differs on PostgreSQL."""


@pytest.mark.skipif(
    not os.environ.get("RHEO_TEST_DATABASE_URL"),
    reason="PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)",
)
@pytest.mark.parametrize("name", PG_CASES)
def test_on_postgresql_the_store_is_closed_too(
    name: str,
    rheo: Any,
    fake_model: Any,
    stores: Stores,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from conftest import pg_schema_url

    with pg_schema_url() as url:
        monkeypatch.setenv("RHEO_DATABASE_URL", url)
        _store_a_little(rheo, fake_model, tmp_path)
        args = [a.replace("{tmp}", str(tmp_path)) for a in CASES[name].args]
        stores.counting = True
        result = rheo(*args, input=CASES[name].stdin)
        stores.counting = False
        assert result.exit_code in CASES[name].exits, (args, result.stdout, result.stderr)
        assert stores.opened, f"rheo {name} opened no store"
        left = stores.left_open()
        for conn in stores.opened:  # the schema is dropped next: let go of it either way
            conn.close()
        assert left == [], f"rheo {name} left its store open"
