"""The capture spool: a local SQLite file where hooks drop events and the capture worker picks them up.

Hooks write here instead of the database because they must return within tens of milliseconds, long
before PostgreSQL, the embedding model or an LLM could be reached. So this module is stdlib only and cheap
to import: no `typing`, no `dataclasses`, no `json`, no `sqlite3.dbapi2`, and the redaction module only when
a text may hold something to redact (see `cems_cli.capture.safe_text.may_need_redaction`).

Guarantees:
* Never lost: WAL, each insert its own transaction, committed before the hook exits. With
  `synchronous=NORMAL` a committed row survives the crash of any process (the hook, Claude Code, the
  worker) and the file is never corrupted; the last connection to close (normally the hook itself)
  checkpoints the WAL with fsyncs, so the row is on disk when the hook returns. Only while another process
  holds the spool open may the newest rows wait in the OS cache for the worker's checkpoint (a power cut
  then could lose them). FULL would close that gap for one more fsync per tool call (8 ms measured here).
* Never twice: a tool event's key is its `tool_use_id` (PRIMARY KEY, INSERT OR IGNORE), a turn's key is
  derived from its Stop payload, so a replayed hook stores nothing new.
* Nothing private: every text goes through `clip` before it is written: `<private>` blocks dropped,
  secrets redacted, huge values cut to head and tail. No caller can put raw payload text in the file.
* Readable only by its owner: the folder is created 0700 and the file 0600 (SQLite gives its -wal/-shm
  files the database file's permissions).
"""

from __future__ import annotations

import os
import time

from cems_cli.capture.safe_text import _storable, clip, clip_tree
from cems_cli.plumbing.hookio import cems_home, json_dumps

try:  # sqlite3's C core: skips `sqlite3.dbapi2` and the datetime import it brings (~5 ms per hook)
    from _sqlite3 import connect as _sqlite_connect
except ImportError:  # pragma: no cover - not CPython
    from sqlite3 import connect as _sqlite_connect

TYPE_CHECKING = False  # `typing` costs ~25 ms to import; annotations are strings anyway
if TYPE_CHECKING:
    import sqlite3
    from collections.abc import Iterable
    from typing import Any


SPOOL_FILE = "spool.db"
LOCK_FILE = "capture.lock"  # held by the one running capture worker (see capture.worker)
SCHEMA_VERSION = 2
BUSY_TIMEOUT_SECONDS = 10.0
MAX_ATTEMPTS = 3  # a turn that fails this often for a reason of its own is set aside as "failed"


