"""PostToolUse / PostToolUseFailure hook: capture what a tool did into the local spool, then get out.

Path: stdin → trimmed, redacted event → `$CEMS_HOME/spool.db` (one committed INSERT OR IGNORE keyed by
`tool_use_id`). No database, no model, no third-party import: this runs after every tool call, within
~80 ms for the whole process. The capture worker (started by the Stop hook) turns spooled events into
`patterns` memories later. Answers nothing: PostToolUse output would only be noise for Claude.
"""

from __future__ import annotations

from cems_cli.capture import spool
from cems_cli.plumbing.hookio import run_hook

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

EVENTS = ("PostToolUse", "PostToolUseFailure")
# Session ids of `cems hooks doctor`'s sample payloads: a check of the hooks must not store test events in
# the user's spool. A prefix test on a string the payload already holds: nothing else runs before it.
DOCTOR_SESSION_PREFIX = "cems-doctor-"
# (head, tail) characters kept of the string under these keys. Bash errors and test summaries are at the
# end of the output, so output keeps more tail than head.
LIMITS: dict[str, tuple[int, int]] = {
    "stdout": (1500, 2500),
    "stderr": (1000, 2000),
    "error": (1500, 2500),
    "command": (2000, 0),
    "description": (300, 0),
    "old_string": (600, 0),
    "new_string": (600, 0),
    "oldString": (600, 0),
    "newString": (600, 0),
    "content": (400, 0),
    "prompt": (1000, 0),
}
# The whole file before an edit, and the diff of an edit whose old/new strings are already kept.
DROP = frozenset({"originalFile", "structuredPatch"})
# Tools whose result is a file's or a search's content: what they were asked is kept, not what they returned.
READ_ONLY_TOOLS = frozenset("Read Glob Grep LS TodoWrite WebFetch WebSearch NotebookRead".split())


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def event_data(payload: dict[str, Any]) -> dict[str, Any]:
    """What is kept of the event (before `safe_text.clip_tree` cleans and trims every string in it)."""
    tool_name = payload.get("tool_name")
    response = payload.get("tool_response")
    if tool_name in READ_ONLY_TOOLS and isinstance(response, dict):
        response = {k: v for k, v in response.items() if isinstance(v, bool | int | float)}
    elif tool_name in READ_ONLY_TOOLS:
        response = None
    data: dict[str, Any] = {"input": payload.get("tool_input"), "response": response}
    error = payload.get("error")
    if error is not None:
        data["error"] = error if isinstance(error, str) else str(error)
    if payload.get("is_interrupt") is True:
        data["interrupted"] = True
    duration = payload.get("duration_ms")
    if isinstance(duration, int | float) and not isinstance(duration, bool):
        data["duration_ms"] = duration
    return data


def _fallback_id(payload: dict[str, Any], data: dict[str, Any]) -> str:
    """Before Claude Code 2.0.43 there is no tool_use_id: key the event by its content, so a replay of the
    same delivery is still stored once (identical calls with identical output in a session merge)."""
    import hashlib

    from cems_cli.plumbing.hookio import json_dumps

    basis = json_dumps([payload.get("session_id"), payload.get("tool_name"), data])
    return "sha256:" + hashlib.sha256(basis.encode("ascii")).hexdigest()[:40]


def spool_row(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The `spool.add_tool_event` arguments for a PostToolUse/PostToolUseFailure payload, else None."""
    event = payload.get("hook_event_name")
    if event is None:
        event = "PostToolUse"
    if event not in EVENTS:
        return None
    tool_name = _text(payload.get("tool_name"))
    if tool_name is None:
        return None
    data = event_data(payload)
    return {
        "tool_use_id": _text(payload.get("tool_use_id")) or _fallback_id(payload, data),
        "session_id": _text(payload.get("session_id")) or "",
        "event": event,
        "tool_name": tool_name,
        "cwd": _text(payload.get("cwd")),
        "agent_id": _text(payload.get("agent_id")),
        "data": data,
        "limits": LIMITS,
        "drop": DROP,
    }


def handle(payload: dict[str, Any]) -> None:
    """Spool one event (in-process use: opens and closes the spool)."""
    session_id = payload.get("session_id")
    if isinstance(session_id, str) and session_id.startswith(DOCTOR_SESSION_PREFIX):
        return None  # doctor's sample: before the spool is opened (or created)
    row = spool_row(payload)
    if row is None:
        return None
    conn = spool.connect()
    try:
        spool.add_tool_event(conn, **row)
    finally:
        conn.close()
    return None


def main() -> int:
    return run_hook(handle)

