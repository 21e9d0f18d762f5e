"""Shared fixtures: a private RHEO_HOME per test, the in-process fake model, the fake Messages
API (for boundary tests), the network guard.

No test may reach a non-loopback address: `netguard` is installed for this process at import,
and subprocesses get it through `netguard.subprocess_env` (a sitecustomize on PYTHONPATH).
"""

from __future__ import annotations

import contextlib
import inspect
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import netguard
import pytest
from fakeapi import FakeAnthropic
from fakeprovider import FakeProvider
from typer.testing import CliRunner

netguard.install()

_CLEARED = (
    "RHEO_HOME",
    "RHEO_PROFILE",
    "RHEO_MODEL",
    "RHEO_NOW",
    "RHEO_WORKER",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "NO_COLOR",
    "ANTHROPIC_PROFILE",
    "RHEO_PROVIDER",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "RHEO_DATABASE_URL",
    "RHEO_REDIS_URL",
)


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh RHEO_HOME for every test; rheo's and the SDK's variables cleared."""
    for name in _CLEARED:
        monkeypatch.delenv(name, raising=False)
    folder = tmp_path / "rheo-home"
    monkeypatch.setenv("RHEO_HOME", str(folder))
    monkeypatch.setenv("RHEO_WORKER", "off")
    monkeypatch.setenv("RHEO_RESIDENT", "0")  # the suite runs in-process; resident tests opt in
    monkeypatch.setenv("HOME", str(tmp_path))
    # A real `claude` on the machine must not be picked (and run) by automatic selection.
    path = os.environ.get("PATH", "").split(os.pathsep)
    monkeypatch.setenv(
        "PATH",
        os.pathsep.join(d for d in path if not d or not os.path.exists(os.path.join(d, "claude"))),
    )
    return folder


TESTS = Path(__file__).resolve().parent
WIRE_FOLDERS = ("providers", "realclients")
"""Where the fake HTTP servers and the real SDKs are the subject: no mark needed."""
IMPLY_BOUNDARY = ("resident", "realclients")
"""Marks that imply ``boundary`` (it is added to their tests, so ``-m "not boundary"`` leaves
them out too)."""
_SERVERS = ("FakeAnthropic(", "FakeOpenAI(", "FakeTelegram(")
_starts_server: dict[Any, bool] = {}


def _fixture_starts_a_server(fixturedef: Any) -> bool:
    """Whether a fixture starts one of the fake HTTP servers a real SDK talks to (read from
    its source: ``api``, and any other fixture built like it)."""
    func = getattr(fixturedef, "func", None)
    if func not in _starts_server:
        try:
            source = inspect.getsource(func)  # type: ignore[arg-type]
        except (OSError, TypeError):
            source = ""
        _starts_server[func] = any(server in source for server in _SERVERS)
    return _starts_server[func]


def _in_folder(item: pytest.Item, folders: tuple[str, ...]) -> bool:
    path = Path(str(item.fspath))
    return path.is_relative_to(TESTS) and path.relative_to(TESTS).parts[0] in folders


def _is_boundary(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(name) for name in ("boundary", *IMPLY_BOUNDARY))


_UNMARKED = pytest.StashKey[str]()
"""On an xdist worker: why a collected test is refused (it fails at setup, by `_refused`)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """``resident`` and ``realclients`` tests are ``boundary`` tests too, and so are the tests
    of tests/providers and tests/realclients that take a fixture starting a fake HTTP server
    for a real SDK (``api``, the fake OpenAI and Telegram APIs). Anywhere else such a test
    must be marked ``boundary`` itself: the in-process fake model (``fake_model``) is the
    default there. (Tests that start rheo processes or make a fake server themselves are
    found by tests/test_boundary_marks.py.)

    Such tests stop the run with a UsageError naming them; on an xdist worker, where that
    error would surface only as the worker's crash, each of them fails at setup instead,
    with the same words."""
    unmarked = []
    for item in items:
        if any(item.get_closest_marker(name) for name in IMPLY_BOUNDARY):
            item.add_marker(pytest.mark.boundary)
        if _is_boundary(item):
            continue
        info = getattr(item, "_fixtureinfo", None)
        defs = info.name2fixturedefs if info is not None else {}
        servers = [
            name
            for name in getattr(item, "fixturenames", ())
            if any(_fixture_starts_a_server(d) for d in defs.get(name, ()))
        ]
        if servers and _in_folder(item, WIRE_FOLDERS):
            item.add_marker(pytest.mark.boundary)
        elif servers:
            unmarked.append(f"{item.nodeid} (takes {', '.join(servers)})")
            item.stash[_UNMARKED] = unmarked[-1]
    if unmarked and not hasattr(config, "workerinput"):
        raise pytest.UsageError(_NOT_MARKED + "\n  " + "\n  ".join(unmarked))


