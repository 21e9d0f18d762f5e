"""Where rheo keeps its files: ``$RHEO_HOME`` when set, else the platform's user data folder.

Layout (one folder, mode 0700): ``rheo.db`` (every profile), ``config.toml`` beside it,
``history/<profile>`` for the REPL's input history, and ``copies.jsonl``, the backups and
exports rheo wrote (`rheo_cli.app.copies`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Paths:
    """Resolved file locations for one profile."""

    home: Path
    db: Path
    config: Path
    history: Path

    def to_json(self) -> dict[str, str]:
        """``{"db": ..., "config": ..., "history": ...}`` as absolute path strings."""
        return {"db": str(self.db), "config": str(self.config), "history": str(self.history)}


def resolve(profile: str, environ: dict[str, str] | None = None) -> Paths:
    """Paths for ``profile`` from ``RHEO_HOME`` (or platformdirs' user data dir for "rheo")."""
    env = os.environ if environ is None else environ
    raw = env.get("RHEO_HOME", "").strip()
    if raw:
        home = Path(raw).expanduser().absolute()
    else:
        from platformdirs import user_data_dir

        home = Path(user_data_dir("rheo", appauthor=False))
    return Paths(
        home=home,
        db=home / "rheo.db",
        config=home / "config.toml",
        history=home / "history" / profile,
    )
