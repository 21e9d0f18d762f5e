"""Test-only network guard: only loopback and unix-socket connections are allowed.

``install()`` patches ``socket.socket.connect``, ``socket.socket.connect_ex`` and
``socket.create_connection`` so that connecting anywhere other than 127.0.0.0/8, ::1
(including IPv4-mapped ``::ffff:127.x``), the host name ``localhost`` or an AF_UNIX path raises
:class:`NetworkBlockedError` (a ``RuntimeError``) with the message
``"network access outside loopback blocked by the test guard: <host>:<port>"``. Other host
names are refused before any DNS lookup. Sockets of other families (netlink, ...) are let
through. Every refused address is also appended to :data:`BLOCKED`, so a fixture can fail a
test even when library code swallowed the exception (the anthropic SDK, for instance, wraps
it in ``APIConnectionError``).

Subprocesses get the same guard through ``tests/netguard_site/sitecustomize.py``; use
:func:`subprocess_env` to build their environment.

Standard library only; safe to import and install more than once.
"""

from __future__ import annotations

import _socket
import ipaddress
import os
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "BLOCKED",
    "SITE_DIR",
    "NetworkBlockedError",
    "check_address",
    "install",
    "is_allowed",
    "is_installed",
    "subprocess_env",
    "uninstall",
]

SITE_DIR: Path = Path(__file__).resolve().parent / "netguard_site"
"""Directory holding the ``sitecustomize.py`` that installs this guard at interpreter start."""

MESSAGE = "network access outside loopback blocked by the test guard"

BLOCKED: list[str] = []
"""Addresses (``"host:port"``) refused so far in this process, in order."""

_ORIGINAL_ATTR = "_netguard_original"
_LOCAL_NAMES = frozenset({"localhost", "localhost."})


class NetworkBlockedError(RuntimeError):
    """Raised when code tries to connect to a non-loopback address while the guard is on."""


def _host_of(address: Any) -> str | None:
    """The host part of an AF_INET/AF_INET6 address tuple, or None if not such a tuple."""
    if isinstance(address, tuple) and address:
        host = address[0]
        if isinstance(host, bytes):
            host = host.decode("ascii", "replace")
        return str(host) if host is not None else ""
    return None


def is_allowed(host: str) -> bool:
    """True if ``host`` (an IP literal or host name) is loopback: 127.0.0.0/8, ::1, localhost."""
    name = host.strip().strip("[]").lower()
    if name in _LOCAL_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(name.split("%", 1)[0])
    except ValueError:
        return False  # any other host name: refuse without resolving it
    if ip.is_loopback:
        return True
    mapped = getattr(ip, "ipv4_mapped", None)
    return mapped is not None and mapped.is_loopback


def _describe(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host = _host_of(address) or ""
        return f"[{host}]:{address[1]}" if ":" in host else f"{host}:{address[1]}"
    return repr(address)


def check_address(address: Any, family: int | None = None) -> None:
    """Raise NetworkBlockedError unless connecting to ``address`` stays on this machine.

    ``address`` is what ``socket.connect`` takes: ``(host, port[, flow, scope])`` for IP
    sockets, a path for AF_UNIX. ``family`` is the socket's family when known.
    """
    if family == socket.AF_UNIX or isinstance(address, str | bytes):
        return
    if family is not None and family not in (socket.AF_INET, socket.AF_INET6):
        return
    host = _host_of(address)
    if host is None:
        return
    if not is_allowed(host):
        described = _describe(address)
        BLOCKED.append(described)
        raise NetworkBlockedError(f"{MESSAGE}: {described}")


def _guard_connect(original: Callable[..., Any]) -> Callable[..., Any]:
    def connect(self: socket.socket, address: Any) -> Any:
        check_address(address, self.family)
        return original(self, address)

    setattr(connect, _ORIGINAL_ATTR, original)
    connect.__doc__ = original.__doc__
    return connect


def _guard_create_connection(original: Callable[..., Any]) -> Callable[..., Any]:
    def create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
        check_address(address)
        return original(address, *args, **kwargs)

    setattr(create_connection, _ORIGINAL_ATTR, original)
    create_connection.__doc__ = original.__doc__
    return create_connection


def is_installed() -> bool:
    """True if the guard's patches are active in this process."""
    return hasattr(socket.socket.connect, _ORIGINAL_ATTR)


def install() -> bool:
    """Activate the guard. Idempotent: returns True if it patched, False if already active."""
    if is_installed():
        return False
    socket.socket.connect = _guard_connect(socket.socket.connect)  # type: ignore[method-assign]
    socket.socket.connect_ex = _guard_connect(socket.socket.connect_ex)  # type: ignore[method-assign]
    socket.create_connection = _guard_create_connection(socket.create_connection)
    return True


def uninstall() -> bool:
    """Restore the original socket functions. Returns True if the guard was active."""
    if not is_installed():
        return False
    for owner, name in (
        (socket.socket, "connect"),
        (socket.socket, "connect_ex"),
        (socket, "create_connection"),
    ):
        current = getattr(owner, name)
        original = getattr(current, _ORIGINAL_ATTR, None)
        if original is None:
            continue
        if owner is socket.socket and getattr(_socket.socket, name, None) is original:
            delattr(owner, name)  # back to the inherited C method
        else:
            setattr(owner, name, original)
    return True


def subprocess_env(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` with :data:`SITE_DIR` first on ``PYTHONPATH``.

    A Python subprocess started with it imports ``netguard_site/sitecustomize.py`` at startup
    and so runs with the guard installed (unless started with ``-S``, ``-E`` or ``-I``).
    """
    out = dict(env)
    site = str(SITE_DIR)
    parts = [p for p in out.get("PYTHONPATH", "").split(os.pathsep) if p and p != site]
    out["PYTHONPATH"] = os.pathsep.join([site, *parts])
    return out
