"""SQL for browsing memories (the local viewer, `cems ui`): filtered lists, one memory's history, sessions.

Every query applies the same visibility clause as search and `list` (your memories, your team's shared ones);
on a team server row-level security filters them again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg

from cems_cli.defaults import EDITS_KEPT
from cems_cli.store.member_access import documents_from
from cems_cli.store.memories import Identity, add_conditions, live_clause, project_clause, visibility_clause
from cems_cli.store.records import MemoryRecord, document_columns

STATES = ("live", "archived", "all")


@dataclass(frozen=True)
class Filters:
    """What `browse` selects on; None (or "") means any."""

    category: str | None = None
    scope: str = "both"
    project: str | None = None
    source: str | None = None
    pinned: bool | None = None
    since: datetime | None = None
    until: datetime | None = None
    state: str = "live"


def browse(conn: psycopg.Connection, identity: Identity, filters: Filters, *, limit: int = 50,
           offset: int = 0) -> list[MemoryRecord]:
    """Memories matching every filter, pinned first, newest first."""
    vis, params = visibility_clause(identity, filters.scope)
    where = [vis]
    if filters.state == "live":
        where.append(live_clause())
    elif filters.state == "archived":
        where.append(f"NOT {live_clause()}")
    add_conditions(where, params, [
        ("category", "d.category = %(category)s", filters.category or None),
        ("project", project_clause(), filters.project or None),
        ("source", "d.source = %(source)s", filters.source or None),
        ("pinned", "d.pinned = %(pinned)s", filters.pinned),
        ("since", "d.created_at >= %(since)s", filters.since),
        ("until", "d.created_at < %(until)s", filters.until),
    ])
    params.update(limit=limit, offset=offset)
    rows = conn.execute(
        f"SELECT {document_columns()} FROM {documents_from(identity)} d WHERE {' AND '.join(where)} "
        "ORDER BY d.pinned DESC, d.created_at DESC, d.id LIMIT %(limit)s OFFSET %(offset)s",
        params,
    ).fetchall()
    return [MemoryRecord.from_row(r) for r in rows]


@dataclass(frozen=True)
class Edit:
    """One change of what a person sees of a memory (sql/020_memory_edits.sql): when, by whom, which fields
    (text, title, context, category, tags, project, expiry, pinned, pin reason), and the text before when the
    text changed."""

    at: datetime
    actor: str
    fields: list[str]
    old_text: str | None

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at.isoformat(), "actor": self.actor, "fields": list(self.fields),
                "old_text": self.old_text}


@dataclass
class History:
    """What happened to one memory: when it was made, changed, used, merged, archived; and the audit trail's
    entries for it on a team server."""

    created_at: datetime
    updated_at: datetime
    access_count: int
    last_accessed: datetime | None
    last_recalled: datetime | None
    archived_at: datetime | None
    merged_into: str | None
    merged_from: list[dict[str, Any]] = field(default_factory=list)
    audit: list[dict[str, Any]] = field(default_factory=list)
    edits: list[Edit] = field(default_factory=list)  # newest first, the last EDITS_KEPT

    @property
    def changed(self) -> bool:
        """Its text or fields changed after it was stored (the insert stamps both times alike)."""
        return self.updated_at > self.created_at


def history(conn: psycopg.Connection, identity: Identity, memory_id: str) -> History | None:
    vis, params = visibility_clause(identity)
    row = conn.execute(
        "SELECT d.created_at, d.updated_at, d.access_count, d.last_accessed, d.last_recalled, d.archived_at, "
        f"d.merged_into, d.merged_from FROM {documents_from(identity)} d WHERE d.id::text = %(id)s AND {vis}",
        {**params, "id": memory_id},
    ).fetchone()
    if row is None:
        return None
    merged_from = [m for m in (row[7] or []) if isinstance(m, dict)]
    audit = [
        {"at": at, "actor": actor, "action": action, "team": team}
        for at, actor, action, team in conn.execute(
            "SELECT at, actor, action, team_id FROM cems_visible_audit(NULL, NULL, %s, 50)",
            (memory_id,),
        ).fetchall()
    ]
    return History(row[0], row[1], int(row[2] or 0), row[3], row[4], row[5],
                   str(row[6]) if row[6] else None, merged_from, audit, edits(conn, memory_id))


def edits(conn: psycopg.Connection, memory_id: str, limit: int = EDITS_KEPT) -> list[Edit]:
    """The memory's newest edits, through cems_memory_edits (members hold no privilege on the table; the
    function returns nothing for a memory the caller may not read). The old text is redacted again on the
    way out: CEMS stored it redacted, but any client of the database may have written it."""
    from cems_cli.text.redact import sanitize_for_storage

    return [
        Edit(at, str(actor), [str(f) for f in fields or []],
             sanitize_for_storage(old_text) if old_text is not None else None)
        for at, actor, fields, old_text in conn.execute(
            "SELECT at, actor, fields, old_text FROM cems_memory_edits(%s::uuid, %s)", (memory_id, limit)
        ).fetchall()
    ]


@dataclass
class SessionEntry:
    """One agent session and the memories it stored, oldest first."""

    session_id: str
    project: str | None
    first_at: datetime
    last_at: datetime
    memories: list[MemoryRecord]
    asked: list[str] = field(default_factory=list)


def sessions(conn: psycopg.Connection, identity: Identity, project: str | None = None, *,
             limit: int = 30, per_session: int = 30) -> list[SessionEntry]:
    """The latest sessions (by their newest memory) with what each stored, from the `session:<id>` tags
    capture puts on every memory it makes; `project` keeps one project's."""
    vis, params = visibility_clause(identity)
    where = [vis, live_clause(), "t.tag LIKE 'session:%%'"]
    if project:
        where.append(project_clause())
        params["project"] = project
    params.update(limit=limit, per=per_session)
    # A member reads the memories once (a function's rows are not shared between two scans of it).
    source = "visible" if identity.restricted else "memory_documents"
    visible = (f"visible AS MATERIALIZED (SELECT * FROM {documents_from(identity)}), "
               if identity.restricted else "")
    rows = conn.execute(
        f"WITH {visible}tagged AS ("
        f" SELECT substr(t.tag, 9) AS session_id, d.id, d.created_at FROM {source} d,"
        f" unnest(d.tags) AS t(tag) WHERE {' AND '.join(where)}),"
        " latest AS (SELECT session_id, max(created_at) AS last_at FROM tagged GROUP BY session_id"
        " ORDER BY last_at DESC LIMIT %(limit)s),"
        " ranked AS (SELECT t.session_id, t.id, row_number() OVER (PARTITION BY t.session_id"
        " ORDER BY t.created_at DESC) AS n FROM tagged t JOIN latest USING (session_id))"
        f" SELECT r.session_id, {document_columns()} FROM ranked r JOIN {source} d ON d.id = r.id"
        " WHERE r.n <= %(per)s ORDER BY r.session_id, d.created_at, d.seq",
        params,
    ).fetchall()
    grouped: dict[str, list[MemoryRecord]] = {}
    for row in rows:
        grouped.setdefault(row[0], []).append(MemoryRecord.from_row(row[1:]))
    asked = _asked(conn, identity, list(grouped))
    found = [
        SessionEntry(sid, _project_of(records), records[0].created_at, records[-1].created_at, records,
                     asked.get(sid, []))
        for sid, records in grouped.items()
    ]
    return sorted(found, key=lambda s: s.last_at, reverse=True)


def _asked(conn: psycopg.Connection, identity: Identity, session_ids: list[str]) -> dict[str, list[str]]:
    """What each session was asked, from capture's running record (absent for imported sessions)."""
    if not session_ids:
        return {}
    # A member reads their own records through the function (sql/023_member_bookkeeping.sql).
    table = "cems_my_capture_sessions(%(ids)s::text[])" if identity.restricted else "capture_sessions"
    rows = conn.execute(
        f"SELECT session_id, record -> 'asked' FROM {table} WHERE user_id = %(user)s "
        "AND session_id = ANY(%(ids)s)",
        {"user": identity.user, "ids": session_ids},
    ).fetchall()
    return {sid: [str(a) for a in (asked or []) if isinstance(a, str)] for sid, asked in rows}


def _project_of(records: list[MemoryRecord]) -> str | None:
    for record in records:
        ref = record.source_ref or ""
        if ref.startswith("project:"):
            parts = ref.split(":")
            return ":".join(parts[:2])
    return None
