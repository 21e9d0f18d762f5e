"""Cheap checks of what a provider needs, for ``rheo providers``: a key present and the
Anthropic API or an OpenAI-compatible server answering ``GET .../models`` with it (2 s at
most), or the Claude Code binary on PATH. No tokens spent, no key ever printed."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass

from .factory import claude_command, openai_base_url
from .redact import redact
from .retry import one_line
from .settings import KINDS, ProviderSettings


@dataclass(frozen=True)
class Status:
    """One provider: ``ready`` when it looks usable; ``detail`` says what was checked."""

    kind: str
    ready: bool
    detail: str

    def to_json(self) -> dict[str, object]:
        """``{"provider", "ready", "detail"}``."""
        return {"provider": self.kind, "ready": self.ready, "detail": self.detail}


def _get_models(
    base_url: str, key: str, timeout_s: float, headers: Mapping[str, str] | None = None
) -> tuple[bool, str]:
    """``GET {base_url}/models`` (no tokens spent): whether it answered, and how, in words.
    ``key`` goes in ``Authorization: Bearer`` unless ``headers`` carry it."""
    url = base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    if headers:
        for name, value in headers.items():
            request.add_header(name, value)
    elif key:
        request.add_header("Authorization", f"Bearer {key}")
    where = redact(base_url)
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310
            body = response.read(1_000_000)
    except urllib.error.HTTPError as exc:
        hint = " (the key was refused)" if exc.code in (401, 403) else ""
        return False, f"{where} answered {exc.code}{hint}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return False, f"cannot reach {where}: {one_line(str(reason), 120)}"
    try:
        count = len(json.loads(body).get("data") or [])
    except (ValueError, AttributeError):
        return True, f"{where} answered"
    return True, f"{where} answered ({count} model{'s' if count != 1 else ''})"


ANTHROPIC_URL = "https://api.anthropic.com"


def _anthropic(env: Mapping[str, str], timeout_s: float) -> Status:
    """The Anthropic API: a key in the environment, and ``GET /v1/models`` answering with it
    (``ANTHROPIC_BASE_URL``, else api.anthropic.com)."""
    base = env.get("ANTHROPIC_BASE_URL", "").strip() or ANTHROPIC_URL
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        key = env.get(name, "").strip()
        if key:
            auth = "x-api-key" if name == "ANTHROPIC_API_KEY" else "Authorization"
            value = key if name == "ANTHROPIC_API_KEY" else f"Bearer {key}"
            headers = {auth: value, "anthropic-version": "2023-06-01"}
            ok, detail = _get_models(base.rstrip("/") + "/v1", key, timeout_s, headers)
            return Status("anthropic", ok, f"key in {name}; {detail}")
    return Status("anthropic", False, "no key: ANTHROPIC_API_KEY is not set")


def check(
    kind: str,
    settings: ProviderSettings,
    *,
    environ: Mapping[str, str] | None = None,
    timeout_s: float = 2.0,
) -> Status:
    """Check ``kind`` (one of `KINDS`); ``timeout_s`` bounds the HTTP check (seconds)."""
    env = os.environ if environ is None else environ
    if kind == "anthropic":
        return _anthropic(env, timeout_s)
    if kind == "claude-code":
        path = claude_command(settings, env)
        if path:
            return Status(kind, True, f"{path} (login is checked on first use)")
        return Status(kind, False, f"'{settings.claude_code.command}' is not on PATH")
    ep = settings.openai if kind == "openai" else settings.ollama
    base = openai_base_url(settings, env) if kind == "openai" else ep.base_url
    key = ""
    if ep.api_key_env:
        key = env.get(ep.api_key_env, "").strip()
        if not key:
            return Status(kind, False, f"no key: {ep.api_key_env} is not set ({redact(base)})")
    ok, detail = _get_models(base, key, timeout_s)
    return Status(kind, ok, detail)


def check_all(
    settings: ProviderSettings,
    *,
    environ: Mapping[str, str] | None = None,
    timeout_s: float = 2.0,
) -> list[Status]:
    """`check` for every provider kind, in `KINDS` order."""
    return [check(k, settings, environ=environ, timeout_s=timeout_s) for k in KINDS]
