"""Plain output helpers shared by commands: JSON, short one-line previews, local times."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any

from ..memory.timeutil import from_stored


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON (UTF-8 kept as is) on stdout."""
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


def preview(text: str, width: int = 100) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``width`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def local(stored: str, now: datetime) -> str:
    """Stored UTC text shown in the clock's time zone as ``YYYY-MM-DD HH:MM``."""
    return from_stored(stored).astimezone(now.tzinfo).strftime("%Y-%m-%d %H:%M")
