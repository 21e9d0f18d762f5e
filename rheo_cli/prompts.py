"""Prompt files: ``prompts/`` in a checkout, shipped as ``rheo_cli/prompts/`` in the wheel."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


@cache
def load(name: str) -> str:
    """The text of prompt ``name`` (e.g. ``"system"`` for ``system.md``), trailing space trimmed.

    Looks in the installed package first, then in the source checkout's top-level ``prompts/``.
    Raises FileNotFoundError naming both places when neither has it.
    """
    candidates = [_PACKAGE / "prompts" / f"{name}.md", _PACKAGE.parent / "prompts" / f"{name}.md"]
    for path in candidates:
        if path.is_file():
            return path.read_text(encoding="utf-8").rstrip()
    raise FileNotFoundError(f"prompt {name!r} not found in {candidates[0]} or {candidates[1]}")
