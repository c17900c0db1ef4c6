"""One finished turn of a Claude Code session: its transcript delta, a digest of it, and the LLM request
that distils it into `learnings` and `decisions`.

The transcript is read with `capture.transcript` (complete lines from a byte offset, parsed defensively).
Everything taken from it is cleaned on the way in (`spool.clip`: `<private>` dropped, secrets redacted,
clipped), so neither the digest nor the text sent to a model carries what a memory may not.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from cems_cli.capture.observations import NO_OBSERVE_MARKER
from cems_cli.capture.spool import clip
from cems_cli.capture.tool_patterns import (
    command_identity,
    error_line,
    output_says_failed,
    parse_command,
    project_label,
)
from cems_cli.capture.transcript import (
    AssistantText,
    Line,
    LineReader,
    Malformed,
    Prompt,
    ToolCall,
    ToolOutput,
    parse_line,
)

MAX_DELTA_BYTES = 16 * 1024 * 1024  # a turn larger than this is read from its last 16 MiB
MAX_LINE_BYTES = 4 * 1024 * 1024
RENDER_CHARS = 12_000  # what the model is shown of a turn
_EDIT_TOOLS = {
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
}
_MAX = {"prompts": 3, "files": 15, "commands": 12, "errors": 6}
_LLM_ITEMS = 5


# --------------------------------------------------------------------------- reading the delta


@dataclass
class Delta:
    lines: list[Line]
    end: int  # offset just past the last complete line consumed: where the next turn starts
    skipped: bool = False  # the turn was too large and only its end was read


def read_delta(path: str, start: int, end: int | None) -> Delta:
    """The complete transcript lines between `start` and `end` (the file size when the turn was recorded;
    None: up to the end of the file). A file shorter than `start` was replaced: read it from 0."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if start > size:
            start = 0
        limit = size if end is None else min(end, size)
        if limit <= start:
            return Delta([], start)
        skipped = limit - start > MAX_DELTA_BYTES
        begin = limit - MAX_DELTA_BYTES if skipped else start
        reader = LineReader(handle, begin, MAX_LINE_BYTES)
        lines: list[Line] = []
        position = start
        first = True
        for raw in reader:
            if raw.end > limit:
                break
            position = raw.end
            if raw.data is None or (skipped and first):
                first = False
                continue  # an oversized line, or the tail of a line cut by the size cap
            first = False
            try:
                line = parse_line(raw.data)
            except Malformed:
                continue
            if line is not None:
                lines.append(line)
        return Delta(lines, max(position, start), skipped)


# --------------------------------------------------------------------------- what happened


@dataclass
class TurnError:
    label: str  # the command, or "Edit src/x.py"
    message: str
    identity: str
    resolved: bool = False


@dataclass
class TurnActivity:
    prompts: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    errors: list[TurnError] = field(default_factory=list)
    tools: dict[str, int] = field(default_factory=dict)
    last_text: str = ""  # the last assistant text seen in the delta
    render: list[str] = field(default_factory=list)  # the turn as lines, for the model

    @property
    def active(self) -> bool:
        return bool(self.tools or self.prompts or self.last_text)


def _one_line(text: str, limit: int) -> str:
    """Cleaned (see `spool.clip`), cut after about `limit` characters, on one line."""
    return " ".join(clip(text, limit).split())


def _relative(path: str, cwd: str) -> str:
    if cwd and path.startswith(cwd.rstrip("/") + "/"):
        return path[len(cwd.rstrip("/")) + 1 :]
    return path


def _add(items: list[str], item: str, cap: int) -> None:
    if item and item not in items and len(items) < cap:
        items.append(item)


def collect(lines: Iterable[Line], cwd: str = "") -> TurnActivity:
    """Fold a turn's transcript lines (subagent sidechains excluded) into what the digest reports."""
    activity = TurnActivity()
    calls: dict[str, tuple[str, str, str]] = {}  # tool id → (name, label, identity)
    for line in lines:
        if line.sidechain:
            continue
        for event in line.events:
            if isinstance(event, Prompt):
                _add(activity.prompts, _one_line(event.text, 500), _MAX["prompts"])
                activity.render.append(f"User: {clip(event.text, 2000)}")
            elif isinstance(event, AssistantText):
                activity.last_text = event.text
                activity.render.append(f"Assistant: {clip(event.text, 1500)}")
            elif isinstance(event, ToolCall):
                calls[event.tool_id] = _tool_call(activity, event, cwd)
            elif isinstance(event, ToolOutput):
                _tool_output(activity, event, calls.pop(event.tool_id, ("tool", "", "")))
    return activity


def _tool_call(activity: TurnActivity, event: ToolCall, cwd: str) -> tuple[str, str, str]:
    activity.tools[event.name] = activity.tools.get(event.name, 0) + 1
    label = ""
    identity = event.name
    if event.name in _EDIT_TOOLS:
        path = event.input.get(_EDIT_TOOLS[event.name])
        label = _one_line(_relative(path, cwd), 200) if isinstance(path, str) else ""
        _add(activity.files, label, _MAX["files"])
        identity = f"{event.name} {label}"
    elif event.name == "Bash":
        command = event.input.get("command")
        if isinstance(command, str) and command.strip():
            label = _one_line(command, 200)
            _add(activity.commands, label, _MAX["commands"])
            identity = command_identity(parse_command(command, cwd)) or label
    else:
        for key in ("file_path", "pattern", "query", "url", "description", "path"):
            value = event.input.get(key)
            if isinstance(value, str) and value.strip():
                label = _one_line(_relative(value, cwd), 200)
                break
    activity.render.append(f"Tool {event.name}: {label}" if label else f"Tool {event.name}")
    return event.name, label, identity


