"""Changing config.toml one key at a time (``rheo config set/unset``) and replacing it whole
(``rheo config edit``), never leaving a file rheo would refuse.

`set_value` and `unset_value` edit the document with tomlkit, which keeps comments, order and
formatting; tomlkit is imported only here, when a key is changed. Every change is checked the
way `config.load` reads the file before it replaces it (written to a temporary file, then
renamed over it, mode 0600).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from . import config as config_mod
from . import config_keys as keys
from .errors import ConfigError, UsageError


def check_text(text: str, path: Path) -> None:
    """Raise ConfigError (naming ``path``'s file name) unless ``text`` is a config.toml rheo
    accepts, read as `config.load` reads ``path``."""
    if len(text.encode("utf-8", "surrogatepass")) > config_mod.MAX_CONFIG_BYTES:
        raise ConfigError(f"{path.name} is larger than {config_mod.MAX_CONFIG_BYTES // 1024} KB")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path.name} is not valid TOML: {exc}") from None
    config_mod.parse(data, Path(path.name))


def replace_file(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a temporary file renamed over it), mode 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.new-{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def _key(name: str) -> keys.Key:
    try:
        return keys.lookup(name.strip())
    except KeyError:
        raise UsageError(f"unknown setting {name!r}; 'rheo config show' lists them") from None
    except keys.BadValue as exc:
        raise UsageError(str(exc)) from None


def _current(path: Path) -> str:
    """config.toml's text (``""`` when missing), after checking it as every command does.
    Raises ConfigError when the file cannot be read or is itself refused."""
    config_mod.load(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def _table(doc: Any, section: str, *, create: bool) -> Any:
    """The tomlkit table of ``section`` (``""``: the document), created when missing and
    ``create``; None when missing otherwise."""
    import tomlkit

    table = doc
    parts = section.split(".") if section else []
    for depth, part in enumerate(parts):
        if part not in table:
            if not create:
                return None
            # [assistants.sarah] is written as one header, not [assistants] then [...sarah]
            inner = depth + 1 < len(parts)
            table.append(part, tomlkit.table(is_super_table=inner))
        table = table[part]
    return table


def set_value(path: Path, name: str, text: str) -> keys.Key:
    """Set setting ``name`` to ``text`` (as typed: `Key.parse`) in config.toml, comments and
    the rest of the file kept. Returns the key (its value: `keys.toml_value`).

    Raises UsageError for an unknown key or a value rheo would refuse (the file is then left
    as it was), ConfigError when the existing file is itself broken."""
    import tomlkit

    key = _key(name)
    try:
        value = key.parse(text)
    except keys.BadValue as exc:
        raise UsageError(f"{key.name} {_typed(key, text)} refused: {exc}") from None
    doc = tomlkit.parse(_current(path))
    table = _table(doc, key.section, create=True)
    if isinstance(value, dict):
        inline = tomlkit.inline_table()
        inline.update(value)
        table[key.key] = inline
    else:
        table[key.key] = value
    _save(path, tomlkit.dumps(doc), key, text)
    return key


def unset_value(path: Path, name: str) -> bool:
    """Remove setting ``name`` from config.toml (it goes back to its default; a table left
    empty goes too); ``assistants.NAME`` removes that assistant's whole table. Returns False
    when the file did not set it (nothing is written). Raises UsageError for an unknown key,
    ConfigError when the existing file is broken."""
    import tomlkit

    section, key_name = name.strip().rpartition(".")[::2]
    if section == "assistants":
        _key(f"assistants.{key_name}.model")  # checks the assistant's name
    else:
        found = _key(name)
        section, key_name = found.section, found.key
    doc = tomlkit.parse(_current(path))
    table = _table(doc, section, create=False)
    if table is None or key_name not in table:
        return False
    del table[key_name]
    _drop_empty(doc, section)
    text = tomlkit.dumps(doc)
    replace_file(path, text.rstrip() + "\n" if text.strip() else "")
    return True


def _drop_empty(doc: Any, section: str) -> None:
    """Remove ``section``'s table (and a parent it leaves empty) when it holds no key."""
    parts = section.split(".") if section else []
    while parts:
        parent = _table(doc, ".".join(parts[:-1]), create=False)
        if parent is None or len(parent[parts[-1]]) > 0:
            return
        del parent[parts[-1]]
        parts = parts[:-1]


def _typed(key: keys.Key, text: str) -> str:
    """``text`` quoted for a message: a secret or a URL's password never appears."""
    return repr(key.shown(text.strip())) if text.strip() else "''"


def _save(path: Path, updated: str, key: keys.Key, text: str) -> None:
    """Replace config.toml with ``updated`` when rheo accepts it; else UsageError."""
    try:
        check_text(updated, path)
    except ConfigError as exc:
        message = str(exc).partition(": ")[2] if str(exc).startswith(path.name) else str(exc)
        raise UsageError(f"{key.name} {_typed(key, text)} refused: {message}") from None
    replace_file(path, updated)