_NOT_MARKED = (
    "these tests speak HTTP to a fake API through a real SDK but are not marked "
    "@pytest.mark.boundary (use the fake_model fixture, or mark them):"
)


@pytest.fixture(autouse=True)
def _refused(request: pytest.FixtureRequest) -> None:
    """Fail, at setup, a test collection refused on an xdist worker."""
    why = request.node.stash.get(_UNMARKED, None)
    if why is not None:
        pytest.fail(f"{_NOT_MARKED} {why}", pytrace=False)


def require_boundary(request: pytest.FixtureRequest) -> None:
    """Fail a test that asked for a fake HTTP server at run time
    (``request.getfixturevalue``) without being a ``boundary`` test, as collection refuses
    one that takes it as an argument."""
    item = request.node
    if isinstance(item, pytest.Item) and not (_in_folder(item, WIRE_FOLDERS) or _is_boundary(item)):
        pytest.fail(
            f"{item.nodeid} speaks HTTP to a fake API through a real SDK: mark it "
            "@pytest.mark.boundary, or use the fake_model fixture",
            pytrace=False,
        )


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[FakeAnthropic]:
    """The fake Messages API, with ANTHROPIC_BASE_URL and a test key pointing the SDK at it
    (for ``boundary`` tests and tests/providers: elsewhere `fake_model` is the model)."""
    require_boundary(request)
    with FakeAnthropic() as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        yield server


_TREES: dict[int, Any] = {}


def _command_tree(app: Any) -> Any:
    """rheo's click command tree, built once per test process: typer builds it anew at every
    `CliRunner.invoke` (~70 ms of reading annotations, most of an in-process command's cost),
    and a rheo process builds it once too. Its commands hold no state between invocations."""
    tree = _TREES.get(id(app))
    if tree is None:
        import typer.main

        tree = _TREES[id(app)] = typer.main.get_command(app)
    return tree


class Rheo:
    """Runs rheo commands in-process with typer's CliRunner."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str, input: str | bytes | None = None, **env: str) -> Any:
        import typer.testing

        from rheo_cli.cli.main import app

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(typer.testing, "_get_command", _command_tree)
            return self.runner.invoke(app, list(args), input=input, env=env or None)


@pytest.fixture
def rheo() -> Rheo:
    """``rheo("history", "recent", "--json")`` -> click Result (exit_code, stdout, stderr)."""
    return Rheo()


BACKENDS = ["sqlite", "postgres"]
"""The stores every engine test runs on: ``postgres`` needs RHEO_TEST_DATABASE_URL (a server
from ``eval "$(scripts/test-services start)"``) and is skipped without it — except under
``CI=true``, where a missing or unusable server fails the run (`pytest_sessionstart`)."""

NO_POSTGRES = "PostgreSQL tests need RHEO_TEST_DATABASE_URL (scripts/test-services start)"


def postgres_problem() -> str | None:
    """Why the PostgreSQL tests cannot run as CI must run them, or None: the URL is unset,
    the server does not answer, or the URL logs in as a superuser (the suite runs as an
    application role owning its schema, as on a managed database: scripts/test-services)."""
    url = os.environ.get("RHEO_TEST_DATABASE_URL", "").strip()
    if not url:
        return "RHEO_TEST_DATABASE_URL is not set"
    try:
        import psycopg

        with psycopg.connect(url, autocommit=True, connect_timeout=10) as probe:
            row = probe.execute("SELECT current_user, current_setting('is_superuser')").fetchone()
    except Exception as exc:  # noqa: BLE001 - whatever it is, it is why
        return f"cannot connect to RHEO_TEST_DATABASE_URL: {' '.join(str(exc).split())[:200]}"
    if row is None or row[1] == "on":
        return f"RHEO_TEST_DATABASE_URL logs in as {row[0] if row else '?'}, a superuser"
    return None


RAM_DISK = Path("/dev/shm")
"""Where the suite keeps its temporary folders when it can (`pytest_configure`)."""


def pytest_configure(config: pytest.Config) -> None:
    """Before any test (in the run's main process): the temporary folders (every test's
    RHEO_HOME) go to a RAM disk when there is one with room and TMPDIR was not chosen — rheo
    commits with ``synchronous=FULL``, and a disk's flushes made the suite wait on I/O; the
    SQL is the same. And rheo's modules are compiled once, as an installed rheo has them, so
    that the processes the tests start do not each compile them again (PYTHONDONTWRITEBYTECODE
    set in the environment stops Python writing them, not reading them)."""
    if hasattr(config, "workerinput"):  # xdist's workers inherit both from the main process
        return
    if "TMPDIR" not in os.environ and config.option.basetemp is None and _roomy(RAM_DISK):
        import tempfile

        os.environ["TMPDIR"] = str(RAM_DISK)
        tempfile.tempdir = None  # read TMPDIR again
    import compileall

    package = TESTS.parent / "rheo_cli"
    if os.access(package, os.W_OK):
        compileall.compile_dir(package, quiet=2)
        compileall.compile_dir(TESTS / "netguard_site", quiet=2)
        compileall.compile_file(TESTS / "netguard.py", quiet=2)


def _roomy(folder: Path) -> bool:
    """Whether ``folder`` is a writable directory with at least 1 GiB free."""
    try:
        usage = os.statvfs(folder)
    except OSError:
        return False
    return os.access(folder, os.W_OK | os.X_OK) and usage.f_bavail * usage.f_frsize >= 2**30


def pytest_sessionstart(session: pytest.Session) -> None:
    """Under ``CI=true`` the PostgreSQL tests never skip silently: without a usable server
    (`postgres_problem`) the run fails before any test."""
    if os.environ.get("CI") != "true" or hasattr(session.config, "workerinput"):
        return
    problem = postgres_problem()
    if problem is not None:
        pytest.exit(
            f"CI=true: the PostgreSQL tests must run, but {problem} "
            '(eval "$(scripts/test-services start)")',
            returncode=pytest.ExitCode.TESTS_FAILED,
        )


def admin_url() -> str:
    """A superuser's URL to the test database (RHEO_TEST_ADMIN_DATABASE_URL, else the test
    URL itself): for the tests whose subject is a superuser or another role, and for reading
    around row-level security."""
    return os.environ.get("RHEO_TEST_ADMIN_DATABASE_URL") or os.environ["RHEO_TEST_DATABASE_URL"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """The store a test runs on (``sqlite`` or ``postgres``)."""
    name = str(request.param)
    if name == "postgres" and not os.environ.get("RHEO_TEST_DATABASE_URL"):
        pytest.skip(NO_POSTGRES)
    return name


@pytest.fixture
def home_store(backend: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The store every command of this test uses, on each backend: the SQLite file of its
    RHEO_HOME, or a fresh PostgreSQL schema (RHEO_DATABASE_URL). Yields the backend's name."""
    if backend == "sqlite":
        yield backend
        return
    with pg_schema_url() as url:
        monkeypatch.setenv("RHEO_DATABASE_URL", url)
        yield backend


