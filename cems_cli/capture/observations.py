"""From transcript lines to observations: a session cut into chunks, each chunk's digest, LLM extraction.

A *chunk* is one user request and the work that followed it: it opens at a prompt and closes at the next
prompt that follows some activity, when the session id changes, when it grows past the size limits (a long
turn becomes several chunks), or when the caller flushes it (session idle, file truncated or gone).

Chunk boundaries depend only on the transcript's content, never on when or in how many pieces it was read,
and the open chunk (the builder's state) round-trips through JSON exactly. That is what lets the observer
commit its state with each file offset and resume after a crash with the same result as one clean pass.

Everything kept is cleaned when it is captured (`<private>` blocks dropped, secrets redacted, clipped), so
the pending state and the LLM backlog stored in the database never hold what a memory may not.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cems_cli import defaults
from cems_cli.capture.error_lines import ERROR_CHARS, error_line
from cems_cli.capture.extract import (
    DENIED_RULE,
    DENIED_USER,
    FAILED,
    decision_sentences,
    denial_reason,
    finding_sentences,
    near_duplicate,
    pattern_statements,
    preference_sentences,
    request_gist,
    tool_outcome,
)
from cems_cli.capture.sessions import time_span
from cems_cli.capture.transcript import AssistantText, Line, Prompt, ToolCall, ToolOutput
from cems_cli.project import project_for_dir
from cems_cli.text.redact import redact_secrets, strip_private

SOURCE = "observer"
NO_OBSERVE_MARKER = defaults.NO_OBSERVE_MARKER
STATE_VERSION = 2
# The session's `context` memory is always the deterministic record (capture/sessions.py); the model adds
# the categories that need understanding.
LLM_CATEGORIES = ("learnings", "decisions", "patterns", "preferences")

_CHANGE_TOOLS = {
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
}
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
_SLACK = 512  # extra characters redacted past a clip point, so a secret cut in half is still recognised

_FAILURE = re.compile(
    r"Traceback \(most recent call last\)|^FAILED |\b\d+ failed\b|^fatal: |^error(?:\[\w+\])?: ", re.M
)
_SUBCOMMAND_TOOLS = frozenset(
    "npm yarn pnpm bun cargo go make just task uv poetry git docker kubectl pip alembic terraform helm gh "
    "celery prisma ansible-galaxy".split()
)
# Prefixes that change how a command runs, not what it is; launchers that run the project's tools.
_LAUNCHERS = frozenset(
    tuple(pair.split(":"))
    for pair in "uv:run poetry:run pipenv:run pdm:run hatch:run rye:run pnpm:exec bundle:exec npm:exec "
    "yarn:dlx".split()
)
_SINGLE_LAUNCHERS = frozenset("npx bunx pnpx".split())
# Commands that only look at the state of things; a retry that passes after one of these was not fixed
# by it. Programs, and subcommands of any program (`alembic current`, `helm history`, `kubectl get`).
_LOOKING_PROGRAMS = frozenset(
    "ls cat head tail less more grep rg ag find fd pwd echo printf which type whereis file stat wc tree du "
    "df ps top env printenv id whoami hostname uname date diff jq yq".split()
)
_LOOKING_SUBCOMMANDS = frozenset(
    "status log logs diff show current history heads list ls ps top images get describe version inspect "
    "ping info branch config view".split()
)
# Programs whose subcommands are the project's own targets: a failing `make test` and a passing
# `make test-db` are variants of one action; `alembic upgrade` and `alembic stamp` are not.
_VARIANT_PROGRAMS = frozenset("make just task npm pnpm yarn bun".split())


# --------------------------------------------------------------------------- records


@dataclass
class Observation:
    """A memory-to-be: what MemoryService.prepare needs, with the transcript's time of the activity."""

    text: str
    category: str
    tags: list[str]
    project: str | None
    title: str | None = None
    created_at: str | None = None  # ISO-8601 from the transcript
    session_id: str = ""
    line: int = 0  # transcript line (1-based) where the turn that produced it starts: provenance
    # Several sightings of one thing (a command a rule blocked, tried again) make one memory: the store
    # keeps one memory per `key` and counts the sightings (`count` in this turn).
    key: str = ""
    count: int = 1

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Observation:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})


@dataclass
class Chunk:
    """A closed chunk: its rendering for an LLM and its deterministic digest observations."""

    session_id: str
    project: str | None
    branch: str
    first_at: str
    last_at: str
    text: str
    observations: list[Observation]
    # What the turn adds to its session's record (capture/sessions.py): asked, changed, commands, blocked…
    session: dict[str, Any] = field(default_factory=dict)
    sidechain: bool = False
    line: int = 0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["observations"] = [o.to_json() for o in self.observations]
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Chunk:
        values = dict(data)
        values["observations"] = [Observation.from_json(o) for o in data.get("observations", [])]
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in values.items() if k in known})


@dataclass(frozen=True)
class Limits:
    chunk_max_chars: int = 8000
    chunk_max_tools: int = 40


# --------------------------------------------------------------------------- cleaning


