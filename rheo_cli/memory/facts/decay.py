"""Time-based decay of memory confidence, computed at read time (Solid# article, decay).

Nothing is written: the stored confidence is what reinforcement set; what rheo ranks and shows
is the effective confidence now. It falls linearly from the stored value to the floor over
``decay_days`` after the last reinforcement, then stays at the floor; a stored value already
at or below the floor does not move. Pinned items read 1.0 and never decay.
"""

from __future__ import annotations

from datetime import datetime


def effective_confidence(
    stored: float,
    reinforced_at: datetime,
    now: datetime,
    *,
    pinned: bool = False,
    floor: float = 0.3,
    decay_days: float = 180.0,
) -> float:
    """Effective confidence in [floor, 1] (or the stored value when it is below the floor).

    ``reinforced_at`` and ``now`` are aware datetimes; a ``now`` earlier than the last
    reinforcement (replayed history) means no decay. Monotonically non-increasing in ``now``.
    """
    if pinned:
        return 1.0
    if stored <= floor:
        return stored
    days = max(0.0, (now - reinforced_at).total_seconds() / 86400.0)
    if decay_days <= 0 or days >= decay_days:
        return floor
    return stored - (stored - floor) * (days / decay_days)
