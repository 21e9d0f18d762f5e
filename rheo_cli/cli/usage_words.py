"""click's usage errors in rheo's words: one line that names the option or argument and
says what it takes (``--limit must be a whole number from 1 to 100000, not 'abc'``), instead
of click's ``'abc' is not a valid int range.``"""

from __future__ import annotations

import re
from typing import Any

_NOT_A_NUMBER = re.compile(r"^(?P<value>.*) is not a valid (int|integer|float)( range)?\.?$")
_OUT_OF_RANGE = re.compile(r"^(?P<value>.*) is not in the range .*$")
_HUGE = 2**53
"""A bound this large is no bound for the person (ids are capped only by the store)."""


def usage_line(exc: Any) -> str:
    """The one-line message for click exception ``exc`` (its own when rheo has no better)."""
    message = str(exc.format_message())
    param = getattr(exc, "param", None)
    if param is None or type(exc).__name__ != "BadParameter":
        return message
    detail = str(getattr(exc, "message", ""))
    name = _name(param)
    kind = getattr(param.type, "name", "")
    whole = "float" not in kind
    what = "a whole number" if whole else "a number"
    bounds = _bounds(param.type)
    if (found := _NOT_A_NUMBER.match(detail)) is not None:
        return f"{name} must be {what}{bounds}, not {found['value']}"
    if (found := _OUT_OF_RANGE.match(detail)) is not None:
        return f"{name} must be {what}{bounds}, not {found['value']}"
    return message


def _name(param: Any) -> str:
    """``--limit`` for an option, ``ITEM_ID`` for an argument."""
    opts = [o for o in getattr(param, "opts", []) if o.startswith("--")]
    if getattr(param, "param_type_name", "") == "option" and opts:
        return str(opts[0])
    return str(param.human_readable_name).upper()


def _bounds(kind: Any) -> str:
    """`` from 1 to 50``, `` from 1``, or ``""`` for the bounds of a click range type."""
    low, high = getattr(kind, "min", None), getattr(kind, "max", None)
    if high is not None and abs(high) >= _HUGE:
        high = None
    if low is not None and high is not None:
        return f" from {low} to {high}"
    if low is not None:
        return f" from {low}"
    if high is not None:
        return f" up to {high}"
    return ""
