"""Showing streamed replies: every paragraph once, blank lines kept, however the text arrives."""

from __future__ import annotations

import io

from hypothesis import given, settings
from hypothesis import strategies as st

from rheo_cli.ui.stream import ReplyWriter, settled_prefix

REPLY = (
    "First paragraph here.\n\nSecond one, a little longer.\n\n"
    "```\ncode line one\n\ncode line two\n```\n\n- item a\n- item b\n\nLast words."
)


def shown(chunks: list[str], rendered: bool = True) -> str:
    out = io.StringIO()
    writer = ReplyWriter(rendered=rendered, out=out)
    for chunk in chunks:
        writer(chunk)
    writer.finish()
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines())


def test_settled_prefix_never_splits_a_code_fence():
    cut = settled_prefix(REPLY)
    assert REPLY[:cut].count("```") % 2 == 0
    assert settled_prefix("one\n\ntwo") == len("one\n\n")
    assert settled_prefix("one\n\n") == 0  # nothing follows the break yet


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=len(REPLY) - 1), max_size=12))
def test_every_paragraph_is_shown_once_whatever_the_chunks(cuts):
    bounds = [0, *sorted(set(cuts)), len(REPLY)]
    chunks = [REPLY[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if b > a]
    text = shown(chunks)
    for phrase in (
        "First paragraph here.",
        "Second one, a little longer.",
        "code line one",
        "code line two",
        "item a",
        "item b",
        "Last words.",
    ):
        assert text.count(phrase) == 1, (phrase, text)
    assert "First paragraph here.\n\nSecond one" in text
    assert "```" not in text  # rendered, not raw


def test_raw_mode_passes_text_through():
    assert shown([REPLY[:7], REPLY[7:]], rendered=False) == REPLY


def test_the_terminal_does_not_echo_while_the_reply_is_drawn_live():
    """Ctrl-C's echoed ``^C`` (or a typed key) inside the live area wrapped its last line, so
    the redraw that cleared it left the first line behind and the partial reply showed twice
    (reproduced in tmux). The keyboard's terminal stops echoing while the reply is drawn."""
    import os
    import pty
    import termios

    main, keys = pty.openpty()
    try:
        echo = termios.ECHO | termios.ECHOCTL
        assert termios.tcgetattr(keys)[3] & echo == echo
        writer = ReplyWriter(rendered=True, out=io.StringIO(), keys=keys)
        writer("Second paragraph, still streaming")
        assert termios.tcgetattr(keys)[3] & echo == 0
        writer.finish()  # after Ctrl-C as after the end of the reply
        assert termios.tcgetattr(keys)[3] & echo == echo
        raw = ReplyWriter(rendered=False, out=io.StringIO(), keys=keys)
        raw("piped text is not drawn live")
        assert termios.tcgetattr(keys)[3] & echo == echo
        raw.finish()
    finally:
        os.close(main)
        os.close(keys)
