"""Text safety in one place: credentials out of what rheo prints, sends or remembers, and
terminal control out of what it shows.

One recogniser of credentials, used three ways:

- `redact` — messages and logs (a provider's error, a stored failed turn): each credential
  becomes ``[redacted]`` and terminal control sequences are removed. The caller may add
  literal secrets (the values of configured API-key variables; the engine never reads the
  environment itself).
- `mask`, `mask_value`, `has_secret` — memory boundaries. The ledger keeps what the person
  typed, word for word; everything derived from it (memory items, digests, the requests sent
  to the extraction and digest models) passes through `mask`, which puts `MASK` in place of
  each secret and keeps its label, so the sentence still reads.
- `redact_url` — a configured URL shown with its password (and credential query parameters)
  as ``***``, the user, server, database and options still visible.

Recognised: API keys and tokens of well-known services (``sk-ant-…``, ``sk-…``, ``ghp_…``,
``github_pat_…``, ``glpat-…``, ``xox…-``, ``AKIA…``, ``AIza…``, ``sk_live_…``, ``hf_…``,
``npm_…``), JSON Web Tokens, PEM private keys, ``Bearer``/``Basic`` credentials, the
``user:password@`` (or any ``user@``) part of a URL — with or without a scheme, up to the
last ``@`` of the address —, query parameters named like a key, token, secret, password or
signature, ``Authorization``/``X-Api-Key``/``Cookie``-like header values, and the value after
``password:``, ``token=``, ``api_key:``-style labels (or "my password is …").

Terminal-safe display: `safe` (text for a terminal, every control and invisible character
shown visibly), `json_text`/`json_escape` (JSON whose text a terminal shows literally and
whose values read back the same) and `clean` (text to store: controls and lone surrogates
replaced). Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from functools import cache
from typing import Any

MASK = "[secret removed]"
"""What `mask` puts in place of a secret in memory."""
REDACTED = "[redacted]"
"""What `redact` puts in place of a credential in a message."""
URL_MASK = "***"
"""What `redact_url` puts in place of a URL's password."""

# --- recognising credentials ---------------------------------------------------------------

_SHAPES = [
    # PEM private keys, the whole block (or to the end when the END line is missing).
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    r"\bsk-ant-[A-Za-z0-9_\-]{6,}",  # Anthropic
    r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{16,}",  # OpenAI and alike
    r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}",  # GitHub tokens
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bglpat-[A-Za-z0-9_\-]{20,}",  # GitLab
    r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bAIza[0-9A-Za-z_\-]{35}",  # Google API keys
    r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe
    r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"\bnpm_[A-Za-z0-9]{36}\b",
    r"(?<!\d)\d{5,12}:AA[A-Za-z0-9_\-]{30,}",  # Telegram bot tokens (also in .../botTOKEN/...)
    r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWT
]
_SHAPE = re.compile("|".join(f"(?:{s})" for s in _SHAPES))
# ``scheme://user:password@host``: the credential part of a URL, up to the last ``@`` of the
# address (a password may hold one).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/?#'\"]*@")
# ``user:password@host`` without a scheme, or after a mistyped one (``http//``).
_BARE_USERINFO = re.compile(r"(^|[\s/'\"(])[^\s/@'\":]+:(?!//)[^\s'\"]*@")
# ``?key=...``, ``&access_token=...``: query parameters that carry a credential.
_QUERY = re.compile(
    r"(?i)([?&;](?:[a-z0-9_\-]*?(?:key|token|secret|password|passwd|pwd|auth|signature|sig)"
    r"[a-z0-9_\-]*)=)[^&#\s'\"]*"
)
# ``Authorization: ...`` and ``X-Api-Key: ...``-like header lines; a cookie only with its
# ``name=value`` shape ("cookie: oatmeal" is a preference, not a header).
_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api-key|x-auth-token)(\s*[:=]\s*)"
    r"(?:(?:bearer|basic)\s+)?[^\s,;'\"]+"
    r"|\b((?:set-)?cookie)(\s*:\s*)[^\s=;,'\"]+=[^\s;,'\"]*"
)
# ``Bearer …`` (any token) and ``X-Api-Key …``; ``Basic …`` only when it looks like
# base64 (not a plain word: "basic understanding" stays).
_BEARER = re.compile(
    r"\b((?i:bearer|x-api-key:?))(\s+)[^\s'\"]+"
    r"|\b((?i:basic))(\s+)(?![A-Z]?[a-z]+\b)[A-Za-z0-9+/_\-.~]{8,}={0,2}"
)
_LABELS = (
    r"(?:password|passwd|passphrase|passcode|pwd|secret|api[_\-\ ]?key|access[_\-\ ]?key"
    r"|secret[_\-\ ]?key|private[_\-\ ]?key|client[_\-\ ]?secret|auth[_\-\ ]?token"
    r"|access[_\-\ ]?token|refresh[_\-\ ]?token|token|pin)"
)


