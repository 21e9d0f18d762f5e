"""Putting an Assistant together for a runtime: tools and after-reply work."""

from __future__ import annotations

from typing import Any

from ..assistant import Assistant
from ..runtime import Runtime


def tool_specs() -> list[Any]:
    """The tools offered to Claude in a chat call (none yet)."""
    return []


def make_assistant(rt: Runtime) -> Assistant:
    """An Assistant for ``rt`` with rheo's tools and background work attached."""
    return Assistant(rt, tools=tool_specs())
