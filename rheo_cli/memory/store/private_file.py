"""Writing a new private file so that it never exists half-written.

The content goes to a temporary file beside the destination (same folder, so the final step
is a rename on one file system; mode 0600 from the start); only when it is complete is it
linked to its name, which fails rather than replace a file that appeared meanwhile. A
failure removes the temporary file; a process killed mid-way leaves only a hidden
``.NAME.*.partial`` file beside it, never NAME.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .errors import StoreError


def ensure_private_dir(folder: Path) -> None:
    """Create ``folder`` (and parents) if missing; a folder rheo creates is mode 0700."""
    if folder.exists():
        return
    old_umask = os.umask(0o077)
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    finally:
        os.umask(old_umask)


@contextlib.contextmanager
def new_private_file(dest: str | os.PathLike[str], *, replace: bool = False) -> Iterator[Path]:
    """Yield the path of an empty temporary file (mode 0600) beside ``dest`` to write; when
    the block ends without an exception it becomes ``dest`` (mode 0600), else it is removed.

    ``replace``: an existing regular file ``dest`` is replaced at once when the block ends
    (never left half-written). Raises StoreError when ``dest`` exists (before or when the
    block ends; with ``replace``, when it is not a regular file) or its folder cannot be
    written; the block's own exceptions pass through unchanged."""
    path = Path(dest)
    if replace and path.exists() and not path.is_symlink() and not path.is_file():
        raise StoreError(f"{path} is not a regular file: choose a new file")
    if not replace and (path.exists() or path.is_symlink()):
        raise StoreError(f"{path} already exists: choose a new file")
    try:
        ensure_private_dir(path.parent)
        fd, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
        os.close(fd)
    except OSError as exc:
        raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from None
    partial = Path(name)
    try:
        yield partial
        os.chmod(partial, 0o600)
        _sync(partial)  # on disk before it has the name: a crash never leaves NAME empty
        if replace:
            os.replace(partial, path)
            return
        try:
            os.link(partial, path)  # never replaces: fails if the name was taken meanwhile
        except FileExistsError:
            raise StoreError(f"{path} already exists: choose a new file") from None
        except OSError:  # a file system without hard links
            if path.exists():
                raise StoreError(f"{path} already exists: choose a new file") from None
            os.replace(partial, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
