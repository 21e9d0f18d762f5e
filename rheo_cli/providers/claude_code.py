"""Claude Code headless (``claude -p``): chat on a Claude subscription without an API key.

Each call runs::

    claude -p --output-format stream-json --verbose --include-partial-messages
           --tools "" --strict-mcp-config --setting-sources "" --no-session-persistence
           --disable-slash-commands --system-prompt-file FILE [--model M]
           [--mcp-config FILE --allowedTools mcp__rheo]

with the message on stdin, in a private empty folder (0700) so Claude Code never reads or
edits the person's files. Why each part (checked against Claude Code 2.1.197 and 2.1.332):

- ``--tools ""``: every built-in tool off (no shell, no file edits, no web).
- ``--strict-mcp-config``: the person's own MCP servers stay out; only rheo's is offered.
- ``--setting-sources ""``: no user, project or local settings, so the person's hooks,
  enabled plugins, CLAUDE.md files and permission rules never run inside rheo's calls. A
  subscription (OAuth) login still works: its credentials are not settings (``--bare``
  would refuse them).
- ``--no-session-persistence``: no transcript of rheo's context under ``~/.claude/projects``.
- ``--disable-slash-commands``: no skills.
- ``--system-prompt-file``: rheo's system prompt of any size (a command-line argument stops
  at 128 KB), written 0600 in the private folder and removed after the call.
- ``--mcp-config`` + ``--allowedTools mcp__rheo``: rheo's memory server (``rheo mcp``), every
  one of its tools allowed; its entry says ``"alwaysLoad": true`` so the tools are there on
  the first request (Claude Code otherwise connects servers without waiting).

And in its environment: ``CLAUDE_CODE_DISABLE_AUTO_MEMORY=1`` (no auto-memory read or
written), ``MCP_CONNECTION_NONBLOCKING=false`` (wait for rheo's server),
``CLAUDE_CODE_MAX_RETRIES=2`` (rheo's own retry policy) and
``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` (no telemetry, error reports or update checks)
unless the person set these last two themselves. Background extraction and digests get no
MCP server at all (``tools=False``), and neither does a turn whose request offers no tools
(``--incognito``: the Anthropic API gets no tools then either). The events are read by
`claude_code_events`.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from .base import ChatRequest, Event, Finished, ProviderError, TextDelta, Usage
from .claude_code_events import StreamState, failure, kind_of
from .retry import one_line

SERVER_NAME = "rheo"
"""rheo's entry in the MCP configuration it writes; ``mcp__rheo`` allows all its tools."""

