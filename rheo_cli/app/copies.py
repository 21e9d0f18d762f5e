"""The copies rheo wrote of the store: each ``rheo backup`` and ``rheo export -o`` is noted in
``RHEO_HOME/copies.jsonl`` (one JSON line: the file's absolute path, when, what, the
profiles it holds — all of them for a SQLite backup), so ``rheo purge`` can name the earlier
copies that still hold what it erases. The note never holds content; a note that cannot be
written or read is skipped, never an error (the copy itself is what matters).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

from ..paths import Paths

NAME = "copies.jsonl"
SHOWN = 5
"""How many copies a purge names (the most recent; it says how many more there are)."""


def log_of(paths: Paths) -> Path:
    """Where the notes are kept for this home folder."""
    return paths.home / NAME


def note(paths: Paths, file: Path, *, kind: str, profiles: list[str] | None) -> None:
    """Note that rheo wrote ``file`` (``kind`` backup or export) holding ``profiles`` (None:
    every profile of the store). Appends one line to the log (created mode 0600)."""
    line = json.dumps(
        {
            "path": str(file.absolute()),
            "at": datetime.now(UTC).isoformat(timespec="seconds"),
            "kind": kind,
            "profiles": profiles,
        },
        ensure_ascii=False,
    )
    try:
        fd = os.open(log_of(paths), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as out:
            out.write(line + "\n")
    except OSError:
        pass


def holding(paths: Paths, profile: str) -> list[str]:
    """The files rheo noted that hold ``profile`` and still exist, newest first, each once."""
    try:
        lines = log_of(paths).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    found: list[str] = []
    for raw in reversed(lines):
        try:
            entry = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            continue
        profiles = entry.get("profiles")
        if profiles is not None and profile not in (profiles if isinstance(profiles, list) else []):
            continue
        path = entry["path"]
        if path not in found and Path(path).exists():
            found.append(path)
    return found
