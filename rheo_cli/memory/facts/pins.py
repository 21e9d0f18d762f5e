"""Phrases with which a person asks rheo to keep something forever (seed 2: pinned memories).

The phrases themselves are recognised by `requests.detect`, which also makes sure they are
addressed to rheo ("always remember that ..." pins; "I always remember birthdays" does not).
"""

from __future__ import annotations

from .requests import own_words, pin_requested, wants_pin

__all__ = ["own_words", "pin_requested", "wants_pin"]
