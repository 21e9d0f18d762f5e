"""Reading the person's message from arguments and/or piped stdin."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import BinaryIO

from ..errors import UsageError
from .errors import say_error

MAX_STDIN_BYTES = 32 * 1024 * 1024
"""The most rheo reads from stdin (bytes): larger input is refused, not truncated."""
_CHUNK = 1024 * 1024


def read_stdin(stream: BinaryIO | None = None) -> str | None:
    """Piped stdin as text, or None when stdin is a terminal or absent.

    UTF-8 is expected; input that is not valid UTF-8 is read by `decode_lenient` (damaged
    UTF-8 keeps its text with only the invalid bytes replaced; a Latin-1 document is read as
    such), with a note on stderr. Input with NUL bytes is binary
    and refused with a UsageError, as is input over `MAX_STDIN_BYTES` (both noticed while
    reading, so ``< /dev/zero`` fails at once).
    """
    if stream is None:
        if sys.stdin is None or sys.stdin.closed:
            return None
        if sys.stdin.isatty():
            return None
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            return sys.stdin.read()
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = stream.read(_CHUNK)
        if not chunk:
            break
        if b"\x00" in chunk:
            raise UsageError("stdin holds binary data (NUL bytes); pipe text to rheo")
        size += len(chunk)
        if size > MAX_STDIN_BYTES:
            raise UsageError(f"stdin is larger than {MAX_STDIN_BYTES // (1024 * 1024)} MB")
        chunks.append(chunk)
    data = b"".join(chunks)
    if not data:
        return ""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text, how = decode_lenient(data.removeprefix(b"\xef\xbb\xbf"))
        say_error(f"stdin is not valid UTF-8: {how}")
        return text


_UTF8_SEQUENCE = re.compile(
    rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}"
)


def decode_lenient(data: bytes, *, utf8: bool = False) -> tuple[str, str]:
    """Text of bytes that are not valid UTF-8, and how they were read, in words.

    UTF-8 with some damaged bytes (it holds valid multi-byte sequences: ``café 日本 \\xff``)
    keeps its text, only the invalid bytes replaced by U+FFFD; text with no multi-byte UTF-8
    sequence at all is in a one-byte legacy encoding (``caf\\xe9`` from a Latin-1 file or
    terminal) and is read as Windows-1252, whose printable range covers Latin-1's, so no
    letter is lost (the five bytes it leaves undefined are read as Latin-1). ``utf8``: other
    text of the same source (the other arguments) is UTF-8, so this is damaged UTF-8."""
    if not utf8 and _UTF8_SEQUENCE.search(data) is None:
        text = "".join(
            chr(b) if b in _CP1252_UNDEFINED else bytes([b]).decode("cp1252") for b in data
        )
        return text, "read as Latin-1 (Windows-1252)"
    text = data.decode("utf-8", "replace")
    return text, f"{_replaced(text, data)} replaced by U+FFFD"


_CP1252_UNDEFINED = frozenset({0x81, 0x8D, 0x8F, 0x90, 0x9D})


_SURROGATE = re.compile("[\ud800-\udfff]")
_RAW_ARGS: dict[str, str] = {}
"""Arguments that were not valid UTF-8, as Python gave them (surrogate-escaped), by the text
`clean_arg` made of them: a file is opened by the bytes of its name (`file_arg`)."""


def _replaced(text: str, data: bytes) -> str:
    """How many invalid byte sequences a decoding with ``replace`` put U+FFFD for (those
    already in ``data`` as valid UTF-8 not counted), in words."""
    count = text.count("\ufffd") - data.count("\ufffd".encode())
    return f"{count} invalid byte sequence{'' if count == 1 else 's'}"


def clean_args(args: list[str]) -> list[str]:
    """The command line's arguments as text (`clean_arg` each), one terminal's: when any of
    them holds UTF-8 beyond ASCII, the terminal is UTF-8, and invalid bytes in another
    argument are damaged UTF-8 (U+FFFD), never a Latin-1 letter (``café 日本 \\xff end``
    gives the same text as one argument or four)."""
    utf8 = any(_UTF8_SEQUENCE.search(_raw(a)) is not None for a in args if not a.isascii())
    return [clean_arg(a, utf8=utf8) for a in args]


def _raw(arg: str) -> bytes:
    try:
        return os.fsencode(arg)
    except UnicodeEncodeError:
        return arg.encode("utf-8", "replace")


def clean_arg(arg: str, *, utf8: bool = False) -> str:
    """A command-line argument as text: Python keeps the bytes of ``sys.argv`` that are not
    valid UTF-8 as surrogates (``surrogateescape``); the argument's bytes are decoded again by
    `decode_lenient` (``café \\xff`` is ``café \ufffd``; ``caf\\xe9`` from a Latin-1 terminal is
    ``café``), with a note on stderr. Valid text is returned unchanged."""
    if not _SURROGATE.search(arg):
        return arg
    try:
        data = os.fsencode(arg)
    except UnicodeEncodeError:  # a surrogate no byte gave (not from the OS)
        text, how = _SURROGATE.sub("\ufffd", arg), "invalid characters replaced by U+FFFD"
    else:
        text, how = decode_lenient(data, utf8=utf8)
    _RAW_ARGS[text] = arg
    say_error(f"an argument is not valid UTF-8: {how}")
    return text


def _redecoded(name: str) -> tuple[bytes, str]:
    """``name``'s bytes (as the OS gave them) and their UTF-8 text, invalid bytes replaced."""
    try:
        data = os.fsencode(name)
    except UnicodeEncodeError:  # a surrogate no byte gave (not from the OS)
        return name.encode("utf-8", "replace"), _SURROGATE.sub("\ufffd", name)
    return data, data.decode("utf-8", "replace")


