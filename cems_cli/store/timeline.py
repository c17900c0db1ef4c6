"""SQL for the timeline: the live memories you can see recorded before and after a point, in recorded order
(created_at, then seq: the insertion order of memories that share a timestamp), within one session (the
`session:<id>` tag), one project (source_ref) or everything."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from cems_cli.store.member_access import documents_from
from cems_cli.store.memories import Identity, add_conditions, live_clause, project_clause, visibility_clause
from cems_cli.store.records import MemoryRecord, document_columns


@dataclass(frozen=True)
class Place:
    """Where a memory sits in recorded order."""

    created_at: datetime
    seq: int


@dataclass(frozen=True)
class Walk:
    """The memories a timeline walks: those of one session tag, or one project, or (both None) all."""

    session_tag: str | None = None
    project: str | None = None
    leave_out_tag: str | None = None  # a session's own memories, around which its project is walked


def place_of(conn: psycopg.Connection, memory_id: str, identity: Identity | None = None) -> Place:
    source = documents_from(identity, "%(ids)s::uuid[]") if identity else "memory_documents"
    row = conn.execute(f"SELECT created_at, seq FROM {source} d WHERE id = %(id)s",
                       {"ids": [memory_id], "id": memory_id}).fetchone()
    if row is None:  # the caller resolved the id a moment ago through the visibility rules
        raise LookupError(memory_id)
    return Place(row[0], int(row[1]))


def _where(identity: Identity, within: Walk) -> tuple[list[str], dict[str, Any]]:
    vis, params = visibility_clause(identity)
    where = [vis, live_clause()]
    add_conditions(where, params, [
        ("session_tag", "d.tags @> ARRAY[%(session_tag)s]::text[]", within.session_tag),
        ("project", project_clause(), within.project),
        ("leave_out_tag", "NOT d.tags @> ARRAY[%(leave_out_tag)s]::text[]", within.leave_out_tag),
    ])
    return where, params


def neighbours(
    conn: psycopg.Connection, identity: Identity, within: Walk, place: Place, *, after: bool, limit: int
) -> list[MemoryRecord]:
    """Up to `limit` memories recorded just before (or after) `place`, oldest first."""
    if limit < 1:
        return []
    where, params = _where(identity, within)
    where.append(f"(d.created_at, d.seq) {'>' if after else '<'} (%(at)s, %(seq)s)")
    params.update(at=place.created_at, seq=place.seq, limit=limit)
    order = "ASC" if after else "DESC"
    rows = conn.execute(
        f"SELECT {document_columns()} FROM {documents_from(identity)} d WHERE {' AND '.join(where)} "
        f"ORDER BY d.created_at {order}, d.seq {order} LIMIT %(limit)s",
        params,
    ).fetchall()
    records = [MemoryRecord.from_row(r) for r in rows]
    return records if after else records[::-1]


def in_session(
    conn: psycopg.Connection, identity: Identity, session_tag: str, limit: int
) -> tuple[list[MemoryRecord], int, Place | None]:
    """The first `limit` memories of a session, oldest first, how many it has in all, and where its last
    one sits (past `limit`, what follows the session starts there)."""
    where, params = _where(identity, Walk(session_tag=session_tag))
    params["limit"] = limit
    clause = " AND ".join(where)
    rows = conn.execute(
        f"SELECT {document_columns()} FROM {documents_from(identity)} d WHERE {clause} "
        "ORDER BY d.created_at, d.seq LIMIT %(limit)s",
        params,
    ).fetchall()
    last = conn.execute(
        f"SELECT count(*) OVER (), d.created_at, d.seq FROM {documents_from(identity)} d WHERE {clause} "
        "ORDER BY d.created_at DESC, d.seq DESC LIMIT 1",
        params,
    ).fetchone()
    if last is None:
        return [], 0, None
    return [MemoryRecord.from_row(r) for r in rows], int(last[0]), Place(last[1], int(last[2]))


def session_tags(conn: psycopg.Connection, identity: Identity, prefix: str) -> list[str]:
    """The `session:<id>` tags of your live memories whose session id starts with `prefix` (at most two:
    one is an answer, two say the prefix is ambiguous)."""
    where, params = _where(identity, Walk())
    literal = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")  # LIKE's wildcards
    params["pattern"] = "session:" + literal + "%"
    rows = conn.execute(
        f"SELECT DISTINCT t.tag FROM {documents_from(identity)} d "
        "CROSS JOIN LATERAL unnest(d.tags) AS t(tag) "
        f"WHERE {' AND '.join(where)} AND t.tag LIKE %(pattern)s ORDER BY t.tag LIMIT 2",
        params,
    ).fetchall()
    return [str(r[0]) for r in rows]
