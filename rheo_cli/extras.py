"""The optional extras (pyproject.toml) and the one hint that says how to install one.

rheo is installed from its source folder (README: ``.venv/bin/pip install '.[openai]'``), not
from PyPI, so the hint names that folder when pip recorded it (``direct_url.json``), and the
pip of the environment rheo runs in.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

EXTRAS = {
    "openai": "openai",
    "postgres": "psycopg",
    "redis": "redis",
    "mcp": "mcp",
    "telegram": "telegram",
}
"""Each extra and the module it provides (what `missing` looks for)."""


def missing(extra: str) -> bool:
    """Whether the module of ``extra`` (one of `EXTRAS`) cannot be imported. Imports nothing."""
    try:
        return importlib.util.find_spec(EXTRAS[extra]) is None
    except ValueError:  # imported already, without a spec (__main__-like): present
        return False


def install_hint(extra: str) -> str:
    """The command that installs ``extra``, e.g. ``/src/rheo/.venv/bin/pip install
    '/src/rheo[openai]'`` (the folder rheo was installed from, when known; else ``pip install
    '.[openai]'`` to run in rheo's folder)."""
    folder = _source_folder()
    pip = _pip()
    if folder is None:
        return f"{pip} install '.[{extra}]' (in rheo's folder)"
    return f"{pip} install '{folder}[{extra}]'"


def _pip() -> str:
    """This environment's pip when rheo runs in a virtual environment, else ``pip``."""
    if sys.prefix != sys.base_prefix:
        candidate = Path(sys.prefix) / "bin" / "pip"
        if candidate.exists():
            return str(candidate)
    return "pip"


def _source_folder() -> str | None:
    """The local folder pip installed rheo from (``direct_url.json``), or None."""
    from importlib import metadata

    try:
        raw = metadata.distribution("rheo-cli").read_text("direct_url.json")
        url = str(json.loads(raw or "{}").get("url", ""))
    except (metadata.PackageNotFoundError, ValueError, OSError, AttributeError):
        return None
    parsed = urlparse(url)
    if parsed.scheme != "file" or not parsed.path:
        return None
    return unquote(parsed.path)
