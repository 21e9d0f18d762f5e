"""``rheo doctor``'s checks of the installation, whichever the store: config.toml, the
assistants' prompt files, that a chat provider is ready (never showing a key), and the
permissions of rheo's files (0600 files, 0700 folders; the person's own assistant prompt
files kept there are not rheo's secrets)."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import RheoError
from ...memory.text.render import plural
from ...paths import Paths
from .checks import Check


@dataclass
class Installation:
    """What the store's checks need from the installation: the session gap (seconds, from
    config.toml, else the default 2 h), the person's own files (not made private) and where
    the store is (``location``: a server's URL, else ``""``: the profile's SQLite file)."""

    gap_s: float = 2 * 3600.0
    own: frozenset[Path] = frozenset()
    location: str = ""
    secrets: frozenset[str] = frozenset()
    """Secrets config.toml holds (the Telegram bot's token), masked wherever doctor quotes."""


def config_checks(paths: Paths, found: Installation) -> list[Check]:
    """config.toml reads (and, when it names assistants, their prompt files do); fills
    ``found``'s gap and own files from it."""
    from ... import config as config_mod

    try:
        cfg = config_mod.load(paths.config)
    except RheoError as exc:
        return [Check("config", False, str(exc))]
    found.gap_s = cfg.engine.gap_s
    found.own = frozenset(a.prompt_file for a in cfg.assistants.values() if a.prompt_file)
    found.secrets = frozenset(s for s in (cfg.telegram_token,) if s)
    where = str(paths.config) if paths.config.exists() else "no config.toml: defaults"
    checks = [Check("config", True, where)]
    if cfg.assistants:
        checks.append(_assistants_check(cfg))
    return checks


def _assistants_check(cfg: Any) -> Check:
    """Every assistant's prompt file can be read (a missing one fails each chat with it)."""
    problems: list[str] = []
    for assistant in cfg.assistants.values():
        try:
            assistant.prompt()
        except RheoError as exc:
            problems.append(str(exc))
    names = ", ".join(sorted(cfg.assistants))
    return Check("assistants", not problems, "; ".join(problems[:3]) or f"{names}: prompts read")


def provider_check(profile: str, found: Installation) -> Check:
    """Whichever chat provider is configured or found is ready (no key's value is ever
    shown); fills ``found``'s store location from the App (``RHEO_DATABASE_URL`` alone when the
    App cannot be built: a broken config is reported by `config_checks`, and only
    Anthropic's key is looked for)."""
    from ...providers.anthropic_api import has_credentials
    from .. import app as app_mod

    found.location = os.environ.get("RHEO_DATABASE_URL", "").strip()
    try:
        with app_mod.build(profile=profile) as app:
            found.location = app.store_location
            guidance = app.provider_ready()
    except RheoError:
        ready = has_credentials()
        detail = (
            "ANTHROPIC_API_KEY is set"
            if ready
            else "neither ANTHROPIC_API_KEY nor ANTHROPIC_AUTH_TOKEN is set"
        )
        return Check("api key", ready, detail)
    detail = "a chat provider is configured" if guidance is None else guidance.splitlines()[0]
    return Check("api key", guidance is None, detail)


def permissions_check(home: Path, own: frozenset[Path], repair: bool, repaired: list[str]) -> Check:
    """rheo's files under ``home`` are readable by their owner only; ``repair`` makes them so
    first (noted in ``repaired``). ``own``: the person's files, left alone."""
    if repair and (count := _fix_private(home, own)):
        repaired.append(
            f"permissions of {plural(count, 'file or folder', 'files or folders')} "
            "set to owner-only"
        )
    loose = _private_problems(home, own)
    return Check("permissions", not loose, "; ".join(loose[:5]) or "files 0600, folders 0700")


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
    """Take every permission but the owner's from rheo's files and folders under ``home``
    (symlinks and ``own`` left alone); returns how many were changed."""
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