CHILD_ENV = {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1", "MCP_CONNECTION_NONBLOCKING": "false"}
"""Set in Claude Code's environment for every call rheo makes."""
CHILD_ENV_DEFAULTS = {
    "CLAUDE_CODE_MAX_RETRIES": "2",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}
"""Set unless the person's environment already sets them."""


class ClaudeCodeProvider:
    """`Provider` running the ``claude`` executable (``command``) once per call.

    ``workdir``: the private folder it runs in (created 0700); ``timeout_s``: seconds without
    output before the call is stopped and reported; ``mcp_config``: the person's own file
    passed as ``--mcp-config`` instead of rheo's server; ``memory_server``: how to start
    rheo's MCP server (a `factory.MemoryServer`), offered with all its tools allowed. With
    neither, Claude Code gets no MCP server (extraction and digests). Model ``default``
    leaves the model to Claude Code. The request's tools are not offered as such (Claude
    Code runs its own tool loop over MCP), but a request with none — a turn that is not
    stored: ``--incognito``, or a ledger that cannot be written — gets no MCP server either,
    so nothing said in it can be written to memory through one.
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
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.command = command
        self.workdir = workdir
        self.timeout_s = timeout_s
        self.mcp_config = mcp_config
        self.memory_server = memory_server
        self.environ = environ
        """The environment Claude Code starts from (None: this process's)."""
        self.on_retry: Callable[[str], None] | None = None
        """Told of Claude Code's own retries that wait 2 s or more."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._prompt_file: Path | None = None

    def close(self) -> None:
        """Stop a call still running — Claude Code and what it started (its MCP servers),
        its whole process group — and remove its prompt file (idempotent)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: start_new_session
            with contextlib.suppress(OSError):
                proc.kill()
            with contextlib.suppress(Exception):
                proc.wait(timeout=5)
        prompt, self._prompt_file = self._prompt_file, None
        if prompt is not None:
            with contextlib.suppress(OSError):
                prompt.unlink()

    def argv(self, request: ChatRequest, executable: str, prompt_file: Path) -> list[str]:
        """The command line for ``request``, whose system prompt is in ``prompt_file`` (the
        message itself goes to stdin)."""
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
            "--setting-sources",
            "",
            "--no-session-persistence",
            "--disable-slash-commands",
            "--system-prompt-file",
            str(prompt_file),
        ]
        if request.model and request.model != "default":
            args += ["--model", request.model]
        if not request.tools:
            return args  # a turn that offers no tools (not stored: --incognito) gets no server
        if self.mcp_config:
            args += ["--mcp-config", self.mcp_config]
        elif self.memory_server is not None:
            args += ["--mcp-config", str(self._memory_config())]
            args += ["--allowedTools", f"mcp__{SERVER_NAME}"]
        return args

    def child_env(self) -> dict[str, str]:
        """Claude Code's environment: rheo's (or ``environ``) with `CHILD_ENV` and, where
        the person has not set them, `CHILD_ENV_DEFAULTS`."""
        env = dict(os.environ if self.environ is None else self.environ)
        for name, value in CHILD_ENV_DEFAULTS.items():
            env.setdefault(name, value)
        env.update(CHILD_ENV)
        return env

    def _memory_config(self) -> Path:
        """Write the MCP configuration naming rheo's memory server (0600, in the private
        working folder) and return its path."""
        server = self.memory_server
        config = {
            "mcpServers": {
                SERVER_NAME: {
                    "type": "stdio",
                    "command": server.argv[0],
                    "args": list(server.argv[1:]),
                    "env": dict(server.env),
                    "alwaysLoad": True,
                }
            }
        }
        self._ensure_workdir()
        path = self.workdir / "rheo-mcp.json"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(config, handle)
        return path

    def _write_prompt(self, request: ChatRequest) -> Path:
        """The system prompt in a new private file (0600) of the working folder."""
        self._ensure_workdir()
        fd, name = tempfile.mkstemp(prefix="system-", suffix=".txt", dir=self.workdir)
        with os.fdopen(fd, "wb") as handle:
            handle.write(system_text(request).encode("utf-8", "replace"))
        self._prompt_file = Path(name)
        return self._prompt_file

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
        env = self.child_env()
        executable = shutil.which(self.command, path=env.get("PATH"))
        if not executable:
            raise ProviderError(
                "unavailable",
                f"the '{self.command}' command (Claude Code) is not on PATH: install Claude Code "
                "or choose another provider (see 'rheo providers')",
            )
        try:
            args = self.argv(request, executable, self._write_prompt(request))
            proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=str(self.workdir),
                env=env,
                start_new_session=True,  # Ctrl-C reaches rheo, which stops the child itself
            )
        except OSError as exc:
            self.close()
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
        model). Raises ProviderError: ``unavailable`` (no binary), ``auth`` (a refused key,
        or logged out: at Claude Code's first retry of a 401, not after its retries),
        ``rate_limit``/``overloaded``/``server`` (after Claude Code's retries), ``timeout``,
        ``malformed`` (output that is not stream-json), ``other`` (non-zero exit)."""
        proc = self._start(request)
        assert proc.stdout is not None and proc.stderr is not None
        lines: queue.Queue[bytes | None] = queue.Queue()
        stderr: list[bytes] = []
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        errors = threading.Thread(target=_collect, args=(proc.stderr, stderr), daemon=True)
        errors.start()
        state = StreamState(model=request.model, on_retry=self.on_retry)
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
                raise _exit_error(code, stderr, self.command, state)
            failed = state.result_error(code)
            if failed is not None:
                raise failed
            message = str(state.result.get("result") or "")
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


def _exit_error(code: int, stderr: list[bytes], command: str, state: StreamState) -> ProviderError:
    """The failure of a run that ended without a result event: its last stderr line."""

    last = ""
    text = b"".join(stderr).decode("utf-8", "replace").strip()
    if text:
        last = one_line(text.splitlines()[-1], 200)
    if last and kind_of(None, "", last) == "auth":
        return failure("auth", last, status=None, key_source=state.key_source)
    if code != 0:
        return ProviderError(
            "other", f"{command} exited with status {code}" + (f": {last}" if last else "")
        )
    return ProviderError("malformed", "Claude Code ended without a result event")


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