def _tool_output(activity: TurnActivity, event: ToolOutput, call: tuple[str, str, str]) -> None:
    name, label, identity = call
    parts = [event.text]
    if name == "Bash" and event.result:
        parts = [p for p in (event.result.get("stdout"), event.result.get("stderr")) if isinstance(p, str)]
        parts = parts or [event.text]
    failed = event.is_error or (name == "Bash" and output_says_failed(*parts))
    if failed:
        message = _one_line(error_line("\n".join(parts)), 200)
        shown = label if name == "Bash" else f"{name} {label}".strip()
        if len(activity.errors) < _MAX["errors"]:
            activity.errors.append(TurnError(shown or name, message, identity))
        activity.render.append(f"Error: {clip(event.text, 800)}")
        return
    for error in activity.errors:
        if error.identity == identity:
            error.resolved = True
    if name == "Bash" and event.text.strip():
        activity.render.append(f"Result: {clip(event.text, 400)}")


# --------------------------------------------------------------------------- the digest


def _when(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


def digest_text(
    activity: TurnActivity,
    *,
    project: str | None,
    session_id: str,
    finished_at: float,
    last_message: str,
) -> str | None:
    """A compact `context` memory of the turn, or None when nothing happened worth a memory."""
    outcome = last_message.strip() or activity.last_text.strip()
    if not activity.tools and not outcome:
        return None
    where = f" in project {project_label(project)}" if project else ""
    parts = [f"Claude Code turn{where} (session {session_id[:8] or 'unknown'}, {_when(finished_at)})."]
    if activity.prompts:
        parts.append(f"Asked: {' / '.join(activity.prompts)}")
    if activity.files:
        parts.append(f"Files touched: {', '.join(activity.files)}.")
    if activity.commands:
        parts.append(
            "Commands run: " + "; ".join(f"`{c.replace('`', chr(39))}`" for c in activity.commands) + "."
        )
    if activity.errors:
        errors = [
            f'{e.label} failed with "{e.message}" ({"resolved" if e.resolved else "unresolved"})'
            for e in activity.errors
        ]
        parts.append("Errors: " + "; ".join(errors) + ".")
    others = {k: v for k, v in activity.tools.items() if k not in _EDIT_TOOLS and k != "Bash"}
    if others:
        parts.append("Other tools: " + ", ".join(sorted(others)) + ".")
    if outcome:
        parts.append(f"Outcome: {_one_line(outcome, 600)}")
    return "\n".join(parts)


# --------------------------------------------------------------------------- LLM extraction

EXTRACTION_SYSTEM = """You distil one turn of a coding agent's session into long-term memories.
Answer with one JSON object: {"learnings": ["..."], "decisions": ["..."]}.
- learnings: what the turn established and would be worth knowing next time: a problem with its verified
  cause or fix, a non-obvious fact about the code, its tools or its environment.
- decisions: a choice made in the turn (design, library, approach, convention) and its reason when stated.
Each item is one self-contained factual sentence of at most 300 characters that names the project, files,
commands or errors involved, so a later search finds it. No speculation, no advice, no restating the request.
At most 5 items per list. Use empty lists when nothing is worth remembering."""


def extraction_prompt(activity: TurnActivity, *, project: str | None, last_message: str) -> str:
    lines = list(activity.render)
    if last_message.strip():
        lines.append(f"Final answer: {clip(last_message, 3000)}")
    body = "\n".join(lines)
    if len(body) > RENDER_CHARS:
        head, tail = RENDER_CHARS // 4, RENDER_CHARS - RENDER_CHARS // 4
        body = f"{body[:head]}\n[… part of the turn left out …]\n{body[-tail:]}"
    where = f"Project: {project_label(project)}\n" if project else ""
    # The marker keeps a transcript of this very request (if the endpoint is Claude Code) out of capture.
    return f"{NO_OBSERVE_MARKER}\n{where}Transcript of the turn:\n\n{body}"


def parse_extraction(answer: Any) -> list[tuple[str, str]] | None:
    """(category, text) pairs from the model's answer; None when it is not in the asked shape."""
    if not isinstance(answer, dict):
        return None
    lists = {name: answer.get(name) for name in ("learnings", "decisions")}
    if not any(isinstance(value, list) for value in lists.values()):
        return None
    items: list[tuple[str, str]] = []
    for category, values in lists.items():
        if not isinstance(values, list):
            continue
        kept = 0
        for value in values:
            text = value.get("text") if isinstance(value, dict) else value
            if not isinstance(text, str) or not text.strip() or kept >= _LLM_ITEMS:
                continue
            items.append((category, clip(" ".join(text.split()), 600)))
            kept += 1
    return items