_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS tool_events (
        tool_use_id  TEXT PRIMARY KEY,
        session_id   TEXT NOT NULL,
        event        TEXT NOT NULL,
        tool_name    TEXT NOT NULL,
        cwd          TEXT,
        agent_id     TEXT,
        received_at  REAL NOT NULL,
        data         TEXT NOT NULL,
        project      TEXT,
        processed_at REAL
    )""",
    "CREATE INDEX IF NOT EXISTS tool_events_pending ON tool_events (received_at) WHERE processed_at IS NULL",
    "CREATE INDEX IF NOT EXISTS tool_events_project ON tool_events (project, received_at)",
    """CREATE TABLE IF NOT EXISTS turns (
        turn_key        TEXT PRIMARY KEY,
        session_id      TEXT NOT NULL,
        transcript_path TEXT,
        cwd             TEXT,
        last_message    TEXT NOT NULL,
        end_offset      INTEGER,
        received_at     REAL NOT NULL,
        processed_at    REAL,
        outcome         TEXT,
        attempts        INTEGER NOT NULL DEFAULT 0,
        last_error      TEXT
    )""",
    "CREATE INDEX IF NOT EXISTS turns_pending ON turns (received_at) WHERE processed_at IS NULL",
    """CREATE TABLE IF NOT EXISTS emitted (
        key        TEXT PRIMARY KEY,
        memory_id  TEXT,
        emitted_at REAL NOT NULL
    )""",
)
# What a spool of an older version needs beyond `_SCHEMA`, by the version that brings it.
_MIGRATIONS = {
    # The capture engine keeps its own transcript offsets (in PostgreSQL, with the memories it stores);
    # the spool's were never written.
    2: ("DROP TABLE IF EXISTS transcript_offsets",),
}


class _Row:
    """A light record (a namedtuple class costs ~4 ms to create, too much for a hook)."""

    __slots__: tuple[str, ...] = ()

    def __init__(self, *values: Any) -> None:
        for name, value in zip(self.__slots__, values, strict=True):
            setattr(self, name, value)


class ToolEventRow(_Row):
    """A spooled tool event; `data` is the clipped, redacted JSON object the hook stored."""

    __slots__ = tuple("tool_use_id session_id event tool_name cwd agent_id received_at data project".split())
    tool_use_id: str
    session_id: str
    event: str
    tool_name: str
    cwd: str | None
    agent_id: str | None
    received_at: float
    data: dict[str, Any]
    project: str | None


class TurnRow(_Row):
    """A turn recorded by the Stop hook."""

    __slots__ = tuple(
        "turn_key session_id transcript_path cwd last_message end_offset received_at attempts".split()
    )
    turn_key: str
    session_id: str
    transcript_path: str | None
    cwd: str | None
    last_message: str
    end_offset: int | None
    received_at: float
    attempts: int


_TOOL_COLUMNS = "tool_use_id, session_id, event, tool_name, cwd, agent_id, received_at, data, project"
_TURN_COLUMNS = "turn_key, session_id, transcript_path, cwd, last_message, end_offset, received_at, attempts"


# --- opening --------------------------------------------------------------------------------------------


def spool_path(home: str | None = None) -> str:
    return os.path.join(home or cems_home(), SPOOL_FILE)


def connect(path: str | None = None, *, timeout: float = BUSY_TIMEOUT_SECONDS) -> sqlite3.Connection:
    """Open (and on first use create) the spool. Autocommit: each statement is its own transaction unless
    the caller opens one with `transaction(conn)`."""
    path = path or spool_path()
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    try:
        fresh = os.path.getsize(path) == 0  # an empty file: left by a crash, or made by `touch`
    except FileNotFoundError:
        fresh = True
    if fresh:
        _create_file(path)
    conn = _sqlite_connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    try:
        if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
            _upgrade_schema(conn, path)
        conn.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


def _create_file(path: str) -> None:
    """Build the spool, schema and WAL mode included, in a file of this process's own, then put it in place
    whole; when several hooks start together on a new CEMS_HOME, the first to link wins and the others use
    its file.

    Why not let SQLite create it in place: a connection that opens a zero-byte database deletes the -wal
    file beside it, although another process may have just committed the schema and its first rows there
    (8 hooks starting together lost a third of their events so), and `PRAGMA journal_mode=WAL` answers
    "database is locked" at once, without waiting the busy timeout, while another connection holds the file.
    """
    temporary = f"{path}.{os.getpid()}.new"
    try:
        # Created owner-only before SQLite opens it with the umask's permissions (its -wal/-shm copy them).
        os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        conn = _sqlite_connect(temporary, isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")  # stored in the file: every later connection uses it
            _create_tables(conn)
        finally:
            conn.close()  # the last connection: checkpoints the WAL into the file and removes it
        try:
            os.link(temporary, path)
        except FileExistsError:
            if os.path.getsize(path) == 0:  # an empty file from a crash: replaced (linking would fail)
                os.replace(temporary, path)
    finally:
        for leftover in (temporary, temporary + "-wal", temporary + "-shm"):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass


def _upgrade_schema(conn: sqlite3.Connection, path: str) -> None:
    """Bring an existing spool up to SCHEMA_VERSION, one process at a time: they queue on an exclusive flock
    of the file, which SQLite's own fcntl locks ignore. Only an upgrade pays for the lock."""
    import fcntl

    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if conn.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:  # else another process did
            _create_tables(conn)
    finally:
        os.close(fd)  # releases the flock