def file_arg(path: Path) -> Path:
    """The file a path argument names: when its name was not valid UTF-8 (so `clean_arg`
    replaced bytes of it), the name as given, so the file itself is found."""
    raw = _RAW_ARGS.get(str(path))
    return Path(raw) if raw is not None else path


def text_of(path: Path | str) -> str:
    """A path as text to store or show: bytes of it that are not UTF-8 become U+FFFD."""
    name = str(path)
    return _redecoded(name)[1] if _SURROGATE.search(name) else name


ENV_TEXT = (
    "RHEO_PROFILE",
    "RHEO_ASSISTANT",
    "RHEO_NOW",
    "RHEO_WORKER",
    "RHEO_RESIDENT",
    "RHEO_PROVIDER",
    "RHEO_MODEL",
    "RHEO_DATABASE_URL",
    "RHEO_REDIS_URL",
    "RHEO_TELEGRAM_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
)
"""Variables rheo reads as text (names, URLs, keys, a time): none has a meaning with bytes
that are not UTF-8 (``RHEO_HOME`` is a path: any bytes do); every variable of the table of
settings (`config_keys.KEYS`) is here, which a test holds (not imported: startup stays
light)."""


def check_environment(environ: Mapping[str, str]) -> None:
    """Raise UsageError naming the first of `ENV_TEXT` whose value is not valid UTF-8
    (Python keeps such bytes as surrogates); the value itself is never shown (it may be a
    key)."""
    for name in ENV_TEXT:
        if _SURROGATE.search(environ.get(name) or ""):
            raise UsageError(f"{name} is not valid UTF-8 text: set it again, or unset it")


def compose(args: list[str] | None, piped: str | None) -> str:
    """The message: the arguments joined by spaces, then piped text as a document after them.

    Raises UsageError when both are empty or blank.
    """
    question = " ".join(clean_arg(a) for a in args or []).strip()
    document = (piped or "").strip("\n")
    if question and document.strip():
        return f"{question}\n\n<stdin>\n{document}\n</stdin>"
    if question:
        return question
    if document.strip():
        return document
    raise UsageError("nothing to ask: give a question as arguments or pipe it on stdin")
