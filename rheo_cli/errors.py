"""rheo's exit statuses and the errors the CLI turns into them (one place: `cli.main`)."""

from __future__ import annotations

from enum import IntEnum


class ExitStatus(IntEnum):
    """Process exit codes: 0 ok, 1 runtime failure, 2 usage error, 130 interrupted (Ctrl-C)."""

    OK = 0
    ERROR = 1
    USAGE = 2
    INTERRUPTED = 130


class RheoError(Exception):
    """A failure to report as one line on stderr; ``exit_status`` says how the process ends."""

    exit_status = ExitStatus.ERROR


class UsageError(RheoError):
    """The command line or its input is wrong (empty question, binary stdin, bad option value)."""

    exit_status = ExitStatus.USAGE


class ConfigError(RheoError):
    """``config.toml`` or an environment variable holds something rheo cannot use."""


class NoProviderConfigured(UsageError):
    """No model provider is configured or found; ``detail`` says, over several lines, how to
    configure one (printed under the one-line error)."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail
