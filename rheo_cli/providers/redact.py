"""Keeping secrets and terminal control codes out of anything rheo prints or stores."""

from __future__ import annotations

import os
import re

_PATTERNS = (
    re.compile(r"sk-ant-[A-Za-z0-9_\-]{6,}"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{16,}"),
    re.compile(r"(?i)\b(bearer|basic|x-api-key:?)\s+[^\s'\"]+"),
)
# ``scheme://user:password@host``: the credential part of a URL (ANTHROPIC_BASE_URL).
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^\s/?#@'\"]*@")
# ``?key=...``, ``&access_token=...``: query parameters that carry a credential.
_QUERY_SECRET = re.compile(
    r"(?i)([?&;](?:[a-z0-9_\-]*?(?:key|token|secret|password|passwd|pwd|auth|signature|sig)"
    r"[a-z0-9_\-]*)=)[^&#\s'\"]*"
)
# ``Authorization: ...`` and ``X-Api-Key: ...``-like header lines.
_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-api-key|api-key|x-auth-token|cookie)(\s*[:=]\s*)"
    r"(?:(?:bearer|basic)\s+)?[^\s,;'\"]+"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]|\x1b\[[0-9;?]*[A-Za-z]")

_SECRET_ENV = {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"}


def add_secret_env(name: str) -> None:
    """Also redact the value of environment variable ``name`` (a configured key's variable)."""
    if name:
        _SECRET_ENV.add(name)


def redact(text: str) -> str:
    """``text`` with credentials replaced by ``[redacted]``: the configured API keys, anything
    shaped like a key or bearer token, the ``user:password@`` part of a URL, query parameters
    named like a key/token/secret/password, and ``Authorization``-like header values; terminal
    control sequences are removed."""
    out = _CONTROL.sub("", text)
    for name in sorted(_SECRET_ENV):
        secret = os.environ.get(name, "")
        for variant in {secret, secret.strip()}:
            if len(variant) >= 8:
                out = out.replace(variant, "[redacted]")
    out = _USERINFO.sub(lambda m: m.group(1) + "[redacted]@", out)
    out = _QUERY_SECRET.sub(lambda m: m.group(1) + "[redacted]", out)
    out = _HEADER.sub(lambda m: m.group(1) + m.group(2) + "[redacted]", out)
    for pattern in _PATTERNS:
        out = pattern.sub(lambda m: (m.group(1) + " " if m.lastindex else "") + "[redacted]", out)
    return out
