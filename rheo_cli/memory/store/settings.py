"""Tunable numbers of the memory engine, with the source articles' defaults.

The CLI fills a `Settings` from ``config.toml`` (``[session] gap_hours``, ``[memory] cap``,
``floor``, ``decay_days``, ``[context] budget``); the engine only reads it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Settings:
    """Engine settings. Units: seconds, days, tokens; confidences in [0, 1]."""

    gap_s: float = 2 * 3600.0
    """A turn this long after the previous one opens a new session (Rheo article §03: two hours)."""
    budget_tokens: int = 2000
    """Token budget of the injected context (sections only; the message is never trimmed)."""
    session_turns: int = 12
    """How many of the active session's turns CURRENT SESSION carries (Rheo article §07: ~12)."""
    digests: int = 5
    """How many recent digests EPISODIC MEMORY carries (Rheo article §04: five)."""
    cap: int = 50
    """Active memory items per profile before the least-reinforced is evicted (Solid# article,
    tier-aware capping: 20-200)."""
    floor: float = 0.3
    """Decay floor for effective confidence (Solid# article)."""
    decay_days: float = 180.0
    """Days without reinforcement for confidence to reach the floor (Solid# article, decay: about 6
    months)."""
    initial_confidence: float = 0.8
    """Confidence of a new fact when its writer gives none (Solid# article)."""
    reinforce_step: float = 0.1
    """Confidence added by each reinforcement, capped at 1.0 (Solid# article)."""
    conflict_threshold: float = 0.8
    """Both facts at or above this confidence: a supersede is flagged for review (Rheo article
    §05)."""
