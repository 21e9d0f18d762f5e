"""Replies rendered on a terminal: headings at the left margin, one blank line between
blocks (as the model wrote them)."""

from __future__ import annotations

import io
import re

from rheo_cli.ui.stream import ReplyWriter

REPLY = "# Title\n\nFirst paragraph here.\n\n## Plan\n\n- one\n- two\n\n### Last\n\nDone.\n"


def _shown(chunk: int) -> list[str]:
    out = io.StringIO()
    writer = ReplyWriter(rendered=True, out=out)
    for i in range(0, len(REPLY), chunk):
        writer(REPLY[i : i + chunk])
    writer.finish()
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    return [line.rstrip() for line in plain.split("\n")]


def test_blocks_stand_one_blank_line_apart_and_headings_start_at_the_margin():
    for chunk in (3, 7, len(REPLY)):
        lines = _shown(chunk)
        assert lines[:11] == [
            "Title",
            "",
            "First paragraph here.",
            "",
            "Plan",
            "",
            " • one",
            " • two",
            "",
            "Last",
            "",
        ], chunk
        assert "\n\n\n" not in "\n".join(lines)
