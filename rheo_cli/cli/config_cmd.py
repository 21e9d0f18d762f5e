"""``rheo config show|path|edit|set``: see and change config.toml safely."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..ui.output import echo, print_json
from .complete import config_keys
from .errors import command
from .options import Json

app = typer.Typer(
    epilog="Example: rheo config set session.gap_hours 4",
    rich_markup_mode=None,
    help="See and change settings (config.toml).",
    no_args_is_help=True,
)


def _config_path() -> Path:
    from ..paths import resolve

    return resolve("default").config


@app.command()
@command
def show(json_out: Json = False) -> None:
    """Show every setting, its value and where it came from (default, file, environment, flag).

    \b
    Example:
      rheo config show
      rheo -m claude-haiku-5-5 config show     (model then comes from the flag)
    """
    import os

    from ..config_keys import effective
    from .state import GLOBAL

    path = _config_path()
    rows = effective(path, flags={"--model": GLOBAL.model}, environ=os.environ)
    profile = GLOBAL.profile or os.environ.get("RHEO_PROFILE", "").strip()
    profile_source = (
        "flag (--profile)"
        if GLOBAL.profile
        else ("environment (RHEO_PROFILE)" if profile else "default")
    )
    if json_out:
        print_json(
            {
                "path": str(path),
                "profile": {"value": profile or "default", "source": profile_source},
                "settings": [{"name": r.name, "value": r.value, "source": r.source} for r in rows],
            }
        )
        return
    echo(f"# {path}" + ("" if path.exists() else " (not created yet: all defaults)"))
    table = [("profile", profile or "default", profile_source)]
    for r in rows:
        value = ", ".join(r.value) if isinstance(r.value, list) else r.value
        shown = f"{value:g}" if isinstance(value, float) else str(value or "-")
        table.append((r.name, shown, r.source))
    for line in aligned(table):
        echo(line)


VALUE_COLUMN = 40
"""The widest value column of ``config show``; a longer value puts its source on the next line."""


def aligned(rows: list[tuple[str, str, str]]) -> list[str]:
    """``name  value  source`` lines in columns two spaces apart: the value column as wide as
    the widest value up to `VALUE_COLUMN`; a longer value's source goes on the line below,
    under the source column, so columns never run together."""
    width = max(len(name) for name, _, _ in rows)
    values = min(VALUE_COLUMN, max(len(value) for _, value, _ in rows))
    lines = []
    for name, value, source in rows:
        if len(value) <= values:
            lines.append(f"{name:<{width}}  {value:<{values}}  {source}")
        else:
            lines.append(f"{name:<{width}}  {value}")
            lines.append(f"{'':<{width}}  {'':<{values}}  {source}")
    return lines


@app.command()
@command
def path() -> None:
    """Print where config.toml is (it may not exist yet).

    \b
    Example:
      rheo config path
    """
    echo(str(_config_path()))


@app.command()
@command
def edit() -> None:
    """Open config.toml in $VISUAL or $EDITOR; a bad edit is refused and the old file kept.

    \b
    Example:
      EDITOR=nano rheo config edit
    """
    import os
    import shlex
    import subprocess

    from .. import config as config_mod
    from ..config_keys import check_text, replace_file
    from ..errors import ConfigError, RheoError, UsageError

    path = _config_path()
    try:
        before = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = "".join(
            f"# {line}\n" if line.strip() else "#\n"
            for line in (config_mod.__doc__ or "").splitlines()
        )
    editor = os.environ.get("VISUAL", "").strip() or os.environ.get("EDITOR", "").strip() or "vi"
    draft = path.with_name(f"{path.name}.edit.toml")
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_private(draft, before)  # a copy of config.toml: as private as it (a leftover goes)
    try:
        status = subprocess.call([*shlex.split(editor), str(draft)])
    except OSError as exc:
        draft.unlink(missing_ok=True)
        raise UsageError(f"cannot run the editor {editor!r}: {exc.strerror or exc}") from None
    except BaseException:  # Ctrl-C while the editor runs: leave nothing behind
        draft.unlink(missing_ok=True)
        raise
    after = draft.read_text(encoding="utf-8")
    if status != 0:
        draft.unlink(missing_ok=True)
        raise RheoError(f"the editor exited with status {status}; config.toml is unchanged")
    if after == before:
        draft.unlink(missing_ok=True)
        echo("no change")
        return
    try:
        check_text(after, path)
    except ConfigError as exc:
        raise RheoError(f"{exc}; config.toml is unchanged, your edit is kept in {draft}") from None
    replace_file(path, after)
    draft.unlink(missing_ok=True)
    echo(f"saved {path}")


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (replacing it), readable by its owner only (0600)."""
    import os

    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an older leftover keeps its mode through O_CREAT
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


@app.command("set")
@command
def set_(
    key: Annotated[
        str,
        typer.Argument(help="Setting name, e.g. session.gap_hours.", autocompletion=config_keys),
    ],
    value: Annotated[str, typer.Argument(help="New value (a list: comma-separated).")],
) -> None:
    """Set one setting in config.toml; a value rheo would refuse is not written.

    \b
    Example:
      rheo config set session.gap_hours 4
      rheo config set model claude-opus-5
    """
    from ..config_keys import BY_NAME, set_value, toml_value

    path = _config_path()
    stored = set_value(path, key, value)
    echo(f"{key} = {toml_value(BY_NAME[key].shown(stored))}  (in {path})")