def clip(text: str, limit: int, *, one_line: bool = True) -> str:
    """`text` as it may be kept: private blocks dropped, secrets redacted, at most `limit` characters."""
    text = strip_private(text.replace("\x00", ""))
    if len(text) > limit + _SLACK:
        text = text[: limit + _SLACK]
    text = redact_secrets(text)
    text = " ".join(text.split()) if one_line else text.strip()
    if len(text) > limit:
        text = text[: max(limit - 1, 0)].rstrip() + "…"
    # json.loads turns "\ud800" escapes into lone surrogates, which PostgreSQL cannot store.
    return text.encode("utf-8", errors="replace").decode("utf-8")


def _relative(path: str, cwd: str) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def command_key(command: str) -> str:
    """What identifies a command across retries: the program (and its subcommand for tools like npm or
    git), after `cd …&&` prefixes, environment assignments and launchers (`uv run`, `npx`, `sudo`).
    `pytest -q tests/x.py` → `pytest`; `uv run alembic upgrade head` → `alembic upgrade`."""
    from cems_cli.command.invocations import capture_commands

    # The last top-level command that is not the tail of a pipeline, wrappers such as `timeout 600` or
    # `nice -n 10` removed (`cems_cli.command.model`): `cd x && pytest -q | tail` is keyed `pytest`.
    invocations = [inv for inv in capture_commands(command) if not inv.pipe]
    words = list(invocations[-1].words) if invocations else []
    if len(words) > 1 and (words[0], words[1]) in _LAUNCHERS:
        words = words[2:]
    elif words and words[0] in _SINGLE_LAUNCHERS:
        words = words[1:]
    if not words:
        return ""
    program = words[0].rsplit("/", 1)[-1]
    if program in ("python", "python3") and len(words) > 2 and words[1] == "-m":
        return f"python -m {words[2]}"
    if program in _SUBCOMMAND_TOOLS and len(words) > 1 and not words[1].startswith("-"):
        return f"{program} {words[1]}"
    return program


def _inspects(command: str) -> bool:
    """A command that only looks (`ls`, `git status`, `alembic current`, `kubectl get`): not a fix."""
    program = command_key(command).split(" ", 1)[0]
    if program in _LOOKING_PROGRAMS:
        return True
    # The first words after the program that are not options (`celery -A app inspect ping`).
    words = command.split("&&")[-1].split("|")[0].split()
    after = words[words.index(program) + 1 :] if program in words else words[1:]
    return any(w in _LOOKING_SUBCOMMANDS for w in [w for w in after if not w.startswith("-")][:3])


# --------------------------------------------------------------------------- the open chunk


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
        if event.name in _CHANGE_TOOLS:
            path = clip(_relative(str(data.get(_CHANGE_TOOLS[event.name]) or ""), chunk.cwd), 200)
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
        if name in _CHANGE_TOOLS or name == "Read":
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


# --------------------------------------------------------------------------- digests


def session_tags(session_id: str, branch: str = "") -> list[str]:
    tags = [f"session:{session_id}"] if session_id else []
    if branch:
        tags.append(f"branch:{branch}")
    return tags


def _session_summary(chunk: _Open) -> dict[str, Any]:
    """What this turn adds to its session's record (capture/sessions.py)."""
    asked = [p for p in chunk.prompts if not p.startswith("/")]
    return {
        "project": chunk.project,
        "branch": chunk.branch,
        "first_at": chunk.first_at,
        "last_at": chunk.last_at,
        "asked": [clip(p, 200) for p in asked[:1]],
        "changed": list(chunk.changed),
        "commands": [c for c in chunk.commands if c in chunk.succeeded],
        # Ran something besides looking around (`ls`, `git status`, `kubectl get`): a turn that only looked
        # and answered leaves no record (sessions.worth_remembering).
        "acted": any(not _inspects(c) for c in chunk.commands),
        "blocked": list(chunk.blocked),
        "denied": list(chunk.denied),
        "errors": [e for e in chunk.errors if e.split(":", 1)[0] not in chunk.fixed],
        "fixed_commands": list(chunk.fixed),
        "fixes": len(chunk.learnings),
    }


