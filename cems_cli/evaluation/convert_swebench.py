"""mini-swe-agent trajectories (`*.traj.json`, format `mini-swe-agent-1`) as Claude Code sessions.

A run is one session on one repository: the task (the `<pr_description>` of the first user message) is the
typed prompt; each assistant message is its THOUGHT (said) and its one ```bash block (a Bash call); the next
user message is that command's result (`<returncode>N</returncode>` then the output), written as Claude Code
writes a Bash result (a non-zero exit code is an error whose text starts with "Exit code N"; a command the
harness killed for running too long is an error holding the harness's words). A user message
that is not a result (the harness's format reminders) is a meta line, as Claude Code writes injected
reminders. The harness's fixed instructions (the same text in every run) are left out of the prompt: a
Claude Code user keeps such standing instructions in CLAUDE.md, not in what they type.

Time: every assistant message carries the model API's `created` (epoch seconds); the session is dated by
them. Project: the repository (`django__django-11099` → `django`); its sessions run in `/swebench/<repo>`.
A subset takes the first N runs of each repository by instance number (a fixed choice, independent of the
run's outcome).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from cems_cli.evaluation.datasets import DatasetError
from cems_cli.evaluation.transcript_writer import TranscriptWriter, session_uuid

CWD_ROOT = "/swebench"
_INSTANCE = re.compile(r"^(?P<owner>[\w.-]+?)__(?P<repo>[\w.-]+)-(?P<number>\d+)$")
_BASH = re.compile(r"```(?:bash|sh)\s*\n(.*?)\n?```", re.S)
_RETURNCODE = re.compile(r"^\s*<returncode>(-?\d+)</returncode>\s*", re.S)
_TAGS = re.compile(r"</?(?:output|output_head|output_tail|elided_chars)>")
_PR = re.compile(r"<pr_description>(.*?)</pr_description>", re.S)
# The harness's word for a command it killed: the call ran and failed.
_TIMED_OUT = re.compile(r"^\s*The last command <command>.*?</command> timed out", re.S)


@dataclass(frozen=True)
class Run:
    path: Path
    instance_id: str
    repo: str
    number: int


def runs(folder: Path) -> list[Run]:
    """Every `*.traj.json` under `folder` (any depth), by repository and instance number."""
    found: list[Run] = []
    for path in sorted(folder.rglob("*.traj.json")):
        instance = path.name.removesuffix(".traj.json")
        match = _INSTANCE.match(instance)
        if match is None:
            raise DatasetError(f"{path}: not named <owner>__<repo>-<number>.traj.json")
        found.append(Run(path, instance, match["repo"], int(match["number"])))
    return sorted(found, key=lambda r: (r.repo, r.number))


def subset(all_runs: list[Run], per_repo: int | None) -> list[Run]:
    """The first `per_repo` runs of each repository by instance number (all of them when None)."""
    if per_repo is None:
        return list(all_runs)
    taken: dict[str, int] = {}
    chosen: list[Run] = []
    for run in all_runs:
        if taken.get(run.repo, 0) < per_repo:
            taken[run.repo] = taken.get(run.repo, 0) + 1
            chosen.append(run)
    return chosen


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


def _created(message: dict[str, Any]) -> datetime | None:
    extra = message.get("extra")
    response = extra.get("response") if isinstance(extra, dict) else None
    created = response.get("created") if isinstance(response, dict) else None
    if isinstance(created, int | float) and not isinstance(created, bool) and created > 0:
        return datetime.fromtimestamp(created, UTC)
    return None


def convert_run(run: Run) -> TranscriptWriter:
    try:
        data = json.loads(run.path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DatasetError(f"{run.path}: cannot read a trajectory ({error})") from None
    messages = data.get("messages") if isinstance(data, dict) else None
    if not isinstance(messages, list):
        raise DatasetError(f"{run.path}: no 'messages' list")
    messages = [m for m in messages if isinstance(m, dict) and m.get("role") in ("user", "assistant")]
    first = next((t for t in map(_created, messages) if t is not None), None)
    start = (first or datetime(2000, 1, 1, tzinfo=UTC)) - timedelta(seconds=10)
    writer = TranscriptWriter(session_uuid("swebench", run.instance_id), f"{CWD_ROOT}/{run.repo}", start)
    pending: tuple[str, str] | None = None  # (command, thought) waiting for its result
    for index, message in enumerate(messages):
        text = _text(message.get("content"))
        if message["role"] == "assistant":
            writer.at(_created(message))
            if pending is not None:  # a command with no result after it: said, not run
                writer.say(pending[1] + f"\n\n```bash\n{pending[0]}\n```")
                pending = None
            match = _BASH.search(text)
            if match is None:
                writer.say(text)
            else:
                pending = (match.group(1).strip(), text[:match.start()].strip())
            continue
        if index == 0 or not writer.lines:
            task = _PR.search(text)
            writer.prompt((task.group(1) if task else text).strip())
            continue
        code = _RETURNCODE.match(text)
        if pending is not None and code is not None:
            output = _TAGS.sub("", text[code.end():]).strip("\n")
            writer.bash(pending[0], output, exit_code=int(code.group(1)), text=pending[1])
            pending = None
        elif pending is not None and _TIMED_OUT.match(text):
            writer.tool("Bash", {"command": pending[0]}, _TAGS.sub("", text).strip(), is_error=True,
                        text=pending[1], result={"stdout": "", "stderr": "", "interrupted": True,
                                                 "isImage": False})
            pending = None
        else:
            if pending is not None:
                writer.say(pending[1] + f"\n\n```bash\n{pending[0]}\n```")
                pending = None
            writer.meta(text)
    if pending is not None:
        writer.say(pending[1] + f"\n\n```bash\n{pending[0]}\n```")
    return writer


def convert(folder: Path, out: Path, *, per_repo: int | None = None) -> list[Path]:
    """Writes the chosen runs as Claude Code transcripts under `out` (a projects folder)."""
    chosen = subset(runs(folder), per_repo)
    if not chosen:
        raise DatasetError(f"{folder} holds no *.traj.json")
    return [convert_run(run).write(out) for run in chosen]
