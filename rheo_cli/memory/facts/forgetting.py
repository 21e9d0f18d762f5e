"""Forgetting that forgets (PRODUCT.md: "Forgotten means never injected again").

When the person asks rheo to forget something ("forget that I use Neovim", "please forget my
passport number", "delete my old address", "remove Alex from your memory"), `find` picks the
facts they mean, whatever person or wording those were stored in: "Ana uses Neovim" and "The
person uses Neovim" are "I use Neovim" (`keywords.roots`), a field named by the person ("my
relationship with Alex") finds the fact in other words (the breakup, `keywords.related`),
and topic and properties count as much as the label. `forget_matching` retracts them and says
what was forgotten, or that nothing matched and how to look.

Retracting is where forgetting starts, not where it ends: the turns a forgotten fact was said
in, the assistant's echo of them, the request to forget it and the digests that quote it are
never injected again (`memory.context.withheld`), and a secret the person asked to forget (a
number, a key) is held back wherever it appears. The ledger keeps them; ``rheo purge`` erases.
"""

from __future__ import annotations

import re
from datetime import datetime

from ..store.api import Connection
from ..store.errors import EngineError
from ..text.safety import has_secret, mask
from . import curation
from .candidates import FORGET_REQUEST
from .equivalence import NEGATIONS, content_words, similar, topic_key
from .fact import LABEL_MAX, Fact
from .items import MemoryItem, search_items
from .keywords import meaningful, names, related, related_words, roots
from .remember import create_item

FORGETTABLE = ("active", "superseded", "evicted", "done")
"""Statuses a request to forget reaches: every version of a fact but one already retracted."""

SECRET_WORDS = re.compile(
    r"(?i)\b(?:numbers?|password|passwort|passcode|passphrase|pin|key|keys|token|ssn|social\s+"
    r"security|passport|iban|account|card|licen[cs]e|id|code|secret|credentials?|nummer|"
    r"num[ée]ro|n[úu]mero|clave|contrase[ñn]a|mot\s+de\s+passe|schl[üu]ssel|geheim\w*)\b"
)
"""Words that make a fact (or a request) about something secret: its values are held back
wherever they appear once it is forgotten."""

_VALUE = re.compile(r"(?<![\w])(?=(?:[\w./+-]*?\d){4})[\w+][\w./+-]*[\w]")
"""A token holding at least four digits (``123-45-6789``, ``X1234567``, ``+351912345678``)."""


def _negated(text: str) -> bool:
    return bool(set(content_words(text, {})) & NEGATIONS) or "n't" in text.replace("’", "'")


def means(request: str, item: MemoryItem) -> bool:
    """Whether the person's words ``request`` ("I use Neovim", "my passport number", "my
    relationship with Alex") speak of ``item``: similar wording (`similar`); or every word of
    the request is a word of the fact — label, properties or topic — or, but for names, a word
    of its everyday field (`keywords.related`); or every word of the fact is in the request.
    A negation in one and not the other never matches."""
    if similar(request, {}, item.label, item.properties):
        return True
    wanted = roots(request)
    if not wanted or _negated(request) != _negated(item.content_text()):
        return False
    have = roots(item.label, item.properties) | roots(item.topic.replace("-", " "))
    named = names(request)
    if all(w in have or (w not in named and related({w}) & have) for w in wanted):
        return True
    own = roots(item.label, item.properties)
    return bool(own) and own <= wanted


def find(
    conn: Connection, profile: str, request: str, *, assistant: str | None = None
) -> list[MemoryItem]:
    """The facts of ``profile`` (those ``assistant`` sees; None: the shared ones) that the
    person's words ``request`` speak of (`means`), in any status but retracted, oldest first.
    Candidates come from the search index by the request's words and their fields'."""
    words = " ".join(sorted(related_words(roots(request)) | set(meaningful(request))))
    found = search_items(conn, profile, words, statuses=FORGETTABLE, limit=200, assistant=assistant)
    return sorted((item for item, _ in found if means(request, item)), key=lambda i: i.id)


def shown(item: MemoryItem) -> str:
    """How a forgotten fact is named to the person: its words, secrets and long numbers
    masked, parentheses made brackets, at most 80 characters."""
    text = _VALUE.sub("••••", mask(item.content_text())).replace("(", "[").replace(")", "]")
    return text if len(text) <= 80 else text[:79] + "…"


