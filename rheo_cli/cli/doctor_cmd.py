"""``rheo doctor``: is the store sound, private and usable? ``--repair`` fixes what it can.

Checks: the config file and the assistants' prompt files, that an API key is set (never its
value), file permissions (0600 files, 0700 folders), the store's own checks (`Store.health`:
on SQLite its schema version, integrity, writability, tables and FTS5 indexes; on PostgreSQL
also the guards, row-level security and extensions), then on every store the sessions'
counters and the jobs (pending, failed, running past their lease). The permissions checked
are those of rheo's store and files; the person's own assistant prompt files there are not
rheo's secrets. Exit 0 when healthy, 1 with the list of problems.
"""

from __future__ import annotations

import os
import stat
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import ExitStatus
from ..memory.store import api
from ..memory.store.errors import StoreError
from ..ui.output import print_json, safe
from .errors import command
from .options import Json, Profile

Check = api.Check
"""One check's outcome: ``ok`` False is a problem; ``detail`` is one line."""


def _private_problems(home: Path, own: frozenset[Path] = frozenset()) -> list[str]:
    """rheo's files and folders under ``home`` readable by others than their owner; ``own``:
    the person's own files kept there (assistant prompt files), which hold no secret."""
    found: list[str] = []
    if not home.exists():
        return found
    for path in [home, *sorted(home.rglob("*"))]:
        if path in own:
            continue
        try:
            mode = stat.S_IMODE(path.lstat().st_mode)
        except OSError:
            continue
        if path.is_symlink():
            continue
        want = 0o700 if path.is_dir() else 0o600
        if mode & 0o077:
            found.append(f"{path} is {mode:04o}, should be {want:04o}")
    return found


def _fix_private(home: Path, own: frozenset[Path] = frozenset()) -> int:
    fixed = 0
    for path in [home, *sorted(home.rglob("*"))] if home.exists() else []:
        if path.is_symlink() or path in own:
            continue
        try:
            mode = stat.S_IMODE(path.lstat().st_mode)
            if mode & 0o077:
                os.chmod(path, mode & 0o700)
                fixed += 1
        except OSError:
            continue
    return fixed


def _assistants_check(cfg: Any) -> Check:
    """Every assistant's prompt file can be read (a missing one fails each chat with it)."""
    from ..errors import RheoError

    problems: list[str] = []
    for assistant in cfg.assistants.values():
        try:
            assistant.prompt()
        except RheoError as exc:
            problems.append(str(exc))
    names = ", ".join(sorted(cfg.assistants))
    return Check("assistants", not problems, "; ".join(problems[:3]) or f"{names}: prompts read")


def now_or_clock() -> datetime:
    """``RHEO_NOW`` when it is valid, else the system clock (doctor reports a bad one)."""
    from .. import clock
    from ..errors import RheoError

    try:
        return clock.from_env()()
    except RheoError:
        return datetime.now(UTC)


def queue_missing_digests(conn: Any, gap_s: float) -> int:
    """Queue a digest job for every session (of the profiles the connection sees) closed by
    time with neither a digest nor a job; returns how many were queued."""
    from ..memory import jobs
    from ..memory.ledger import closing
    from ..memory.store.timeutil import to_stored

    now = now_or_clock()
    closed_before = to_stored(now - timedelta(seconds=gap_s))
    queued = 0
    for prof in closing.profiles_with_sessions(conn):
        for session_id in jobs.sessions_awaiting_digest(
            conn, profile=prof, closed_before=closed_before
        ):
            queued += jobs.enqueue(
                conn, profile=prof, kind="digest", ref_id=session_id, ts=to_stored(now)
            )
    return queued


def session_check(conn: Any, profile: str | None, repair: bool, repaired: list[str]) -> Check:
    """Sessions whose counters (turns, first and last turn's time) disagree with their turns
    (of ``profile``; every profile when None); ``repair`` recounts them from the turns."""
    from ..memory.ledger import counters

    if repair:
        try:
            if fixed := counters.repair(conn, profile):
                repaired.append(f"recounted the turns and times of {len(fixed)} session(s)")
        except Exception as exc:  # noqa: BLE001 - reported as a line, the check stays a problem
            repaired.append(f"could not recount the sessions: {' '.join(str(exc).split())[:160]}")
    stale = counters.stale_sessions(conn, profile)
    detail = "every session's turn count and times match its turns"
    if stale:
        detail = (
            f"{len(stale)} session(s) whose turn count or times disagree with their turns "
            "('rheo doctor --repair' recounts them)"
        )
    return Check("sessions", not stale, detail)


