"""SQL for the observer: per-file read positions with pending material, the LLM backlog, daemon state.

Callers wrap a file's update and the memories made from it in one `with conn.transaction()`; the row lock
taken by `lock_file` makes a second observer process (a `--once` next to the daemon, another machine on a
shared server) wait, then see that the offset moved and back off instead of storing the same bytes twice.

A member of a team server holds no privilege on these tables and goes through the functions of
sql/023_member_bookkeeping.sql, which read and write the caller's own rows (the `user` argument is then the
database's user already, and the functions do not take it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from cems_cli.store.member_access import is_restricted

_FILE_COLUMNS = (
    "path, device, inode, read_offset, size_seen, mtime, fingerprint, fingerprint_len, pending, "
    "ignored, lines, malformed, resets, version"
)


@dataclass
class FileRow:
    path: str
    device: int = 0
    inode: int = 0
    offset: int = 0
    size_seen: int = 0
    mtime: float = 0.0
    fingerprint: str = ""
    fingerprint_len: int = 0
    pending: dict[str, Any] | None = None
    ignored: str | None = None
    lines: int = 0
    malformed: int = 0
    resets: int = 0
    version: int = 0  # bumped by every save_file: the optimistic-concurrency token

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> FileRow:
        return cls(*row)


# --------------------------------------------------------------------------- files


def _files(conn: psycopg.Connection, paths: str | None = None) -> str:
    """What a read of read positions selects from: the table, or a member's own rows (`paths`, SQL for a
    text[], narrows them), named as the table so the query's own WHERE stays as it is."""
    if not is_restricted(conn):
        return "observer_files"
    return f"cems_my_observer_files({paths or 'NULL'}) observer_files"


def load_files(conn: psycopg.Connection, user: str, paths: Sequence[str] | None = None) -> dict[str, FileRow]:
    """Rows by path: all of the user's, or those of `paths`."""
    if paths is None:
        rows = conn.execute(
            f"SELECT {_FILE_COLUMNS} FROM {_files(conn)} WHERE user_id = %s", (user,)
        ).fetchall()
    elif not paths:
        return {}
    else:
        rows = conn.execute(
            f"SELECT {_FILE_COLUMNS} FROM {_files(conn, '%(paths)s::text[]')} "
            "WHERE user_id = %(user)s AND path = ANY(%(paths)s)",
            {"user": user, "paths": list(paths)},
        ).fetchall()
    return {row[0]: FileRow.from_row(row) for row in rows}


def get_file(conn: psycopg.Connection, user: str, path: str) -> FileRow | None:
    row = conn.execute(
        f"SELECT {_FILE_COLUMNS} FROM {_files(conn, 'ARRAY[%(path)s::text]')} WHERE user_id = %(user)s "
        "AND path = %(path)s",
        {"user": user, "path": path},
    ).fetchone()
    return FileRow.from_row(row) if row else None


def lock_file(conn: psycopg.Connection, user: str, path: str) -> FileRow | None:
    """The file's row, locked until the surrounding transaction ends (None if it has none yet)."""
    if is_restricted(conn):
        row = conn.execute(f"SELECT {_FILE_COLUMNS} FROM cems_lock_observer_file(%s)", (path,)).fetchone()
    else:
        row = conn.execute(
            f"SELECT {_FILE_COLUMNS} FROM observer_files WHERE user_id = %s AND path = %s FOR UPDATE",
            (user, path),
        ).fetchone()
    return FileRow.from_row(row) if row else None


def insert_file_if_missing(conn: psycopg.Connection, user: str, path: str) -> None:
    if is_restricted(conn):
        conn.execute("SELECT cems_add_observer_file(%s)", (path,))
        return
    conn.execute(
        "INSERT INTO observer_files (user_id, path) VALUES (%s, %s) ON CONFLICT DO NOTHING", (user, path)
    )


def save_file(conn: psycopg.Connection, user: str, row: FileRow) -> None:
    values = (
        row.device,
        row.inode,
        row.offset,
        row.size_seen,
        row.mtime,
        row.fingerprint,
        row.fingerprint_len,
        Jsonb(row.pending) if row.pending is not None else None,
        row.ignored,
        row.lines,
        row.malformed,
        row.resets,
        row.version,
    )
    if is_restricted(conn):
        conn.execute(
            "SELECT cems_save_observer_file(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (row.path, *values),
        )
        return
    conn.execute(
        "UPDATE observer_files SET device = %s, inode = %s, read_offset = %s, size_seen = %s, mtime = %s, "
        "fingerprint = %s, fingerprint_len = %s, pending = %s, ignored = %s, lines = %s, malformed = %s, "
        "resets = %s, version = %s, updated_at = now() WHERE user_id = %s AND path = %s",
        (*values, user, row.path),
    )


