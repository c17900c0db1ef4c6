"""Memories stored, changed or deleted by any process, for readers that show them live (the viewer): the
triggers of sql/025_searches_and_changes.sql log each change, and a reader polls cems_changes_since for
the ones it may see (its own memories, its teams' shared ones) since a cursor. Nothing is sent: PostgreSQL
lets any role LISTEN and NOTIFY on any channel, and the notices the store sent before named every memory
written to any listener, with the writer's pid; anyone could also send them.

A poll is one indexed read, POLL_SECONDS apart, so a change shows within that; a reader costs the server
the same whatever others do. Its cursor is the xmin of the snapshot the last poll read in: a change that
snapshot did not show belongs to a transaction running then or begun later, whose id is at least that, so
the next poll returns it, along with changes already seen, which are skipped by their sequence number."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg

POLL_SECONDS = 0.25
CHANGE_LIMIT = 1000  # log rows one poll reads (the newest); more new ones than that are a bulk change
BATCH_CAP = 100  # distinct ids in one batch; more at once is a bulk change (the page offers a reload)
RETENTION_SECONDS = 3600.0  # how long the log keeps a change (sql/025)

_POLL = ("SELECT x.since::text, c.seq, c.op, c.memory_id::text "
         "FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS since) x "
         "LEFT JOIN LATERAL cems_changes_since(%s::xid8, %s) c ON true")


@dataclass(frozen=True)
class Change:
    """`op`: insert, update, delete, or bulk (too many rows at once: reload; `id` is then None)."""

    op: str
    id: str | None


class ChangeReader:
    """The changes since the last `poll` (the first: since the reader was made), oldest first, one per
    id (its latest operation); more than `cap` ids, or a bulk change, are one bulk change."""

    def __init__(self, conn: psycopg.Connection, cap: int = BATCH_CAP) -> None:
        self._conn = conn
        self._cap = cap
        row = conn.execute("SELECT pg_snapshot_xmin(pg_current_snapshot())::text").fetchone()
        assert row is not None  # a SELECT without FROM returns one row
        self._since: str = row[0]
        self._seen: set[int] = set()  # the sequence numbers the last poll returned
        self._read_at = time.monotonic()

    def poll(self) -> list[Change]:
        rows = self._conn.execute(_POLL, (self._since, CHANGE_LIMIT)).fetchall()
        now = time.monotonic()
        # Away longer than the log keeps changes (a laptop asleep): some may be gone; the page reloads.
        away = now - self._read_at > RETENTION_SECONDS / 2
        self._read_at = now
        self._since = rows[0][0]
        found = [(int(seq), op, memory_id) for _, seq, op, memory_id in rows if seq is not None]
        fresh = sorted(change for change in found if change[0] not in self._seen)
        self._seen = {change[0] for change in found}
        # A full read with new rows in it may have left out others, older: reload rather than guess.
        if away or (fresh and len(found) >= CHANGE_LIMIT):
            return [Change("bulk", None)]
        pending: dict[str, Change] = {}
        for _, op, memory_id in fresh:
            if op == "bulk" or memory_id is None:
                return [Change("bulk", None)]
            pending.pop(memory_id, None)  # moved to the end: the latest operation, last
            pending[memory_id] = Change(op, memory_id)
        if len(pending) > self._cap:
            return [Change("bulk", None)]
        return list(pending.values())


def batches(conn: psycopg.Connection, stop: threading.Event, *, poll_seconds: float = POLL_SECONDS,
            cap: int = BATCH_CAP) -> Iterator[list[Change]]:
    """Changes as they commit, until `stop` is set: each batch what one poll found (see ChangeReader).
    `conn` must be autocommit and used by nothing else while this runs."""
    reader = ChangeReader(conn, cap)
    while not stop.wait(poll_seconds):
        batch = reader.poll()
        if batch:
            yield batch


def changes(conn: psycopg.Connection, stop: threading.Event,
            poll_seconds: float = POLL_SECONDS) -> Iterator[Change]:
    """`batches`, one change at a time (a bulk change only when one poll finds more than it reads)."""
    for batch in batches(conn, stop, poll_seconds=poll_seconds, cap=CHANGE_LIMIT):
        yield from batch
