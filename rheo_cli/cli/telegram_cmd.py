"""``rheo telegram``: the Telegram front end (optional extra ``telegram``)."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import RheoError
from ..ui.wording import plural
from .errors import command, say_error
from .state import runtime_for


@command
def telegram(
    once: Annotated[
        bool, typer.Option("--once", help="Answer what is waiting, then exit (cron, tests).")
    ] = False,
) -> None:
    """Run the Telegram bot by long polling: allowed chats get the same turn as `rheo ask`.

    Token from RHEO_TELEGRAM_TOKEN (or [telegram] token); allowed chats and their profiles
    from [telegram] chats in config.toml. Everyone else gets one refusal line and nothing is
    stored.

    Example: RHEO_TELEGRAM_TOKEN=123:abc rheo telegram
    """
    import asyncio

    from ..extras import install_hint, missing

    if missing("telegram"):
        raise RheoError(f"rheo telegram needs python-telegram-bot: {install_hint('telegram')}")
    from ..telegram.bot import TelegramBot, settings_from

    with runtime_for(None, None) as app:
        settings = settings_from(app)
        bot = TelegramBot(settings, home=app.paths.home, log=lambda line: say_error(line))
    if not once:
        say_error(f"rheo telegram: serving {plural(len(settings.chats), 'chat')}; Ctrl-C stops")
    handled = asyncio.run(bot.run(once=once))
    if once:
        say_error(f"handled {plural(handled, 'update')}")
