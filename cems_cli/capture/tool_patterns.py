"""From captured tool events to `patterns` statements about a project. Pure: no I/O, no clock.

What a project's tool events say, each as one stable sentence:
* how its tests, lint, formatting, type checks, build, code generation, migrations and deploys run (a
  command of that kind that succeeded);
* how its dependencies are installed (package manager commands that succeeded);
* which files keep changing (edited in at least 4 tool calls across at least 2 sessions);
* errors and the fix that worked (a command failed, files were changed or packages installed, and the
  same command then passed, in the same session).

Each statement has a `key` (its identity within the project), a `text` derived only from the events, without
counts that grow with every event, and the `item` it names: the same events always give the same statements,
so reprocessing stores nothing new. A project keeps one memory per kind, naming its items
(`capture/pattern_rolls.py`); the worker also remembers emitted keys.

Whether a Bash call failed is inferred in `cems_cli.capture.bash_outcome`; what a command is (its kind and
canonical form) in `cems_cli.capture.command_kinds`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from cems_cli.capture.bash_outcome import bash_failed, bash_output
from cems_cli.capture.command_kinds import _MAX_CANONICAL, _relative, command_identity, parse_command
from cems_cli.capture.error_lines import error_line
from cems_cli.capture.observations import EDIT_TOOLS

# --------------------------------------------------------------------------- events


@dataclass(frozen=True)
class ToolEvent:
    """One captured tool call, as the spool holds it (already clipped and redacted)."""

    tool_use_id: str
    session_id: str
    tool_name: str
    cwd: str
    received_at: float
    failure_event: bool = False  # PostToolUseFailure
    tool_input: dict[str, Any] = field(default_factory=dict)
    tool_response: dict[str, Any] | None = None
    error: str = ""  # PostToolUseFailure's message
    interrupted: bool = False

    @classmethod
    def from_spool(
        cls,
        *,
        tool_use_id: str,
        session_id: str,
        event: str,
        tool_name: str,
        cwd: str | None,
        received_at: float,
        data: dict[str, Any],
    ) -> ToolEvent:
        tool_input = data.get("input")
        response = data.get("response")
        error = data.get("error")
        return cls(
            tool_use_id=tool_use_id,
            session_id=session_id or "",
            tool_name=tool_name,
            cwd=cwd or "",
            received_at=float(received_at),
            failure_event=event == "PostToolUseFailure",
            tool_input=tool_input if isinstance(tool_input, dict) else {},
            tool_response=response if isinstance(response, dict) else None,
            error=error if isinstance(error, str) else "",
            interrupted=data.get("interrupted") is True,
        )


@dataclass(frozen=True)
class Statement:
    key: str  # identity within the project, e.g. "test:pytest -q"
    text: str
    kind: str  # test, lint, format, typecheck, build, generate, migrate, deploy, install, tool, hot_file, fix
    session_id: str  # the session of the event that made it true
    at: float  # when that event was captured
    # What it names as the text writes it (`npm test`, "`pip install -e .` (pip)", a file): a project keeps
    # one memory per kind listing these (capture/pattern_rolls.py). Empty for a fix.
    item: str = ""


# --------------------------------------------------------------------------- statements

HOT_FILE_MIN_EDITS = 4
HOT_FILE_MIN_SESSIONS = 2
_MAX_FIX_FILES = 4
_MAX_FIX_COMMANDS = 3

_KIND_TEXT = {
    "test": "the tests run with {items}",
    "lint": "the code is linted with {items}",
    "format": "the code is formatted with {items}",
    "typecheck": "types are checked with {items}",
    "build": "the build runs with {items}",
    "generate": "code is generated with {items}",
    "migrate": "database migrations run with {items}",
    "deploy": "deploys run with {items}",
    "install": "dependencies are installed with {items}",
}


def project_label(project: str) -> str:
    return project.removeprefix("project:")


def roll_text(label: str, kind: str, items: list[str]) -> str:
    """The statement of a project's `items` of one kind (commands in code spans, an install's manager after
    its command, files): "In project api the tests run with `pytest` or `make test`."."""
    if kind == "hot_file":
        if len(items) == 1:
            return f"In project {label} the file {items[0]} changes often: it was edited in several sessions."
        return (f"In project {label} the files {_join(items)} change often: each was edited in several "
                "sessions.")
    listed = items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]
    return f"In project {label} {_KIND_TEXT[kind].format(items=listed)}."


def _edited_path(event: ToolEvent) -> str:
    name = EDIT_TOOLS.get(event.tool_name)
    if not name:
        return ""
    path = event.tool_input.get(name) or (event.tool_response or {}).get("filePath")
    return path if isinstance(path, str) else ""


def _edit_succeeded(event: ToolEvent) -> bool:
    return not (event.failure_event or event.interrupted)


@dataclass
class _Failing:
    event: ToolEvent
    error: str
    changes_at: int  # len(session changes) when it failed


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def derive_statements(project: str, events: Iterable[ToolEvent]) -> list[Statement]:
    """Every statement the events support, in a deterministic order (by the event that made each true)."""
    label = project_label(project)
    ordered = sorted(events, key=lambda e: (e.received_at, e.tool_use_id))
    found: dict[str, Statement] = {}

    def add(key: str, kind: str, text: str, event: ToolEvent, item: str = "") -> None:
        if key not in found:
            found[key] = Statement(key, text, kind, event.session_id, event.received_at, item)

    edits: dict[str, list[ToolEvent]] = {}
    changes: dict[str, list[str]] = {}  # per session: "edit:<path>" / "cmd:<canonical>", in order
    failing: dict[tuple[str, str], _Failing] = {}

    for event in ordered:
        session_changes = changes.setdefault(event.session_id, [])
        path = _edited_path(event)
        if path:
            if _edit_succeeded(event):
                session_changes.append(f"edit:{_relative(path, event.cwd)}")
                edits.setdefault(path, []).append(event)
                _hot_file(path, edits[path], label, add)
            continue
        if event.tool_name != "Bash":
            continue
        command = event.tool_input.get("command")
        if not isinstance(command, str) or not command.strip():
            continue
        segments = parse_command(command, event.cwd)
        if not segments:
            continue
        identity = command_identity(segments)
        if bash_failed(event):
            key = (event.session_id, identity)
            if key not in failing:
                failing[key] = _Failing(event, error_line(bash_output(event)), len(session_changes))
            continue
        for segment in segments:
            if segment.kind == "install" and len(segment.canonical) <= _MAX_CANONICAL:
                session_changes.append(f"cmd:{segment.text}")
                item = f"`{segment.canonical}` ({segment.manager})"
                text = roll_text(label, "install", [item])
                add(f"install:{segment.canonical}", "install", text, event, item)
            elif segment.kind in _KIND_TEXT and len(segment.canonical) <= _MAX_CANONICAL:
                item = f"`{segment.canonical}`"
                text = roll_text(label, segment.kind, [item])
                add(f"{segment.kind}:{segment.canonical}", segment.kind, text, event, item)
            elif segment.kind == "tool":
                session_changes.append(f"cmd:{segment.text}")
        fixed = failing.pop((event.session_id, identity), None)
        if fixed is not None:
            _fix(fixed, identity, session_changes, label, event, add)
    return sorted(found.values(), key=lambda s: (s.at, s.key))


# A failing command that later passed is a `learnings` memory, which the capture engine makes from the
# transcript (it knows what happened in between); every other statement is a `patterns` memory.
NOT_PATTERNS = frozenset({"fix"})


def pattern_statements(project: str, events: Iterable[ToolEvent]) -> list[Statement]:
    """The statements stored as `patterns` memories, whichever trigger saw the events: the capture worker
    (the PostToolUse hook's spooled events) and the capture engine (the commands a transcript's turn ran).
    Their texts are the same for the same command, so the store's content dedup keeps one of each."""
    return [s for s in derive_statements(project, events) if s.kind not in NOT_PATTERNS]


