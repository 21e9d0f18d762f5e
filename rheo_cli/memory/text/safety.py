"""Recognising secrets a person pastes, so that memory never copies them.

The ledger keeps what the person typed, word for word. Everything derived from it — memory
items, digests, and the requests sent to the extraction and digest models — passes through
`mask` first, which replaces each secret with `MASK`. Secrets are recognised by their usual
shapes: API keys and tokens of well-known services (``sk-ant-…``, ``sk-…``, ``ghp_…``,
``github_pat_…``, ``xox…-``, ``AKIA…``, ``AIza…``, ``sk_live_…``), JSON Web Tokens, PEM private
keys, ``Bearer``/``Basic`` credentials, the ``user:password@`` part of a URL, and the value
after ``password:``, ``token=``, ``api_key:``-style labels (or "my password is …").
"""

from __future__ import annotations

import re

MASK = "[secret removed]"

_SHAPES = [
    # PEM private keys, the whole block (or to the end when the END line is missing).
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
    r"\bsk-ant-[A-Za-z0-9_\-]{8,}",  # Anthropic
    r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}",  # OpenAI and alike
    r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}",  # GitHub tokens
    r"\bgithub_pat_[A-Za-z0-9_]{20,}",
    r"\bglpat-[A-Za-z0-9_\-]{20,}",  # GitLab
    r"\bxox[abposr]-[A-Za-z0-9\-]{10,}",  # Slack
    r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b",  # AWS access key ids
    r"\bAIza[0-9A-Za-z_\-]{35}",  # Google API keys
    r"\b[rs]k_(?:live|test)_[0-9A-Za-z]{16,}",  # Stripe
    r"\bhf_[A-Za-z0-9]{30,}",  # Hugging Face
    r"\bnpm_[A-Za-z0-9]{36}\b",
    r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",  # JWT
]
_SECRET = re.compile("|".join(f"(?:{s})" for s in _SHAPES))
# The credential in ``https://user:password@host``.
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/?#@:'\"]+:[^\s/?#@'\"]+@")
# ``Authorization: Bearer …``, ``Bearer …``.
_BEARER = re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9_\-.~+/=]{8,}")
# ``password: …``, ``api_key=…``, ``"token": "…"``.
_LABELLED = re.compile(
    r"""(?ix)
    \b((?:[a-z0-9]+[_\-\ ]?)?
       (?:password|passwd|passphrase|passcode|pwd|secret|api[_\-\ ]?key|access[_\-\ ]?key
          |secret[_\-\ ]?key|private[_\-\ ]?key|client[_\-\ ]?secret|auth[_\-\ ]?token
          |access[_\-\ ]?token|refresh[_\-\ ]?token|token|pin)
    )
    (["']?\s*(?::|=>|=)\s*["']?)
    (?!\[secret)([^\s"',;]{4,})
    """
)
# ``my password is …`` (only for passwords: "the token is valid" is not a secret).
_PASSWORD_IS = re.compile(
    r"(?i)\b((?:password|passphrase|passcode)s?)(\s+(?:is|was|=)\s+[\"']?)"
    r"(?!\[secret)([^\s\"',;]{4,})"
)


def mask(text: str) -> str:
    """``text`` with every recognised secret replaced by `MASK` (labels such as
    ``password:`` and ``Bearer`` are kept, so the sentence still reads). Text without secrets
    is returned unchanged."""
    if not text:
        return text
    out = _SECRET.sub(MASK, text)
    out = _URL_USERINFO.sub(lambda m: m.group(1) + MASK + "@", out)
    out = _BEARER.sub(lambda m: m.group(1) + m.group(2) + MASK, out)
    out = _LABELLED.sub(lambda m: m.group(1) + m.group(2) + MASK, out)
    return _PASSWORD_IS.sub(lambda m: m.group(1) + m.group(2) + MASK, out)


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
