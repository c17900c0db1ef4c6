"""The capture worker: turns what the hooks spooled into memories, then exits.

    python -m cems_cli.capture.worker          # started detached by the Stop hook
    process_pending(settings)                  # in-process, from tests or `cems` commands

One worker at a time per CEMS_HOME: an exclusive, non-blocking flock on `$CEMS_HOME/capture.lock`; a second
worker finds it held and exits, and the Stop hook does not even start one then. The running worker sees the
new work: it loops until nothing is pending, and checks once more after releasing the lock, so a turn
spooled just as it finished is not stranded.

Order of work, each step idempotent:
1. Tool events → `patterns` memories (source "tool"). Pending events get their project (from their cwd);
   then, for each project touched, the statements are derived from the project's recent events (pending
   and processed), and those not yet emitted are added to the project's roll of their kind
   (`pattern_rolls`). Events are marked done after that.
2. Turns → the capture engine (`observer.Observer`), the same one the observer daemon runs: the turn's
   transcript is read from the offset that engine committed (whichever trigger got there first), the turn
   is closed now (the Stop hook said it ended), and its memories are stored in the transaction that moves
   that offset. So a turn seen by both triggers is stored once, by the first.
A crash anywhere leaves the work pending; redoing it stores nothing twice (deterministic texts, the store's
content-hash dedup, and the spool's record of emitted statements).
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cems_cli.capture import spool
from cems_cli.capture.tool_patterns import ToolEvent, pattern_statements

if TYPE_CHECKING:
    from cems_cli.capture.observer import Observer
    from cems_cli.config import Settings
    from cems_cli.engine.service import MemoryService

TOOL_BATCH = 500
TURN_BATCH = 20
PROJECT_WINDOW = 2000  # events per project that statements are derived from
LLM_FAILURE = "LLM extraction failed"
TURN_SOURCE = "session"  # memories this trigger stores first; the observer's are "observer"


@dataclass
class Summary:
    busy: bool = False  # another worker holds the lock: nothing was done here
    tool_events: int = 0
    patterns_stored: int = 0
    turns: int = 0
    turn_memories_stored: int = 0
    turns_failed: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------- locking


@contextmanager
def _capture_lock(home: str, wait: bool) -> Iterator[bool]:
    os.makedirs(home, mode=0o700, exist_ok=True)
    with open(os.path.join(home, spool.LOCK_FILE), "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# --------------------------------------------------------------------------- the run


def process_pending(settings: Settings, *, wait: bool = False) -> Summary:
    """Process everything pending in the spool of `settings.home`. With `wait`, block until a running
    worker finishes instead of leaving the work to it. When the store is unreachable the error propagates
    and the work stays pending for the next run."""
    home = str(settings.home)
    summary = Summary()
    conn = spool.connect(spool.spool_path(home))
    worker = _Worker(settings, conn, summary)
    try:
        first = True
        while True:
            with _capture_lock(home, wait) as locked:
                if not locked:
                    summary.busy = first
                    return summary
                worker.run()
            first = False
            # Released: a Stop hook that found the lock held left its turn to us (it does not start a
            # worker then), and it may have spooled it just before we let go. Check once more.
            if not spool.has_pending(conn, worker.failed_turns):
                return summary
    finally:
        worker.close()
        conn.close()


class _Worker:
    def __init__(self, settings: Settings, conn: sqlite3.Connection, summary: Summary) -> None:
        self.settings = settings
        self.conn = conn
        self.summary = summary
        self._service: MemoryService | None = None
        self._observer: Observer | None = None
        self.failed_turns: set[str] = set()

    @property
    def service(self) -> MemoryService:
        if self._service is None:
            from cems_cli.engine.service import MemoryService

            self._service = MemoryService(self.settings)
        return self._service

    @property
    def observer(self) -> Observer:
        """The capture engine, with the observer's settings (chunk limits, LLM extraction)."""
        if self._observer is None:
            from cems_cli.capture.observer import capture_engine

            self._observer = capture_engine(self.service, source=TURN_SOURCE)
        return self._observer

    def close(self) -> None:
        if self._service is not None:
            self._service.close()

    def run(self) -> None:
        """Process until nothing is pending (turns that failed in this run are not retried in it)."""
        while self._tool_round() or self._turn_round():
            pass
        spool.prune(self.conn)
        spool.checkpoint(self.conn)

    # -- tool events

    def _tool_round(self) -> bool:
        pending = spool.pending_tool_events(self.conn, TOOL_BATCH)
        if not pending:
            return False
        projects: dict[str, str] = {}
        for row in pending:
            project = row.project or _project(row.cwd)
            if project:
                projects[row.tool_use_id] = project
        spool.set_projects(self.conn, projects.items())
        for project in sorted(set(projects.values())):
            try:
                self._project_patterns(project)
            except Exception as error:
                if _is_store_unreachable(error):
                    raise
                # A bad event must not block the spool: the next event of this project retries anyway.
                _log(f"capture worker: patterns of {project} failed")
        spool.mark_tool_events_done(self.conn, [row.tool_use_id for row in pending])
        self.summary.tool_events += len(pending)
        return True

    def _project_patterns(self, project: str) -> None:
        rows = spool.project_tool_events(self.conn, project, PROJECT_WINDOW)
        events = [
            ToolEvent.from_spool(
                tool_use_id=r.tool_use_id,
                session_id=r.session_id,
                event=r.event,
                tool_name=r.tool_name,
                cwd=r.cwd,
                received_at=r.received_at,
                data=r.data,
            )
            for r in rows
        ]
        statements = {f"{project}\n{s.key}": s for s in pattern_statements(project, events)}
        done = spool.emitted_keys(self.conn, statements)
        from cems_cli.capture.pattern_rolls import store_in_roll

        for key, statement in statements.items():
            if key in done:
                continue
            # One memory per project and kind, naming its commands (capture/pattern_rolls.py).
            memory_id, created = store_in_roll(
                self.service, project=project, kind=statement.kind, item=statement.item, source="tool",
                source_ref=project, tags=[f"session:{statement.session_id}"] if statement.session_id else [],
                created_at=datetime.fromtimestamp(statement.at, UTC),
            )
            spool.mark_emitted(self.conn, key, memory_id)
            self.summary.patterns_stored += int(created)

    # -- turns

    def _turn_round(self) -> bool:
        turns = [
            t
            for t in spool.pending_turns(self.conn, TURN_BATCH + len(self.failed_turns))
            if t.turn_key not in self.failed_turns
        ][:TURN_BATCH]
        if not turns:
            return False
        for turn in turns:
            try:
                self._process_turn(turn)
            except Exception as error:
                if _is_store_unreachable(error):
                    raise
                # This turn's own problem: count the attempt (set aside after a few), go on with the rest.
                self.failed_turns.add(turn.turn_key)
                if spool.turn_failed(self.conn, turn.turn_key, f"{type(error).__name__}: {error}"):
                    self.summary.turns_failed += 1
                _log(f"capture worker: turn {turn.turn_key[:12]} failed")
        return True

    def _process_turn(self, turn: spool.TurnRow) -> None:
        """The turn's transcript through the capture engine; its memories count as this turn's."""
        path = turn.transcript_path
        outcome = "empty"
        if path and os.path.isfile(path):
            self.service.conn  # noqa: B018 - an unreachable store must leave the turn pending, untried
            report = self.observer.sync([path], turn_ended=True)
            errors = [e for e in report.errors if not e.startswith(LLM_FAILURE)]  # fell back: not fatal
            if errors:
                raise CaptureError(errors[0])
            stored = report.observations + report.sessions_updated
            self.summary.turn_memories_stored += report.observations
            outcome = "engine" if report.chunks or stored else "seen"  # "seen": the observer was first
        spool.finish_turn(self.conn, turn.turn_key, outcome)
        self.summary.turns += 1