def _digest(chunk: _Open) -> list[Observation]:
    """The turn's memories besides the session record: learnings, decisions, preferences, patterns, and what
    the answer found out. One memory per fact: what the prompt said and the answer repeated is kept once."""
    tags = session_tags(chunk.session_id, chunk.branch)
    found: list[Observation] = []
    seen: set[str] = set()

    def add(category: str, text: str, title: str, *, line: int = 0, key: str = "", count: int = 1) -> None:
        normal = " ".join(text.lower().split())
        if normal in seen:
            return
        seen.add(normal)
        found.append(
            Observation(
                text=text,
                category=category,
                tags=list(tags),
                project=chunk.project,
                title=clip(title, 80),
                created_at=chunk.last_at or None,
                session_id=chunk.session_id,
                line=line or chunk.line,
                key=key,
                count=count,
            )
        )

    for learning in chunk.learnings:
        add("learnings", learning, f"Fix: {learning}")
    where = f" in {chunk.project.removeprefix('project:')}" if chunk.project else ""
    for blocked in chunk.blocked:  # "`command` (reason)", see _tool_output
        # What the agent may not do here, and why: the answer to "can I force-push to main?" next week.
        command, _, reason = blocked.partition(" (")
        reason = reason.removesuffix(")")
        text = f"{command} is blocked by a rule{where}" + (f": {reason}" if reason else ".")
        # Tried again (this turn, or another session): the same memory, counted (Observer._store_counted).
        key = "blocked\n" + "\n".join((chunk.project or "", command_key(command.strip("`")), reason))
        add("learnings", text, f"Blocked: {command}", key=key, count=chunk.blocked_times.get(blocked, 1))
    prompts = [p for p in chunk.prompts if not p.startswith("/")]
    stated: list[str] = []  # what the user said, that the answer may repeat
    for prompt in prompts:
        for sentence in preference_sentences(prompt):
            add("preferences", sentence, f"Preference: {sentence}")
            stated.append(sentence)
        for sentence in decision_sentences(prompt):
            add("decisions", sentence, f"Decision: {sentence}")
            stated.append(sentence)
    for sentence in decision_sentences(chunk.conclusion):
        if any(near_duplicate(sentence, said) for said in stated):
            continue  # the user's decision, said back: one memory
        add("decisions", sentence, f"Decision: {sentence}")
    request = prompts[-1] if prompts else ""
    findings = finding_sentences(chunk.conclusion, request, [o.text for o in found])
    if findings:
        # With the request it answers, in a few words: what a later question about the same thing resembles.
        gist = request_gist(request)
        body = " ".join(findings)
        add("learnings", f"{gist} — {body}" if gist else body, f"Found: {gist or findings[0]}",
            line=chunk.conclusion_line)
    for text in pattern_statements(chunk.project, chunk.session_id, chunk.cwd, chunk.succeeded):
        add("patterns", text, text.removeprefix("In project "))
    return found


def _render(chunk: _Open) -> str:
    head = f"## Session {chunk.session_id or 'unknown'}"
    if chunk.project:
        head += f" in {chunk.project}"
    if chunk.branch:
        head += f" (branch {chunk.branch})"
    when = time_span(chunk.first_at, chunk.last_at)
    if when:
        head += f", {when}"
    if chunk.continued and chunk.prompts:
        head += f"\n(continuing the request: {chunk.prompts[-1]})"
    return "\n".join([head, *chunk.render])


# --------------------------------------------------------------------------- LLM extraction

EXTRACTION_SYSTEM = """You turn a coding agent's session transcript into long-term memories for its developer.
Answer with one JSON object: {"observations": [{"category": "...", "title": "...", "text": "..."}]}.
Categories:
- learnings: a problem and its verified cause or fix, only when the transcript shows it;
  keep the exact error text. Also what the agent found out about the project and said in its answer
  (where something is defined or configured, which file reads which setting, a config key or value, a
  version, a port), with the request it answers in a few words; also when the session only read files.
- decisions: a choice that was made and why, only when the reason is stated.
- patterns: a convention or habitual way of working in this project (how it is built, tested, run).
- preferences: how the user wants things done, only when the user said so.
A record of what the session did is kept separately: do not summarise the session.
Each text is one self-contained factual statement of at most 400 characters that names the project, files,
commands or errors involved, so a later search finds it. No speculation, no advice, no chit-chat, no
pleasantries or plans ("Done.", "Let me know if…", "I'll now…"), nothing the user asked restated. State each
fact once: a decision the user gave and the answer repeated is one observation.
Return at most 8 observations; return {"observations": []} when nothing is worth remembering."""

_MAX_OBSERVATIONS = 8


def extraction_prompt(chunks: list[Chunk]) -> str:
    body = "\n\n".join(chunk.text for chunk in chunks)
    # The marker makes a transcript of this very request (if the endpoint is itself Claude Code) unobserved.
    return f"{NO_OBSERVE_MARKER}\nTranscript excerpt:\n\n{body}"


def parse_extraction(answer: dict[str, Any] | None, chunks: list[Chunk]) -> list[Observation] | None:
    """Observations from the model's answer; None when the answer is not in the asked shape (a failure)."""
    if not isinstance(answer, dict) or not isinstance(answer.get("observations"), list):
        return None
    last = chunks[-1]
    tags: list[str] = []
    for chunk in chunks:
        for tag in session_tags(chunk.session_id, chunk.branch):
            if tag not in tags:
                tags.append(tag)
    found: list[Observation] = []
    for item in answer["observations"][:_MAX_OBSERVATIONS]:
        if not isinstance(item, dict):
            continue
        text = item.get("text")
        category = str(item.get("category") or "").strip().lower()
        if not isinstance(text, str) or not text.strip() or category not in LLM_CATEGORIES:
            continue  # a session summary or an unknown kind: the session record covers what happened
        title = item.get("title")
        found.append(
            Observation(
                text=clip(text, 1000),
                category=category,
                tags=list(tags),
                project=last.project,
                title=clip(title, 80) if isinstance(title, str) and title.strip() else None,
                created_at=last.last_at or None,
                session_id=last.session_id,
                line=chunks[0].line,
            )
        )
    return found
