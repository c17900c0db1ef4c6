"""Waiting for what the CEMS hooks started inside a Claude Code run to finish."""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path


def captured_turns(cems_home: str, session_id: str, timeout: float = 120) -> list[dict]:
    """The Stop hook's turns for the session, once the detached capture worker has processed them all.

    Waiting matters beyond the check: a worker left running would write into the test's folders and talk
    to a database the session is about to stop."""
    spool = Path(cems_home) / "spool.db"
    deadline = time.monotonic() + timeout
    rows: list[dict] = []
    while time.monotonic() < deadline:
        if spool.exists():
            with contextlib.closing(sqlite3.connect(spool)) as conn:
                conn.row_factory = sqlite3.Row
                query = "SELECT * FROM turns WHERE session_id = ? ORDER BY received_at"
                rows = [dict(row) for row in conn.execute(query, (session_id,))]
            if rows and all(row["processed_at"] for row in rows):
                return rows
        time.sleep(0.2)
    raise AssertionError(f"the capture worker did not finish the session's turns: {rows}")
