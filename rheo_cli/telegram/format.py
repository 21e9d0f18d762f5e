"""Turning a Markdown reply into Telegram messages: split at Telegram's length limit, rendered
as Telegram's HTML subset with everything else escaped, so a reply can never inject markup."""

from __future__ import annotations

import html
import re

MAX_MESSAGE_CHARS = 4096
"""Telegram's limit on one message's text, after entity parsing (characters)."""

CHUNK_CHARS = 3500
"""Raw Markdown per message: leaves room for the HTML tags and escapes the rendering adds."""

_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.S)
_INLINE_CODE = re.compile(r"`([^`\n]+)`")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")
_ITALIC = re.compile(
    r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])"
    r"|(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])"
)
_LINK = re.compile(r"\[([^\]\n]+)\]\((https?://[^\s)]+)\)")
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
_PLACEHOLDER = "\x00{}\x00"


def split_reply(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """Cut ``text`` into pieces of at most ``limit`` characters, preferring paragraph breaks,
    then line breaks, then spaces; a code fence cut in two is closed and reopened. Returns at
    least one piece for non-empty text, none for blank text. Joining the pieces gives back the
    text's content (whitespace at the cuts aside)."""
    text = text.strip()
    pieces: list[str] = []
    while text:
        if len(text) <= limit:
            pieces.append(text)
            break
        window = text[:limit]
        cut = max(window.rfind("\n\n"), -1)
        if cut < limit // 3:
            cut = window.rfind("\n")
        if cut < limit // 3:
            cut = window.rfind(" ")
        if cut < limit // 3:
            cut = limit
        pieces.append(text[:cut].rstrip())
        text = text[cut:].strip()
    # Keep code fences balanced in each piece.
    balanced: list[str] = []
    carry = ""
    for piece in pieces:
        piece = carry + piece
        carry = ""
        if piece.count("```") % 2 == 1:
            piece += "\n```"
            carry = "```\n"
        balanced.append(piece)
    return [p for p in balanced if p.strip()]


def to_html(markdown: str) -> str:
    """Telegram HTML for a Markdown piece: code blocks, inline code, bold, italic, http(s)
    links and headings become tags; every other character is escaped (``<``, ``>``, ``&``),
    so text that looks like markup stays text."""
    kept: list[str] = []

    def keep(fragment: str) -> str:
        kept.append(fragment)
        return _PLACEHOLDER.format(len(kept) - 1)

    text = markdown.replace("\x00", "")
    text = _FENCE.sub(lambda m: keep(f"<pre>{html.escape(m.group(1).rstrip())}</pre>"), text)
    text = _INLINE_CODE.sub(lambda m: keep(f"<code>{html.escape(m.group(1))}</code>"), text)
    text = _LINK.sub(
        lambda m: keep(
            f'<a href="{html.escape(m.group(2), quote=True)}">{html.escape(m.group(1))}</a>'
        ),
        text,
    )
    text = html.escape(text, quote=False)
    text = _HEADING.sub(lambda m: f"<b>{m.group(1)}</b>", text)
    text = _BOLD.sub(lambda m: f"<b>{m.group(1) or m.group(2)}</b>", text)
    text = _ITALIC.sub(lambda m: f"<i>{m.group(1) or m.group(2)}</i>", text)
    return re.sub("\x00(\\d+)\x00", lambda m: kept[int(m.group(1))], text)


def messages_for(reply: str) -> list[tuple[str, str | None, str]]:
    """The messages to send for ``reply``: ``[(text, parse_mode, plain)]`` — the HTML rendering
    with parse_mode ``"HTML"`` when it fits Telegram's limit, else the plain piece (``None``);
    ``plain`` is the piece as written, to resend if Telegram refuses the markup."""
    out: list[tuple[str, str | None, str]] = []
    for piece in split_reply(reply):
        rendered = to_html(piece)
        if len(rendered) <= MAX_MESSAGE_CHARS:
            out.append((rendered, "HTML", piece))
        else:
            out.extend((p, None, p) for p in split_reply(piece, MAX_MESSAGE_CHARS))
    return out