def delete_file(conn: psycopg.Connection, user: str, path: str) -> None:
    # Members delete through functions (no DELETE privilege: it would let them lock the table).
    conn.execute("SELECT cems_delete_observer_file(%s, %s)", (user, path))


def files_with_pending(conn: psycopg.Connection, user: str) -> list[FileRow]:
    rows = conn.execute(
        f"SELECT {_FILE_COLUMNS} FROM {_files(conn)} WHERE user_id = %s AND pending IS NOT NULL "
        "AND ignored IS NULL ORDER BY path",
        (user,),
    ).fetchall()
    return [FileRow.from_row(row) for row in rows]


# --------------------------------------------------------------------------- LLM backlog


@dataclass
class BacklogItem:
    id: int
    path: str
    chunk: dict[str, Any]
    chars: int
    attempts: int


@dataclass
class BacklogGroup:
    path: str
    items: int
    chars: int
    attempts: int  # the most any of its items has had


def add_backlog(conn: psycopg.Connection, user: str, path: str, chunks: Sequence[dict[str, Any]]) -> None:
    if not chunks:
        return
    if is_restricted(conn):  # one call; each item's size is counted there, as here
        conn.execute("SELECT cems_add_backlog(%s, %s)", (path, Jsonb(list(chunks))))
        return
    with conn.cursor() as cur:
        cur.executemany(
            "INSERT INTO observer_backlog (user_id, path, chunk, chars) VALUES (%s, %s, %s, %s)",
            [(user, path, Jsonb(chunk), len(chunk.get("text", ""))) for chunk in chunks],
        )


def backlog_groups(conn: psycopg.Connection, user: str) -> list[BacklogGroup]:
    if is_restricted(conn):
        rows = conn.execute(
            "SELECT path, items, chars, attempts FROM cems_my_backlog_groups() ORDER BY first_id"
        ).fetchall()
        return [BacklogGroup(r[0], int(r[1]), int(r[2]), int(r[3])) for r in rows]
    rows = conn.execute(
        "SELECT path, count(*), coalesce(sum(chars), 0), coalesce(max(attempts), 0) FROM observer_backlog "
        "WHERE user_id = %s GROUP BY path ORDER BY min(id)",
        (user,),
    ).fetchall()
    return [BacklogGroup(r[0], int(r[1]), int(r[2]), int(r[3])) for r in rows]


def backlog_batch(conn: psycopg.Connection, user: str, path: str, max_chars: int) -> list[BacklogItem]:
    """The oldest items of a file, as many as fit in `max_chars` (always at least one)."""
    if is_restricted(conn):  # the same choice, made by the function
        rows = conn.execute(
            "SELECT id, path, chunk, chars, attempts FROM cems_backlog_batch(%s, %s) ORDER BY id",
            (path, max_chars),
        ).fetchall()
        return [BacklogItem(int(r[0]), r[1], r[2], int(r[3]), int(r[4])) for r in rows]
    batch: list[BacklogItem] = []
    total = 0
    with conn.cursor() as cur:
        cur.execute(
            "SELECT id, path, chunk, chars, attempts FROM observer_backlog WHERE user_id = %s AND path = %s "
            "ORDER BY id",
            (user, path),
        )
        for row in cur:
            item = BacklogItem(int(row[0]), row[1], row[2], int(row[3]), int(row[4]))
            if batch and total + item.chars > max_chars:
                break
            batch.append(item)
            total += item.chars
    return batch


def remove_backlog(conn: psycopg.Connection, user: str, ids: Sequence[int]) -> int:
    """Delete the items; returns how many were still there (fewer means another process took them)."""
    rows = conn.execute(
        "SELECT * FROM cems_delete_backlog(%s, %s::bigint[])", (user, list(ids))
    ).fetchall()
    return len(rows)


def backlog_failed(conn: psycopg.Connection, user: str, ids: Sequence[int], error: str) -> None:
    if is_restricted(conn):
        conn.execute("SELECT cems_backlog_failed(%s::bigint[], %s)", (list(ids), error))
        return
    conn.execute(
        "UPDATE observer_backlog SET attempts = attempts + 1, last_error = %s "
        "WHERE user_id = %s AND id = ANY(%s)",
        (error, user, list(ids)),
    )


