"""Claude Code transcript lines built from another agent's session (the form the capture engine reads).

Sessions recorded by other tools (SpecStory Markdown, mini-swe-agent trajectories) are converted into the
JSONL Claude Code writes under `~/.claude/projects` (see the hooks reference the project keeps, §5): a
typed prompt is a `user` line with string content, the model's words and tool calls are `assistant` lines
(`text` and `tool_use` blocks), and each tool's result is a `user` line with a `tool_result` block and its
`toolUseResult`. A failed Bash call is written as Claude Code writes one: `is_error` with "Exit code N"
first. Ids are derived from the session id and a counter, so a conversion is byte-for-byte reproducible.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

CLAUDE_CODE_VERSION = "2.1.63"  # the version the hooks reference describes
_NAMESPACE = uuid.UUID("6f1c3a52-3c1e-4d7b-9a55-2b8e0c4f7d11")


def encode_cwd(cwd: str) -> str:
    """The folder name Claude Code gives a launch directory: every non-alphanumeric character is `-`."""
    return re.sub(r"[^A-Za-z0-9]", "-", cwd)


def session_uuid(*parts: str) -> str:
    """A stable session id for a session that had none of Claude Code's."""
    return str(uuid.uuid5(_NAMESPACE, "/".join(parts)))


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


@dataclass
class TranscriptWriter:
    """Appends Claude Code lines for one session; every line one `step` later than the one before."""

    session_id: str
    cwd: str
    start: datetime
    step: timedelta = timedelta(seconds=5)
    lines: list[dict[str, Any]] = field(default_factory=list)
    _clock: datetime | None = None
    _pinned: datetime | None = None
    _parent: str | None = None
    _count: int = 0

    def _next_id(self, kind: str) -> str:
        self._count += 1
        return str(uuid.uuid5(_NAMESPACE, f"{self.session_id}/{kind}/{self._count}"))

    def at(self, moment: datetime | None) -> None:
        """The next line is dated `moment` (kept monotonic: never before the line written last)."""
        if moment is not None and (self._clock is None or moment > self._clock):
            self._pinned = moment

    def _stamp(self) -> str:
        if self._pinned is not None:
            self._clock, self._pinned = self._pinned, None
        else:
            self._clock = self.start if self._clock is None else self._clock + self.step
        return iso(self._clock)

    def _line(self, kind: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        line_id = self._next_id("line")
        record: dict[str, Any] = {
            "parentUuid": self._parent, "isSidechain": False, "userType": "external", "cwd": self.cwd,
            "sessionId": self.session_id, "version": CLAUDE_CODE_VERSION, "gitBranch": "", "type": kind,
            "message": message, "uuid": line_id, "timestamp": self._stamp(), **extra,
        }
        self._parent = line_id
        self.lines.append(record)
        return record

    def prompt(self, text: str) -> None:
        self._line("user", {"role": "user", "content": text}, permissionMode="default")

    def meta(self, text: str) -> None:
        """A message the harness injected (a reminder, feedback): not typed, so it starts no turn."""
        self._line("user", {"role": "user", "content": text}, isMeta=True)

    def say(self, text: str) -> None:
        self._assistant([{"type": "text", "text": text}])

    def _assistant(self, content: list[dict[str, Any]]) -> None:
        message = {"model": "converted", "id": "msg_" + self._next_id("msg").replace("-", "")[:24],
                   "type": "message", "role": "assistant", "content": content, "stop_reason": "tool_use"
                   if any(block["type"] == "tool_use" for block in content) else "end_turn",
                   "stop_sequence": None, "usage": {"input_tokens": 0, "output_tokens": 0}}
        self._line("assistant", message, requestId="req_" + self._next_id("req").replace("-", "")[:24])

    def tool(self, name: str, tool_input: dict[str, Any], output: str, *, is_error: bool = False,
             result: dict[str, Any] | None = None, text: str = "") -> None:
        """A tool call (with the words said before it, if any) and its result."""
        call_id = "toolu_" + self._next_id("tool").replace("-", "")[:24]
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text.strip() else []
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": tool_input})
        self._assistant(content)
        block: dict[str, Any] = {"tool_use_id": call_id, "type": "tool_result", "content": output}
        if is_error:
            block["is_error"] = True
        self._line("user", {"role": "user", "content": [block]},
                   toolUseResult=result if result is not None else {"output": output})

    def bash(self, command: str, output: str, *, exit_code: int | None = None, text: str = "") -> None:
        """A Bash call as Claude Code records it: stdout in `toolUseResult`; a non-zero exit an error whose
        text starts with "Exit code N" (`exit_code` None: the source did not record one, so not an error)."""
        failed = exit_code is not None and exit_code != 0
        shown = f"Exit code {exit_code}\n{output}" if failed else output
        self.tool("Bash", {"command": command}, shown, is_error=failed, text=text,
                  result={"stdout": output, "stderr": "", "interrupted": False, "isImage": False})

    def jsonl(self) -> bytes:
        return b"".join(json.dumps(line, ensure_ascii=False).encode() + b"\n" for line in self.lines)

    def write(self, root: Path) -> Path:
        """Writes the session to `root/<encoded cwd>/<session id>.jsonl` (owner-only, as Claude Code does)."""
        folder = root / encode_cwd(self.cwd)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = folder / f"{self.session_id}.jsonl"
        path.write_bytes(self.jsonl())
        path.chmod(0o600)
        return path
