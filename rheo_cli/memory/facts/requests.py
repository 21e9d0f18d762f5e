"""Explicit requests to rheo, honoured at once and without a model (Solid# article, pinned
memories).

"Remember that …", "note that …" store a fact; "always remember …", "don't forget …", "never
forget …" store it pinned; "forget that …", "stop remembering …" retract what matches. Only in
the person's own words (not in a piped ``<stdin>`` document), only addressed to rheo: the
phrase opens a sentence, after at most a greeting, "please", "can you" or rheo's name, so "I
always remember birthdays" is not a request. A question ("Remember that trip to Rome?") is
not one either, unless it asks rheo ("Can you note that ...?"). English, French, German and Spanish.

`honour` runs when the person's turn is stored, before the model is called: the fact is in
memory (and in the context) for this very reply, even if the extractor and the model return
nothing. The extractor may later refine it through the normal path (reinforce or update).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from ..store.api import Connection
from ..store.errors import EngineError
from ..store.settings import Settings
from . import curation
from .equivalence import content_words, similar, topic_key
from .fact import LABEL_MAX
from .items import search_items
from .remember import Fact, remember
from .scope import assistant_of_turn

REQUEST_CONFIDENCE = 0.9
"""Confidence of a fact the person explicitly asked rheo to remember (pinned: 1.0)."""

_LEAD = re.compile(
    r"""^(?:(?:hey|hi|hello|ok|okay|so|and|also|oh|please|pls|rheo|claude|btw|by\s+the\s+way
    |salut|bonjour|alors|et|aussi|stp|s'il\s+te\s+pla[iî]t|s'il\s+vous\s+pla[iî]t
    |hallo|hey|also|und|auch|bitte|übrigens
    |hola|oye|y|también|tambien|por\s+favor)\b[\s,!:.-]*)*
    (?:(?:can|could|would|will)\s+you\s+(?:please\s+)?|(?:peux|pourrais)-tu\s+|pouvez-vous\s+
    |(?:kannst|könntest)\s+du\s+(?:bitte\s+)?|(?:puedes|podrías|podrias)\s+)?""",
    re.IGNORECASE | re.VERBOSE,
)
"""What may come before a request at the start of a sentence: greetings, "please", rheo's
name, "can you"."""

_ASKING = re.compile(r"you|-tu|-vous|du|puedes|podr", re.IGNORECASE)
"""A lead that asks rheo ("can you note that ...?"): a request despite its question mark."""

_THAT = r"(?:\s*[:,]\s*|\s+)"

Kind = Literal["remember", "forget"]

# (kind, pinned, pattern): the content is group "c"; tried in order, first match wins.
_RAW: list[tuple[Kind, bool, str]] = [
    # English
    (
        "remember",
        True,
        r"(?:always\s+remember|never\s+(?:ever\s+)?forget|(?:don't|do\s+not|dont)\s+"
        r"(?:ever\s+)?forget)(?:\s+that\b|\s+this\b)?" + _THAT + r"(?P<c>.+)",
    ),
    (
        "remember",
        False,
        r"(?:remember|note|make\s+a\s+note|take\s+a\s+note|keep\s+in\s+mind|bear\s+in\s+mind)"
        r"(?:\s+that\b\s*|\s*:\s*)(?P<c>.+)",
    ),
    ("forget", False, r"(?:forget|disregard)\s+(?:about\s+)?that\s+(?P<c>\w.+)"),
    ("forget", False, r"forget\s+what\s+I\s+(?:said|told\s+you)\s+about\s+(?P<c>.+)"),
    ("forget", False, r"stop\s+remembering(?:\s+that\b)?\s+(?P<c>.+)"),
    # French
    (
        "remember",
        True,
        r"(?:n'oublie(?:z)?\s+(?:pas|jamais)|souviens-toi\s+toujours|souvenez-vous\s+toujours"
        r"|rappelle-toi\s+toujours|retiens\s+bien)(?:\s+que\s+|\s+qu'|\s*:\s*|\s+)(?P<c>.+)",
    ),
    (
        "remember",
        False,
        r"(?:souviens-toi|souvenez-vous|rappelle-toi|rappelez-vous|retiens|retenez|note|notez"
        r"|prends\s+note|prenez\s+note|garde\s+en\s+t[eê]te)(?:\s+que\s+|\s+qu'|\s*:\s*)"
        r"(?P<c>.+)",
    ),
    ("forget", False, r"(?:oublie|oubliez)\s+(?:que\s+|qu')(?P<c>.+)"),
    (
        "forget",
        False,
        r"(?:arr[eê]te|arr[eê]tez)\s+de\s+(?:te|vous)\s+souvenir\s+(?:que\s+|qu'|de\s+|d')"
        r"(?P<c>.+)",
    ),
    # German
    (
        "remember",
        True,
        r"(?:vergiss\s+(?:das\s+)?(?:nicht|nie|niemals)|vergessen\s+Sie\s+(?:nicht|nie)"
        r"|merk(?:e)?\s+dir\s+(?:für\s+immer|immer)|denk(?:e)?\s+immer\s+daran)"
        r"(?:\s*,?\s*dass\s+|\s*:\s*|\s*,\s*|\s+)(?P<c>.+)",
    ),
    (
        "remember",
        False,
        r"(?:merk(?:e)?\s+dir|merken\s+Sie\s+sich|denk(?:e)?\s+daran|notier(?:e)?"
        r"|notieren\s+Sie)(?:\s*,?\s*dass\s+|\s*:\s*)(?P<c>.+)",
    ),
    ("forget", False, r"(?:vergiss|vergessen\s+Sie)\s*,?\s*dass\s+(?P<c>.+)"),
    (
        "forget",
        False,
        r"hör(?:e)?\s+auf\s*,?\s*dir\s+zu\s+merken\s*,?\s*dass\s+(?P<c>.+)",
    ),
    # Spanish
    (
        "remember",
        True,
        r"(?:no\s+olvides|nunca\s+olvides|no\s+te\s+olvides\s+de|recuerda\s+siempre"
        r"|acu[eé]rdate\s+siempre\s+de)(?:\s+que\s+|\s*:\s*|\s+)(?P<c>.+)",
    ),
    (
        "remember",
        False,
        r"(?:recuerda|recuerde|acu[eé]rdate\s+de|anota|apunta|toma\s+nota\s+de"
        r"|ten\s+en\s+cuenta)(?:\s+que\s+|\s*:\s*)(?P<c>.+)",
    ),
    ("forget", False, r"(?:olvida|olvide|olv[ií]date\s+de)\s+que\s+(?P<c>.+)"),
    ("forget", False, r"deja\s+de\s+recordar(?:\s+que)?\s+(?P<c>.+)"),
]
_PATTERNS = [(k, p, re.compile(rx, re.IGNORECASE | re.VERBOSE)) for k, p, rx in _RAW]

_PRONOUNS = frozenset("that this it ca cela ceci das dies esto eso".split())  # noqa: SIM905
"""Content that only points back ("don't forget that!"): nothing to store."""
_BOUNDARY = re.compile(r"([.!?;])\s+|\n+")
_ABBREVIATIONS = frozenset(
    """dr mr mrs ms mme mlle m st jr sr snr prof rev fr sra srta dra hr fr frau herr no nr
    vs etc approx ave rd blvd mt ft inc ltd co corp dept univ fig vol ed e.g i.e a.m p.m u.s
    u.k z.b bzw ca usw d.h av avda c calle""".split()  # noqa: SIM905
)
"""Words whose period does not end a sentence ("Dr. Okafor", "St. James", "7 a.m. sharp")."""


def _sentences(text: str) -> list[str]:
    """``text`` cut into sentences at ``.``, ``!``, ``?`` or ``;`` followed by space, and at
    line breaks; on the same line, a period after an abbreviation, an initial or a dotted word
    ("a.m."), or before a lower-case word, does not end a sentence."""
    out: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        mark = match.group(1)
        if mark == "." and "\n" not in match.group(0):
            head = text[start : match.start(1)]
            word = head.rsplit(None, 1)[-1].lower() if head.strip() else ""
            following = text[match.end() : match.end() + 1]
            if (
                word in _ABBREVIATIONS
                or (len(word) == 1 and word.isalpha())
                or "." in word
                or following.islower()
            ):
                continue
        out.append(text[start : match.end(1) if mark else match.start()])
        start = match.end()
    out.append(text[start:])
    return out


_TO_DO = re.compile(r"^(?:to|d'|de|zu|de\s+que)\s+", re.IGNORECASE)


@dataclass(frozen=True)
class Request:
    """One explicit request: ``kind`` remember or forget, the person's ``content`` (what to
    remember or forget, in their words), ``pin`` for "always remember"-like phrases, and the
    whole ``sentence`` it was found in."""

    kind: Kind
    content: str
    pin: bool
    sentence: str


def own_words(text: str) -> str:
    """The person's own words in a message: a piped document (``<stdin>...</stdin>``) is
    someone else's text, so "never forget" inside it asks nothing."""
    return re.sub(r"<stdin>.*?(</stdin>|$)", " ", text, flags=re.S)


