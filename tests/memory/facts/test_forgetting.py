"""Forgetting that forgets — on both stores.

"forget that I use Neovim" forgets "Ana uses Neovim"; "forget my passport number" (no "that")
is a request; "please forget my …", "delete my …", "remove … from your memory", with or
without please/bitte, in the four languages; "my relationship with Alex" finds the breakup;
the note says what was forgotten, or that nothing matched and how to look. A forgotten
fact's turns, the assistant's echo, the request itself and the digest sentences quoting it
are never injected again, in any section; a secret asked to be forgotten is held back
wherever it appears. The ledger keeps them; purge erases."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from rheo_cli.memory.context import assemble
from rheo_cli.memory.facts import curation, items
from rheo_cli.memory.facts.forgetting import find, means
from rheo_cli.memory.facts.remember import Fact, remember
from rheo_cli.memory.facts.requests import detect, honour
from rheo_cli.memory.ledger import digests
from rheo_cli.memory.ledger import turns as ledger
from rheo_cli.memory.store.settings import Settings

TENANT = "default"
T0 = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
S = Settings()


class Talk:
    """A conversation in the store: the person's turns, replies to them, facts learnt."""

    def __init__(self, conn):
        self.conn = conn
        self.now = T0

    def tick(self, minutes=1):
        self.now += timedelta(minutes=minutes)
        return self.now

    def say(self, text):
        return ledger.append_turn(
            self.conn, profile="default", role="user", content=text, now=self.tick(),
            gap_s=S.gap_s,
        ).turn  # fmt: skip

    def reply(self, question, text):
        return ledger.append_turn(
            self.conn, profile="default", role="assistant", content=text, now=self.tick(),
            gap_s=S.gap_s, session_id=question.session_id, status="ok",
            meta={"reply_to": question.id},
        ).turn  # fmt: skip

    def learn(self, turn, label, topic, **kw):
        fact = Fact(kw.pop("category", "fact"), topic, label, **kw)
        return remember(
            self.conn, fact, source="extractor", now=self.now, settings=S, source_turn_id=turn.id
        ).item

    def ask(self, text):
        """The person's turn ``text`` stored and its requests honoured: the notes."""
        turn = self.say(text)
        return turn, honour(
            self.conn, profile="default", turn_id=turn.id, text=text, now=self.now, settings=S
        )

    def context(self, message, *, budget=4000, new_session=False):
        when = self.now + (timedelta(hours=5) if new_session else timedelta(minutes=1))
        return assemble.assemble(
            self.conn, profile="default", message=message, now=when, settings=S, budget=budget
        )


@pytest.mark.parametrize(
    ("said", "content"),
    [
        ("forget my passport number", "my passport number"),
        ("Please forget my social security number.", "my social security number"),
        ("please forget my passport number, please", "my passport number"),
        ("Delete my old address.", "my old address"),
        ("Remove Alex from your memory.", "Alex"),
        ("Stop remembering my phone number", "my phone number"),
        ("Forget what I told you about my relationship with Alex", "my relationship with Alex"),
        ("Forget that I use Neovim.", "I use Neovim"),
        ("Oublie mon adresse s'il te plaît.", "mon adresse"),
        ("Efface mon numéro de téléphone de ta mémoire.", "mon numéro de téléphone"),
        ("Vergiss bitte meine Telefonnummer.", "meine Telefonnummer"),
        ("Bitte vergiss, dass ich Tee mag.", "ich Tee mag"),
        ("Lösche meine Adresse aus deinem Gedächtnis.", "meine Adresse"),
        ("Olvida mi número de teléfono, por favor.", "mi número de teléfono"),
        ("Borra mi dirección de tu memoria.", "mi dirección"),
    ],
)
def test_every_way_of_asking_to_forget_is_a_request(said, content):
    assert [(r.kind, r.content) for r in detect(said)] == [("forget", content)]


@pytest.mark.parametrize(
    "said",
    [
        "Forget that, let's talk about the weather.",
        "Forget about it.",
        "I'll never forget my first car.",
        "Delete that.",
    ],
)
def test_what_is_not_a_request_to_forget(said):
    assert [r for r in detect(said) if r.kind == "forget"] == []


@pytest.mark.parametrize(
    ("said", "content"),
    [
        ("Merk dir bitte, dass ich in Berlin wohne.", "ich in Berlin wohne"),
        ("Please remember that I use Neovim.", "I use Neovim"),
        ("Souviens-toi s'il te plaît que je préfère le thé.", "je préfère le thé"),
        ("Recuerda por favor que vivo en Madrid.", "vivo en Madrid"),
    ],
)
def test_a_polite_request_to_remember_is_taken(said, content):
    assert [(r.kind, r.content) for r in detect(said)] == [("remember", content)]