def backlog_totals(conn: psycopg.Connection, user: str) -> tuple[int, int]:
    if is_restricted(conn):
        row = conn.execute(
            "SELECT coalesce(sum(items), 0), coalesce(sum(chars), 0) FROM cems_my_backlog_groups()"
        ).fetchone()
        return (int(row[0]), int(row[1])) if row else (0, 0)
    row = conn.execute(
        "SELECT count(*), coalesce(sum(chars), 0) FROM observer_backlog WHERE user_id = %s", (user,)
    ).fetchone()
    return (int(row[0]), int(row[1])) if row else (0, 0)


# --------------------------------------------------------------------------- daemon state


def note_run(conn: psycopg.Connection, user: str) -> None:
    if is_restricted(conn):
        conn.execute("SELECT cems_note_observer_run()")
        return
    conn.execute(
        "INSERT INTO observer_state (user_id, last_run_at) VALUES (%s, now()) ON CONFLICT (user_id) "
        "DO UPDATE SET last_run_at = now(), updated_at = now()",
        (user,),
    )


def note_error(conn: psycopg.Connection, user: str, error: str) -> None:
    if is_restricted(conn):
        conn.execute("SELECT cems_note_observer_error(%s)", (error,))
        return
    conn.execute(
        "INSERT INTO observer_state (user_id, last_error, last_error_at) VALUES (%s, %s, now()) "
        "ON CONFLICT (user_id) DO UPDATE SET last_error = excluded.last_error, "
        "last_error_at = now(), updated_at = now()",
        (user, error),
    )


def note_llm(conn: psycopg.Connection, user: str, failures: int, retry_at: datetime | None) -> None:
    if is_restricted(conn):
        conn.execute("SELECT cems_note_observer_llm(%s, %s)", (failures, retry_at))
        return
    conn.execute(
        "INSERT INTO observer_state (user_id, llm_failures, llm_retry_at) VALUES (%s, %s, %s) "
        "ON CONFLICT (user_id) DO UPDATE SET llm_failures = excluded.llm_failures, "
        "llm_retry_at = excluded.llm_retry_at, updated_at = now()",
        (user, failures, retry_at),
    )


def get_state(conn: psycopg.Connection, user: str) -> dict[str, Any]:
    row = conn.execute(
        "SELECT last_run_at, last_error, last_error_at, llm_failures, llm_retry_at "
        f"FROM {'cems_my_observer_state()' if is_restricted(conn) else 'observer_state'} WHERE user_id = %s",
        (user,),
    ).fetchone()
    keys = ("last_run_at", "last_error", "last_error_at", "llm_failures", "llm_retry_at")
    return dict(zip(keys, row, strict=True)) if row else dict.fromkeys(keys)


def count_observations(conn: psycopg.Connection, user: str, source: str) -> int:
    source_table = "cems_visible_documents()" if is_restricted(conn) else "memory_documents"
    row = conn.execute(
        f"SELECT count(*) FROM {source_table} d WHERE user_id = %s AND source = %s AND NOT archived",
        (user, source),
    ).fetchone()
    return int(row[0]) if row else 0


# --------------------------------------------------------------------------- session records


def lock_session(
    conn: psycopg.Connection, user: str, session_id: str
) -> tuple[dict[str, Any] | None, str | None]:
    """(record, context memory id) of a session, row-locked until the caller's transaction ends."""
    if is_restricted(conn):
        row = conn.execute(
            "SELECT record, memory_id FROM cems_lock_capture_session(%s)", (session_id,)
        ).fetchone()
    else:
        row = conn.execute(
            "SELECT record, memory_id FROM capture_sessions WHERE user_id = %s AND session_id = %s "
            "FOR UPDATE",
            (user, session_id),
        ).fetchone()
    if row is None:
        return None, None
    return row[0], (str(row[1]) if row[1] else None)


def save_session(
    conn: psycopg.Connection, user: str, session_id: str, record: dict[str, Any], memory_id: str | None
) -> None:
    if is_restricted(conn):  # a memory that is not the member's own is recorded as none
        conn.execute(
            "SELECT cems_save_capture_session(%s, %s, %s::uuid)", (session_id, Jsonb(record), memory_id)
        )
        return
    conn.execute(
        "INSERT INTO capture_sessions (user_id, session_id, record, memory_id) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT (user_id, session_id) DO UPDATE SET record = excluded.record, "
        "memory_id = excluded.memory_id, updated_at = now()",
        (user, session_id, Jsonb(record), memory_id),
    )
