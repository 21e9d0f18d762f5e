"""What a message asks about, for retrieval: content words, names and numbers, phrases, dates.

No model: stop words are dropped, capitalised words that don't start a sentence and numbers are
*entities* (boosted: "Nutrifax", "Arowyn", "2023"), adjacent content words form *phrases*
("support group"), quoted text is a phrase as typed, and time expressions become date ranges
(`timeexpr`). Text in scripts written without spaces (Chinese, Japanese, Thai) yields *runs*
of such characters for the trigram index.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from . import timeexpr

STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been
    before being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just me more most my myself no nor not now of off on once only or
    other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves yes ok okay hey hi hello please thanks thank tell know think remember
    said say says get got like just really also much many one ever still us let lets dont
    didnt doesnt im ive youre whats thats kind sort thing things something anything
    everything way ago last next week weeks month months year years day days today yesterday
    tomorrow morning evening night time discuss discussed talk talked talking mention
    mentioned recently hadnt wasnt isnt arent werent wont cant couldnt shouldnt wouldnt
    havent hasnt ill id youve weve theyre theyve youd hed shed theyd two three four five six
    seven eight nine ten couple few several""".split()  # noqa: SIM905
)
_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)
_NO_SPACE = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\u0e00-\u0e7f]+"
)
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|\n)\s*[\"'(]*$")


@dataclass
class Query:
    """The retrieval view of a message (all words case-folded except ``entities``' display).

    ``speaker`` is whose turns the message asks about: ``"user"`` when the person asks about
    themselves ("what do I…", "when did I…", "my sister's name"), ``"assistant"`` when they
    ask what the assistant said ("what did you recommend?"), None otherwise. ``follow_up`` is
    True for a message that leans on the conversation rather than naming its subject ("and
    after that?", "why?", "what about the second one?").
    """

    terms: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)
    phrases: list[str] = field(default_factory=list)
    runs: list[str] = field(default_factory=list)
    times: list[timeexpr.TimeRange] = field(default_factory=list)
    speaker: str | None = None
    follow_up: bool = False

    @property
    def empty(self) -> bool:
        """True when nothing in the message can drive retrieval."""
        return not (self.terms or self.runs or self.times)


def analyse(message: str, now: datetime, *, max_terms: int = 16) -> Query:
    """Analyse ``message`` at clock ``now``. Of a long message (a pasted document) only the
    first 1,000 and last 500 characters count: that is where the question usually is, and a
    query of hundreds of words retrieves noise slowly."""
    text = message if len(message) <= 1500 else f"{message[:1000]}\n{message[-500:]}"
    # Words of a time expression stay search words where they can match ("May", "Tuesday",
    # "2023"); the generic ones ("ago", "last", "weeks", "two") are stop words.
    times = timeexpr.resolve(text, now)
    terms: list[str] = []
    entities: list[str] = []
    previous: str | None = None
    phrases: list[str] = []
    for match in _WORD.finditer(text):
        raw = match.group(0)
        word = raw.casefold().replace("’", "'")
        if word.endswith("'s") and len(word) > 3:  # possessive: "Arowyn's" is about Arowyn
            word, raw = word[:-2], raw[:-2]
        if _NO_SPACE.search(raw):
            previous = None
            continue
        plain = word.replace("'", "")
        is_stop = plain in STOP_WORDS or len(plain) < 2 and not plain.isdigit()
        if is_stop:
            previous = None
            continue
        if word not in terms:
            terms.append(word)
        starts_sentence = bool(_SENTENCE_START.search(text[: match.start()]))
        named = raw[0].isupper() and not starts_sentence
        if (raw.isdigit() or named or (raw.isupper() and len(raw) > 1)) and word not in entities:
            entities.append(word)
        if previous is not None:
            phrase = f"{previous} {word}"
            if phrase not in phrases:
                phrases.append(phrase)
        previous = word
    quoted = [" ".join(q.casefold().split()) for q in re.findall(r'"([^"]{3,80})"', text)]
    quoted = [q for q in dict.fromkeys(quoted) if q]
    phrases = quoted + [p for p in phrases if p not in quoted]
    runs = [r for r in dict.fromkeys(_NO_SPACE.findall(text)) if r]
    pronouns = {m.group(0).casefold().replace("’", "'") for m in _WORD.finditer(text)}
    return Query(
        terms=terms[:max_terms],
        entities=entities[:8],
        phrases=phrases[:8],
        runs=runs[:8],
        times=times,
        speaker=_speaker(pronouns),
        follow_up=_follows_up(text, terms),
    )


_FIRST_PERSON = frozenset({"i", "i'm", "i've", "i'd", "i'll", "my", "mine", "myself"})
_OBJECT_ME = frozenset({"me"})
_SECOND_PERSON = frozenset({"you", "your", "yours", "yourself", "you've", "you'd", "you're"})
_LEADS = frozenset({"and", "so", "also", "then", "but", "or", "plus"})
_ANAPHORS = frozenset(
    {"it", "that", "this", "those", "these", "them", "there", "he", "she", "they", "him", "her"}
)
FOLLOW_UP_TERMS = 2
"""A message with at most this many search words leans on the conversation when it starts
with "and", "so", "also", "what about"... or refers back ("it", "that", "them"...); one with
none always does."""


def _speaker(words: set[str]) -> str | None:
    """Whose turns a message asks about, from its pronouns: the person's when it says "I",
    "my" or "mine" (also "can you remind me what I said"); the assistant's when it says "you"
    or "your" and not "me" ("what did you suggest?"); else None ("what did you tell me?" —
    either)."""
    if words & _FIRST_PERSON:
        return "user"
    if words & _SECOND_PERSON and not words & _OBJECT_ME:
        return "assistant"
    return None


def _follows_up(text: str, terms: list[str]) -> bool:
    """True when ``text`` (with search words ``terms``) leans on the conversation (see
    `Query.follow_up`)."""
    if not terms:
        return bool(text.strip())
    if len(terms) > FOLLOW_UP_TERMS:
        return False
    words = [m.group(0).casefold() for m in _WORD.finditer(text)]
    if not words:
        return False
    leads = words[0] in _LEADS or (words[0] in ("what", "how") and words[1:2] == ["about"])
    return leads or any(w in _ANAPHORS for w in words)