def test_forget_that_i_use_neovim_forgets_ana_uses_neovim(conn):
    talk = Talk(conn)
    neovim = talk.learn(talk.say("I switched editors."), "Ana uses Neovim", "editor")
    other = talk.learn(talk.say("I drink tea."), "The person drinks green tea", "tea")
    _, notes = talk.ask("Forget that I use Neovim.")
    assert notes == [f"forgot #{neovim.id} (Ana uses Neovim)"]
    assert items.get_item(conn, "default", neovim.id).status == "retracted"
    assert items.get_item(conn, "default", other.id).status == "active"


def test_forget_my_passport_number_without_that_forgets_it_and_masks_it(conn):
    talk = Talk(conn)
    turn = talk.say("My passport number is X1234567.")
    passport = talk.learn(turn, "Ana's passport number is X1234567", "passport")
    _, notes = talk.ask("forget my passport number")
    assert notes == [f"forgot #{passport.id} (Ana's passport number is ••••)"]


def test_my_relationship_with_alex_finds_the_breakup_and_nothing_else_of_alex(conn):
    talk = Talk(conn)
    breakup = talk.learn(talk.say("Alex and I split."), "Ana broke up with Alex in March", "alex")
    boss = talk.learn(talk.say("My boss is Bea."), "Bea is Ana's manager", "manager")
    _, notes = talk.ask("Forget what I told you about my relationship with Alex.")
    assert notes == [f"forgot #{breakup.id} (Ana broke up with Alex in March)"]
    assert items.get_item(conn, "default", boss.id).status == "active"


def test_every_version_of_the_fact_is_forgotten_and_nothing_unrelated(conn):
    talk = Talk(conn)
    old = talk.learn(talk.say("I live in Boston."), "Ana lives in Boston", "home")
    new = talk.learn(talk.say("I moved to Lisbon."), "Ana lives in Lisbon", "home")
    job = talk.learn(talk.say("I work at Acme."), "Ana works at Acme", "job")
    found = find(conn, "default", "my address")
    assert [i.id for i in found] == [old.id, new.id]
    assert not means("my address", job)


def test_nothing_matched_says_so_and_how_to_look(conn):
    talk = Talk(conn)
    talk.learn(talk.say("I like tea."), "Ana likes tea", "tea")
    _, notes = talk.ask("Please forget that I own a boat.")
    assert notes == [
        'nothing stored matches "I own a boat"; it will not be learnt from what was said '
        'before; look with: rheo memory search "own boat"'
    ]
    _, notes = talk.ask("Forget that I like tea.")
    assert notes[0].startswith("forgot #")
    _, again = talk.ask("Forget that I like tea.")
    assert again == [f"already forgotten: #{notes[0].split('#')[1].split(' ')[0]}"]


def test_forgetting_before_extraction_ran_keeps_it_from_being_learnt(conn):
    """ "forget that …" while the turn that said it still waits for extraction (the extractor
    overloaded, or slow): extraction later finds the fact in that turn and does not store
    it, and neither the turn nor its echo is injected."""
    talk = Talk(conn)
    q = talk.say("I use Neovim for all my coding.")
    talk.reply(q, "Neovim for all your coding, nice.")
    _, notes = talk.ask("Forget that I use Neovim.")
    assert notes[0].startswith('nothing stored matches "I use Neovim"; it will not be learnt')
    assert talk.learn(q, "Uses Neovim for all coding", "editor") is None  # extraction, late
    assert [i.label for i in items.list_items(conn, "default")] == []
    _, text = _context_of(talk, "What editor do I use?")
    assert "Neovim" not in text
    # Asked again after the request, it is the person's to keep.
    _, notes = talk.ask("Remember that I use Neovim again.")
    assert notes[0].startswith("stored memory #")
    assert "Neovim again" in talk.context("What editor do I use?").text()


def test_every_turn_that_said_a_forgotten_thing_is_held_back_not_only_its_source(conn):
    talk = Talk(conn)
    q = talk.say("I use Neovim for all my coding.")  # extraction found nothing here
    talk.reply(q, "Noted.")
    talk.ask("Remember that I use Neovim as my editor.")
    talk.say("The weather in Porto is lovely.")
    _, notes = talk.ask("Forget that I use Neovim.")
    assert notes[0].startswith("forgot #")
    for new_session in (False, True):
        ctx, text = _context_of(talk, "What editor do I use?", new_session=new_session)
        assert "Neovim" not in text, new_session
        assert "Porto" in text


def _context_of(talk, message, **kw):
    ctx = talk.context(message, **kw)
    return ctx, ctx.text()


