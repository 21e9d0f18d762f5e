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
from ..store.settings import Settings
from .equivalence import content_words, similar, topic_key
from .fact import LABEL_MAX
from .forgetting import forget_matching
from .keywords import own_words
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
_PLEASE = (
    r"(?:\s*,?\s*(?:please|pls|bitte|por\s+favor|s'il\s+te\s+pla[iî]t|s'il\s+vous\s+pla[iî]t"
    r"|stp)\b\s*,?)?"
)
"""A "please" after the verb ("merk dir bitte, dass …", "forget please that …")."""
_MY = r"(?:my|our|mine|the|his|her|their)\b"
_MON = r"(?:mon|ma|mes|notre|nos)\b"
_MEIN = r"(?:mein|meine|meinen|meinem|meiner|meines|unser\w*)\b"
_MI = r"(?:mi|mis|nuestro|nuestra|nuestros|nuestras)\b"

Kind = Literal["remember", "forget"]

# (kind, pinned, pattern): the content is group "c"; tried in order, first match wins.
_RAW: list[tuple[Kind, bool, str]] = [
    # English
    (
        "remember",
        True,
        r"(?:always\s+remember|never\s+(?:ever\s+)?forget|(?:don't|do\s+not|dont)\s+"
        r"(?:ever\s+)?forget)" + _PLEASE + r"(?:\s+that\b|\s+this\b)?" + _THAT + r"(?P<c>.+)",
    ),
    (
        "remember",
        False,
        r"(?:remember|note|make\s+a\s+note|take\s+a\s+note|keep\s+in\s+mind|bear\s+in\s+mind)"
        + _PLEASE
        + r"(?:\s+that\b\s*|\s*:\s*)(?P<c>.+)",
    ),
    ("forget", False, r"(?:forget|disregard)" + _PLEASE + r"\s+(?:about\s+)?that\s+(?P<c>\w.+)"),
    (
        "forget",
        False,
        r"forget" + _PLEASE + r"\s+(?:everything\s+|all\s+|anything\s+)?(?:what\s+)?"
        r"(?:I\s+(?:said|told\s+you|mentioned)|you\s+know)\s+about\s+(?P<c>.+)",
    ),
    ("forget", False, r"forget" + _PLEASE + r"\s+(?:everything|all|anything)\s+about\s+(?P<c>.+)"),
    ("forget", False, r"forget" + _PLEASE + r"\s+(?:about\s+)?(?P<c>" + _MY + r".+)"),
    ("forget", False, r"forget" + _PLEASE + r"\s+about\s+(?P<c>\w.+)"),
    ("forget", False, r"stop\s+remembering(?:\s+that\b)?\s+(?P<c>.+)"),
    (
        "forget",
        False,
        r"(?:delete|erase|remove|wipe|drop)"
        + _PLEASE
        + r"\s+(?P<c>.+?)\s+from\s+(?:your\s+|the\s+)?"
        r"(?:memory|memories)\b.*",
    ),
    (
        "forget",
        False,
        r"(?:delete|erase|remove|wipe)" + _PLEASE + r"\s+(?:the\s+fact\s+that\s+|that\s+(?=\w+\s))?"
        r"(?P<c>(?:" + _MY + r"|I\b|I'm\b|I've\b).+)",
    ),
    # French
    (
        "remember",
        True,
        r"(?:n'oublie(?:z)?\s+(?:pas|jamais)|souviens-toi\s+toujours|souvenez-vous\s+toujours"
        r"|rappelle-toi\s+toujours|retiens\s+bien)"
        + _PLEASE
        + r"(?:\s+que\s+|\s+qu'|\s*:\s*|\s+)(?P<c>.+)",
    ),
    (
        "remember",
        False,
        r"(?:souviens-toi|souvenez-vous|rappelle-toi|rappelez-vous|retiens|retenez|note|notez"
        r"|prends\s+note|prenez\s+note|garde\s+en\s+t[eê]te)"
        + _PLEASE
        + r"(?:\s+que\s+|\s+qu'|\s*:\s*)"
        r"(?P<c>.+)",
    ),
    ("forget", False, r"(?:oublie|oubliez)" + _PLEASE + r"\s*(?:que\s+|qu')(?P<c>.+)"),
    (
        "forget",
        False,
        r"(?:oublie|oubliez)"
        + _PLEASE
        + r"\s+(?:tout\s+)?ce\s+que\s+je\s+(?:t'ai|vous\s+ai)\s+dit\s+"
        r"(?:sur|de|à\s+propos\s+de)\s+(?P<c>.+)",
    ),
    ("forget", False, r"(?:oublie|oubliez)" + _PLEASE + r"\s+(?P<c>" + _MON + r".+)"),
    (
        "forget",
        False,
        r"(?:arr[eê]te|arr[eê]tez)\s+de\s+(?:te|vous)\s+souvenir\s+(?:que\s+|qu'|de\s+|d')"
        r"(?P<c>.+)",
    ),
    (
        "forget",
        False,
        r"(?:efface|effacez|supprime|supprimez)" + _PLEASE + r"\s+(?P<c>.+?)\s+de\s+(?:ta|votre)\s+"
        r"m[ée]moire\b.*",
    ),
    (
        "forget",
        False,
        r"(?:efface|effacez|supprime|supprimez)" + _PLEASE + r"\s+(?P<c>" + _MON + r".+)",
    ),
    # German
    (
        "remember",
        True,
        r"(?:vergiss"
        + _PLEASE
        + r"\s+(?:das\s+)?(?:nicht|nie|niemals)|vergessen\s+Sie\s+(?:nicht|nie)"
        r"|merk(?:e)?\s+dir\s+(?:für\s+immer|immer)|denk(?:e)?\s+immer\s+daran)"
        r"(?:\s*,?\s*dass\s+|\s*:\s*|\s*,\s*|\s+)(?P<c>.+)",
    ),
    (
        "remember",
        False,
        r"(?:merk(?:e)?\s+dir|merken\s+Sie\s+sich|denk(?:e)?\s+daran|notier(?:e)?"
        r"|notieren\s+Sie)" + _PLEASE + r"(?:\s*,?\s*dass\s+|\s*:\s*)(?P<c>.+)",
    ),
    ("forget", False, r"(?:vergiss|vergessen\s+Sie)" + _PLEASE + r"\s*,?\s*dass\s+(?P<c>.+)"),
    (
        "forget",
        False,
        r"(?:vergiss|vergessen\s+Sie)" + _PLEASE + r"\s*,?\s*(?:alles\s*,?\s*)?was\s+ich\s+"
        r"(?:dir|Ihnen)\s+über\s+(?P<c>.+?)\s+(?:gesagt|erzählt)\s+habe",
    ),
    ("forget", False, r"(?:vergiss|vergessen\s+Sie)" + _PLEASE + r"\s+(?P<c>" + _MEIN + r".+)"),
    (
        "forget",
        False,
        r"hör(?:e)?\s+auf\s*,?\s*dir\s+zu\s+merken\s*,?\s*dass\s+(?P<c>.+)",
    ),
    (
        "forget",
        False,
        r"(?:lösch(?:e)?|löschen\s+Sie|entfern(?:e)?|entfernen\s+Sie)"
        + _PLEASE
        + r"\s+(?P<c>.+?)\s+"
        r"aus\s+(?:deinem|Ihrem)\s+(?:Gedächtnis|Speicher)\b.*",
    ),
    (
        "forget",
        False,
        r"(?:lösch(?:e)?|löschen\s+Sie|entfern(?:e)?|entfernen\s+Sie)"
        + _PLEASE
        + r"\s+(?P<c>"
        + _MEIN
        + r".+)",
    ),
    # Spanish
    (
        "remember",
        True,
        r"(?:no\s+olvides|nunca\s+olvides|no\s+te\s+olvides\s+de|recuerda\s+siempre"
        r"|acu[eé]rdate\s+siempre\s+de)" + _PLEASE + r"(?:\s+que\s+|\s*:\s*|\s+)(?P<c>.+)",
    ),
    (
        "remember",
        False,
        r"(?:recuerda|recuerde|acu[eé]rdate\s+de|anota|apunta|toma\s+nota\s+de"
        r"|ten\s+en\s+cuenta)" + _PLEASE + r"(?:\s+que\s+|\s*:\s*)(?P<c>.+)",
    ),
    ("forget", False, r"(?:olvida|olvide|olv[ií]date\s+de)" + _PLEASE + r"\s+que\s+(?P<c>.+)"),
    (
        "forget",
        False,
        r"(?:olvida|olvide)" + _PLEASE + r"\s+(?:todo\s+)?lo\s+que\s+te\s+dije\s+(?:sobre|de)\s+"
        r"(?P<c>.+)",
    ),
    (
        "forget",
        False,
        r"(?:olvida|olvide|olv[ií]date\s+de)" + _PLEASE + r"\s+(?P<c>" + _MI + r".+)",
    ),
    ("forget", False, r"deja\s+de\s+recordar(?:\s+que)?\s+(?P<c>.+)"),
    (
        "forget",
        False,
        r"(?:borra|borre|elimina|elimine)" + _PLEASE + r"\s+(?P<c>.+?)\s+de\s+tu\s+memoria\b.*",
    ),
    ("forget", False, r"(?:borra|borre|elimina|elimine)" + _PLEASE + r"\s+(?P<c>" + _MI + r".+)"),
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


_TRAILING_PLEASE = re.compile(
    r"[\s,]*(?:please|pls|bitte|por\s+favor|s'il\s+te\s+pla[iî]t|s'il\s+vous\s+pla[iî]t|stp)"
    r"[\s.!]*$",
    re.IGNORECASE,
)
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
            content = _TRAILING_PLEASE.sub("", match.group("c").strip().rstrip(".!?;"))
            content = content.strip("\"'«»“”„ ").strip()
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
    each "remember" (pinned when asked) and retract every fact each "forget" speaks of,
    whatever its wording (`forgetting.forget_matching`). Returns one note per request, saying
    what was done: ``stored memory #12``, ``forgot #3 (Ana uses Neovim)``, or that nothing
    matched and how to look. Raises EngineError subclasses only for a store that cannot be
    written (callers keep the chat going)."""
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
        _, note = forget_matching(
            conn,
            profile,
            request.content,
            now=now,
            cause=f'the person asked: "{request.sentence[:200]}" (turn #{turn_id})',
            turn_id=turn_id,
            assistant=assistant_of_turn(conn, turn_id),  # what the assistant talked to sees
        )
        notes.append(note)
    return notes