def forget_matching(
    conn: Connection,
    profile: str,
    request: str,
    *,
    now: datetime,
    cause: str,
    turn_id: int | None = None,
    assistant: str | None = None,
) -> tuple[list[MemoryItem], str]:
    """Retract every fact ``request`` speaks of (`find`) and return them with one line for
    the person: ``forgot #12 (Ana uses Neovim)`` or ``nothing stored matches "…"; look with:
    rheo memory search WORDS``. ``cause`` goes in each retraction's event, ``turn_id`` (the
    person's turn that asked) too. Raises EngineError subclasses only for a store that cannot
    be written."""
    gone: list[MemoryItem] = []
    for item in find(conn, profile, request, assistant=assistant):
        try:
            gone.append(
                curation.forget(conn, profile, item.id, now, cause=cause, source_turn_id=turn_id)
            )
        except EngineError:
            continue  # retracted meanwhile
    if not gone:
        earlier = [
            i.id
            for i, _ in search_items(conn, profile, request, statuses=("retracted",), limit=50)
            if means(request, i)
        ]
        if earlier:
            return [], "already forgotten: " + ", ".join(f"#{n}" for n in earlier[:5])
        words = " ".join(meaningful(request))[:60] or request[:60]
        kept = _record_request(conn, profile, request, now, cause, turn_id, assistant)
        later = "; it will not be learnt from what was said before" if kept else ""
        return [], (
            f'nothing stored matches "{mask(request)[:80]}"{later}; look with: '
            f"rheo memory search {_quoted(words)}"
        )
    listed = "; ".join(f"#{i.id} ({shown(i)})" for i in gone)
    return gone, f"forgot {listed}"


def _record_request(
    conn: Connection,
    profile: str,
    request: str,
    now: datetime,
    cause: str,
    turn_id: int | None,
    assistant: str | None,
) -> bool:
    """Keep a request to forget what nothing stored matches — said before its turn was
    learnt from (extraction pending, failing or slow), or never learnt — as a retracted item
    (reason `candidates.FORGET_REQUEST`, the person's words with long numbers left out): no
    later extraction of earlier turns stores what it covers, and the turns that said it are
    held back like any forgotten fact's. True when kept (only for a request made in a turn)."""
    label = " ".join(_VALUE.sub("[number]", mask(request)).split())[:LABEL_MAX]
    if turn_id is None or not roots(label):
        return False
    fact = Fact(category="fact", topic=topic_key(label) or "forgotten", label=label,
                confidence=1.0, reason=FORGET_REQUEST)  # fmt: skip
    try:
        item = create_item(conn, profile, fact, source="request", now=now,
                           source_turn_id=turn_id, assistant=assistant)  # fmt: skip
        curation.forget(conn, profile, item.id, now, cause=cause, source_turn_id=turn_id)
    except EngineError:
        return False
    return True


def _quoted(words: str) -> str:
    return f'"{words}"' if " " in words else words


def secret_like(item: MemoryItem, texts: tuple[str, ...] = ()) -> bool:
    """Whether ``item`` (or one of ``texts``: the request that forgot it) is about a secret —
    a number, a key, a password — or holds one."""
    words = [item.content_text(), item.topic.replace("-", " "), *texts]
    return any(SECRET_WORDS.search(w) or has_secret(w) for w in words) or bool(
        _VALUE.search(item.content_text())
    )


def secret_values(item: MemoryItem, sources: list[str]) -> set[str]:
    """The secret values of a forgotten secret ``item``: tokens of four digits or more and
    recognised credentials, in its own words and in the clauses of its source turns
    ``sources`` that speak of it."""
    values = set(_VALUE.findall(item.content_text()))
    about = roots(item.label, item.properties) | roots(item.topic.replace("-", " "))
    for text in sources:
        for part in re.split(r"(?<=[.!?;\n])\s+", text):
            if not (roots(part) & about) and not has_secret(part):
                continue
            values |= set(_VALUE.findall(part))
            masked = set(mask(part).split())
            values |= {t.strip(".,;:!?\"'()") for t in part.split() if t not in masked}
    return {v for v in values if len(v) >= 4}