def _create_tables(conn: sqlite3.Connection) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version < SCHEMA_VERSION:  # else another process won
            for statement in _SCHEMA:
                conn.execute(statement)
            if version:  # a new spool has nothing to migrate
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    for statement in _MIGRATIONS.get(step, ()):
                        conn.execute(statement)
            conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


class transaction:  # noqa: N801 - used like a function: `with transaction(conn):`
    """BEGIN IMMEDIATE … COMMIT (ROLLBACK on error) on an autocommit connection."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type is not None else "COMMIT")


# --- what the hooks write -------------------------------------------------------------------------------


def add_tool_event(
    conn: sqlite3.Connection,
    *,
    tool_use_id: str,
    session_id: str,
    event: str,
    tool_name: str,
    cwd: str | None,
    agent_id: str | None,
    data: dict[str, Any],
    limits: dict[str, tuple[int, int]] | None = None,
    drop: frozenset[str] = frozenset(),
) -> bool:
    """Store one tool event (its `data` clipped by `clip_tree`); False when that id was already stored."""
    cursor = conn.execute(
        "INSERT OR IGNORE INTO tool_events "
        "(tool_use_id, session_id, event, tool_name, cwd, agent_id, received_at, data) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            _storable(tool_use_id[:200]),
            _storable(session_id[:200]),
            _storable(event[:100]),
            _storable(tool_name[:200]),
            _storable(cwd) if cwd else None,
            _storable(agent_id[:200]) if agent_id else None,
            time.time(),
            json_dumps(clip_tree(data, limits, drop=drop)),  # ASCII-only JSON
        ),
    )
    return cursor.rowcount == 1


def add_turn(
    conn: sqlite3.Connection,
    *,
    turn_key: str,
    session_id: str,
    transcript_path: str | None,
    cwd: str | None,
    last_message: str,
    end_offset: int | None,
    message_limit: int = 6000,
) -> bool:
    """Record a finished turn for the worker; False when this turn was already recorded."""
    cursor = conn.execute(
        "INSERT OR IGNORE INTO turns "
        "(turn_key, session_id, transcript_path, cwd, last_message, end_offset, received_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            turn_key,
            _storable(session_id[:200]),
            _storable(transcript_path) if transcript_path else None,
            _storable(cwd) if cwd else None,
            clip(last_message, message_limit),
            end_offset,
            time.time(),
        ),
    )
    return cursor.rowcount == 1


# --- what the worker reads and marks --------------------------------------------------------------------


def has_pending(conn: sqlite3.Connection, skip_turns: Iterable[str] = ()) -> bool:
    """Is there work: a tool event not processed, or a pending turn not in `skip_turns` (the turns a
    worker already failed on in this run, so it does not loop on them)?"""
    if conn.execute("SELECT EXISTS (SELECT 1 FROM tool_events WHERE processed_at IS NULL)").fetchone()[0]:
        return True
    skip = set(skip_turns)
    rows = conn.execute(
        "SELECT turn_key FROM turns WHERE processed_at IS NULL LIMIT ?", (len(skip) + 1,)
    ).fetchall()
    return any(row[0] not in skip for row in rows)


def _tool_row(row: tuple) -> ToolEventRow:
    import json

    try:
        data = json.loads(row[7])
    except ValueError:
        data = {}
    return ToolEventRow(*row[:7], data if isinstance(data, dict) else {}, row[8])


def pending_tool_events(conn: sqlite3.Connection, limit: int = 500) -> list[ToolEventRow]:
    rows = conn.execute(
        f"SELECT {_TOOL_COLUMNS} FROM tool_events WHERE processed_at IS NULL "
        "ORDER BY received_at, rowid LIMIT ?",
        (limit,),
    ).fetchall()
    return [_tool_row(row) for row in rows]


def set_projects(conn: sqlite3.Connection, assignments: Iterable[tuple[str, str]]) -> None:
    """Record (tool_use_id, project) pairs: the worker resolves projects, the hook has no time to."""
    with transaction(conn):
        conn.executemany(
            "UPDATE tool_events SET project = ? WHERE tool_use_id = ?",
            [(project, tool_use_id) for tool_use_id, project in assignments],
        )


def project_tool_events(conn: sqlite3.Connection, project: str, limit: int = 2000) -> list[ToolEventRow]:
    """The project's most recent `limit` events, processed or not, oldest first."""
    rows = conn.execute(
        f"SELECT {_TOOL_COLUMNS} FROM (SELECT rowid AS r, * FROM tool_events WHERE project = ? "
        "ORDER BY received_at DESC, rowid DESC LIMIT ?) ORDER BY received_at, r",
        (project, limit),
    ).fetchall()
    return [_tool_row(row) for row in rows]


