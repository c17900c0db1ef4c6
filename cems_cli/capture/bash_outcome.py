"""Did a Bash call fail?

Bash responses carry no exit code (hooks-reference §2), so `bash_failed` infers failure:
1. a PostToolUseFailure event, `interrupted: true`, or a non-zero exit code field if a version adds one;
2. otherwise, a success summary in the last lines of output (pytest "N passed", jest "Tests: N passed",
   cargo "test result: ok", go "ok"/"PASS") without a failure count means success;
3. otherwise, a line-anchored failure marker anywhere in stdout or stderr means failure: "Exit code N",
   a Python traceback or `SomeError:` line, `error:`/`fatal:`/`error[E…]:`, compiler `file:line: error`,
   `npm ERR!`, pytest/jest/go/cargo failure summaries, make's `*** … Error N`, "command not found",
   "No such file or directory", ruff/mypy "Found N errors".
Output on stderr alone is not a failure: git, npm, pip and most build tools write progress there.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cems_cli.capture.tool_patterns import ToolEvent


_EXIT_CODE_FIELDS = ("exitCode", "exit_code", "returnCode", "returncode")
_FAILURE_MARKERS = re.compile(
    r"^Exit code [1-9]\d*\s*$"
    r"|^Traceback \(most recent call last\):"
    r"|^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception): "
    r"|^(?:error|fatal|ERROR|FATAL)(?:\[[\w-]+\])?:"
    r"|^\S+:\d+(?::\d+)?: (?:fatal )?error\b"
    r"|\berror TS\d+:"
    r"|^(?:npm|pnpm) (?:ERR!|error\b)|^error Command failed"
    r"|^=+ .*\b[1-9]\d* (?:failed|errors?)\b.*=+$"
    r"|^(?:\d+ \w+, )*[1-9]\d* (?:failed|errors?)\b.* in [\d.]+s\b"
    r"|^FAILED \S|^ERROR \S"
    r"|^Tests:\s+[1-9]\d* failed|^\s*Test Files\s+[1-9]\d* failed"
    r"|^FAIL\b|^--- FAIL:|^test result: FAILED"
    r"|^make(?:\[\d+\])?: \*\*\* .*Error \d+"
    r"|: command not found\s*$|: No such file or directory\s*$"
    r"|^Found [1-9]\d* errors?\b|^✖ [1-9]\d* problems?",
    re.M,
)
_SUCCESS_SUMMARY = re.compile(
    r"^=+ (?:[1-9]\d* passed|no tests ran)\b.*=+$"
    r"|^[1-9]\d* passed\b.* in [\d.]+s\b"
    r"|^Tests:\s+[1-9]\d* passed, [1-9]\d* total"
    r"|^test result: ok\."
    r"|^ok\s+\S+\s|^PASS$"
    r"|^All checks passed!$|^Success: no issues found",
    re.M,
)
_FAILURE_COUNT = re.compile(r"\b[1-9]\d* (?:failed|errors?)\b")


def _exit_code(response: dict[str, Any] | None) -> int | None:
    if not response:
        return None
    for name in _EXIT_CODE_FIELDS:
        value = response.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _output_parts(event: ToolEvent) -> list[str]:
    response = event.tool_response or {}
    parts = [response.get("stdout"), response.get("stderr"), event.error]
    return [part for part in parts if isinstance(part, str) and part.strip()]


def bash_output(event: ToolEvent) -> str:
    """Everything the call printed, plus the failure message of a PostToolUseFailure."""
    return "\n".join(_output_parts(event))


def bash_failed(event: ToolEvent) -> bool:
    """Did this Bash call fail? See the module docstring for the heuristic."""
    if event.failure_event or event.interrupted or (event.tool_response or {}).get("interrupted") is True:
        return True
    code = _exit_code(event.tool_response)
    if code is not None:
        return code != 0
    return output_says_failed(*_output_parts(event))


def output_says_failed(*parts: str) -> bool:
    """The output half of the heuristic (stdout, stderr…), also for a transcript's tool result text."""
    for part in parts:
        tail = "\n".join(line.strip() for line in part.strip().splitlines()[-5:])
        if _SUCCESS_SUMMARY.search(tail) and not _FAILURE_COUNT.search(tail):
            return False
    return any(_FAILURE_MARKERS.search(part) for part in parts)
