"""A writer of Claude Code transcript lines, in the format of hooks-reference (user/assistant records with
content blocks, `toolUseResult` on tool results), for tests of the capture paths."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

SESSION = "3f1c2a9e-7b4d-4e1a-9c55-2d8f0b6a1e47"
CWD = "/home/dev/acme-api"
FINISHED_AT = 1772442900.0  # 2026-03-02 09:15 UTC
FINAL = "REDIS_URL is now optional: Settings.redis_url defaults to None. All 42 tests pass."


class Transcript:
    """Writes Claude Code transcript lines (modelled on tests/fixtures/claude-code) to a .jsonl file."""

    def __init__(self, path: Path, cwd: str = CWD, session: str = SESSION) -> None:
        self.path, self.cwd, self.session = path, cwd, session
        self.parent: str | None = None
        self.messages = 0
        path.touch()

    def _write(self, record: dict) -> None:
        uid = str(uuid.uuid4())
        base = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session,
            "version": "2.1.63",
            "gitBranch": "fix/optional-redis",
            "uuid": uid,
            "timestamp": "2026-03-02T09:14:05.118Z",
        }
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps({**base, **record}) + "\n")
        self.parent = uid

    def prompt(self, text: str) -> None:
        self._write({"type": "user", "message": {"role": "user", "content": text}})

    def _assistant(self, block: dict) -> None:
        self.messages += 1
        message = {
            "model": "claude-opus-4-6",
            "id": f"msg_{self.messages:04d}",
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": None,
        }
        self._write({"type": "assistant", "message": message, "requestId": f"req_{self.messages}"})

    def say(self, text: str) -> None:
        self._assistant({"type": "text", "text": text})

    def tool(
        self, name: str, tool_input: dict, output: str, result: dict | None = None, error: bool = False
    ) -> None:
        tool_id = f"toolu_{uuid.uuid4().hex[:20]}"
        self._assistant({"type": "tool_use", "id": tool_id, "name": name, "input": tool_input})
        block = {"tool_use_id": tool_id, "type": "tool_result", "content": output, "is_error": error}
        self._write(
            {"type": "user", "message": {"role": "user", "content": [block]}, "toolUseResult": result or {}}
        )

    def bash(self, command: str, stdout: str, error: bool = False) -> None:
        result = {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False}
        self.tool("Bash", {"command": command, "description": "run"}, stdout, result, error=error)

    def denied(self, command: str, reason: str) -> None:
        """A Bash call that a PreToolUse rule denied, as Claude Code 2.1 writes it."""
        self.tool(
            "Bash",
            {"command": command, "description": "run"},
            f"PreToolUse:Bash hook error: Blocked by CEMS rule 5d1c0b8a-0000-4000-8000-0000000001: {reason}",
            error=True,
        )

    def edit(self, relative: str) -> None:
        path = f"{self.cwd}/{relative}"
        self.tool(
            "Edit",
            {"file_path": path, "old_string": "a", "new_string": "b"},
            f"The file {path} has been updated.",
            {"filePath": path},
        )


def redis_turn(transcript: Transcript) -> None:
    """The REDIS_URL fix: grep, a failing test run, an edit, a passing run."""
    transcript.prompt(
        "The API returns 500 when REDIS_URL is unset. Make the cache optional and run the tests."
    )
    transcript.say("I'll find where REDIS_URL is read first.")
    transcript.bash(
        'grep -rn "REDIS_URL" src/', 'src/acme/config.py:14:    redis_url: str = os.environ["REDIS_URL"]'
    )
    transcript.bash(
        "pytest -q", "Exit code 1\nE       KeyError: 'REDIS_URL'\n1 failed, 41 passed in 0.52s", True
    )
    transcript.edit("src/acme/config.py")
    transcript.bash("pytest -q", "42 passed in 0.49s")
    transcript.say(FINAL)
