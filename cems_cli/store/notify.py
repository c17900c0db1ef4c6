"""Change notifications (sql/012_viewer.sql): LISTEN on a dedicated connection for the ids of memories
that were stored, changed, forgotten, restored or purged. The payload holds an operation and an id, never
text; a reader reads the row through the usual visibility rules.

Any database role may NOTIFY on the channel, so a reader must not pay per notice: `batches` coalesces what
arrives within a short window into one batch of distinct ids (at most `cap`; past it, one `bulk` change
that says "reload"), so a flood of notices costs a reader one read per window, and a malformed payload is
dropped on its length or its first word before any pattern runs."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg

CHANNEL = "cems_memories"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_LONGEST = len("insert ") + 36  # the longest payload the triggers send
# A batch gathers what arrives this long after its first notice: a live update still shows well under 1 s.
WINDOW_SECONDS = 0.1
BATCH_CAP = 100  # distinct ids in one batch; more at once is a bulk change (the page offers a reload)


@dataclass(frozen=True)
class Change:
    """`op`: insert, update, delete, or bulk (too many rows at once: reload; `id` is then None)."""

    op: str
    id: str | None


def parse(payload: str) -> Change | None:
    """A notice the triggers send, else None. Any database role may NOTIFY on the channel, so only a full
    id in PostgreSQL's spelling passes: a forged `update 3` would have the reader look up the id *prefix*
    3 (how `get` takes ids) and show one of the user's memories as just changed."""
    if len(payload) > _LONGEST:
        return None
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


def batches(conn: psycopg.Connection, stop: threading.Event, *, window: float = WINDOW_SECONDS,
            cap: int = BATCH_CAP, poll_seconds: float = 0.5) -> Iterator[list[Change]]:
    """Changes as they commit, coalesced: each batch holds what arrived within `window` seconds of its
    first notice, one change per id (the latest operation), in order of arrival; more than `cap` ids, or a
    bulk notice, make the batch one bulk change. Same contract for `conn` as `changes`."""
    conn.execute(f"LISTEN {CHANNEL}")
    while not stop.is_set():
        pending: dict[str, Change] = {}
        bulk = False
        deadline: float | None = None
        while not stop.is_set():
            wait = poll_seconds if deadline is None else deadline - time.monotonic()
            if wait <= 0:
                break
            for notice in conn.notifies(timeout=wait):
                change = parse(notice.payload)
                if change is not None:
                    if deadline is None:
                        deadline = time.monotonic() + window
                    if change.id is None:
                        bulk = True
                    elif not bulk:
                        pending.pop(change.id, None)  # moved to the end: the latest operation, last
                        pending[change.id] = change
                        bulk = len(pending) > cap
                if bulk:
                    pending.clear()
                if deadline is not None and time.monotonic() >= deadline:
                    break
            if deadline is None and not stop.is_set():
                continue  # nothing yet: wait again (stop is checked every poll_seconds)
        if bulk:
            yield [Change("bulk", None)]
        elif pending:
            yield list(pending.values())
