"""The Telegram front end (the Rheo article's setup, §01): a bot by long polling that answers
allowed chats with the same turn as ``rheo ask``. Needs the optional extra
``telegram`` (python-telegram-bot), imported only by ``rheo telegram``."""
