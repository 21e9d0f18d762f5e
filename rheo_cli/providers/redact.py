"""Keeping secrets and terminal control codes out of anything rheo prints or stores."""

from __future__ import annotations

import os
import re

_PATTERNS = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{6,}"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?i)\b(bearer|x-api-key:?)\s+[^\s'\"]+"),
)
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@]+@")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]|\x1b\[[0-9;?]*[A-Za-z]")

_SECRET_ENV = {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"}


def add_secret_env(name: str) -> None:
    """Also redact the value of environment variable ``name`` (a configured key's variable)."""
    if name:
        _SECRET_ENV.add(name)


def redact(text: str) -> str:
    """``text`` with API keys (the configured ones and anything shaped like a key or bearer
    token) and credentials inside URLs replaced by ``[redacted]``, and terminal control
    sequences removed."""
    out = _CONTROL.sub("", text)
    for name in sorted(_SECRET_ENV):
        secret = os.environ.get(name, "")
        for variant in {secret, secret.strip()}:
            if len(variant) >= 8:
                out = out.replace(variant, "[redacted]")
    out = _URL_CREDENTIALS.sub(lambda m: m.group(1) + "[redacted]@", out)
    for pattern in _PATTERNS:
        out = pattern.sub(lambda m: (m.group(1) + " " if m.lastindex else "") + "[redacted]", out)
    return out
