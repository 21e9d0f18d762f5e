"""Phrases with which a person asks rheo to keep something forever (seed 2: pinned memories)."""

from __future__ import annotations

import re

_PIN = re.compile(
    r"""\b(
        always\s+remember | don'?t\s+(?:you\s+)?(?:ever\s+)?forget | do\s+not\s+forget
        | never\s+forget | remember\s+(?:this|that)\s+(?:forever|always)
        | make\s+sure\s+(?:you|to)\s+remember | keep\s+(?:this|that)\s+in\s+mind\s+forever
        | n'oublie\s+pas | n'oubliez\s+pas | souviens-toi\s+toujours
        | vergiss\s+(?:das\s+)?nicht | merk\s+dir\s+das
        | no\s+olvides | recuerda\s+siempre | non\s+dimenticare | ricorda\s+sempre
        | não\s+esqueças | nao\s+esquecas | lembre-se\s+sempre | vergeet\s+niet
    )\b
    | 忘れないで | 覚えておいて | 别忘了 | 不要忘记 | 记住 | 잊지\s*마 | не\s+забудь""",
    re.IGNORECASE | re.VERBOSE,
)


def wants_pin(text: str) -> bool:
    """True when ``text`` (the person's own words) asks to always remember something."""
    return bool(_PIN.search(text.replace("’", "'")))


def own_words(text: str) -> str:
    """The person's own words in a message: a piped document (``<stdin>...</stdin>``) is
    someone else's text, so "never forget" inside it does not pin anything."""
    return re.sub(r"<stdin>.*?(</stdin>|$)", " ", text, flags=re.S)
