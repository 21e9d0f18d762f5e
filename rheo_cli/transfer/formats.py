"""The one registry of the formats ``rheo import`` reads, and how a file is recognised.

Each `Format` has a name (what ``--from`` takes), a label (how messages name it), ``detect``
(how surely a `Source` is in it, 0 to 1, by content, never by the file's name), ``read`` (the
source as `Records` of rheo's own export, or as `History` of another program's chat), and for
rheo's own export its version (`archive.VERSION`, the one version constant). `choose` takes the
format named by ``--from``, or the one whose ``detect`` is surest; a source no format
recognises is refused with one line saying what it holds (`describe`). To read a new format,
write its module (``detect`` and ``read``) and add it to `FORMATS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError
from ..memory import archive
from ..memory.text.render import plural
from . import chatgpt, claude_ai, llm, rheo_jsonl
from .history import History, conversation_files
from .llm_logs import tables
from .rheo_jsonl import Records
from .source import Source, outline, says

Readout = Records | History
"""What reading a source gives: rheo's own export as records, or another program's history."""

SURE = 0.5
"""The least confidence at which a source is taken to be in a format."""


@dataclass(frozen=True)
class Format:
    """One format rheo imports: ``name`` (what ``--from`` takes), ``label`` (how messages name
    it), ``detect(source)``: confidence 0 to 1 (never raises for a readable source);
    ``read(source)``: raises a one-line UsageError (MalformedHistory,
    exit 2) naming the place at fault, or for rheo's own export yields records that raise
    `rheo_jsonl.FormatError` at the first bad line (exit 1). ``version``: the newest version
    read (rheo's own export only)."""

    name: str
    label: str
    detect: Callable[[Source], float]
    read: Callable[[Source], Readout]
    version: int | None = None


FORMATS: tuple[Format, ...] = (
    Format(rheo_jsonl.NAME, "a rheo export", rheo_jsonl.detect, rheo_jsonl.read, archive.VERSION),
    Format(llm.NAME, "llm's logs.db", llm.detect, llm.read),
    Format(chatgpt.NAME, "a ChatGPT export", chatgpt.detect, chatgpt.read),
    Format(claude_ai.NAME, "a Claude.ai export", claude_ai.detect, claude_ai.read),
)
"""Every format rheo imports, rheo's own first."""

NAMES = tuple(f.name for f in FORMATS)
HISTORY = tuple(f.name for f in FORMATS if f.version is None)
"""The formats of other programs' chat history (``rheo import-history`` names one of them)."""


class UnknownFormat(UsageError):
    """``--from`` names no format, or no format recognises the source; the message is one
    line saying what the source holds and what rheo imports. Exit status 2."""


def by_name(name: str) -> Format:
    """The format ``--from`` names (case and spaces ignored). Raises UnknownFormat."""
    key = name.strip().lower()
    for fmt in FORMATS:
        if fmt.name == key:
            return fmt
    raise UnknownFormat(f"unknown format {name!r}; use one of {', '.join(NAMES)}")


def recognise(source: Source) -> Format | None:
    """The format ``source`` is surest to be in (at least `SURE`), else None. Reads only the
    first bytes of a file (a folder's or an archive's file list and first bytes of its
    conversation files; an SQLite file's list of tables)."""
    best: Format | None = None
    best_score = 0.0
    for fmt in FORMATS:
        try:
            score = fmt.detect(source)
        except (OSError, ValueError):
            score = 0.0
        if score > best_score:  # on a tie the format listed first wins
            best, best_score = fmt, score
    return best if best_score >= SURE else None


def choose(name: str | None, source: Source) -> Format:
    """The format named by ``--from`` (``name``), else the one `recognise` finds. Raises
    UnknownFormat: for an unknown name, or naming what ``source`` holds when no format
    recognises it."""
    if name:
        return by_name(name)
    found = recognise(source)
    if found is not None:
        return found
    labels = [f.label for f in FORMATS]
    raise UnknownFormat(
        f"{source.label()}: not a file rheo imports: {describe(source)}; rheo recognises "
        f"{', '.join(labels[:-1])} or {labels[-1]} by content (--from {'|'.join(NAMES)} "
        "reads it as one and says what does not fit)"
    )


def describe(source: Source) -> str:
    """What ``source`` holds, in words, for a message: ``a JSON object with keys: a, b``, ``an
    SQLite database with tables: notes``, ``a zip archive of 3 files, none of them
    conversations.json or conversations-NNN.json``."""
    if source.kind in ("folder", "zip"):
        what = "a folder" if source.kind == "folder" else "a zip archive"
        files = conversation_files(source)
        if not files:
            count = len(source.members())
            return (
                f"{what} of {plural(count, 'file')}, none of them conversations.json or "
                "conversations-NNN.json"
            )
        return f"{what} whose {files[0]} is {says(outline(source.member_head(files[0])))}"
    found = outline(source.head)
    if found.shape == "sqlite" and source.path is not None:
        return _sqlite(source.path)
    return says(found)


def _sqlite(path: Path) -> str:
    schema = tables(path)
    if schema is None:
        return "an SQLite database that cannot be opened"
    if {"sessions", "turns", "memory_items"} <= set(schema):
        return (
            "rheo's own database, a 'rheo backup' copy: restore it by putting it in place of "
            "rheo.db ('rheo paths' shows where), or read it with RHEO_HOME set to its folder"
        )
    names = ", ".join(list(schema)[:8]) + (", …" if len(schema) > 8 else "")
    return f"an SQLite database with tables: {names}" if names else "an empty SQLite database"


def recognised_name(path: str | Path) -> str | None:
    """The name of the format the file, folder or archive at ``path`` is recognised as, or
    None (for tests and scripts)."""
    with Source.open(path) as source:
        found = recognise(source)
    return found.name if found is not None else None