@pytest.fixture
def conn(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Any]:
    """An open, migrated store (the engine's tests start here), on each backend: a SQLite
    file in the test's own folder, or a fresh PostgreSQL schema bound to the test module's
    ``TENANT`` (default "default"); a test using other profiles switches with `as_tenant`."""
    from rheo_cli.memory.store import db

    if backend == "sqlite":
        c = db.open_store(tmp_path / "store.db")
        yield c
        c.close()
        return
    with pg_schema_url() as url:
        c = db.open_url(url, tenant=getattr(request.module, "TENANT", "default"))
        yield c
        c.close()


@contextlib.contextmanager
def pg_schema_url(base: str | None = None) -> Iterator[str]:
    """A URL of the test PostgreSQL database whose search path is a new, empty schema (dropped
    afterwards), so each test starts from an empty store. The schema is created by, and
    belongs to, the role of ``base`` (default RHEO_TEST_DATABASE_URL: the application role;
    `admin_url` for a superuser's)."""
    import psycopg

    base = base or os.environ["RHEO_TEST_DATABASE_URL"]
    schema = "t_" + uuid.uuid4().hex[:16]
    with psycopg.connect(base, autocommit=True) as owner:
        owner.execute(f"CREATE SCHEMA {schema}")
    sep = "&" if "?" in base else "?"
    try:
        yield f"{base}{sep}options=-csearch_path%3D{schema}%2Cpublic"
    finally:
        with psycopg.connect(base, autocommit=True) as owner:
            owner.execute(f"DROP SCHEMA {schema} CASCADE")


def as_admin(url: str) -> str:
    """``url`` (of `pg_schema_url`) for the superuser of `admin_url`: the same database and
    search path."""
    base = os.environ["RHEO_TEST_DATABASE_URL"]
    return admin_url() + url[len(base) :] if url.startswith(base) else url


def as_tenant(conn: Any, profile: str) -> Any:
    """``conn`` acting for ``profile``: its store is bound to that tenant (on PostgreSQL the
    connection's row-level security follows; on SQLite nothing else changes, the engine
    filters by profile)."""
    conn.store.set_tenant(profile)
    return conn


@pytest.fixture
def fake_model(monkeypatch: pytest.MonkeyPatch) -> FakeProvider:
    """The in-process fake model for every runtime built in this test (in-process commands
    only): the chat provider and every extractor (facts, digests, consolidation) are this one
    `FakeProvider`. Queue replies with ``fake_model.add(...)`` (or answer by kind of call
    with `helpers.route`), read ``fake_model.requests``."""
    from rheo_cli.app.app import App as Runtime

    fake = FakeProvider()
    monkeypatch.setattr(Runtime, "provider", lambda self: fake)
    monkeypatch.setattr(Runtime, "build_provider", lambda self, choice, *, tools=True: fake)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    return fake
