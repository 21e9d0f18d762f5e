"""Keys that decide whether two facts are "the same": normalised topics and content forms.

A topic is a short key (``arowyn-school``): lower case, letters and digits of any script,
words joined by ``-``. Two facts are *equivalent* (a reinforcement, not a new item) only when
they say the same thing in the same order: `equivalent` compares canonical forms that forgive
what never changes a meaning — case, accents, punctuation, whitespace, articles, plural and
third-person ``-s``, contractions, hyphens, number words, a list of single words or of clauses
in another order — and nothing else. Word order, roles and direction ("email over SMS" /
"SMS over email"), numbers, dates, names, negation and words of change ("cancelled", "no
longer") all survive in the canonical form, so any of them differing is a change. When in
doubt, a change: it supersedes and the old fact is kept, never overwritten.

`similar` is the loose comparison (shared words, same numbers, names and negation) used
where a false match is harmless: a fact the person retracted is not learnt again, and
"forget that ..." finds what to retract.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

_WORD = re.compile(r"\w+", re.UNICODE)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
_STOP = frozenset(
    """a an the of to in on at for and or but is are was were be been being has have had do
    does did will would shall should can could may might must this that these those it its
    with from by as about into over after before than then so very just also not no yes i me
    my mine we our you your he him his she her they them their there here""".split()  # noqa: SIM905
)
TOPIC_MAX = 60


def topic_key(text: str) -> str:
    """Normalise a topic: ``"Arowyn's School!"`` -> ``"arowyn-s-school"``; empty input gives
    ``""`` (callers derive a topic from the label then)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    words = _WORD.findall(folded.replace("_", " "))
    return "-".join(words)[:TOPIC_MAX].strip("-")


def _strip_accents(word: str) -> str:
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def content_words(label: str, properties: dict[str, Any]) -> list[str]:
    """The words of a fact's label and property values, case- and accent-folded."""
    values = " ".join(
        v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in properties.values()
    )
    text = unicodedata.normalize("NFKC", f"{label} {values}").casefold()
    text = text.replace("cannot", "can not").replace("can't", "can not")
    text = re.sub(r"n['’]t\b", " not", text)  # don't -> do not
    return [_strip_accents(w) for w in _WORD.findall(text.replace("_", " "))]


def content_key(label: str, properties: dict[str, Any]) -> str:
    """A canonical form of a fact's content: its distinct folded words, sorted."""
    return " ".join(sorted(set(content_words(label, properties))))


def _stem(word: str) -> str:
    """A light English suffix strip (starts/starting/started -> start) for overlap only."""
    for _ in range(2):
        for suffix in ("ing", "ed", "es", "s"):
            if len(word) > len(suffix) + 3 and word.endswith(suffix) and word.isascii():
                word = word[: -len(suffix)]
                break
    return word


# --- the strict rule: canonical forms ------------------------------------------------------

ARTICLES = frozenset(
    """a an the le la les l un une des der die das den dem des ein eine einen einem einer
    eines el los las unos unas""".split()  # noqa: SIM905
)
"""Articles (English, French, German, Spanish): dropped, they never change a fact."""

_NUMBER_WORDS = {
    word: str(n)
    for n, words in {
        2: "two deux zwei dos",
        3: "three trois drei tres",
        4: "four quatre vier cuatro",
        5: "five cinq fünf cinco",
        6: "six sechs seis",
        7: "seven sieben siete",
        8: "eight huit acht ocho",
        9: "nine neuf neun nueve",
        10: "ten dix zehn diez",
        11: "eleven onze elf once",
        12: "twelve douze zwölf doce",
    }.items()
    for word in words.split()
}
"""Number words 2-12 read as digits ("has two cats" = "has 2 cats"); one is left alone
(it is also an article or a pronoun in these languages)."""