def mark_tool_events_done(conn: sqlite3.Connection, tool_use_ids: Iterable[str]) -> None:
    now = time.time()
    with transaction(conn):
        conn.executemany(
            "UPDATE tool_events SET processed_at = ? WHERE tool_use_id = ?",
            [(now, tool_use_id) for tool_use_id in tool_use_ids],
        )


def emitted_keys(conn: sqlite3.Connection, keys: Iterable[str]) -> set[str]:
    wanted = list(keys)
    found: set[str] = set()
    for start in range(0, len(wanted), 500):
        batch = wanted[start : start + 500]
        marks = ",".join("?" * len(batch))
        found.update(row[0] for row in conn.execute(f"SELECT key FROM emitted WHERE key IN ({marks})", batch))
    return found


def mark_emitted(conn: sqlite3.Connection, key: str, memory_id: str | None) -> None:
    conn.execute(
        "INSERT OR IGNORE INTO emitted (key, memory_id, emitted_at) VALUES (?, ?, ?)",
        (key, memory_id, time.time()),
    )


def pending_turns(conn: sqlite3.Connection, limit: int = 50) -> list[TurnRow]:
    rows = conn.execute(
        f"SELECT {_TURN_COLUMNS} FROM turns WHERE processed_at IS NULL ORDER BY received_at, rowid LIMIT ?",
        (limit,),
    ).fetchall()
    return [TurnRow(*row) for row in rows]


def finish_turn(conn: sqlite3.Connection, turn_key: str, outcome: str) -> None:
    """Mark a turn done (the capture engine committed where it read the transcript up to)."""
    conn.execute(
        "UPDATE turns SET processed_at = ?, outcome = ? WHERE turn_key = ?", (time.time(), outcome, turn_key)
    )


def turn_failed(conn: sqlite3.Connection, turn_key: str, error: str) -> bool:
    """Count a failed attempt; after MAX_ATTEMPTS the turn is set aside (outcome "failed"). True if so."""
    now = time.time()
    with transaction(conn):
        conn.execute(
            "UPDATE turns SET attempts = attempts + 1, last_error = ? WHERE turn_key = ?",
            (error[:2000], turn_key),
        )
        cursor = conn.execute(
            "UPDATE turns SET processed_at = ?, outcome = 'failed' WHERE turn_key = ? AND attempts >= ?",
            (now, turn_key, MAX_ATTEMPTS),
        )
    return cursor.rowcount == 1


def checkpoint(conn: sqlite3.Connection) -> None:
    """Move the WAL into the database file and truncate it (hooks exit without doing so, see
    hookhandlers.post_tool_use.main). Skipped silently while hooks hold it busy; the next run retries."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()


def prune(conn: sqlite3.Connection, older_than_days: float = 60.0) -> int:
    """Forget processed events and turns older than the cut-off (their memories are stored); returns how
    many rows went. Emitted-statement keys are kept: they stop a pattern being stored again later."""
    cutoff = time.time() - older_than_days * 86400
    with transaction(conn):
        removed = conn.execute(
            "DELETE FROM tool_events WHERE processed_at IS NOT NULL AND received_at < ?", (cutoff,)
        ).rowcount
        removed += conn.execute(
            "DELETE FROM turns WHERE processed_at IS NOT NULL AND received_at < ?", (cutoff,)
        ).rowcount
    return removed
