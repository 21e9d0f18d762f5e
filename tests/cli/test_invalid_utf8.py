"""Command-line arguments, stdin and environment variables that are not valid UTF-8: only the
invalid bytes become U+FFFD (the rest of the text is kept and found by search), a file named
by such bytes is still opened, and a name, URL or key the environment gives that way is
refused in one line. Run as real subprocesses: Python hands rheo the bytes of ``sys.argv``
as surrogates (``surrogateescape``), which is what is tested."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakeapi import text
from helpers import api_env, db_rows, run_rheo

pytestmark = pytest.mark.boundary  # rheo as a process: the bytes of its argv are the subject

BAD = "\udcff"  # how Python gives rheo the byte 0xff of an argument (surrogateescape)


def rheo(api: Any, home: Path, *args: str, **env: str) -> Any:
    return run_rheo(*args, env={**api_env(api, home, RHEO_WORKER="off"), **env})


def test_an_invalid_byte_in_a_question_is_replaced_and_the_words_around_it_found(
    api: Any, home: Path
) -> None:
    api.queue(text("Noted."))
    asked = rheo(api, home, "ask", f"café 日本 {BAD} end")
    assert asked.returncode == 0, asked.stderr
    assert asked.stderr.decode().count("\n") == 1
    assert "not valid UTF-8: 1 invalid byte sequence replaced by U+FFFD" in asked.stderr.decode()
    assert [r[0] for r in db_rows(home, "SELECT content FROM turns WHERE role = 'user'")] == [
        "café 日本 \ufffd end"
    ]
    sent = api.message_requests[-1].body["messages"][-1]["content"]
    assert "café 日本 \ufffd end" in json.dumps(sent, ensure_ascii=False)
    for word in ("café", "日本", "end"):
        found = rheo(api, home, "history", "search", word, "--json")
        assert found.returncode == 0, found.stderr
        assert [t["content"] for t in json.loads(found.stdout)] == ["café 日本 \ufffd end"], word


def test_the_same_bytes_as_separate_arguments_give_the_same_text(api: Any, home: Path) -> None:
    """``rheo ask café 日本 $'\\xff' end``: before, the lone ``\\xff`` argument, holding no UTF-8
    sequence of its own, was read as Latin-1 (``café 日本 ÿ end``) although the terminal's
    other arguments were UTF-8; Latin-1 only when no argument is UTF-8 (``caf\\xe9 cr\\xe8me``)."""
    api.default = text("Noted.")
    assert rheo(api, home, "ask", "café", "日本", BAD, "end").returncode == 0
    latin = rheo(api, home, "ask", "caf\udce9", "cr\udce8me")
    assert latin.returncode == 0 and b"read as Latin-1" in latin.stderr
    asked = [r[0] for r in db_rows(home, "SELECT content FROM turns WHERE role = 'user'")]
    assert asked == ["café 日本 \ufffd end", "café crème"]


def test_every_command_taking_text_reads_it_the_same_way(api: Any, home: Path) -> None:
    added = rheo(
        api, home, "memory", "add", f"Likes café {BAD} crème", "-t", f"café{BAD}", "--json"
    )
    assert added.returncode == 0, added.stderr
    item = json.loads(added.stdout)["item"]
    assert item["content"]["label"] == "Likes café \ufffd crème"
    searched = rheo(api, home, "memory", "search", f"café {BAD}", "--json")
    assert searched.returncode == 0, searched.stderr
    assert [i["id"] for i in json.loads(searched.stdout)] == [item["id"]]
    ctx = rheo(api, home, "context", f"café {BAD} crème?", "--json")
    assert ctx.returncode == 0, ctx.stderr
    sent = json.loads(ctx.stdout)["messages"][-1]["content"][-1]["text"]
    assert sent.endswith("---\ncafé \ufffd crème?")
    for args in (
        ("history", "search", f"日本 {BAD}"),
        ("kb", "search", f"日本 {BAD}"),
        ("memory", "list", "--category", f"fact{BAD}"),
        ("sessions", "show", f"s1{BAD}"),
    ):
        done = rheo(api, home, *args)
        err = done.stderr.decode()
        assert done.returncode in (0, 2), (args, err)
        assert "Traceback" not in err and "surrogates not allowed" not in err, (args, err)


def test_a_file_whose_name_is_not_utf8_is_still_added(api: Any, home: Path, tmp_path: Path) -> None:
    name = tmp_path / "kyo\udce9.md"  # the byte 0xe9 (Latin-1 é) in the name
    with open(bytes(str(tmp_path), "utf-8") + b"/kyo\xe9.md", "wb") as fh:
        fh.write(b"# Kyoto trip\n\nrice fields and temples\n")
    added = rheo(api, home, "kb", "add", str(name), "--json")
    assert added.returncode == 0, added.stderr
    doc = json.loads(added.stdout)[0]
    assert doc["action"] == "added" and doc["source"] == str(tmp_path / "kyo\ufffd.md")
    again = rheo(api, home, "kb", "add", str(name), "--json")
    assert json.loads(again.stdout)[0]["action"] == "unchanged"
    found = rheo(api, home, "kb", "search", "temples", "--json")
    assert "rice fields" in found.stdout.decode()


def test_environment_text_that_is_not_utf8_is_refused_in_one_line(api: Any, home: Path) -> None:
    values = {
        "RHEO_DATABASE_URL": f"postgresql://rheo:secret{BAD}@127.0.0.1:1/rheo",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:1/secret{BAD}",
        "ANTHROPIC_API_KEY": f"sk-ant-secret{BAD}",
        "RHEO_PROFILE": f"secret{BAD}",
    }
    for name, value in values.items():
        done = rheo(api, home, "ask", "hello", **{name: value})
        err = done.stderr.decode()
        assert done.returncode == 2, (name, err)
        assert err == f"rheo: {name} is not valid UTF-8 text: set it again, or unset it\n"
        assert "secret" not in err  # a key is never shown
    assert not (home / "rheo.db").exists()  # refused before anything was opened
    assert api.message_requests == []
    assert rheo(api, home, "--help", RHEO_MODEL=f"m{BAD}").returncode == 0  # help needs none