def test_a_forgotten_fact_leaves_current_session_with_its_echo_and_the_request(conn):
    """The same session: the turn that said it, the assistant's echo, the request to forget
    and the reply to it are no longer injected; the rest of the conversation is."""
    talk = Talk(conn)
    q = talk.say("By the way, I use Neovim for everything.")
    talk.reply(q, "Noted: Neovim for everything.")
    talk.learn(q, "Ana uses Neovim", "editor")
    q2 = talk.say("The weather in Porto is lovely.")
    talk.reply(q2, "Enjoy Porto!")
    ask, _ = talk.ask("Please forget that I use Neovim.")
    talk.reply(ask, "Done, I've forgotten that you use Neovim.")
    ctx, text = _context_of(talk, "What should we do today?")
    assert "Neovim" not in text and "neovim" not in text.lower()
    assert "Porto" in ctx.section("CURRENT SESSION").render()
    # The ledger keeps every word until the person purges.
    assert sum("Neovim" in t.content for t in ledger.recent_turns(conn, "default", 50)) == 4


def test_a_forgotten_fact_leaves_the_previous_sessions_end_and_relevant_history(conn):
    talk = Talk(conn)
    q = talk.say("I use Neovim with a custom config.")
    talk.reply(q, "Neovim with a custom config, got it.")
    talk.learn(q, "Ana uses Neovim", "editor")
    talk.say("Also, my favourite editor theme is gruvbox.")
    talk.ask("Forget that I use Neovim.")
    ctx, text = _context_of(talk, "Which editor do I use? Neovim?", new_session=True)
    episodic = ctx.section("EPISODIC MEMORY")
    assert episodic is not None and "gruvbox" in episodic.render()
    assert text.count("Neovim") == 1  # only the message itself
    assert text.rstrip().endswith("Which editor do I use? Neovim?")


def test_digest_sentences_quoting_a_forgotten_fact_are_held_back(conn):
    talk = Talk(conn)
    q = talk.say("I use Neovim. We planned the Lisbon trip.")
    talk.learn(q, "Ana uses Neovim", "editor")
    digests.store_digest(
        conn, profile="default", session_id=q.session_id,
        narrative="Ana said she uses Neovim for work. We planned the Lisbon trip for June.",
        facts=[], procedures=[], decisions=[], source_turn_ids=[q.id], model="m",
        created_at="2026-05-04T12:00:00.000Z",
    )  # fmt: skip
    talk.now += timedelta(hours=3)
    talk.ask("Forget that I use Neovim.")
    for message in ("What did we plan?", "the Lisbon trip and Neovim"):
        _, text = _context_of(talk, message, new_session=True)
        assert "Lisbon trip for June" in text
        assert "uses Neovim" not in text


def test_a_forgotten_secret_is_held_back_wherever_it_appears(conn):
    """ "Please forget my social security number": the number is never injected again, not
    from the turn, the echo, another fact or a later turn that repeats it."""
    talk = Talk(conn)
    q = talk.say("My social security number is 123-45-6789, keep it handy.")
    talk.reply(q, "Saved: 123-45-6789.")
    talk.learn(q, "Ana's social security number is 123-45-6789", "ssn")
    talk.learn(talk.say("The bank has my SSN."), "The bank asked for SSN 123-45-6789", "bank")
    talk.say("Remind me: is 123-45-6789 the right one?")
    ask, notes = talk.ask("Please forget my social security number.")
    assert notes[0].startswith("forgot #") and "6789" not in notes[0]
    for new_session in (False, True):
        _, text = _context_of(talk, "what is my social security number? bank SSN",
                              new_session=new_session)  # fmt: skip
        assert "6789" not in text
    assert items.list_items(conn, "default", statuses=("retracted",))


def test_purge_erases_what_forgetting_only_holds_back(conn):
    from rheo_cli.memory import purge

    talk = Talk(conn)
    q = talk.say("I use Neovim.")
    talk.learn(q, "Ana uses Neovim", "editor")
    ask, _ = talk.ask("Forget that I use Neovim.")
    kept = [t.id for t in ledger.recent_turns(conn, "default", 10) if "Neovim" in t.content]
    assert kept == [q.id, ask.id]  # held back, not erased
    for turn_id in kept:
        target = purge.plan(conn, profile="default", what="turn", ref_id=turn_id)
        purge.purge(conn, target, now=talk.now + timedelta(minutes=5))
    assert not [t for t in ledger.recent_turns(conn, "default", 10) if "Neovim" in t.content]


def test_forgetting_by_id_holds_back_too(conn):
    """``rheo memory forget ID`` and MCP's memory_forget go through the same hold-back."""
    talk = Talk(conn)
    q = talk.say("I use Neovim.")
    item = talk.learn(q, "Ana uses Neovim", "editor")
    curation.forget(conn, "default", item.id, talk.now)
    _, text = _context_of(talk, "neovim?")
    assert text.count("Neovim") == 0 and text.count("neovim") == 1