class CaptureError(RuntimeError):
    """The engine could not process a turn's transcript (the message says why); the turn is retried."""


def _log(message: str) -> None:
    from cems_cli.plumbing.hookio import log_error

    log_error(message)


def _project(cwd: str | None) -> str | None:
    if not cwd:
        return None
    from cems_cli.project import project_for_dir

    return project_for_dir(cwd)


def _is_store_unreachable(error: Exception) -> bool:
    """Errors that say the database or the embedder is not available, rather than that this item is bad:
    the run stops and the work stays pending for the next one."""
    import psycopg

    from cems_cli.embedding import EmbeddingError
    from cems_cli.store.db import StoreError

    return isinstance(error, StoreError | EmbeddingError | psycopg.OperationalError | psycopg.InterfaceError)


# --------------------------------------------------------------------------- entry point


def main() -> int:
    """Run once, quietly; errors go to $CEMS_HOME/logs/hooks.log. Always exits 0: nobody waits on it."""
    from cems_cli.paths import PRIVATE_UMASK
    from cems_cli.plumbing.hookio import json_dumps, log_error

    os.umask(PRIVATE_UMASK)  # inherited from the hook that starts it, but a detached process says so itself
    try:
        os.nice(5)  # background work: leave the CPU to the agent and the user
    except OSError:
        pass
    started = time.monotonic()
    try:
        from cems_cli.config import get_settings

        summary = process_pending(get_settings())
        result = summary.to_json()
        result["seconds"] = round(time.monotonic() - started, 3)
        print(json_dumps(result))
    except BaseException:  # a detached process: log, never raise
        log_error("capture worker failed; the work stays pending")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
