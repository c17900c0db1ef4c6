"""Claude Code transcript JSONL: complete lines from a byte offset, each line as typed events, and the file
itself (a regular file, where it really is once open, a fingerprint of its head).

The format is internal to Claude Code and changes between releases (hooks-reference §5), so parsing is
defensive: unknown line types and block types are ignored, a line that is not a JSON object is reported
as malformed (the caller counts it and moves on), and every field is read with a fallback.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

READ_BLOCK = 1024 * 1024


# --------------------------------------------------------------------------- lines from bytes


@dataclass(frozen=True, slots=True)
class RawLine:
    """One complete line: its bytes (None when it was longer than the cap and skipped) and the offset just
    past its newline, which is where reading resumes."""

    data: bytes | None
    end: int


class LineReader:
    """Complete lines of a file from `start`, in bounded memory.

    A last line without its newline is not returned: the writer has not finished it, so the caller's offset
    stays before it and the next read picks it up whole. A line longer than `max_line` is skipped without
    being held in memory (returned with `data=None`).
    """

    def __init__(self, handle: BinaryIO, start: int, max_line: int, block: int = READ_BLOCK) -> None:
        self._handle = handle
        self._block = block
        self._max_line = max_line
        self._buffer = bytearray()
        self._buffer_start = start  # file offset of _buffer[0]
        self._line_start = start  # offset just past the last line returned
        self._scan_from = 0  # bytes of _buffer already known to hold no newline
        self._skipping = False  # inside an oversized line, discarding until its newline
        self._eof = False
        handle.seek(start)

    @property
    def position(self) -> int:
        """Offset just past the last line returned: where the next read resumes."""
        return self._line_start

    def next_line(self) -> RawLine | None:
        while True:
            newline = self._buffer.find(b"\n", self._scan_from)
            if newline >= 0:
                end = self._buffer_start + newline + 1
                oversized = self._skipping or newline > self._max_line
                data = None if oversized else bytes(self._buffer[:newline])
                del self._buffer[: newline + 1]
                self._buffer_start = self._line_start = end
                self._scan_from = 0
                self._skipping = False
                return RawLine(data, end)
            self._scan_from = len(self._buffer)
            if len(self._buffer) > self._max_line:
                self._skipping = True
            if self._skipping and self._buffer:
                # Forget the oversized line's bytes, keep counting how far it reaches.
                self._buffer_start += len(self._buffer)
                self._buffer.clear()
                self._scan_from = 0
            if self._eof:
                return None
            chunk = self._handle.read(self._block)
            if not chunk:
                self._eof = True
                continue
            self._buffer += chunk

    def __iter__(self) -> Iterator[RawLine]:
        while (line := self.next_line()) is not None:
            yield line


# --------------------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class Prompt:
    """What the user typed (or a slash command with its arguments)."""

    text: str


@dataclass(frozen=True, slots=True)
class AssistantText:
    message_id: str
    text: str


@dataclass(frozen=True, slots=True)
class ToolCall:
    message_id: str
    tool_id: str
    name: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolOutput:
    tool_id: str
    text: str
    is_error: bool
    result: dict[str, Any] | None = None  # the line's `toolUseResult` (stdout/stderr/filePath…), if an object


Event = Prompt | AssistantText | ToolCall | ToolOutput


@dataclass(frozen=True, slots=True)
class Line:
    """One parsed transcript line: where it happened and what it carries."""

    kind: str
    session_id: str = ""
    cwd: str = ""
    branch: str = ""
    timestamp: str = ""
    sidechain: bool = False
    events: list[Event] = field(default_factory=list)


class Malformed(ValueError):
    """The line is not a JSON object."""


_SYSTEM_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.S)
_COMMAND = re.compile(r"<command-name>\s*(?P<name>[^<]*?)\s*</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(?P<args>.*?)</command-args>", re.S)
_NOISE_PREFIXES = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-stdout>",
    "<bash-stderr>",
    "[Request interrupted by user",
    "Caveat: The messages below were generated",
)


def _branch(value: object) -> str:
    """The git branch Claude Code recorded; "HEAD" (a detached head, or a repository without commits)
    names no branch, so it is not worth a tag."""
    branch = _str(value)
    return "" if branch == "HEAD" else branch


def parse_line(data: bytes) -> Line | None:
    """The events of one line; None for a blank line; Malformed when it is not a JSON object."""
    text = data.decode("utf-8", errors="replace").strip()
    if not text:
        return None
    try:
        record = json.loads(text)
    except ValueError:
        raise Malformed("not JSON") from None
    if not isinstance(record, dict):
        raise Malformed("not a JSON object")
    kind = _str(record.get("type"))
    line = Line(
        kind=kind,
        session_id=_str(record.get("sessionId")),
        cwd=_str(record.get("cwd")),
        branch=_branch(record.get("gitBranch")),
        timestamp=_str(record.get("timestamp")),
        sidechain=record.get("isSidechain") is True,
    )
    message = record.get("message")
    if not isinstance(message, dict):
        return line
    if kind == "user" and not record.get("isMeta") and not record.get("isCompactSummary"):
        line.events.extend(_user_events(message.get("content"), record.get("toolUseResult")))
    elif kind == "assistant":
        line.events.extend(_assistant_events(message))
    return line


def _user_events(content: Any, tool_use_result: Any) -> list[Event]:
    # `toolUseResult` repeats the output in tool-specific shapes (Bash: stdout and stderr apart); the
    # tool_result block's text is the common form, and what the model itself saw.
    result = tool_use_result if isinstance(tool_use_result, dict) else None
    if isinstance(content, str):
        prompt = _prompt_text(content)
        return [Prompt(prompt)] if prompt else []
    if not isinstance(content, list):
        return []
    events: list[Event] = []
    texts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        block_type = block.get("type")
        if block_type == "tool_result":
            events.append(
                ToolOutput(
                    tool_id=_str(block.get("tool_use_id")),
                    text=block_text(block.get("content")),
                    is_error=block.get("is_error") is True,
                    result=result,
                )
            )
        elif block_type == "text":
            texts.append(_str(block.get("text")))
    prompt = _prompt_text("\n".join(texts)) if texts else ""
    if prompt:
        events.insert(0, Prompt(prompt))
    return events


def _assistant_events(message: dict[str, Any]) -> list[Event]:
    # Streaming writes one content block per line; lines of one response share `message.id`.
    message_id = _str(message.get("id"))
    content = message.get("content")
    if isinstance(content, str):
        return [AssistantText(message_id, content)] if content.strip() else []
    if not isinstance(content, list):
        return []
    events: list[Event] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        block_type = block.get("type")
        if block_type == "text":
            text = _str(block.get("text"))
            if text.strip():
                events.append(AssistantText(message_id, text))
        elif block_type == "tool_use":
            tool_input = block.get("input")
            events.append(
                ToolCall(
                    message_id=message_id,
                    tool_id=_str(block.get("id")),
                    name=_str(block.get("name")) or "tool",
                    input=tool_input if isinstance(tool_input, dict) else {},
                )
            )
    return events


def _prompt_text(text: str) -> str:
    """The user's words: reminders injected by hooks removed, slash commands as `/name args`, and noise
    (local command output, interruption notices) dropped."""
    text = _SYSTEM_REMINDER.sub("", text).strip()
    if not text or text.startswith(_NOISE_PREFIXES):
        return ""
    command = _COMMAND.search(text)
    if command:
        name = command.group("name").strip()
        args = _COMMAND_ARGS.search(text)
        arguments = args.group("args").strip() if args else ""
        return f"{name} {arguments}".strip()
    return text


def block_text(content: Any) -> str:
    """Text of a tool_result's content: a string, or the text blocks of a list (images are skipped)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [_str(b.get("text")) for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(p for p in parts if p)
    return ""


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


# --- the transcript file itself (the observer reads each one exactly once, as it was when opened) ---------


def regular_file(path: Path) -> bool:
    """A regular file itself, not a link to one (lstat), nor a FIFO, socket or device."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def opened_path(fd: int, path: Path) -> str:
    """Where the open file really is: /proc's link for the descriptor on Linux (no race with a rename
    or a swapped folder), else the path with its links resolved."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return os.path.realpath(path)


def fingerprint(handle: BinaryIO, length: int) -> str:
    # pread: the LineReader owns the handle's position and must not see it move.
    data = os.pread(handle.fileno(), length, 0)
    if len(data) < length:
        return ""
    return hashlib.sha256(data).hexdigest()