@cache
def _labelled(token: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """``password: …``, ``api_key=…``, ``"token": "…"``; and ``my password is …`` (only for
    passwords: "the token is valid" is not a secret). A value already replaced by ``token``
    is left alone."""
    done = re.escape(token)
    labelled = re.compile(
        rf"""(?ix)
        \b((?:[a-z0-9]+[_\-\ ]?)?{_LABELS})
        (["']?\s*(?::|=>|=)\s*["']?)
        (?!{done})([^\s"',;]{{4,}})
        """
    )
    password_is = re.compile(
        r"(?i)\b((?:password|passphrase|passcode)s?)(\s+(?:is|was|=)\s+[\"']?)"
        rf"(?!{done})([^\s\"',;]{{4,}})"
    )
    return labelled, password_is


def _replace(text: str, token: str) -> str:
    """``text`` with every recognised credential replaced by ``token``; labels, schemes,
    header names and query parameter names kept."""
    out = _SHAPE.sub(token, text)
    out = _USERINFO.sub(lambda m: m.group(1) + token + "@", out)
    out = _BARE_USERINFO.sub(lambda m: m.group(1) + token + "@", out)
    out = _QUERY.sub(lambda m: m.group(1) + token, out)
    out = _HEADER.sub(
        lambda m: (m.group(1) or m.group(3)) + (m.group(2) or m.group(4)) + token, out
    )
    out = _BEARER.sub(
        lambda m: (m.group(1) or m.group(3)) + (m.group(2) or m.group(4)) + token, out
    )
    labelled, password_is = _labelled(token)
    out = labelled.sub(lambda m: m.group(1) + m.group(2) + token, out)
    return password_is.sub(lambda m: m.group(1) + m.group(2) + token, out)


_SEQUENCE = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, screen clears
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, clipboard writes, links
    r"|\x1b[@-Z\\-_]"  # other two-character escapes
)


def redact(text: str, literals: Iterable[str] = ()) -> str:
    """``text`` for a message or a log: every recognised credential (module docstring) and
    every string of ``literals`` (secrets the caller knows, such as a configured API key;
    empty ones are ignored) replaced by `REDACTED`; escape sequences, control characters
    other than line feed and tab, and invisible characters removed."""
    out = _SEQUENCE.sub("", text)
    out = _REMOVED.sub("", out)
    for secret in sorted({s for s in literals if s}, key=len, reverse=True):
        out = out.replace(secret, REDACTED)
    return _replace(out, REDACTED)


def mask(text: str) -> str:
    """``text`` with every recognised secret replaced by `MASK` (labels such as
    ``password:`` and ``Bearer`` are kept, so the sentence still reads). Text without secrets
    is returned unchanged."""
    if not text:
        return text
    return _replace(text, MASK)


def has_secret(text: str) -> bool:
    """True when `mask` would change ``text``."""
    return mask(text) != text


def mask_value(value: object) -> object:
    """`mask` applied to every string inside a JSON-like value (dicts, lists), keys included
    (a secret used as a property name is still a secret)."""
    if isinstance(value, str):
        return mask(value)
    if isinstance(value, dict):
        return {mask(k) if isinstance(k, str) else k: mask_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_value(v) for v in value]
    return value


def redact_url(url: str) -> str:
    """``url`` with its password (``user:PASSWORD@``, also an ``@`` inside it) and the value
    of credential query parameters (``password=``, ``sslpassword=``, ``token=``…) replaced by
    `URL_MASK`; the user, server, database and other options kept, so the URL still says
    where it points."""
    scheme, sep, rest = url.partition("://")
    if sep:
        address, slash, tail = rest.partition("/")
        credentials, at, host = address.rpartition("@")
        if at and ":" in credentials:
            user = credentials.split(":", 1)[0]
            rest = f"{user}:{URL_MASK}@{host}{slash}{tail}"
        url = f"{scheme}{sep}{rest}"
    return _QUERY.sub(lambda m: m.group(1) + URL_MASK, url)


# --- terminal-safe display -------------------------------------------------------------------

