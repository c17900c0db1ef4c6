"""The user's own Claude Code CLI as the model behind capture and summaries (`CEMS_LLM_BACKEND=claude-code`).

A user of Claude Code already has a model and its login; this asks it headless, one call per extraction
batch or summary: `claude -p --output-format json --model <small model>`, the prompt on stdin (a batch of
transcript can pass the kernel's limit for one argument). Only the capture worker, the observer and
maintenance use it: never a hook, never a search (a CLI call takes seconds; see llm.background_client).

CEMS must never learn from its own calls, nor let them trigger themselves:
- `CEMS_DISABLE=1` in the call's environment turns CEMS's own hooks into no-ops for that session (its Stop
  hook would otherwise start a capture worker that calls the CLI again);
- `--no-session-persistence`: the CLI writes no transcript for the observer to read, and the prompt starts
  with the no-observe marker in case a version writes one anyway; the call runs in a folder inside
  CEMS_HOME, which the observer skips too;
- `--tools ""`, `--strict-mcp-config` and `--disable-slash-commands`: the model can only answer, not act.

Same contract as `cems_cli.llm.LLMClient` for what capture and summaries use (`available`, `chat_json`,
`model`, `base_url`): failure is an answer (`None`, logged once per stage), never an exception.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from cems_cli import defaults
from cems_cli.defaults import NO_OBSERVE_MARKER
from cems_cli.llm import note_degraded, parse_json_object
from cems_cli.plumbing import procs

# Set by the client that runs a hook (Claude Code) in its children: a nested CLI must not take itself for a
# session of the agent's, nor refuse to start inside one.
_NESTED_SESSION_VARIABLES = ("CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT", "CLAUDE_CODE_SSE_PORT")
CALL_FOLDER = "claude-code"  # under CEMS_HOME: the calls' working directory


class ClaudeCodeClient:
    """One headless `claude -p` call per question, answered as a JSON object."""

    base_url = "claude -p"  # what capture's error message names as the endpoint: the CLI has its own

    def __init__(self, program: str, model: str, timeout: float, home: Path) -> None:
        self.program = program
        self.model = model
        self.timeout = timeout
        self.home = home
        self.deadline: float | None = None

    def __repr__(self) -> str:
        return f"ClaudeCodeClient(program={self.program!r}, model={self.model!r}, timeout={self.timeout})"

    @property
    def available(self) -> bool:
        return bool(self.model) and self.resolved_program() is not None

    def resolved_program(self) -> str | None:
        if os.sep in self.program:
            return self.program if os.access(self.program, os.X_OK) else None
        return shutil.which(self.program)

    def until(self, deadline: float | None) -> ClaudeCodeClient:
        import copy

        bounded = copy.copy(self)
        bounded.deadline = deadline
        return bounded

    def argv(self, system: str) -> list[str]:
        program = self.resolved_program() or self.program
        return [
            program, "-p", "--output-format", "json", "--model", self.model, "--system-prompt", system,
            "--tools", "", "--strict-mcp-config", "--disable-slash-commands", "--no-session-persistence",
        ]  # fmt: skip

    def chat_json(self, system: str, user: str, *, max_tokens: int = 512, stage: str = "llm") -> dict | None:
        """Ask once; the JSON object the model answered, or None (logged once per `stage`). `max_tokens` is
        the CLI's own business: it has no such option."""
        if not self.available:
            note_degraded(stage, f"the Claude Code CLI {self.program!r} is not installed or not executable")
            return None
        timeout = self.timeout
        if self.deadline is not None:
            timeout = min(timeout, self.deadline - time.monotonic())
            if timeout <= 0.05:
                note_degraded(stage, "skipped: the deadline leaves no time for it")
                return None
        folder = self.home / CALL_FOLDER
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        env = procs.child_env({"CEMS_DISABLE": "1"})
        for name in _NESTED_SESSION_VARIABLES:
            env.pop(name, None)
        import subprocess

        try:
            done = procs.run(
                self.argv(system),
                input=user if NO_OBSERVE_MARKER in user else f"{NO_OBSERVE_MARKER}\n{user}",
                timeout=timeout,
                env=env,
                cwd=str(folder),
                new_session=True,  # a timeout kills the CLI and whatever it started
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            note_degraded(stage, f"claude -p: {error}")
            return None
        answer = _result(done.stdout)
        if answer is None or done.returncode != 0 or answer.get("is_error"):
            detail = (answer or {}).get("result") or done.stderr.strip()[-200:] or f"exit {done.returncode}"
            note_degraded(stage, f"claude -p failed: {detail}")
            return None
        parsed = parse_json_object(answer.get("result"))
        if parsed is None:
            note_degraded(stage, f"answer is not a JSON object: {str(answer.get('result'))[:80]!r}")
        return parsed


def _result(stdout: str) -> dict[str, Any] | None:
    """The CLI's `--output-format json` document (its last line, should anything precede it)."""
    for text in (stdout, *reversed(stdout.strip().splitlines()[-1:])):
        try:
            value = json.loads(text)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def client_from_settings(settings: Any) -> ClaudeCodeClient:
    return ClaudeCodeClient(
        settings.claude_code_path or defaults.CLAUDE_CODE_PATH,
        settings.claude_code_model or defaults.CLAUDE_CODE_MODEL,
        settings.claude_code_timeout,
        Path(settings.home),
    )
