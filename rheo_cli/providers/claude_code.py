"""Claude Code headless (``claude -p``): chat on a Claude subscription without an API key.

Each call runs::

    claude -p --output-format stream-json --verbose --include-partial-messages
           --tools "" --strict-mcp-config --system-prompt <rheo's system prompt>
           [--model M] [--mcp-config FILE]

with the message on stdin, in a private empty folder (0700) so Claude Code never reads or
edits the person's files: ``--tools ""`` turns every built-in tool off and
``--strict-mcp-config`` keeps the person's own MCP servers out. The stream-json events are
``system``/``init`` (the model), ``stream_event`` (Messages-API stream events: text deltas),
``assistant`` (whole messages) and a final ``result`` (``is_error``, ``result``, ``usage``,
``total_cost_usd``, ``stop_reason``: ``max_tokens`` when the reply was cut at Claude Code's
output limit, which ``CLAUDE_CODE_MAX_OUTPUT_TOKENS`` sets). rheo's memory tools will reach
it through rheo's MCP server (``mcp_config``); until then it chats without tools.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from .base import ChatRequest, Event, Finished, ProviderError, TextDelta, Usage
from .retry import one_line

MEMORY_TOOLS = ("write_memory", "memory_search", "memory_list", "chat_search", "chat_recent")
"""rheo's MCP tools Claude Code may call without asking (``mcp__rheo__<name>``)."""

_LOGGED_OUT = ("/login", "not logged in", "invalid api key", "authentication", "oauth token")
_LIMITED = ("rate limit", "usage limit", "limit reached", "overloaded")


