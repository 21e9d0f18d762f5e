"""``rheo doctor``: is the store sound, private and usable? ``--repair`` fixes what it can.

Checks: the database opens and its schema version, SQLite's integrity check, every FTS5 index
against its table, missing tables, file permissions (0600 files, 0700 folders), the config
file and the assistants' prompt files, that an API key is set (never its value), and pending
and failed jobs. The permissions checked are those of rheo's store and files; the person's
own assistant prompt files there are not rheo's secrets. On PostgreSQL
the store's checks are `doctor_pg`'s. Exit 0 when healthy, 1 with the list of problems.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any


@dataclass
class Check:
    """One check's outcome: ``ok`` False is a problem; ``detail`` is one line."""

    name: str
    ok: bool
    detail: str

    def to_json(self) -> dict[str, Any]:
        """``{"name", "ok", "detail"}``."""
        return {"name": self.name, "ok": self.ok, "detail": self.detail}


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
    from ...errors import RheoError

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
    from ... import clock
    from ...errors import RheoError

    try:
        return clock.from_env()()
    except RheoError:
        return datetime.now(UTC)


def queue_missing_digests(conn: Any, gap_s: float) -> int:
    """Queue a digest job for every session (of the profiles the connection sees) closed by
    time with neither a digest nor a job; returns how many were queued."""
    from ...memory import jobs
    from ...memory.ledger import closing
    from ...memory.store.timeutil import to_stored

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
    from ...memory.ledger import counters

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
    from ... import config as config_mod
    from ...errors import RheoError
    from ...memory.store import db, health
    from ...memory.store.errors import StoreError
    from ...memory.store.migrations import SCHEMA_VERSION, migrate, schema_version
    from ...memory.store.profiles import DEFAULT_PROFILE
    from ...paths import resolve
    from ...providers.anthropic_api import has_credentials

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

    store_url = os.environ.get("RHEO_DATABASE_URL", "").strip()
    try:  # whichever provider is configured or found; no key's value is ever shown
        from .. import app as runtime

        rt = runtime.build(profile=name)
        store_url = rt.store_url or ""
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

    if store_url:
        from .postgres import run_pg_checks

        checks += run_pg_checks(store_url, name, repair, repaired, gap_s)
        return checks, repaired
    if not paths.db.exists():
        checks.append(Check("database", True, f"{paths.db} not created yet"))
        return checks, repaired
    try:
        conn = db.open_store(paths.db, migrate_schema=False)
    except StoreError as exc:
        checks.append(Check("database", False, str(exc)))
        return checks, repaired
    try:
        version = schema_version(conn)
        if repair and version < SCHEMA_VERSION:
            try:
                migrate(conn)
                repaired.append(f"schema upgraded from version {version} to {SCHEMA_VERSION}")
                version = schema_version(conn)
            except Exception as exc:  # noqa: BLE001 - reported as the check's detail
                repaired.append(f"schema upgrade failed: {exc}")
        if version > SCHEMA_VERSION:
            detail = f"version {version} is newer than this rheo ({SCHEMA_VERSION}): upgrade rheo"
        elif version < SCHEMA_VERSION:
            detail = f"version {version} of {SCHEMA_VERSION}: any rheo command upgrades it"
        else:
            detail = f"version {version}"
        checks.append(Check("schema", version == SCHEMA_VERSION, detail))

        problems = [" ".join(p.split()) for p in health.integrity_problems(conn)]
        detail = "; ".join(problems)[:600]
        if problems:
            detail += (
                f" (the file is damaged: keep a copy of it; 'sqlite3 {paths.db} .recover' "
                "saves what can still be read)"
            )
        checks.append(Check("integrity", not problems, detail or "ok"))

        unwritable = health.read_only(conn)
        if unwritable is not None:
            checks.append(Check("writable", False, _read_only_detail(paths.db, unwritable)))

        missing = [t for t in health.missing_tables(conn) if t not in health.FTS_INDEXES]
        if repair and missing and unwritable is None:
            try:
                for name in health.recreate_tables(conn, missing):
                    held = (
                        "from the turns that name them"
                        if name == "sessions"
                        else "empty: what it held is gone"
                    )
                    repaired.append(f"made the missing table {name} again, {held}")
            except (sqlite3.Error, MemoryError) as exc:
                repaired.append(f"could not make the missing tables again: {_why(exc)}")
            missing = [t for t in health.missing_tables(conn) if t not in health.FTS_INDEXES]
        checks.append(
            Check(
                "tables",
                not missing,
                f"missing: {', '.join(missing)}" if missing else "all present",
            )
        )

        if unwritable is not None:
            # FTS5's integrity check is a write: on a read-only store it would only say so
            # again, and nothing can be repaired.
            repair = False
        else:
            if repair:
                broken = health.fts_problems(conn)
                if broken:
                    try:
                        health.rebuild_indexes(conn, list(broken))
                        repaired.append(f"rebuilt {', '.join(broken)} from their tables")
                    except Exception as exc:  # noqa: BLE001 - reported below
                        repaired.append(f"could not rebuild the search indexes: {_why(exc)}")
            fts = health.fts_problems(conn)
            checks.append(
                Check(
                    "search indexes",
                    not fts,
                    "; ".join(f"{k}: {v}" for k, v in fts.items())
                    or "consistent with their tables",
                )
            )

        if not missing:
            checks.append(_guarded("sessions", lambda: session_check(conn, None, repair, repaired)))
            if repair:
                try:
                    if queued := queue_missing_digests(conn, gap_s):
                        repaired.append(f"queued {queued} missing digest(s)")
                except (sqlite3.Error, MemoryError) as exc:
                    repaired.append(f"could not queue missing digests: {_why(exc)}")
            checks.append(_guarded("jobs", lambda: _jobs_check(conn)))
    finally:
        conn.close()
    return checks, repaired


def _read_only_detail(db_file: Path, why: str) -> str:
    """What a read-only store is and what to do about it, in one line."""
    if db_file.exists() and not os.access(db_file, os.W_OK):
        mode = stat.S_IMODE(db_file.stat().st_mode)
        cause = f"the file is read-only (mode {mode:04o}): 'chmod 600 {db_file}'"
    elif not os.access(db_file.parent, os.W_OK):
        cause = f"its folder is read-only: 'chmod 700 {db_file.parent}'"
    else:
        cause = f"SQLite says: {why} (a read-only mount?)"
    return (
        f"{db_file} cannot be written, so nothing is stored; {cause} (the search indexes "
        "are not checked: their check writes)"
    )


def _why(exc: BaseException) -> str:
    """One line for a failure while checking."""
    return " ".join(str(exc).split())[:200] or type(exc).__name__


def _guarded(name: str, check: Callable[[], Check]) -> Check:
    """``check()``, or a problem named ``name`` when the store cannot be read for it (a
    damaged page): doctor lists every check either way, never stops at the first."""
    try:
        return check()
    except (sqlite3.Error, MemoryError) as exc:
        return Check(name, False, f"cannot be read: {_why(exc)}")


def _jobs_check(conn: Any) -> Check:
    from ...memory import jobs

    counts = jobs.status_counts(conn)
    failed = counts.get("failed", 0)
    waiting = counts.get("pending", 0) + counts.get("running", 0)
    detail = f"{waiting} pending, {failed} failed"
    if failed:
        detail += " ('rheo maintain --retry-failed' re-queues failed jobs)"
    return Check("jobs", failed == 0, detail)