def detect(text: str) -> list[Request]:
    """The requests in ``text`` (the person's own words: strip documents with `own_words`
    first), in order. A sentence ending in ``?`` is a question, never a request."""
    found: list[Request] = []
    for raw in _sentences(text.replace("’", "'")):
        sentence = raw.strip().lstrip("¡¿\"'«„“ ").strip()
        if not sentence:
            continue
        lead = _LEAD.match(sentence)
        asked = lead is not None and _ASKING.search(lead.group(0)) is not None
        if sentence.rstrip("\"'»“” ").endswith("?") and not asked:
            continue  # "Remember that trip to Rome?" asks the person, not rheo
        rest = sentence[lead.end() if lead else 0 :]
        for kind, pin, pattern in _PATTERNS:
            match = pattern.match(rest)
            if match is None:
                continue
            content = match.group("c").strip().rstrip(".!?;").strip("\"'«»“”„ ").strip()
            if set(content_words(content, {})) - _PRONOUNS:
                found.append(Request(kind, content[:LABEL_MAX], pin, sentence))
            break
    return found


def wants_pin(text: str) -> bool:
    """True when ``text`` (the person's own words) asks rheo to always remember something."""
    return any(r.pin for r in detect(text))


def _words(text: str) -> set[str]:
    return {w for w in content_words(text, {}) if len(w) > 2}