INVISIBLE = (
    "\x80-\x9f"  # C1 controls (U+009B is a one-byte CSI, U+009D an OSC)
    # Format characters (Unicode category Cf), which show nothing: the soft hyphen,
    # zero-width ones, bidi marks, overrides and isolates, the Mongolian vowel separator, word
    # joiner and invisible operators, deprecated format characters, BOM, interlinear
    # annotation, Egyptian, shorthand and musical format controls, tag characters ("ASCII
    # smuggling"). Not the prepended concatenation marks (U+0600-0605, U+06DD, U+070F...):
    # they are drawn, as signs over the digits that follow.
    "\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
    # Blank letters and marks that show nothing either: the combining grapheme joiner,
    # Hangul fillers, Khmer inherent vowels.
    "\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0"
    "\u2028\u2029"  # line and paragraph separators
    "\ud800-\udfff"  # lone surrogates (cannot even be encoded)
)
"""Characters a terminal would act on or that show nothing (a regular-expression class body)."""
_SELECTOR = "\ufe00-\ufe0f\U000e0100-\U000e01ef"
_NO_BASE = re.compile(f"[{_SELECTOR}A-Za-z\\s\\x00-\\x1f\\x7f{INVISIBLE}]")
"""What a variation selector cannot follow and still select a form of something: it is
shown when it comes at the start or after a space, an ASCII letter, a control, an invisible
character or another selector (a variation sequence is one base and one selector, so a run
of them can only carry hidden data). One after another character (the emoji selector U+FE0F
after ☺ or a keycap digit, an ideographic one after a CJK character) is kept: it only picks
how that one is drawn."""
_FLAGS = (
    "\U0001f3f4\U000e0067\U000e0062"
    "(?:\U000e0065\U000e006e\U000e0067|\U000e0073\U000e0063\U000e0074"
    "|\U000e0077\U000e006c\U000e0073)\U000e007f"
)
"""The three flags Unicode recommends that are written with tag characters (England,
Scotland, Wales): kept whole; every other tag character is shown."""
_UNSAFE = re.compile(f"{_FLAGS}|[\\x00-\\x08\\x0b-\\x1f\\x7f{INVISIBLE}{_SELECTOR}]")
_JSON_UNSAFE = re.compile(f"{_FLAGS}|[\\x7f{INVISIBLE}{_SELECTOR}]")
_ASCII_UNSAFE = re.compile("[\\x00-\\x08\\x0b-\\x1f\\x7f]")
"""What `_UNSAFE` can find in ASCII text, searched for faster (most text is ASCII)."""
_REMOVED = re.compile(f"[\\x00-\\x08\\x0b-\\x1f\\x7f{INVISIBLE}]")
"""What `redact` removes from a message."""
_STORED_UNSAFE = re.compile(r"[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _kept(match: re.Match[str], *, quote: bool = False) -> bool:
    """Whether ``match`` stays as it is: a flag sequence, or a variation selector after a
    base (in a JSON document, ``quote``, a string's opening quote is no base either)."""
    found = match.group(0)
    if len(found) > 1:
        return True
    if not ("\ufe00" <= found <= "\ufe0f" or "\U000e0100" <= found <= "\U000e01ef"):
        return False
    at = match.start()
    before = match.string[at - 1] if at else ""
    return bool(before) and not _NO_BASE.match(before) and not (quote and before == '"')


def _visible(match: re.Match[str]) -> str:
    if _kept(match):
        return match.group(0)
    code = ord(match.group(0))
    if code < 0x20:
        return chr(0x2400 + code)  # control pictures: ESC shows as ␛, NUL as ␀
    if code == 0x7F:
        return "\u2421"  # ␡
    return f"<U+{code:04X}>"


def _json_escaped(match: re.Match[str]) -> str:
    if _kept(match, quote=True):
        return match.group(0)
    code = ord(match.group(0))
    if code > 0xFFFF:  # JSON writes a character beyond the BMP as its UTF-16 surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def safe(text: str) -> str:
    """Stored or received text fit for a terminal, shown literally and never interpreted.

    C0 controls other than line feed and tab become their visible pictures (ESC is ``␛``, so
    ``ESC[2J`` shows as ``␛[2J``; an OSC 52 clipboard write or OSC 8 link is shown, not run);
    DEL is ``␡``; C1 controls, format characters (zero-width, bidi, the soft hyphen, tag
    characters...), blank fillers, line/paragraph separators, stray variation selectors and
    lone surrogates become ``<U+XXXX>`` (``<U+E0049>``). Line feeds and tabs are kept, and
    so are emoji with their selector and the three tag-sequence flags. The one display filter
    every command and REPL view uses.
    """
    return (_ASCII_UNSAFE if text.isascii() else _UNSAFE).sub(_visible, text)


def json_escape(document: str) -> str:
    """A JSON document (as `json.dumps` with ``ensure_ascii=False`` writes it) with DEL and
    every character `safe` would show as ``<U+XXXX>`` written as a ``\\uXXXX`` escape (a
    pair of them beyond U+FFFF: U+E0049 is ``\\udb40\\udc49``). They can only occur inside
    JSON strings, so the document decodes to the same value; C0 controls are already
    escaped by `json.dumps`. No line reader splits the result and a terminal shows it
    literally."""
    if document.isascii():  # C0 controls are already escaped: only DEL may be left
        return document.replace("\x7f", "\\u007f")
    return _JSON_UNSAFE.sub(_json_escaped, document)


def json_text(value: Any) -> str:
    """``value`` as indented JSON that a terminal shows literally (`json_escape`)."""
    return json_escape(json.dumps(value, ensure_ascii=False, indent=2))


def clean(text: str) -> str:
    """Text safe to store and show: lone surrogates and control characters (but tab, line
    feed and carriage return) replaced by U+FFFD."""
    return _STORED_UNSAFE.sub("\ufffd", text)