def run_checks(profile: str | None, repair: bool) -> tuple[list[Check], list[str]]:
    """Every check (after repairs when ``repair``); returns (checks, what was repaired)."""
    from .. import config as config_mod
    from ..errors import RheoError
    from ..memory import store as store_mod
    from ..memory.store.errors import NotCreated
    from ..memory.store.profiles import DEFAULT_PROFILE
    from ..paths import resolve
    from ..providers.anthropic_api import has_credentials

    name = profile or os.environ.get("RHEO_PROFILE", "").strip() or DEFAULT_PROFILE
    paths = resolve(name)
    checks: list[Check] = []
    repaired: list[str] = []

    gap_s = 2 * 3600.0
    own: frozenset[Path] = frozenset()
    try:
        cfg = config_mod.load(paths.config)
        gap_s = cfg.engine.gap_s
        where = str(paths.config) if paths.config.exists() else "no config.toml: defaults"
        checks.append(Check("config", True, where))
        own = frozenset(a.prompt_file for a in cfg.assistants.values() if a.prompt_file)
        if cfg.assistants:
            checks.append(_assistants_check(cfg))
    except RheoError as exc:
        checks.append(Check("config", False, str(exc)))

    location = os.environ.get("RHEO_DATABASE_URL", "").strip() or str(paths.db)
    try:  # whichever provider is configured or found; no key's value is ever shown
        from ..app import app as runtime

        rt = runtime.build(profile=name)
        location = rt.store_location
        guidance = rt.provider_ready()
        ready = guidance is None
        detail = "a chat provider is configured" if ready else str(guidance).splitlines()[0]
    except RheoError:  # a broken config is reported above: look for Anthropic's key alone
        ready = has_credentials()
        detail = (
            "ANTHROPIC_API_KEY is set"
            if ready
            else "neither ANTHROPIC_API_KEY nor ANTHROPIC_AUTH_TOKEN is set"
        )
    checks.append(Check("api key", ready, detail))

    if repair and (count := _fix_private(paths.home, own)):
        repaired.append(f"permissions of {count} file(s) or folder(s) set to owner-only")
    loose = _private_problems(paths.home, own)
    checks.append(
        Check("permissions", not loose, "; ".join(loose[:5]) or "files 0600, folders 0700")
    )

    try:
        opened = store_mod.open(location, tenant=name, migrate_schema=False, create=False)
    except NotCreated as exc:
        checks.append(Check("database", True, str(exc)))
        return checks, repaired
    except StoreError as exc:
        checks.append(Check("database", False, str(exc)))
        return checks, repaired
    try:
        found = opened.health(repair=repair)
        checks += found.checks
        repaired += found.repaired
        if found.usable:
            _engine_checks(opened, checks, repaired, repair and found.writable, gap_s)
    finally:
        opened.close()
    return checks, repaired


def _engine_checks(
    opened: api.Store, checks: list[Check], repaired: list[str], repair: bool, gap_s: float
) -> None:
    """The checks of what the engine keeps, on every store (of the profile a server's store
    is bound to, of every profile in the SQLite file): sessions' counters against their
    turns, jobs whose runner died (put back in the queue by ``repair``), missing digests
    (queued by ``repair``), pending and failed jobs."""
    from ..memory import jobs
    from ..memory.store.timeutil import to_stored

    conn, scope = opened.conn, opened.scope
    checks.append(_guarded("sessions", lambda: session_check(conn, scope, repair, repaired)))
    wall = time.time()
    if repair:
        try:
            if released := jobs.release_stuck(conn, scope, wall, to_stored(now_or_clock())):
                repaired.append(f"{released} job(s) whose runner died put back in the queue")
            if queued := queue_missing_digests(conn, gap_s):
                repaired.append(f"queued {queued} missing digest(s)")
        except (StoreError, MemoryError) as exc:
            repaired.append(f"could not queue missing digests: {_why(exc)}")
    checks.append(_guarded("jobs", lambda: _jobs_check(conn, scope, wall)))


def _why(exc: BaseException) -> str:
    """One line for a failure while checking."""
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _guarded(name: str, check: Callable[[], Check]) -> Check:
    """``check()``, or a problem named ``name`` when the store cannot be read for it (a
    damaged page): doctor lists every check either way, never stops at the first."""
    try:
        return check()
    except (StoreError, MemoryError) as exc:
        return Check(name, False, f"cannot be read: {_why(exc)}")


def _jobs_check(conn: Any, scope: str | None, wall: float) -> Check:
    """Pending and failed jobs, and those still running past their lease (their runner
    died; ``--repair`` puts them back in the queue)."""
    from ..memory import jobs

    counts = jobs.status_counts(conn)
    stuck = jobs.stuck(conn, scope, wall)
    failed = counts.get("failed", 0)
    waiting = counts.get("pending", 0) + counts.get("running", 0)
    detail = f"{waiting} pending, {failed} failed"
    if stuck:
        detail += f", {len(stuck)} running past their lease (--repair re-queues them)"
    if failed:
        detail += " ('rheo maintain --retry-failed' re-queues failed jobs)"
    return Check("jobs", not failed and not stuck, detail)


@command
def doctor(
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Rebuild search indexes from their tables, recount sessions from their "
            "turns, queue missing digests, make files private. Never changes the ledger's "
            "content.",
        ),
    ] = False,
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Check the store: integrity, search indexes, session counters, permissions, config,
    API key, jobs, schema version. Exit 0 when healthy, 1 with the list of problems.

    \b
    Examples:
      rheo doctor
      rheo doctor --repair
    """
    from .state import GLOBAL

    checks, repaired = run_checks(profile if profile is not None else GLOBAL.profile, repair)
    healthy = all(c.ok for c in checks)
    if json_out:
        print_json(
            {"healthy": healthy, "checks": [c.to_json() for c in checks], "repaired": repaired}
        )
    else:
        for line in repaired:
            print(f"repaired  {safe(line)}")
        for c in checks:
            print(f"{'ok' if c.ok else 'PROBLEM':<9} {c.name}: {safe(c.detail)}")
        problems = [c for c in checks if not c.ok]
        if problems:
            sys.stdout.flush()
            sys.stderr.write(
                f"rheo: {len(problems)} problem(s): {', '.join(c.name for c in problems)}\n"
            )
    if not healthy:
        raise typer.Exit(int(ExitStatus.ERROR))
