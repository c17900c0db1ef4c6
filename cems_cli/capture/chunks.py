"""The open chunk of a session and the builder that feeds it transcript lines and closes it into a `Chunk`.

Chunk boundaries depend only on the transcript's content, and the builder's state round-trips through JSON
exactly (see `cems_cli.capture.observations`)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cems_cli.capture.command_kinds import _relative
from cems_cli.capture.digests import _digest, _render, _session_summary
from cems_cli.capture.error_lines import ERROR_CHARS, error_line
from cems_cli.capture.extract import (
    DENIED_RULE,
    DENIED_USER,
    FAILED,
    NOT_RUN,
    denial_reason,
    tool_outcome,
)
from cems_cli.capture.observations import (
    EDIT_TOOLS,
    NO_OBSERVE_MARKER,
    Chunk,
    Limits,
    _inspects,
    clip,
    command_key,
)
from cems_cli.capture.transcript import AssistantText, Line, Prompt, ToolCall, ToolOutput
from cems_cli.project import project_for_dir

STATE_VERSION = 2
_MAX_LIST = {
    "prompts": 3,
    "changed": 15,
    "read": 10,
    "commands": 10,
    "errors": 5,
    "learnings": 3,
    "blocked": 5,
    "denied": 5,
    "succeeded": 32,
    "fixed": 16,
}
_MAX_OPEN_TOOLS = 64
_MAX_FAILING = 16
_FAILURE = re.compile(
    r"Traceback \(most recent call last\)|^FAILED |\b\d+ failed\b|^fatal: |^error(?:\[\w+\])?: ", re.M
)
# Programs whose subcommands are the project's own targets: a failing `make test` and a passing
# `make test-db` are variants of one action; `alembic upgrade` and `alembic stamp` are not.
_VARIANT_PROGRAMS = frozenset("make just task npm pnpm yarn bun".split())
_WORD = re.compile(r"[^\s'\"]+")


def _variant(worked: str, failed: str) -> bool:
    """Whether the command that worked is a variant of the one that failed (`pytest` / `python -m pytest`,
    `make test` / `make test-db`), not another command of the same program: half the words of the shorter
    are in the other. `ssh host "ps aux | grep x"` failing and `ssh host "uci show wireguard"` working
    share a command key (the program and its host), and "worked instead" then told a later session a
    remedy that was only the next thing the agent ran (95 of 286 memories of a set of real sessions)."""
    a, b = set(_WORD.findall(worked)), set(_WORD.findall(failed))
    return bool(a and b) and len(a & b) >= 0.5 * min(len(a), len(b))


@dataclass
class _Open:
    """State of the chunk being gathered; plain JSON types only (it is stored with the file offset)."""

    session_id: str = ""
    cwd: str = ""
    project: str | None = None
    branch: str = ""
    sidechain: bool = False
    first_at: str = ""
    last_at: str = ""
    continued: bool = False
    active: bool = False  # anything beyond prompts happened
    prompts: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    learnings: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)  # denied by a rule: "`cmd` (reason)"
    denied: list[str] = field(default_factory=list)  # refused by the user
    succeeded: list[str] = field(default_factory=list)  # Bash commands that ran without failing
    fixed: list[str] = field(default_factory=list)  # commands that failed, then passed
    answer: str = ""  # the final answer's text, for decisions
    line: int = 0  # transcript line where the turn starts
    blocked_times: dict[str, int] = field(default_factory=dict)  # blocked item → attempts in this turn
    message_line: int = 0  # transcript line of the assistant message being gathered
    conclusion_line: int = 0  # … and of the answer (the last message): a finding's provenance
    more: dict[str, int] = field(default_factory=dict)  # items past a list's cap
    tool_counts: dict[str, int] = field(default_factory=dict)
    tools: int = 0
    changes: int = 0  # file-changing tool calls, the evidence that a failure was fixed
    message_id: str = ""
    message_text: str = ""
    message_seen: list[str] = field(default_factory=list)  # digests of blocks already taken from it
    conclusion: str = ""
    open_tools: dict[str, list[str]] = field(default_factory=dict)  # tool id → [name, label]
    failing: dict[str, list[Any]] = field(default_factory=dict)  # command key → [command, error, changes]
    render: list[str] = field(default_factory=list)
    render_chars: int = 0

    def add(self, list_name: str, item: str) -> None:
        items: list[str] = getattr(self, list_name)
        if not item or item in items:
            return
        if len(items) >= _MAX_LIST[list_name]:
            self.more[list_name] = self.more.get(list_name, 0) + 1
            return
        items.append(item)

    def note(self, line: str) -> None:
        self.render.append(line)
        self.render_chars += len(line) + 1


class ChunkBuilder:
    """Folds a file's lines into closed chunks; `state()`/`ChunkBuilder(state=…)` persist what is open."""

    def __init__(
        self,
        limits: Limits | None = None,
        state: dict[str, Any] | None = None,
        ignore_under: Path | None = None,
    ) -> None:
        self.limits = limits or Limits()
        self._ignore_under = str(ignore_under.resolve()) if ignore_under else None
        self.ignored: str | None = None
        self._open: _Open | None = None
        # The caller sets this to the (1-based) transcript line it is about to feed: provenance only.
        self.line_no = 0
        if state and state.get("v") == STATE_VERSION:
            self.ignored = state.get("ignored")
            if state.get("open"):
                self._open = _Open(**state["open"])

    # -- persistence

    def state(self) -> dict[str, Any] | None:
        if self._open is None and self.ignored is None:
            return None
        return {
            "v": STATE_VERSION,
            "ignored": self.ignored,
            "open": asdict(self._open) if self._open else None,
        }

    @property
    def has_open(self) -> bool:
        return self._open is not None

    # -- folding

    def feed(self, line: Line) -> list[Chunk]:
        if self.ignored or not line.events:
            return []
        reason = self._ignore_reason(line)
        if reason:
            self.ignored, self._open = reason, None
            return []
        closed: list[Chunk] = []
        if (
            self._open
            and line.session_id
            and self._open.session_id
            and line.session_id != self._open.session_id
        ):
            closed.extend(self._close())
        for event in line.events:
            if isinstance(event, Prompt):
                if self._open and self._open.active:
                    closed.extend(self._close())
                chunk = self._open or self._start(line, continued=False)
                chunk.add("prompts", clip(event.text, 1000))
                chunk.note(f"User: {clip(event.text, 2000, one_line=False)}")
            else:
                chunk = self._open or self._start(line, continued=True)
                chunk.active = True
                if isinstance(event, AssistantText):
                    self._assistant_text(chunk, event)
                elif isinstance(event, ToolCall):
                    self._tool_call(chunk, event)
                elif isinstance(event, ToolOutput):
                    self._tool_output(chunk, event)
            chunk.last_at = line.timestamp or chunk.last_at
            chunk.first_at = chunk.first_at or line.timestamp
            chunk.branch = chunk.branch or line.branch
            if (
                chunk.render_chars >= self.limits.chunk_max_chars
                or chunk.tools >= self.limits.chunk_max_tools
            ):
                closed.extend(self._split())
        return closed

    def flush(self) -> list[Chunk]:
        """Close the open chunk now (the session went idle, or its file was truncated or removed)."""
        return self._close()

    def _ignore_reason(self, line: Line) -> str | None:
        if self._ignore_under and line.cwd:
            cwd = line.cwd.rstrip("/")
            if cwd == self._ignore_under or cwd.startswith(self._ignore_under + "/"):
                return "its working directory is inside CEMS_HOME"
        for event in line.events:
            if isinstance(event, Prompt) and NO_OBSERVE_MARKER in event.text:
                return f"it carries the {NO_OBSERVE_MARKER} marker"
        return None

    def _start(self, line: Line, *, continued: bool) -> _Open:
        self._open = _Open(
            session_id=line.session_id,
            cwd=line.cwd,
            branch=line.branch,
            project=project_for_dir(line.cwd) if line.cwd else None,
            sidechain=line.sidechain,
            continued=continued,
            line=self.line_no,
        )
        return self._open

    def _assistant_text(self, chunk: _Open, event: AssistantText) -> None:
        if event.message_id != chunk.message_id or not event.message_id:
            self._finish_message(chunk)
            chunk.message_id = event.message_id
            chunk.message_line = self.line_no
        # Some versions repeat a response's blocks on later lines of the same message: take each once.
        seen = hashlib.blake2b(event.text.encode("utf-8", "replace"), digest_size=8).hexdigest()
        if seen in chunk.message_seen:
            return
        chunk.message_seen.append(seen)
        text = clip(event.text, 1500, one_line=False)
        chunk.message_text = clip(f"{chunk.message_text}\n{text}".strip(), 1500, one_line=False)
        chunk.note(f"Assistant: {text}")

    def _finish_message(self, chunk: _Open) -> None:
        if chunk.message_text:
            chunk.conclusion = chunk.message_text
            chunk.conclusion_line = chunk.message_line
        chunk.message_text, chunk.message_seen = "", []

    def _tool_call(self, chunk: _Open, event: ToolCall) -> None:
        if event.tool_id and event.tool_id in chunk.open_tools:
            return  # the same call written twice
        # What the agent said before a tool call is narration on the way ("Let me check…", an agent's
        # THOUGHT), not the turn's answer: only text after the last call is (findings, decisions).
        chunk.message_text, chunk.message_seen, chunk.conclusion = "", [], ""
        chunk.tools += 1
        chunk.tool_counts[event.name] = chunk.tool_counts.get(event.name, 0) + 1
        label = self._tool_label(chunk, event)
        if event.tool_id:
            chunk.open_tools[event.tool_id] = [event.name, label]
            while len(chunk.open_tools) > _MAX_OPEN_TOOLS:
                chunk.open_tools.pop(next(iter(chunk.open_tools)))
        chunk.note(f"Tool {event.name}: {label}" if label else f"Tool {event.name}")

    def _tool_label(self, chunk: _Open, event: ToolCall) -> str:
        data = event.input
        if event.name in EDIT_TOOLS:
            path = clip(_relative(str(data.get(EDIT_TOOLS[event.name]) or ""), chunk.cwd), 200)
            chunk.changes += 1
            chunk.add("changed", path)
            return path
        if event.name == "Read":
            path = clip(_relative(str(data.get("file_path") or ""), chunk.cwd), 200)
            chunk.add("read", path)
            return path
        if event.name == "Bash":
            # Listed once its outcome is known: a command a rule blocked did not run.
            return clip(str(data.get("command") or ""), 200)
        for key in ("pattern", "query", "url", "description", "prompt", "path"):
            value = data.get(key)
            if isinstance(value, str) and value.strip():
                return clip(value, 200)
        return ""

    def _tool_output(self, chunk: _Open, event: ToolOutput) -> None:
        name, label = chunk.open_tools.pop(event.tool_id, ["tool", ""])
        outcome = tool_outcome(event.text, event.is_error)
        what = label or name
        if outcome == DENIED_RULE:
            reason = clip(denial_reason(event.text), 200)
            item = f"`{what}` ({reason})" if reason else f"`{what}`"
            chunk.add("blocked", item)
            if item in chunk.blocked:
                chunk.blocked_times[item] = chunk.blocked_times.get(item, 0) + 1
            chunk.note(f"Blocked by a rule: {reason}")
            return
        if outcome == DENIED_USER:
            chunk.add("denied", what)
            chunk.note("Refused by the user.")
            return
        if outcome == NOT_RUN:
            chunk.note("The client could not start it.")
            return
        failed = outcome == FAILED or (name == "Bash" and _FAILURE.search(event.text) is not None)
        if name == "Bash" and label:
            chunk.add("commands", label)
        if failed:
            message = clip(error_line(event.text), ERROR_CHARS)
            chunk.add("errors", f"{label}: {message}" if label else message)
            chunk.note(f"Error: {clip(event.text, 600, one_line=False)}")
            if name == "Bash" and label:
                key = command_key(label)
                if key and key not in chunk.failing and len(chunk.failing) < _MAX_FAILING:
                    chunk.failing[key] = [
                        label, message, chunk.changes, len(chunk.changed), len(chunk.succeeded)
                    ]
            return
        if name == "Bash" and label:
            chunk.add("succeeded", label)
            self._maybe_learning(chunk, label)
        if name in EDIT_TOOLS or name == "Read":
            return  # file contents and edit confirmations: the path in the tool line says enough
        if event.text.strip():
            chunk.note(f"Result: {clip(event.text, 400, one_line=False)}")

    def _maybe_learning(self, chunk: _Open, command: str) -> None:
        """A command that failed, then passed after files were changed, after another command ran (a
        container started, a key added, a migration stamped), or a variant of it that worked: a fix worth
        remembering, with the exact error (what a later search will contain)."""
        key = command_key(command)
        failure = chunk.failing.pop(key, None)
        if failure is None and not _inspects(command):
            # A variant: another target of the same runner (`make test` failed, `make test-db` worked).
            program = key.split(" ", 1)[0]
            variant = next(
                (k for k in chunk.failing if program in _VARIANT_PROGRAMS and k.split(" ", 1)[0] == program),
                None,
            )
            failure = chunk.failing.pop(variant, None) if variant else None
        if failure is None:
            return
        first_command, error, changes_then, changed_index = failure[:4]
        # Failures recorded before the list of commands that ran since was kept: none known.
        succeeded_then = failure[4] if len(failure) > 4 else len(chunk.succeeded)
        chunk.add("fixed", first_command)  # it passes now, whatever the reason: not "still failing"
        where = f" in {chunk.project.removeprefix('project:')}" if chunk.project else ""
        actions = [
            c for c in chunk.succeeded[succeeded_then:]
            if c != command and command_key(c) != key and not _inspects(c)
        ]
        if chunk.changes > changes_then:
            files = chunk.changed[changed_index:] or chunk.changed[-3:]
            fix = f" after changes to {', '.join(files[:5])}" if files else " after code changes"
            learning = f'`{first_command}` failed{where} with "{error}"; it passed{fix}.'
        elif command_key(command) != command_key(first_command) or (
            command != first_command and not actions
        ):
            if not _variant(command, first_command):
                return  # another command, not a remedy: the session record keeps the error
            learning = f'`{first_command}` failed{where} with "{error}"; `{command}` worked instead.'
        elif actions:
            learning = (
                f'`{first_command}` failed{where} with "{error}"; it passed after running `{actions[-1]}`.'
            )
        else:
            return  # passed again with nothing done in between: flaky, not evidence of a fix
        chunk.add("learnings", learning)

    # -- closing

    def _split(self) -> list[Chunk]:
        previous = self._open
        carried: dict[str, Any] = {}
        if previous is not None:
            # A long turn split in parts: what the agent is saying now may still be its answer, which
            # belongs to the part that ends the turn; a part cut mid-turn has no answer of its own.
            carried = {
                "message_id": previous.message_id,
                "message_line": previous.message_line,
                "message_text": previous.message_text,
                "message_seen": list(previous.message_seen),
            }
            previous.message_text, previous.message_seen, previous.conclusion = "", [], ""
        closed = self._close()
        if previous is not None:
            # The rest of the turn continues under the same request.
            self._open = _Open(
                session_id=previous.session_id,
                cwd=previous.cwd,
                project=previous.project,
                branch=previous.branch,
                sidechain=previous.sidechain,
                continued=True,
                prompts=list(previous.prompts),
                open_tools=dict(previous.open_tools),
                failing=dict(previous.failing),
                **carried,
            )
        return closed

    def _close(self) -> list[Chunk]:
        chunk, self._open = self._open, None
        if chunk is None:
            return []
        self._finish_message(chunk)
        if not chunk.active and (not chunk.prompts or all(p.startswith("/") for p in chunk.prompts)):
            return []  # a bare slash command (/clear, /cost…) or nothing at all
        return [
            Chunk(
                session_id=chunk.session_id,
                project=chunk.project,
                branch=chunk.branch,
                first_at=chunk.first_at,
                last_at=chunk.last_at,
                text=_render(chunk),
                observations=_digest(chunk),
                session=_session_summary(chunk),
                sidechain=chunk.sidechain,
                line=chunk.line,
            )
        ]
