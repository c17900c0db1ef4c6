"""The spool's first use: many hooks starting together on a new CEMS_HOME must all keep their event.

Processes, not threads: SQLite's locks and the WAL race that lost events are between processes."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import stat
from pathlib import Path

from cems_cli.capture import spool

WRITERS = 8


def _write_one(path: str, number: int, barrier: multiprocessing.synchronize.Barrier) -> None:
    barrier.wait()  # every process reaches `connect` at the same moment
    conn = spool.connect(path)
    try:
        spool.add_tool_event(
            conn, tool_use_id=f"t{number}", session_id="s", event="PostToolUse", tool_name="Bash",
            cwd=None, agent_id=None, data={"n": number},
        )
    finally:
        conn.close()


def _race(path: Path) -> list[int]:
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(WRITERS)
    workers = [context.Process(target=_write_one, args=(str(path), n, barrier)) for n in range(WRITERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    return [worker.exitcode for worker in workers]


def _stored(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return sorted(row[0] for row in conn.execute("SELECT tool_use_id FROM tool_events"))


def test_writers_starting_together_on_a_new_home_lose_nothing(tmp_path):
    # One in three such races lost events before the spool was built aside and linked into place.
    for trial in range(12):
        path = tmp_path / f"home{trial}" / spool.SPOOL_FILE
        assert _race(path) == [0] * WRITERS
        assert _stored(path) == sorted(f"t{n}" for n in range(WRITERS)), f"trial {trial}"
        assert sorted(p.name for p in path.parent.iterdir() if ".new" in p.name) == []


def test_an_empty_spool_file_is_rebuilt(tmp_path):
    path = tmp_path / spool.SPOOL_FILE
    path.touch()
    assert _race(path) == [0] * WRITERS
    assert _stored(path) == sorted(f"t{n}" for n in range(WRITERS))


def test_a_new_spool_is_owner_only_and_in_wal_mode(tmp_path):
    path = tmp_path / "home" / spool.SPOOL_FILE
    spool.connect(str(path)).close()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA user_version").fetchone() == (spool.SCHEMA_VERSION,)


def test_a_spool_of_version_1_loses_its_unused_offsets_table_and_keeps_its_rows(tmp_path):
    """Version 1 had a `transcript_offsets` table nothing wrote (the capture engine keeps its offsets in
    PostgreSQL); opening such a spool drops it and keeps what the hooks spooled."""
    path = tmp_path / spool.SPOOL_FILE
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE transcript_offsets (path TEXT PRIMARY KEY, offset INTEGER NOT NULL, "
                     "updated_at REAL NOT NULL)")
        conn.execute("CREATE TABLE tool_events (tool_use_id TEXT PRIMARY KEY, session_id TEXT NOT NULL, "
                     "event TEXT NOT NULL, tool_name TEXT NOT NULL, cwd TEXT, agent_id TEXT, "
                     "received_at REAL NOT NULL, data TEXT NOT NULL, project TEXT, processed_at REAL)")
        conn.execute("INSERT INTO tool_events VALUES ('t1', 's', 'PostToolUse', 'Bash', NULL, NULL, 1, '{}', "
                     "NULL, NULL)")
        conn.execute("PRAGMA user_version=1")
    conn = spool.connect(str(path))
    try:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert "transcript_offsets" not in tables and {"tool_events", "turns", "emitted"} <= tables
        assert conn.execute("PRAGMA user_version").fetchone() == (2,)
        assert [row.tool_use_id for row in spool.pending_tool_events(conn, 10)] == ["t1"]
    finally:
        conn.close()
