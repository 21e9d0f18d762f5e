"""What ``rheo import`` was given, open for reading: a file, a folder, a zip archive, or stdin.

The formats (`formats`) recognise a source by what it holds, never by its name: the first
bytes of a file (`Source.head`), the files a folder or an archive holds (`Source.members`) and
the first bytes of those. `outline` tells the shape of JSON from its first bytes alone, and
`describe` says in words what a source holds, for the error that names a file rheo does not
import. Nothing here writes anything.
"""

from __future__ import annotations

import io
import json
import re
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import IO, Any, Literal

from ..errors import RheoError

HEAD_BYTES = 1 << 20
"""How much of a file is read to recognise it (1 MiB): the first conversation's keys of every
export seen so far come well within it, and reading it takes no noticeable time."""

SQLITE_MAGIC = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""

MAX_MEMBERS = 10_000
"""The most files of a folder looked at (its own and its subfolders', two levels down), so
naming a large folder by mistake is answered at once."""

Kind = Literal["file", "folder", "zip", "stdin"]


class Unreadable(RheoError):
    """The source cannot be opened or read (missing, unreadable, a damaged archive); the
    message names it and why. Exit status 1."""


@dataclass
class Source:
    """An input open for reading.

    ``name``: as the person gave it (``-`` for stdin); ``path``: the file or folder (None for
    stdin); ``kind``: file, folder, zip (recognised by content: a file that is a zip archive)
    or stdin; ``head``: the first `HEAD_BYTES` of a file (of stdin or a pipe too, read
    however slowly they arrive, then given again by `stream`), empty for a folder or an
    archive.
    """

    name: str
    path: Path | None
    kind: Kind
    head: bytes = b""
    _stream: IO[bytes] | None = None
    _zip: zipfile.ZipFile | None = None
    _members: list[str] | None = field(default=None, repr=False)

    @classmethod
    def open(cls, name: str | Path) -> Source:
        """Open ``name`` (``-``: stdin). Raises Unreadable naming it and the reason (no such
        file, permission denied, a damaged zip archive)."""
        text = str(name)
        if text == "-":
            stdin = sys.stdin.buffer
            first = stdin.read(HEAD_BYTES)
            replayed = io.BufferedReader(_Replayed(first, stdin, owned=False))
            return cls("-", None, "stdin", first, _stream=replayed)
        path = Path(name)
        try:
            if path.is_dir():
                return cls(text, path, "folder")
            if path.exists() and not path.is_file():
                # A pipe or a device (``rheo import <(rheo export)``) can be read only once:
                # its first bytes are looked at, then given again, as stdin's.
                pipe = path.open("rb")
                first = pipe.read(HEAD_BYTES)
                replayed = io.BufferedReader(_Replayed(first, pipe, owned=True))
                return cls(text, path, "file", first, _stream=replayed)
            with path.open("rb") as handle:
                head = handle.read(HEAD_BYTES)
            if zipfile.is_zipfile(path):
                return cls(text, path, "zip", _zip=zipfile.ZipFile(path))
        except OSError as exc:
            raise Unreadable(f"cannot read {text}: {exc.strerror or exc}") from None
        except zipfile.BadZipFile as exc:
            raise Unreadable(f"cannot read {text}: a damaged zip archive ({exc})") from None
        return cls(text, path, "file", head)

    def __enter__(self) -> Source:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close what `open` opened (stdin itself stays open: its replay does not own it)."""
        if self._zip is not None:
            self._zip.close()
            self._zip = None
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    def stream(self) -> IO[bytes]:
        """The whole file (or stdin, or a pipe) as a binary stream, from its first byte;
        closed with the source. Raises Unreadable for a folder or an archive, or when it cannot
        be read."""
        if self._stream is None:
            if self.kind != "file" or self.path is None:
                raise Unreadable(f"{self.name} is a {self.kind}, not a file")
            try:
                self._stream = self.path.open("rb")
            except OSError as exc:
                raise Unreadable(f"cannot read {self.name}: {exc.strerror or exc}") from None
        return self._stream

    def members(self) -> list[str]:
        """The files a folder or an archive holds, as relative ``/``-separated paths, sorted
        (a folder: its own files and those of its subfolders, two levels down, at most
        `MAX_MEMBERS`); empty for a file or stdin."""
        if self._members is None:
            if self._zip is not None:
                found = [i.filename for i in self._zip.infolist() if not i.is_dir()]
            elif self.kind == "folder" and self.path is not None:
                found = _folder_files(self.path)
            else:
                found = []
            self._members = sorted(found)
        return self._members

    def open_member(self, member: str) -> IO[bytes]:
        """One file of a folder or an archive (a name `members` gave), open for reading.
        Raises Unreadable when it cannot be read."""
        try:
            if self._zip is not None:
                return self._zip.open(member)
            assert self.path is not None
            return (self.path / member).open("rb")
        except (OSError, KeyError, zipfile.BadZipFile, RuntimeError) as exc:
            raise Unreadable(f"cannot read {self.label(member)}: {exc}") from None

    def member_head(self, member: str) -> bytes:
        """The first `HEAD_BYTES` of one file of a folder or an archive."""
        with self.open_member(member) as handle:
            return handle.read(HEAD_BYTES)

    def label(self, member: str | None = None) -> str:
        """How messages name the source, or one file in it: ``export/conversations-000.json``
        for a folder's, ``export.zip:conversations-000.json`` for an archive's."""
        if member is None:
            return "stdin" if self.kind == "stdin" else self.name
        if self.kind == "zip":
            return f"{self.name}:{member}"
        return str(PurePosixPath(self.name.rstrip("/")) / member)


class _Replayed(io.RawIOBase):
    """A stream giving ``prefix`` (bytes already read from ``rest``) again, then the rest of
    ``rest``: stdin (or a pipe) read from its first byte after its first bytes were looked at.
    ``owned``: closing this closes ``rest`` (never stdin)."""

    def __init__(self, prefix: bytes, rest: IO[bytes], *, owned: bool) -> None:
        self._prefix = prefix
        self._rest = rest
        self._owned = owned

    def close(self) -> None:
        if self._owned and not self.closed:
            self._rest.close()
        super().close()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._prefix:
            n = min(len(view), len(self._prefix))
            view[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        reader = getattr(self._rest, "read1", self._rest.read)
        data = reader(len(view))
        view[: len(data)] = data
        return len(data)


def _folder_files(folder: Path) -> list[str]:
    found: list[str] = []
    level = [(folder, "")]
    for _depth in range(3):
        deeper: list[tuple[Path, str]] = []
        for here, prefix in level:
            try:
                entries = sorted(here.iterdir())
            except OSError:
                continue
            for entry in entries:
                if len(found) >= MAX_MEMBERS:
                    return found
                name = f"{prefix}{entry.name}"
                if entry.is_dir():
                    deeper.append((entry, f"{name}/"))
                elif entry.is_file():
                    found.append(name)
        level = deeper
    return found


# --- the shape of JSON, from its first bytes ---------------------------------------------


@dataclass(frozen=True)
class Outline:
    """What the first bytes of a file say about it: ``shape`` is one of ``empty`` (nothing
    but white space), ``sqlite``, ``object`` (a JSON object: ``keys`` are its own), ``array``
    (``keys``: those of its first element when that is an object; ``items``: the first
    element's JSON type, ``none`` for ``[]``), ``text`` (not JSON) or ``binary``."""

    shape: str
    keys: tuple[str, ...] = ()
    items: str = ""


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_TOKEN = re.compile(rb'["{}\[\]]')
_SPACE = b" \t\r\n"
_TYPES = {ord("{"): "object", ord("["): "array", ord('"'): "string"}


def outline(head: bytes) -> Outline:
    """The `Outline` of a file from its first bytes (a UTF-8 byte order mark is skipped)."""
    if head.startswith(SQLITE_MAGIC):
        return Outline("sqlite")
    data = head.removeprefix(b"\xef\xbb\xbf")
    start = len(data) - len(data.lstrip(_SPACE))
    if start == len(data):
        return Outline("empty")
    if b"\x00" in data[:4096]:
        return Outline("binary")
    try:
        data[: 4096 + start].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < 4090:  # not a character cut at the end of the sample
            return Outline("binary")
    first = data[start]
    if first == ord("{"):
        return Outline("object", tuple(object_keys(data, start)))
    if first != ord("["):
        return Outline("text")
    at = start + 1
    while at < len(data) and data[at] in _SPACE:
        at += 1
    if at >= len(data):
        return Outline("array", items="unknown")
    element = data[at]
    if element == ord("]"):
        return Outline("array", items="none")
    if element == ord("{"):
        return Outline("array", tuple(object_keys(data, at)), items="object")
    return Outline("array", items=_TYPES.get(element, "number or other value"))


def object_keys(data: bytes, start: int) -> list[str]:
    """The keys of the JSON object opening at ``data[start]`` (``{``), in order, as far as
    ``data`` goes (a truncated object gives the keys before the cut). Never raises."""
    keys: list[str] = []
    depth = 0
    at = start
    end = len(data)
    while at < end:
        token = _TOKEN.search(data, at)
        if token is None:
            break
        char = data[token.start()]
        if char == ord('"'):
            string = _STRING.match(data, token.start())
            if string is None:
                break  # cut inside a string
            at = string.end()
            if depth == 1:
                after = at
                while after < end and data[after] in _SPACE:
                    after += 1
                if after < end and data[after] == ord(":"):
                    try:
                        key = json.loads(string.group())
                    except ValueError:
                        key = string.group()[1:-1].decode("utf-8", "replace")
                    keys.append(str(key))
            continue
        at = token.end()
        if char in b"{[":
            depth += 1
        else:
            depth -= 1
            if depth <= 0:
                break
    return keys


def json_at(source: Source, member: str | None = None) -> Outline:
    """The `Outline` of a file source, or of one file of a folder or an archive."""
    head = source.head if member is None else source.member_head(member)
    return outline(head)


def says(found: Outline) -> str:
    """An `Outline` in words: ``a JSON object with keys: hello, world``."""
    keys = ", ".join(found.keys[:8]) + (", …" if len(found.keys) > 8 else "")
    if found.shape == "sqlite":
        return "an SQLite database"
    if found.shape == "empty":
        return "an empty file"
    if found.shape == "binary":
        return "binary data (neither an SQLite database nor a zip archive)"
    if found.shape == "text":
        return "text that is not JSON"
    if found.shape == "object":
        return f"a JSON object with keys: {keys}" if keys else "a JSON object"
    if found.items == "unknown":
        return "a JSON array"
    if found.items == "none":
        return "an empty JSON array, no conversations"
    if found.items == "object":
        return f"a JSON array of objects with keys: {keys}" if keys else "a JSON array of objects"
    return f"a JSON array of {found.items} values"
