"""Phrases with which a person asks rheo to keep something forever (Solid# article, pinned
memories).

The phrases themselves are recognised by `requests.detect`, which also makes sure they are
addressed to rheo ("always remember that ..." pins; "I always remember birthdays" does not).
"""

from __future__ import annotations

from .keywords import own_words
from .requests import pin_requested, wants_pin

__all__ = ["own_words", "pin_requested", "wants_pin"]