class ClaudeCodeProvider:
    """`Provider` running the ``claude`` executable (``command``) once per call.

    ``workdir``: the private folder it runs in (created 0700); ``timeout_s``: seconds without
    output before the call is stopped and reported; ``mcp_config``: a file passed as
    ``--mcp-config`` (for rheo's MCP server, later). Model ``default`` leaves the model to
    Claude Code. Tools in the request are not offered (it runs with tools off).
    """

    name = "claude-code"

    def __init__(
        self,
        *,
        command: str = "claude",
        workdir: Path,
        timeout_s: float = 120.0,
        mcp_config: str | None = None,
        memory_server: Any = None,
    ) -> None:
        self.command = command
        self.workdir = workdir
        self.timeout_s = timeout_s
        self.mcp_config = mcp_config
        self.memory_server = memory_server
        """A `factory.MemoryServer`: rheo's MCP server, offered to Claude Code."""
        self.on_retry: Callable[[str], None] | None = None
        """Unused: Claude Code retries by itself."""
        self._proc: subprocess.Popen[bytes] | None = None

    def close(self) -> None:
        """Stop a call still running (idempotent)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                proc.kill()
            with contextlib.suppress(Exception):
                proc.wait(timeout=5)

    def argv(self, request: ChatRequest, executable: str) -> list[str]:
        """The command line for ``request`` (the message itself goes to stdin)."""
        args = [
            executable,
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--include-partial-messages",
            "--tools",
            "",
            "--strict-mcp-config",
            "--system-prompt",
            system_text(request),
        ]
        if request.model and request.model != "default":
            args += ["--model", request.model]
        if self.mcp_config:
            args += ["--mcp-config", self.mcp_config]
        elif self.memory_server is not None:
            args += ["--mcp-config", str(self._memory_config())]
            args += ["--allowedTools", ",".join(f"mcp__rheo__{t}" for t in MEMORY_TOOLS)]
        return args

    def _memory_config(self) -> Path:
        """Write the MCP configuration naming rheo's memory server (0600, in the private
        working folder) and return its path."""
        server = self.memory_server
        config = {
            "mcpServers": {
                "rheo": {
                    "command": server.argv[0],
                    "args": list(server.argv[1:]),
                    "env": dict(server.env),
                }
            }
        }
        self._ensure_workdir()
        path = self.workdir / "rheo-mcp.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(config, handle)
        return path

    def _ensure_workdir(self) -> None:
        """Create the private working folder (0700) if needed."""
        old = os.umask(0o077)
        try:
            self.workdir.mkdir(parents=True, exist_ok=True)
        finally:
            os.umask(old)
        with contextlib.suppress(OSError):
            self.workdir.chmod(0o700)

    def _start(self, request: ChatRequest) -> subprocess.Popen[bytes]:
        executable = shutil.which(self.command)
        if not executable:
            raise ProviderError(
                "unavailable",
                f"the '{self.command}' command (Claude Code) is not on PATH: install Claude Code "
                "or choose another provider (see 'rheo providers')",
            )
        self._ensure_workdir()
        try:
            proc = subprocess.Popen(
                self.argv(request, executable),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=str(self.workdir),
                start_new_session=True,  # Ctrl-C reaches rheo, which stops the child itself
            )
        except OSError as exc:
            raise ProviderError(
                "unavailable", f"cannot run {self.command}: {exc.strerror or exc}"
            ) from None
        self._proc = proc
        assert proc.stdin is not None
        try:
            proc.stdin.write(prompt_text(request).encode("utf-8", "replace"))
            proc.stdin.close()
        except OSError:
            pass  # it exited early; its exit status and output say why
        return proc

    def stream(self, request: ChatRequest) -> Iterator[Event]:
        """Yield TextDelta events as Claude Code streams, then Finished (usage, cost,
        model). Raises ProviderError: ``unavailable`` (no binary), ``auth`` (logged out),
        ``timeout``, ``malformed`` (output that is not stream-json), ``other`` (non-zero
        exit, an error result)."""
        proc = self._start(request)
        assert proc.stdout is not None and proc.stderr is not None
        lines: queue.Queue[bytes | None] = queue.Queue()
        stderr: list[bytes] = []
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        errors = threading.Thread(target=_collect, args=(proc.stderr, stderr), daemon=True)
        errors.start()
        state = _State(model=request.model)
        try:
            while True:
                try:
                    raw = lines.get(timeout=self.timeout_s)
                except queue.Empty:
                    raise ProviderError(
                        "timeout",
                        f"Claude Code gave no output for {self.timeout_s:g} s; stopped it",
                    ) from None
                if raw is None:
                    break
                text = raw.decode("utf-8", "replace").strip()
                if not text:
                    continue
                try:
                    event = json.loads(text)
                except ValueError:
                    raise ProviderError(
                        "malformed",
                        f"Claude Code printed a line that is not stream-json: {one_line(text, 80)}",
                    ) from None
                if not isinstance(event, dict):
                    raise ProviderError(
                        "malformed",
                        f"Claude Code printed an unexpected event: {one_line(text, 80)}",
                    )
                yield from state.take(event)
            code = _wait(proc)
            errors.join(timeout=2)
            if state.result is None:
                raise _exit_error(code, stderr, self.command)
            result = state.result
            message = str(result.get("result") or "")
            if result.get("is_error") or str(result.get("subtype", "success")) != "success":
                raise _result_error(message or str(result.get("subtype")), code)
            if not state.streamed and message:
                yield TextDelta(message)
                state.text.append(message)
            yield Finished(
                stop_reason=state.stop_reason(),
                usage=state.usage(),
                model=state.model or request.model,
                content=[{"type": "text", "text": "".join(state.text)}],
            )
        finally:
            self.close()

    def complete(self, request: ChatRequest) -> tuple[str, Usage, str]:
        """One call, collected: ``(text, usage, model)``; raises like `stream`."""
        parts: list[str] = []
        usage, model = Usage(), request.model
        for event in self.stream(request):
            if isinstance(event, TextDelta):
                parts.append(event.text)
            elif isinstance(event, Finished):
                usage, model = event.usage, event.model
        return "".join(parts), usage, model


class _State:
    """What the events said so far: model, text streamed or whole, the result event."""

    def __init__(self, model: str) -> None:
        self.model = "" if model == "default" else model
        self.text: list[str] = []
        self.streamed = False
        self.partial_in_message = False
        self.result: dict[str, Any] | None = None
        self.last_stop = ""
        """The stop reason of the last model message streamed (``message_delta``)."""

    def take(self, event: dict[str, Any]) -> Iterator[TextDelta]:
        kind = event.get("type")
        if kind == "system" and event.get("subtype") == "init":
            self.model = str(event.get("model") or self.model)
        elif kind == "stream_event":
            inner = event.get("event") or {}
            delta = inner.get("delta") or {} if isinstance(inner, dict) else {}
            if not isinstance(delta, dict):
                delta = {}
            if isinstance(inner, dict) and inner.get("type") == "message_delta":
                self.last_stop = str(delta.get("stop_reason") or "")
            if delta.get("type") == "text_delta":
                piece = str(delta.get("text") or "")
                if piece:
                    self.streamed = self.partial_in_message = True
                    self.text.append(piece)
                    yield TextDelta(piece)
        elif kind == "assistant":
            message = event.get("message") or {}
            synthetic = event.get("error") or message.get("model") == "<synthetic>"
            if not synthetic:
                self.model = str(message.get("model") or self.model)
            # An error (e.g. logged out) comes as a synthetic message: the result reports it.
            if not self.partial_in_message and not synthetic:  # no deltas: show it whole
                for block in message.get("content") or []:
                    if isinstance(block, dict) and block.get("type") == "text" and block["text"]:
                        self.streamed = True
                        self.text.append(str(block["text"]))
                        yield TextDelta(str(block["text"]))
            self.partial_in_message = False
        elif kind == "result":
            self.result = event

    def stop_reason(self) -> str:
        """``max_tokens`` when the reply stopped at the output token limit — as the result's
        ``stop_reason`` says or, without it, the last streamed message's — else ``end_turn``
        (Claude Code runs its own tool loop: what reaches rheo is the end of it)."""
        said = (self.result or {}).get("stop_reason")
        reason = said if isinstance(said, str) and said else self.last_stop
        return "max_tokens" if reason == "max_tokens" else "end_turn"

    def usage(self) -> Usage:
        result = self.result or {}
        raw = result.get("usage") or {}
        cost = result.get("total_cost_usd")
        return Usage(
            input_tokens=_int(raw.get("input_tokens")),
            output_tokens=_int(raw.get("output_tokens")),
            cache_read_tokens=_int(raw.get("cache_read_input_tokens")),
            cache_write_tokens=_int(raw.get("cache_creation_input_tokens")),
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
        )


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _pump(stream: IO[bytes], out: queue.Queue[bytes | None]) -> None:
    try:
        for line in iter(stream.readline, b""):
            out.put(line)
    except (OSError, ValueError):
        pass
    finally:
        out.put(None)


def _collect(stream: IO[bytes], out: list[bytes]) -> None:
    with contextlib.suppress(OSError, ValueError):
        out.append(stream.read(64 * 1024))


def _wait(proc: subprocess.Popen[bytes]) -> int:
    deadline = time.monotonic() + 10
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    code = proc.poll()
    return code if code is not None else -1


def _exit_error(code: int, stderr: list[bytes], command: str) -> ProviderError:
    last = ""
    text = b"".join(stderr).decode("utf-8", "replace").strip()
    if text:
        last = one_line(text.splitlines()[-1], 200)
    if any(word in last.lower() for word in _LOGGED_OUT):
        return _result_error(last, code)
    if code != 0:
        return ProviderError(
            "other", f"{command} exited with status {code}" + (f": {last}" if last else "")
        )
    return ProviderError("malformed", "Claude Code ended without a result event")


def _result_error(message: str, code: int) -> ProviderError:
    said = one_line(message, 200) or "no message"
    lowered = said.lower()
    if any(word in lowered for word in _LOGGED_OUT):
        return ProviderError(
            "auth", f"Claude Code is not logged in: run 'claude' and /login (it said: {said})"
        )
    if any(word in lowered for word in _LIMITED):
        return ProviderError("rate_limit", f"Claude Code hit a limit: {said}")
    return ProviderError("other", f"Claude Code failed (status {code}): {said}")


def system_text(request: ChatRequest) -> str:
    """The system prompt: the blocks in order, stable first."""
    return "\n\n".join(b.text.strip("\n") for b in request.system if b.text.strip())


def prompt_text(request: ChatRequest) -> str:
    """The message sent on stdin: the text of the request's messages (a single user message
    in practice, as no tools are offered; earlier ones are labelled by role)."""
    parts = []
    for message in request.messages:
        content = message["content"]
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        text = "".join(
            str(b.get("text", ""))
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "text"
        )
        if text:
            parts.append((message["role"], text))
    if len(parts) == 1:
        return parts[0][1]
    return "\n\n".join(f"[{role}]\n{text}" for role, text in parts)
