"""Redaction of provider messages: `rheo_cli.memory.text.safety.redact` plus the secrets
only the environment knows (the configured API keys, the password of a base URL)."""

from __future__ import annotations

import os

from ..memory.text.safety import redact as redact_text

_URL_ENV = ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL")
"""Variables holding an endpoint whose password, if any, is redacted literally too."""

_SECRET_ENV = {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY"}

MIN_KEY_CHARS = 8
"""A configured key this long or longer is redacted wherever it appears (a shorter one would
take ordinary words with it)."""
MIN_URL_PIECE_CHARS = 4
"""The same for the user and password of a base URL."""


def add_secret_env(name: str) -> None:
    """Also redact the value of environment variable ``name`` (a configured key's variable)."""
    if name:
        _SECRET_ENV.add(name)


def environment_secrets() -> list[str]:
    """The secrets the environment holds: configured keys (``ANTHROPIC_API_KEY``,
    ``ANTHROPIC_AUTH_TOKEN``, ``OPENAI_API_KEY``; 8 characters or more), base URLs'
    credentials."""
    found = []
    for name in sorted(_SECRET_ENV):
        secret = os.environ.get(name, "")
        found += [v for v in {secret, secret.strip()} if len(v) >= MIN_KEY_CHARS]
    for name in _URL_ENV:
        url = os.environ.get(name, "")
        if "@" in url:
            # Whatever its shape, everything before the last "@" of the address is credential.
            address = url.split("://", 1)[-1].split("/", 1)[0]
            userinfo = address.rpartition("@")[0]
            found += [p for p in {userinfo, *userinfo.split(":")} if len(p) >= MIN_URL_PIECE_CHARS]
    return found


def redact(text: str) -> str:
    """``text`` with credentials replaced by ``[redacted]`` (`safety.redact`: anything shaped
    like a key or token, URL credentials, credential query parameters and header values) and
    the configured API keys and base-URL credentials of the environment; terminal control
    sequences and invisible characters are removed."""
    return redact_text(text, environment_secrets())