class _Add(Protocol):
    def __call__(self, key: str, kind: str, text: str, event: ToolEvent, item: str = "") -> None: ...


def _hot_file(path: str, edits: list[ToolEvent], label: str, add: _Add) -> None:
    sessions = {e.session_id for e in edits}
    if len(edits) >= HOT_FILE_MIN_EDITS and len(sessions) >= HOT_FILE_MIN_SESSIONS:
        item = f"`{_relative(path, edits[0].cwd)}`"
        add(f"hot_file:{path}", "hot_file", roll_text(label, "hot_file", [item]), edits[-1], item)


def _fix(
    failing: _Failing, identity: str, session_changes: list[str], label: str, event: ToolEvent, add: _Add
) -> None:
    between = session_changes[failing.changes_at :]
    files: list[str] = []
    commands: list[str] = []
    for change in between:
        kind, _, value = change.partition(":")
        target = files if kind == "edit" else commands
        if value not in target:
            target.append(value)
    if not files and not commands:
        return  # passed again with nothing changed: flaky or environmental, not a fix
    actions: list[str] = []
    if files:
        shown = files[:_MAX_FIX_FILES] + (
            [f"{len(files) - _MAX_FIX_FILES} more files"] if len(files) > _MAX_FIX_FILES else []
        )
        actions.append("editing " + _join(shown))
    if commands:
        actions.append("running " + _join([f"`{c}`" for c in commands[:_MAX_FIX_COMMANDS]]))
    digest = hashlib.sha256(f"{identity}\0{failing.error}".encode()).hexdigest()[:16]
    add(
        f"fix:{digest}",
        "fix",
        f"In project {label} `{identity}` failed with `{failing.error}`; it passed after "
        f"{' and '.join(actions)}.",
        event,
    )
