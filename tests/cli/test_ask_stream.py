"""``rheo ask --json-stream``: NDJSON events while the reply streams; the note when the
model stores a memory during a turn."""

from __future__ import annotations

import json

from fakeprovider import Canned
from helpers import db_rows

from rheo_cli.providers.base import Usage


def test_json_stream_prints_one_event_per_line_ending_in_usage_and_final(rheo, fake_model):
    fake_model.add(
        Canned("Paris is the capital.", chunks=3, usage=Usage(input_tokens=9, output_tokens=4))
    )
    result = rheo("ask", "--json-stream", "capital?")
    assert result.exit_code == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["usage", "final"] and kinds.count("delta") >= 2
    assert "".join(e["text"] for e in events if e["type"] == "delta") == "Paris is the capital."
    assert events[-2]["input_tokens"] == 9 and events[-2]["output_tokens"] == 4
    assert events[-1]["reply"] == "Paris is the capital." and events[-1]["session_number"] == 1


def test_json_stream_reports_the_memory_the_model_wrote(rheo, fake_model, home):
    fact = {"category": "preference", "topic": "ana drink", "label": "Ana prefers green tea"}
    fake_model.add(Canned(tool_calls=[("write_memory", fact)]), "Noted.")
    result = rheo("ask", "--json-stream", "Ana prefers green tea, remember")
    assert result.exit_code == 0, result.stderr
    tools = [e for e in map(json.loads, result.stdout.splitlines()) if e["type"] == "tool"]
    assert tools and tools[0]["name"] == "write_memory" and tools[0]["wrote_memory"] is True
    assert db_rows(home, "SELECT count(*) FROM memory_items")[0][0] == 1


def test_a_memory_the_model_writes_is_noted_on_stderr(rheo, fake_model):
    fact = {"category": "preference", "topic": "ana drink", "label": "Ana prefers green tea"}
    fake_model.add(Canned(tool_calls=[("write_memory", fact)]), "Noted.")
    result = rheo("ask", "Ana prefers green tea")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "Noted.\n"
    notes = [line for line in result.stderr.splitlines() if line.startswith("rheo: note: memory:")]
    assert len(notes) == 1 and "#1" in notes[0], result.stderr


def test_json_and_json_stream_together_are_a_usage_error(rheo):
    both = rheo("ask", "--json", "--json-stream", "hi")
    assert both.exit_code == 2 and "--json-stream" in both.stderr
