"""``rheo kb ...``: the knowledge base — documents rheo searches and injects under KNOWLEDGE."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import ExitStatus, UsageError
from ..ui.output import local, name_line, preview, print_json, safe
from .errors import command, say_error
from .group import ListsWhenAlone
from .inputs import file_arg, text_of
from .options import Json, Limit, Profile
from .state import runtime_for

if TYPE_CHECKING:
    from ..app.knowledge import Added

app = typer.Typer(
    cls=ListsWhenAlone,
    epilog="Example: rheo kb add notes/*.md",
    rich_markup_mode=None,
    pretty_exceptions_show_locals=False,
    help="The knowledge base: Markdown and text documents rheo searches and injects (alone: "
    "list them).",
)

MARKDOWN_SUFFIXES = {".md", ".markdown", ".mdown", ".mkd"}


def _chunks(count: int) -> str:
    """``1 chunk``, ``3 chunks``."""
    return f"{count} chunk{'' if count == 1 else 's'}"


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``; UsageError for a missing, unreadable, binary or huge file
    (`app.attachments.read_text`, naming the file as it was given)."""
    from ..app.attachments import read_text as read

    return read(path, text_of(path))


@app.command("add")
@command
def add(
    files: Annotated[list[Path], typer.Argument(help="Markdown or text files.")],
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Add documents, or a new version of a changed one (the old version is kept).

    Markdown is cut at headings, then by size; other text by size. A file that cannot be
    added (binary, not UTF-8, missing) is skipped, saying why, and the others are added
    (exit 1); when none can be, nothing is (exit 2).

    \b
    Example:
      rheo kb add notes/pricing.md handbook.txt
    """
    from ..app import knowledge

    # read all before storing any; a name that is not UTF-8 is opened by its own bytes
    texts, skipped = _readable(files)
    out = []
    with runtime_for(profile) as app:
        for path, text in texts:
            markdown = path.suffix.lower() in MARKDOWN_SUFFIXES
            source = text_of(file_arg(path).expanduser().absolute())
            added = knowledge.add(app, source, text, markdown=markdown)
            out.append(_added_json(added))
            if not json_out:
                typer.echo(_added_line(added))
    if json_out:
        print_json(out)
    for reason in skipped:
        say_error(f"skipped {reason}")
    if skipped:
        say_error(f"added {len(texts)} of {len(files)} files")
        raise typer.Exit(int(ExitStatus.ERROR))


def _readable(files: list[Path]) -> tuple[list[tuple[Path, str]], list[str]]:
    """The files' texts that can be read, and why each other one cannot. Raises the first
    file's UsageError when none can be read."""
    texts, skipped, first = [], [], None
    for path in files:
        try:
            texts.append((path, read_text(file_arg(path))))
        except UsageError as exc:
            skipped.append(str(exc))
            first = first or exc
    if not texts and first is not None:
        raise first
    return texts, skipped


def _added_json(added: Added) -> dict[str, object]:
    """One added document in ``rheo kb add --json``."""
    doc = added.document
    return {
        "action": added.action,
        "id": doc.id,
        "source": doc.source,
        "version": doc.version,
        "chunks": doc.chunks,
        "previous": added.previous.id if added.previous else None,
    }


def _added_line(added: Added) -> str:
    """What adding one document did: added, a new version replacing one, or unchanged."""
    doc = added.document
    where = name_line(doc.source)
    if added.action == "added":
        return f"#{doc.id} added: {where} ({_chunks(doc.chunks)})"
    if added.action == "replaced" and added.previous is not None:
        return (
            f"#{doc.id} version {doc.version} of {where} replaces #{added.previous.id} "
            f"(version {added.previous.version}; {added.previous.chunks} → "
            f"{_chunks(doc.chunks)})"
        )
    return f"#{doc.id} unchanged: {where} (version {doc.version})"


@app.command("list")
@command
def list_(
    all_versions: Annotated[
        bool, typer.Option("--all", help="Every version, also replaced and removed ones.")
    ] = False,
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Documents in the knowledge base.

    \b
    Example:
      rheo kb list --all
    """
    from ..app import knowledge

    with runtime_for(profile) as app:
        found = knowledge.documents(app, all_versions=all_versions)
        now = app.now()
    if json_out:
        print_json([_doc_json(d) for d in found])
        return
    if not found:
        typer.echo("The knowledge base is empty: add documents with 'rheo kb add FILE'.")
        return
    for d in found:
        state = "" if d.status == "active" else f"  [{d.status}]"
        typer.echo(
            f"#{d.id:<5} v{d.version:<3} {local(d.added_at, now)}  {_chunks(d.chunks):>11}  "
            f"{preview(d.title, 40)}  {preview(d.source, 60)}{state}"
        )


def _doc_json(d: object) -> dict[str, object]:
    from dataclasses import asdict

    return asdict(d)  # type: ignore[call-overload, no-any-return]


@app.command("show")
@command
def show(
    ref: Annotated[str, typer.Argument(help="Document id or file.")],
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """One document's chunks, as they are searched and injected.

    \b
    Example:
      rheo kb show 3
    """
    from ..app import knowledge

    with runtime_for(profile) as app:
        doc, chunks = knowledge.show(app, _source_ref(ref))
    if json_out:
        print_json(
            {
                **_doc_json(doc),
                "chunk_texts": [{"heading": c.heading, "content": c.content} for c in chunks],
            }
        )
        return
    typer.echo(
        f"#{doc.id} {name_line(doc.title)} — {name_line(doc.source)} (version {doc.version}, "
        f"{doc.status})"
    )
    for n, c in enumerate(chunks, 1):
        typer.echo(f"\n[{n}] {safe(c.heading) or '(top)'}\n{safe(c.content)}")


def _source_ref(ref: str) -> str:
    """An id stays an id; an existing file becomes its absolute path (how it was added)."""
    if ref.strip().lstrip("#").isdigit():
        return ref
    path = Path(ref).expanduser()
    return str(path.absolute()) if path.exists() or not Path(ref).is_absolute() else ref


@app.command("remove")
@command
def remove(
    ref: Annotated[str, typer.Argument(help="Document id or file.")],
    profile: Profile = None,
) -> None:
    """Stop using a document (it is kept, marked removed).

    \b
    Example:
      rheo kb remove notes/pricing.md
    """
    from ..app import knowledge

    with runtime_for(profile) as app:
        removed = knowledge.remove(app, _source_ref(ref))
    typer.echo(f"#{removed.id} removed: {name_line(removed.source)}")


@app.command("search")
@command
def search(
    query: Annotated[list[str], typer.Argument(help="Words to look for.")],
    limit: Limit = 10,
    json_out: Json = False,
    profile: Profile = None,
) -> None:
    """Passages of the knowledge base matching the words, best first.

    \b
    Example:
      rheo kb search refund policy
    """
    from dataclasses import asdict

    from ..app import knowledge

    with runtime_for(profile) as app:
        found = knowledge.search(app, " ".join(query), limit=limit)
    if json_out:
        print_json([asdict(p) for p in found])
        return
    if not found:
        typer.echo("No passage matches.")
        return
    for p in found:
        heading = p.heading.removeprefix(p.title).lstrip(" >") if p.heading else ""
        where = p.title + (f" › {heading}" if heading else "")
        typer.echo(f"#{p.document_id} {preview(where, 60)}\n    {preview(p.content, 150)}")
