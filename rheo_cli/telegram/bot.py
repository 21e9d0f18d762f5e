"""The Telegram bot: long polling, allowed chats only, one turn per message.

Every message from an allowed chat runs the same turn as ``rheo ask`` — the person's turn is
stored before the model is called, the context injected, the reply stored and sent, extraction
queued. Telegram confirms an update only when a later ``getUpdates`` asks for a higher offset,
and rheo asks for one only after the update's turn is stored, so a crash or a dropped network
loses no message; the update id is kept in the turn's metadata, so an update delivered twice is
stored once and answered if its reply never came.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..app import history, jobs
from ..app.app import App, build
from ..app.errors import EngineError, NotFound
from ..app.text import redact
from ..errors import ConfigError, RheoError, UsageError
from . import format as tg_format

LISTED = 30
"""The most memory items one ``/memory`` or ``/items`` reply lists."""

POLL_TIMEOUT_S = 30
"""Long-polling timeout of one ``getUpdates`` call (seconds)."""

HELP = (
    "I'm rheo, an assistant that remembers. Write to me as you would to a person.\n"
    "/new — the next message starts a new session\n"
    "/memory [words] — what I remember (or search it)\n"
    "/items — open items (commitments)\n"
    "/forget ID — stop using memory #ID\n"
    "/retry — answer your last message again"
)


@dataclass(frozen=True)
class BotSettings:
    """What the bot needs: the token, the allowed chats (chat id -> profile) and, for a
    self-hosted Bot API server or tests, its base URL (``.../bot``)."""

    token: str
    chats: dict[int, str]
    base_url: str | None = None
    poll_timeout_s: int = POLL_TIMEOUT_S


def settings_from(rt: App, environ: dict[str, str] | None = None) -> BotSettings:
    """Read the token (``RHEO_TELEGRAM_TOKEN``, else ``[telegram] token``), the allowed chats
    (``[telegram] chats``) and ``RHEO_TELEGRAM_API`` (a Bot API base URL).

    Raises UsageError with what to set when the token or the allowed chats are missing."""
    env = dict(os.environ) if environ is None else environ
    token = env.get("RHEO_TELEGRAM_TOKEN", "").strip() or (rt.config.telegram_token or "")
    if not token:
        raise UsageError(
            "no bot token: set RHEO_TELEGRAM_TOKEN (from @BotFather) or [telegram] token in "
            f"{rt.paths.config}"
        )
    if not rt.config.telegram_chats:
        raise UsageError(
            'no allowed chats: add [telegram] chats = { "<your chat id>" = "default" } to '
            f"{rt.paths.config} (the bot logs the id of every chat it refuses)"
        )
    base = env.get("RHEO_TELEGRAM_API", "").strip() or None
    return BotSettings(token=token, chats=dict(rt.config.telegram_chats), base_url=base)


class TelegramBot:
    """Serves the allowed chats of ``settings``; ``log`` receives one line per notable event
    (refused chats, failures, network trouble), never the token."""

    def __init__(
        self,
        settings: BotSettings,
        *,
        home: Path,
        log: Callable[[str], None],
        environ: dict[str, str] | None = None,
    ) -> None:
        self.settings = settings
        self.home = home
        self.log = log
        self.environ = environ
        self.runtimes: dict[str, App] = {}
        self.fresh_session: set[int] = set()
        self.bot: Any = None

    # -- plumbing -------------------------------------------------------------------------

    def clean(self, error: BaseException | str) -> str:
        """One line about ``error`` with the bot token and any other credential redacted
        (`safety.redact`)."""
        text = " ".join(str(error).split()) or type(error).__name__
        return redact(text, (self.settings.token,))

    def runtime(self, profile: str) -> App:
        """The runtime of ``profile`` (built once; its store opened on first use)."""
        if profile not in self.runtimes:
            self.runtimes[profile] = build(profile=profile, environ=self.environ)
        return self.runtimes[profile]

    def offset_path(self) -> Path:
        """Where the last handled update id of this bot is kept (one file per bot, 0600)."""
        return self.home / f"telegram-{self.bot.id}.offset"

    def read_offset(self) -> int | None:
        """The last handled update id, or None before the first one."""
        with contextlib.suppress(OSError, ValueError):
            return int(self.offset_path().read_text().strip())
        return None

    def write_offset(self, update_id: int) -> None:
        """Record ``update_id`` as handled (written whole, then renamed into place)."""
        path = self.offset_path()
        tmp = path.with_suffix(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(str(update_id))
        os.replace(tmp, path)

    async def send(self, chat_id: int, reply: str) -> bool:
        """Send ``reply`` (Markdown) as one or more messages: Telegram HTML when it renders,
        plain text when Telegram refuses the markup. True when every piece was sent."""
        from telegram.error import BadRequest, Forbidden, NetworkError

        ok = True
        for text, mode, plain in tg_format.messages_for(reply):
            for attempt in range(3):
                try:
                    await self.bot.send_message(chat_id, text, parse_mode=mode)
                    break
                except BadRequest as exc:
                    if mode is None:
                        self.log(f"chat {chat_id}: Telegram refused a message: {self.clean(exc)}")
                        ok = False
                        break
                    text, mode = plain, None
                except Forbidden as exc:
                    self.log(f"chat {chat_id}: cannot send ({self.clean(exc)})")
                    return False
                except NetworkError as exc:
                    if attempt == 2:
                        self.log(f"chat {chat_id}: sending failed: {self.clean(exc)}")
                        ok = False
                    else:
                        await asyncio.sleep(1 + attempt)
        return ok

    # -- turns ------------------------------------------------------------------------------

    async def answer(
        self,
        rt: App,
        chat_id: int,
        text: str = "",
        *,
        question_id: int | None = None,
        new_session: bool = False,
        meta: dict[str, Any] | None = None,
    ) -> None:
        """Store ``text`` with ``meta`` (or take the stored question ``question_id``), run the
        model and send the reply — or one line saying why there is none."""
        from ..app.conversation import Conversation, SendOptions
        from ..ui.wording import not_stored_line

        options = SendOptions(new_session=new_session, question_id=question_id, meta=meta)
        with contextlib.suppress(Exception):
            await self.bot.send_chat_action(chat_id, "typing")
        try:
            outcome = await asyncio.to_thread(Conversation(rt).send, text, options)
        except (RheoError, EngineError) as exc:
            self.log(f"chat {chat_id}: {self.clean(exc)}")
            await self.send_plain(chat_id, f"Sorry, I could not answer: {self.clean(exc)}")
            return
        except Exception as exc:  # noqa: BLE001 - a store that stayed busy, a newer store
            self.log(f"chat {chat_id}: the message could not be stored: {self.clean(exc)}")
            await self.send_plain(
                chat_id, "Sorry, your message could not be stored just now; send it again."
            )
            return
        if outcome.status == "failed":
            self.log(f"chat {chat_id}: the model call failed: {outcome.error}")
            await self.send(
                chat_id,
                f"The model call failed ({outcome.error}). Your message is kept: send /retry "
                "to try again.",
            )
            return
        if outcome.status == "interrupted":
            await self.send(chat_id, "The reply was interrupted; send /retry to try again.")
            return
        reply = outcome.reply
        if outcome.cut:
            reply += "\n\n_(cut at the output limit: the reply is incomplete)_"
        if outcome.not_stored is not None:
            reply += f"\n\n_({not_stored_line(outcome.not_stored)})_"
        await self.send(chat_id, reply)

    async def handle(self, update: Any) -> None:
        """One update: refuse unknown chats, run commands, or store and answer a message."""
        message = update.message
        if message is None:
            return
        chat_id = int(message.chat.id)
        profile = self.settings.chats.get(chat_id)
        if profile is None:
            self.log(f"refused chat {chat_id}: not in [telegram] chats")
            with contextlib.suppress(Exception):
                await self.bot.send_message(chat_id, "Sorry, this is a private assistant.")
            return
        text = message.text
        if not text or not text.strip():
            await self.send(chat_id, "I can read text messages only.")
            return
        if text.startswith("/"):
            await self.command(chat_id, profile, text)
            return
        rt = self.runtime(profile)
        stored = history.stored_question(rt, chat_id, update.update_id)
        if stored is not None:
            if not history.has_reply(rt, stored):
                await self.answer(rt, chat_id, question_id=stored.id)
            return
        meta = {
            "telegram": {
                "chat_id": chat_id,
                "update_id": update.update_id,
                "message_id": message.message_id,
            }
        }
        fresh = chat_id in self.fresh_session
        self.fresh_session.discard(chat_id)
        await self.answer(rt, chat_id, text, new_session=fresh, meta=meta)

    async def command(self, chat_id: int, profile: str, text: str) -> None:
        """``/start``, ``/help``, ``/new``, ``/memory``, ``/items``, ``/forget ID``,
        ``/retry``: answered from the store, nothing stored in the ledger."""
        name, _, arg = text.strip().partition(" ")
        name = name.split("@", 1)[0].lower()
        arg = arg.strip()
        rt = self.runtime(profile)
        if name in ("/start", "/help"):
            await self.send_plain(chat_id, HELP)
        elif name == "/new":
            self.fresh_session.add(chat_id)
            await self.send_plain(chat_id, "The next message starts a new session.")
        elif name in ("/memory", "/items"):
            await self.send_plain(chat_id, self.listing(rt, name, arg))
        elif name == "/forget":
            await self.send_plain(chat_id, self.forget(rt, arg))
        elif name == "/retry":
            await self.retry(rt, chat_id)
        else:
            await self.send_plain(chat_id, f"Unknown command {name}.\n\n{HELP}")

    async def send_plain(self, chat_id: int, text: str) -> None:
        """Send ``text`` as plain text (listings: nothing in them is markup)."""
        for piece in tg_format.split_reply(text, tg_format.MAX_MESSAGE_CHARS):
            with contextlib.suppress(Exception):
                await self.bot.send_message(chat_id, piece)

    def listing(self, rt: App, name: str, query: str) -> str:
        """The text of ``/memory [query]`` or ``/items``: the lines of the CLI's and the
        REPL's listings, in their order, at most `LISTED`."""
        from ..app import memory
        from ..ui.items import item_line, open_item_line

        now = rt.now()
        if name == "/items":
            found = memory.open_items(rt)[:LISTED]
            return "\n".join(open_item_line(i, now) for i in found) or "No open items."
        if query:
            found = memory.search(rt, query, limit=LISTED)
            empty = "No memory matches."
        else:
            found = memory.memories(rt, open_items=False)[:LISTED]
            empty = "Nothing remembered yet."
        return "\n".join(item_line(i, now, rt.settings) for i in found) or empty

    def forget(self, rt: App, arg: str) -> str:
        """``/forget ID``: retract a memory item of this chat's profile (again: a no-op)."""
        from ..app import memory

        digits = arg.lstrip("#")
        if not digits.isdigit() or len(digits) > 18:
            return "Use /forget ID with the number from /memory."
        try:
            done = memory.change(rt, "forget", int(digits))
        except NotFound:
            return f"No memory #{digits}."
        except EngineError as exc:
            return str(exc)
        state = "Already forgotten" if done.already else "Forgotten"
        return f"{state} #{done.item.id}: {done.item.content_text()}"

    async def retry(self, rt: App, chat_id: int) -> None:
        """Answer the chat's last question again when its reply failed or never came."""
        last = history.last_question(rt, chat_id)
        if last is None:
            await self.send_plain(chat_id, "There is nothing to retry.")
        elif last[1]:
            await self.send_plain(chat_id, "Your last message was answered already.")
        else:
            await self.answer(rt, chat_id, question_id=last[0].id)

    async def catch_up(self) -> None:
        """At start: a question stored by a run that died before replying is answered now."""
        for chat_id, profile in self.settings.chats.items():
            rt = self.runtime(profile)
            pending = history.pending_question(rt, chat_id)
            if pending is not None:
                await self.answer(rt, chat_id, question_id=pending.id)

    # -- the loop ---------------------------------------------------------------------------

    async def run(self, *, once: bool = False) -> int:
        """Poll and serve until cancelled (``once``: until no update is waiting). Returns how
        many updates were handled. Raises RheoError for a bad token or an unreachable API at
        start."""
        from telegram import Bot
        from telegram.error import InvalidToken, NetworkError, TelegramError

        kwargs: dict[str, Any] = {}
        if self.settings.base_url:
            kwargs["base_url"] = self.settings.base_url
            kwargs["base_file_url"] = self.settings.base_url.replace("/bot", "/file/bot")
        try:
            self.bot = Bot(self.settings.token, **kwargs)
            await self.bot.initialize()
        except InvalidToken:
            raise ConfigError(
                "Telegram refused the bot token (check RHEO_TELEGRAM_TOKEN)"
            ) from None
        except TelegramError as exc:
            raise RheoError(f"cannot reach Telegram: {self.clean(exc)}") from None
        if not once and self.settings.chats:  # by the first reply it runs, for the work after it
            jobs.start_resident(self.runtime(next(iter(self.settings.chats.values()))))
        handled = 0
        try:
            await self.catch_up()
            last = self.read_offset()
            backoff = 1.0
            while True:
                try:
                    updates = await self.bot.get_updates(
                        offset=None if last is None else last + 1,
                        timeout=0 if once else self.settings.poll_timeout_s,
                        allowed_updates=["message"],
                    )
                except NetworkError as exc:
                    self.log(
                        f"Telegram unreachable ({self.clean(exc)}); retrying in {backoff:.0f} s"
                    )
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, 60.0)
                    continue
                backoff = 1.0
                if not updates and once:
                    break
                for update in updates:
                    await self.handle(update)
                    last = int(update.update_id)
                    self.write_offset(last)
                    handled += 1
        finally:
            with contextlib.suppress(Exception):
                await self.bot.shutdown()
            for rt in self.runtimes.values():
                rt.close()
        return handled