def _matches(content: str, label: str, properties: dict[str, object]) -> bool:
    """Whether a fact is the one a request's ``content`` speaks of: similar wording, or every
    longer word of the fact in the request (or the reverse)."""
    if similar(content, {}, label, dict(properties)):
        return True
    wanted, have = _words(content), _words(label)
    return bool(wanted and have) and (have <= wanted or wanted <= have)


def pin_requested(text: str, fact: Fact) -> bool:
    """Whether the person's own words ``text`` ask rheo to always remember ``fact``."""
    return any(
        r.pin and _matches(r.content, fact.label, fact.properties)
        for r in detect(text)
        if r.kind == "remember"
    )


def _fact_for(request: Request) -> Fact:
    content = request.content
    category = "fact"
    todo = _TO_DO.match(content)
    if todo:  # "don't forget to call the bank": a commitment
        content = content[todo.end() :]
        category = "open_item"
    label = content[:1].upper() + content[1:]
    words = [w for w in content_words(content, {}) if len(w) > 2][:4]
    return Fact(
        category=category,
        topic=topic_key(" ".join(words)) or topic_key(content)[:40],
        label=label,
        confidence=REQUEST_CONFIDENCE,
        reason="the person asked rheo to remember it",
        pinned=request.pin,
    )


def honour(
    conn: Connection,
    *,
    profile: str,
    turn_id: int,
    text: str,
    now: datetime,
    settings: Settings,
) -> list[str]:
    """Act on the explicit requests in the person's turn ``turn_id`` (its ``text``): store
    each "remember" (pinned when asked) and retract the active items each "forget" names.
    Returns one note per request, saying what was done. Raises EngineError subclasses only
    for a store that cannot be written (callers keep the chat going)."""
    notes: list[str] = []
    for request in detect(own_words(text)):
        if request.kind == "remember":
            outcome = remember(
                conn,
                _fact_for(request),
                source="request",
                now=now,
                settings=settings,
                source_turn_id=turn_id,
                profile=profile,
            )
            notes.append(outcome.describe())
            continue
        retracted = []
        seen_by = assistant_of_turn(conn, turn_id)  # what the assistant talked to sees
        for item, _ in search_items(conn, profile, request.content, limit=50, assistant=seen_by):
            if _matches(request.content, item.label, item.properties):
                try:
                    curation.forget(
                        conn,
                        profile,
                        item.id,
                        now,
                        cause=f'the person asked: "{request.sentence[:200]}" (turn #{turn_id})',
                        source_turn_id=turn_id,
                    )
                except EngineError:
                    continue
                retracted.append(f"#{item.id}")
        notes.append(
            f"retracted {', '.join(retracted)}"
            if retracted
            else f'nothing stored matches "{request.content[:80]}"'
        )
    return notes
