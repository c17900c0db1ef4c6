"""Stop hook: record the finished turn in the spool and start the capture worker, detached.

Never blocks the agent: no output (a Stop answer could force Claude to continue), exit 0 whatever happens,
and nothing at all when `stop_hook_active` is true (Claude is already continuing because of a Stop hook).
The slow part (reading the transcript delta, the LLM call or digest, embedding, the database) happens in
`python -m cems_cli.capture.worker`, which outlives this process.
"""

from __future__ import annotations

import os

from cems_cli.capture import spool
from cems_cli.hookhandlers.post_tool_use import DOCTOR_SESSION_PREFIX
from cems_cli.plumbing.hookio import log_error, run_hook

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    from typing import Any

WORKER_MODULE = "cems_cli.capture.worker"


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def turn_key(session_id: str, prompt_id: str, end_offset: int | None, last_message: str) -> str:
    """Identity of a turn. The same Stop delivered twice gives the same key; two turns of a session that
    end with the same words ("Done.") are told apart by the transcript's size when each ended."""
    try:  # CPython's built-in SHA-256: `hashlib` would load OpenSSL first (~10 ms of the hook's time)
        from _sha256 import sha256  # ≤ 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # ≥ 3.12
        except ImportError:
            from hashlib import sha256
    basis = "\0".join((session_id, prompt_id, str(end_offset), last_message))
    return sha256(basis.encode("utf-8", errors="replace")).hexdigest()


def _transcript_size(path: str | None) -> int | None:
    if path is None:
        return None
    try:
        return os.path.getsize(path)
    except OSError:  # not written yet, moved by a compaction, or never there: the worker copes
        return None


def worker_running(home: str) -> bool:
    """Does a capture worker hold `capture.lock`? Then it will pick up the turn just recorded (it checks
    for pending work after releasing the lock), and starting another process would only cost CPU."""
    import fcntl

    try:
        with open(os.path.join(home, spool.LOCK_FILE), "a+") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
    except OSError:
        pass
    return False


def start_worker() -> None:
    """The capture worker, detached and isolated from the agent's working directory (plumbing/procs.py): it
    outlives this hook and Claude Code, and the repository's modules must not shadow any it imports."""
    from cems_cli.plumbing.procs import spawn_python

    spawn_python(WORKER_MODULE)


def handle(payload: dict[str, Any]) -> None:
    event = payload.get("hook_event_name")
    if event is not None and event != "Stop":
        return None
    if payload.get("stop_hook_active"):
        return None
    session_id = _text(payload.get("session_id"))
    if session_id is None or session_id.startswith(DOCTOR_SESSION_PREFIX):
        return None  # doctor's sample turn: no spool row, no worker
    transcript = _text(payload.get("transcript_path"))
    message = payload.get("last_assistant_message")
    message = message if isinstance(message, str) else ""
    end_offset = _transcript_size(transcript)
    key = turn_key(session_id, _text(payload.get("prompt_id")) or "", end_offset, message)
    conn = spool.connect()
    try:
        recorded = spool.add_turn(
            conn,
            turn_key=key,
            session_id=session_id,
            transcript_path=transcript,
            cwd=_text(payload.get("cwd")),
            last_message=message,
            end_offset=end_offset,
        )
    finally:
        conn.close()
    if recorded and not worker_running(os.path.dirname(spool.spool_path())):
        try:
            start_worker()
        except OSError:
            log_error("could not start the capture worker; the turn stays in the spool")
    return None


def main() -> int:
    return run_hook(handle)

