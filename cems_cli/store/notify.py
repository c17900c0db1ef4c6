"""Change notifications (sql/012_viewer.sql): LISTEN on a dedicated connection for the ids of memories
that were stored, changed, forgotten, restored or purged. The payload holds an operation and an id, never
text; a reader reads the row through the usual visibility rules."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg

CHANNEL = "cems_memories"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


@dataclass(frozen=True)
class Change:
    """`op`: insert, update, delete, or bulk (too many rows at once: reload; `id` is then None)."""

    op: str
    id: str | None


def parse(payload: str) -> Change | None:
    """A notice the triggers send, else None. Any database role may NOTIFY on the channel, so only a full
    id in PostgreSQL's spelling passes: a forged `update 3` would have the reader look up the id *prefix*
    3 (how `get` takes ids) and show one of the user's memories as just changed."""
    op, _, memory_id = payload.partition(" ")
    if op == "bulk" and not memory_id:
        return Change("bulk", None)
    if op in ("insert", "update", "delete") and _UUID.fullmatch(memory_id):
        return Change(op, memory_id)
    return None


def changes(conn: psycopg.Connection, stop: threading.Event, poll_seconds: float = 0.5) -> Iterator[Change]:
    """Changes as they commit, until `stop` is set. `conn` must be autocommit and used by nothing else: it
    is blocked waiting for notifications between polls (`poll_seconds` bounds how late `stop` is seen)."""
    conn.execute(f"LISTEN {CHANNEL}")
    while not stop.is_set():
        for notice in conn.notifies(timeout=poll_seconds):
            change = parse(notice.payload)
            if change is not None:
                yield change
            if stop.is_set():
                return
