"""Explicit requests keep the whole sentence: abbreviations, initials and times do not end it."""

from __future__ import annotations

import pytest

from rheo_cli.memory.facts.requests import detect


@pytest.mark.parametrize(
    ("text", "content"),
    [
        (
            "Please remember that my dentist is Dr. Okafor on Rua Augusta",
            "my dentist is Dr. Okafor on Rua Augusta",
        ),
        (
            "Remember that the office is at 12 St. James Street. Thanks!",
            "the office is at 12 St. James Street",
        ),
        (
            "Remember that my flight leaves at 7 a.m. from Lisbon",
            "my flight leaves at 7 a.m. from Lisbon",
        ),
        ("Note that J. R. Smith signs the lease", "J. R. Smith signs the lease"),
        (
            "N'oublie pas que le rendez-vous avec Mme. Dubois est lundi",
            "le rendez-vous avec Mme. Dubois est lundi",
        ),
    ],
)
def test_the_whole_sentence_is_kept(text: str, content: str) -> None:
    (request,) = detect(text)
    assert request.kind == "remember"
    assert request.content == content


def test_sentences_still_end_at_a_full_stop_and_at_line_breaks() -> None:
    found = detect("I always remember birthdays. Remember that I am allergic to peanuts.")
    assert [(r.kind, r.content) for r in found] == [("remember", "I am allergic to peanuts")]
    found = detect("Remember that the car is blue.\nforget that the bike is red")
    assert [(r.kind, r.content) for r in found] == [
        ("remember", "the car is blue"),
        ("forget", "the bike is red"),
    ]