_CONJUNCTIONS = frozenset("and or & et ou und oder sowie y o e u".split())  # noqa: SIM905
_LIST_FOLLOWERS = frozenset(
    """in on at for with every each during until since via per au aux à en pour avec chez
    dans sur pendant depuis chaque im am an auf für mit bei zum zur während seit jeden jede
    jeder para con por durante cada desde hasta""".split()  # noqa: SIM905
)
"""Words after which a list of single words may end ("tea and coffee in the morning"); a
list followed by anything else (a verb: "Maria and Tom run the shop") is not reordered."""
_ORDER_WORDS = frozenset(
    """then after afterwards before first second third last later finally next rank ranked
    ranking order ordered priority priorities top favourite favorite puis ensuite après avant
    premier première deuxième dernier enfin ordre priorité dann danach nachher vorher zuerst
    erst zuletzt reihenfolge priorität luego después despues antes primero primera segundo
    último ultimo finalmente orden prioridad""".split()  # noqa: SIM905
)
"""Words that make the order of a list meaningful: with one of them, nothing is reordered."""

_TOKEN = re.compile(r"\d+(?:[.,:/]\d+)*|[,;]|&|\w+", re.UNICODE)


def _tokens(text: str) -> list[str]:
    """The canonical tokens of one text (see the module docstring), in order; ``,`` and
    ``;`` are kept as separators."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("’", "'").replace("_", " ")
    text = re.sub(r"\b(can)not\b", r"\1 not", text)
    text = re.sub(r"\bwon't\b", "will not", text)
    text = re.sub(r"\bcan't\b", "can not", text)
    text = re.sub(r"n't\b", " not", text)
    text = re.sub(r"'(m|re|ve|ll|d)\b", lambda m: " " + m.group(1), text)
    text = re.sub(r"(?<=[^\W\d_])-(?=[^\W\d_])", "", text)  # e-mail = email
    text = text.replace("'", " ")  # l'e-mail, s'appelle
    out: list[str] = []
    for raw in _TOKEN.findall(text):
        if raw in ARTICLES:
            continue
        word = _NUMBER_WORDS.get(raw, raw)
        word = _strip_accents(word)
        if (
            len(word) >= 4
            and word.endswith("s")
            and not word.endswith(("ss", "us", "is"))
            and not word[0].isdigit()
        ):
            word = word[:-1]
        out.append(word)
    return out


def _sort_lists(tokens: list[str]) -> list[str]:
    """Sort every list of single words ("tea and coffee", "a, b and c") whose end is clear:
    the end of the text or clause, or a preposition."""
    out: list[str] = []
    i = 0
    seps = _CONJUNCTIONS | {","}
    while i < len(tokens):
        items = [tokens[i]]
        j = i + 1
        while j < len(tokens) and tokens[j] in seps:
            k = j
            while k < len(tokens) and tokens[k] in seps:
                k += 1
            if k >= len(tokens) or tokens[k] in seps or tokens[k] == ";":
                break
            items.append(tokens[k])
            j = k + 1
        end_ok = j >= len(tokens) or tokens[j] in _LIST_FOLLOWERS or tokens[j] in (",", ";")
        if len(items) > 1 and end_ok and tokens[i] not in seps:
            out.extend(sorted(items))
            i = j
        else:
            out.append(tokens[i])
            i += 1
    return out


def _canonical(text: str) -> tuple[tuple[str, ...], frozenset[tuple[str, ...]] | None]:
    """``(words in order with lists sorted, clauses as a set or None)`` for one text; the
    clause set is None when order may matter (one clause, or an ordering word)."""
    tokens = _tokens(text)
    ordered = set(tokens) & _ORDER_WORDS
    flat = tuple(t for t in (tokens if ordered else _sort_lists(tokens)) if t not in (",", ";"))
    clauses: list[tuple[str, ...]] = [()]
    for t in tokens:
        if t in (",", ";"):
            clauses.append(())
        else:
            clauses[-1] += (t,)
    parts = [c for c in clauses if c]
    if ordered or len(parts) < 2 or any(len(c) < 2 for c in parts):
        return flat, None
    return flat, frozenset(parts) if len(set(parts)) == len(parts) else None


def _props_form(properties: dict[str, Any]) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    pairs = []
    for key, value in properties.items():
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        pairs.append((_canonical(str(key))[0], _canonical(text)[0]))
    return tuple(sorted(pairs))


def same_text(a: str, b: str) -> bool:
    """Whether two statements say the same thing by the strict rule (see `equivalent`)."""
    flat_a, clauses_a = _canonical(a)
    flat_b, clauses_b = _canonical(b)
    if flat_a == flat_b:
        return True
    return clauses_a is not None and clauses_a == clauses_b


def equivalent(
    label_a: str, props_a: dict[str, Any], label_b: str, props_b: dict[str, Any]
) -> bool:
    """True when two facts say the same thing: same canonical label (see the module
    docstring) and the same properties, keys and values compared the same way. Never true
    for facts that differ in order, roles, direction, numbers, dates, names, negation or a
    word of change; a paraphrase in other words is not recognised either (a change)."""
    return same_text(label_a, label_b) and _props_form(props_a) == _props_form(props_b)


CLOSING_WORDS = frozenset(
    """done finished completed sent delivered paid submitted cancelled canceled fulfilled
    fait fini finie termine terminee envoye envoyee paye payee annule annulee accompli
    erledigt gesendet geschickt abgeschickt bezahlt abgesagt storniert abgeschlossen
    eingereicht hecho hecha terminado terminada enviado enviada pagado pagada cancelado
    cancelada completado completada entregado entregada anulado anulada""".split()  # noqa: SIM905
)
"""Words that say a commitment was fulfilled or called off (accents folded)."""


def closes(open_item: str, statement: str) -> bool:
    """Whether ``statement`` says the commitment ``open_item`` was fulfilled or cancelled:
    it has a word of `CLOSING_WORDS` that the open item's own text lacks ("Sent the invoice"
    after "Send the invoice by Friday"; "cancelled"; "erledigt"; "annulé")."""

    def words(text: str) -> set[str]:
        folded = unicodedata.normalize("NFKC", text).casefold()
        return {_strip_accents(w) for w in _WORD.findall(folded)}

    return bool((words(statement) - words(open_item)) & CLOSING_WORDS)


# --- the loose rule ------------------------------------------------------------------------


def _names(raw: str) -> set[str]:
    return {_strip_accents(w.casefold()) for w in re.findall(r"\b[A-Z][\w'-]*", raw)} - _STOP


NEGATIONS = frozenset(
    """not no never none nobody nothing nowhere neither nor without cannot cant dont doesnt
    didnt isnt arent wasnt werent wont hasnt havent hadnt quit quits stopped stop stops
    former formerly ex anymore longer ended gave lost left divorced ne pas plus jamais aucun
    aucune sans nicht kein keine keinen keiner nie niemals mehr nunca tampoco ningun ninguna
    ya mai nessun nessuna nao nunca geen niet nooit""".split()  # noqa: SIM905
)
"""Words that turn a statement into its opposite or say it changed (several languages)."""


def _negations(raw: str, words: list[str]) -> frozenset[str]:
    found = {w.replace("'", "") for w in words} & NEGATIONS
    if re.search(r"n['’]t\b", raw, re.IGNORECASE):
        found.add("not")
    return frozenset(found)


def similar(label_a: str, props_a: dict[str, Any], label_b: str, props_b: dict[str, Any]) -> bool:
    """True when two facts are about the same thing in roughly the same words: same words of
    negation or change, same numbers, no capitalised name in one that the other lacks, and a
    Jaccard overlap of at least 0.6 between their (lightly stemmed) content words without stop
    words. Word order is ignored: use it only where a false match is harmless."""
    raw_a = f"{label_a} {json.dumps(props_a, ensure_ascii=False)}"
    raw_b = f"{label_b} {json.dumps(props_b, ensure_ascii=False)}"
    words_a = content_words(label_a, props_a)
    words_b = content_words(label_b, props_b)
    if set(words_a) == set(words_b):
        return True
    if bool(_negations(raw_a, words_a)) != bool(_negations(raw_b, words_b)):
        return False
    if set(_NUMBER.findall(raw_a)) != set(_NUMBER.findall(raw_b)):
        return False
    # A proper name in one fact that the other does not mention at all: another entity.
    if (_names(raw_a) - set(words_b)) or (_names(raw_b) - set(words_a)):
        return False
    set_a = {_stem(w) for w in words_a} - _STOP
    set_b = {_stem(w) for w in words_b} - _STOP
    if not set_a or not set_b:
        return set_a == set_b
    return len(set_a & set_b) / len(set_a | set_b) >= 0.6
