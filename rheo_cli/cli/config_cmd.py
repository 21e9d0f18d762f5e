"""``rheo config show|path|edit|set|unset``: see and change config.toml safely."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

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
    """Show every setting, its value and where it came from (default, file, environment, flag);
    provider and model are what a chat would use now (also when found automatically).
    Secrets are never shown.

    \b
    Example:
      rheo config show
      rheo -m claude-haiku-5-5 config show     (model then comes from the flag)
    """
    import os

    from ..config_show import effective
    from .state import GLOBAL

    path = _config_path()
    assistant = GLOBAL.assistant or os.environ.get("RHEO_ASSISTANT", "").strip() or None
    rows = effective(
        path,
        flags={"--model": GLOBAL.model, "--provider": GLOBAL.provider},
        environ=os.environ,
        assistant=assistant,
    )
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
    table += [(r.name, cell(r.value), r.source) for r in rows]
    for line in aligned(table):
        echo(line)


def cell(value: Any) -> str:
    """A setting's value in the ``config show`` table: ``-`` when unset, ``""`` for an empty
    string, a list comma-separated, a table as ``key=value`` pairs, numbers plainly."""
    if value is None or value == [] or value == {}:
        return "-"
    if value == "":
        return '""'
    if isinstance(value, list):
        return ", ".join(value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items())
    return f"{value:g}" if isinstance(value, float) else str(value)


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

    from ..config_edit import check_text, replace_file
    from ..config_keys import template
    from ..errors import ConfigError, RheoError, UsageError

    path = _config_path()
    try:
        before = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = template()
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
    """Set one setting in config.toml (comments and order kept); a value rheo would refuse is
    not written. An assistant's keys are assistants.NAME.KEY.

    \b
    Example:
      rheo config set session.gap_hours 4
      rheo config set model claude-opus-5
      rheo config set assistants.sarah.prompt_file sarah.md
      rheo config set telegram.chats 123456789=default
    """
    from ..config_edit import set_value
    from ..config_keys import toml_value

    path = _config_path()
    found = set_value(path, key, value)
    echo(f"{found.name} = {toml_value(found.shown(found.parse(value)))}  (in {path})")


@app.command("unset")
@command
def unset(
    key: Annotated[
        str,
        typer.Argument(
            help="Setting name, e.g. session.gap_hours (assistants.NAME: the whole assistant).",
            autocompletion=config_keys,
        ),
    ],
) -> None:
    """Remove one setting from config.toml, so its default applies again (comments and the
    rest of the file kept).

    \b
    Example:
      rheo config unset session.gap_hours
      rheo config unset assistants.sarah
    """
    from ..config_edit import unset_value

    path = _config_path()
    if unset_value(path, key):
        echo(f"{key.strip()} removed  (from {path}); its default applies")
    else:
        echo(f"{key.strip()} is not set in {path}; nothing changed")
