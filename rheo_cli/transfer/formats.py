"""Which importer reads a file: named with ``--from``, or sniffed from its first bytes.

Each format here is a module with ``NAME``, ``sniff(first_line: bytes) -> bool`` and
``read(data: IO[bytes]) -> Iterator[(line, record)]`` yielding rheo export records (see
`rheo_cli.memory.archive`); list a new one in `FORMATS`. Other tools' chat histories (llm,
ChatGPT, Claude.ai) are read by `history_formats`; ``rheo import`` hands such files to it.
"""

from __future__ import annotations

from types import ModuleType

from . import rheo_jsonl

FORMATS: dict[str, ModuleType] = {rheo_jsonl.NAME: rheo_jsonl}
"""Readable formats by ``--from`` name."""


class UnknownFormat(ValueError):
    """The format is not one rheo reads (yet)."""


def choose(name: str | None, first_line: bytes) -> ModuleType:
    """The importer for ``name`` (``--from``), or the one whose ``sniff`` accepts the file's
    first line. Raises UnknownFormat with a one-line reason."""
    if name:
        key = name.strip().lower()
        if key in FORMATS:
            return FORMATS[key]
        raise UnknownFormat(f"unknown format {name!r}; use one of {', '.join(FORMATS)}")
    for module in FORMATS.values():
        if module.sniff(first_line):
            return module
    raise UnknownFormat(
        "cannot tell the file's format from its first line; name it with --from "
        f"({', '.join(FORMATS)})"
    )
