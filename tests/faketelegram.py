"""A local fake of Telegram's Bot API for `rheo telegram` tests (never the real Telegram).

It speaks what python-telegram-bot sends: ``POST /bot<token>/<method>`` with form fields whose
values are JSON-encoded, answering ``{"ok": true, "result": ...}`` or ``{"ok": false,
"error_code", "description"}``. ``getUpdates`` honours ``offset`` the way Telegram does: updates
below the offset are confirmed and dropped for good; the rest are delivered again until
confirmed. Tests push messages with `send_text` and read what the bot sent in `sent`.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

TOKEN = "123456:TEST-token-abcdefghijklmnopqrstuvwx"
BOT_ID = 123456


class FakeTelegram:
    """The fake server; use as a context manager. ``base_url`` is what RHEO_TELEGRAM_API takes."""

    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.lock = threading.Condition()
        self.updates: list[dict[str, Any]] = []
        self.next_update_id = 1000
        self.next_message_id = 1
        self.sent: list[dict[str, Any]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.confirmed_below = 0
        self.drop_next_get_updates = 0
        self.refuse_html = False
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode()
                fields = {k: v[0] for k, v in parse_qs(body, keep_blank_values=True).items()}
                params: dict[str, Any] = {}
                for key, value in fields.items():
                    try:
                        params[key] = json.loads(value)
                    except ValueError:
                        params[key] = value
                _, _, rest = self.path.partition("/bot")
                token, _, method = rest.partition("/")
                if token != fake.token:
                    self.reply(401, {"ok": False, "error_code": 401, "description": "Unauthorized"})
                    return
                fake.calls.append((method, params))
                if method == "getUpdates" and fake.drop_next_get_updates:
                    fake.drop_next_get_updates -= 1
                    self.close_connection = True
                    self.connection.close()  # a dropped network, mid-request
                    return
                status, payload = fake.answer(method, params)
                self.reply(status, payload)

            def reply(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}/bot"

    def __enter__(self) -> FakeTelegram:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def send_text(self, chat_id: int, text: str, *, user_id: int | None = None) -> int:
        """A person writes ``text`` in chat ``chat_id``; returns the update id."""
        with self.lock:
            update_id = self.next_update_id
            self.next_update_id += 1
            self.updates.append(
                {
                    "update_id": update_id,
                    "message": {
                        "message_id": self.next_message_id,
                        "date": int(time.time()),
                        "chat": {"id": chat_id, "type": "private", "first_name": "Ann"},
                        "from": {"id": user_id or chat_id, "is_bot": False, "first_name": "Ann"},
                        "text": text,
                    },
                }
            )
            self.next_message_id += 1
            self.lock.notify_all()
            return update_id

    def texts_to(self, chat_id: int) -> list[str]:
        """What the bot sent to ``chat_id``, in order."""
        return [m["text"] for m in self.sent if m["chat_id"] == chat_id]

    def answer(self, method: str, params: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        bot = {"id": BOT_ID, "is_bot": True, "first_name": "rheo", "username": "rheo_test_bot"}
        if method == "getMe":
            return 200, {"ok": True, "result": bot}
        if method == "getUpdates":
            offset = int(params.get("offset") or 0)
            timeout = float(params.get("timeout") or 0)
            deadline = time.monotonic() + min(timeout, 2.0)
            with self.lock:
                if offset:
                    self.confirmed_below = max(self.confirmed_below, offset)
                    self.updates = [u for u in self.updates if u["update_id"] >= offset]
                while not self.updates and time.monotonic() < deadline:
                    self.lock.wait(deadline - time.monotonic())
                return 200, {"ok": True, "result": list(self.updates)}
        if method == "sendMessage":
            text = str(params.get("text", ""))
            if len(text) > 4096:
                return 400, {
                    "ok": False,
                    "error_code": 400,
                    "description": "Bad Request: message is too long",
                }
            if params.get("parse_mode") == "HTML" and self.refuse_html:
                return 400, {
                    "ok": False,
                    "error_code": 400,
                    "description": "Bad Request: can't parse entities: unsupported start tag",
                }
            chat_id = int(params["chat_id"])
            message = {
                "chat_id": chat_id,
                "text": text,
                "parse_mode": params.get("parse_mode"),
            }
            with self.lock:
                self.sent.append(message)
                self.next_message_id += 1
                result = {
                    "message_id": self.next_message_id,
                    "date": int(time.time()),
                    "chat": {"id": chat_id, "type": "private"},
                    "from": bot,
                    "text": text,
                }
            return 200, {"ok": True, "result": result}
        if method in ("sendChatAction", "close", "logOut", "deleteWebhook"):
            return 200, {"ok": True, "result": True}
        return 404, {"ok": False, "error_code": 404, "description": "Not Found"}
