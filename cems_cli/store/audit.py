"""SQL for the audit trail (sql/009_teams_rls.sql): application roles only read it.

Writes to shared memories and rules are recorded by triggers. A search over a team's memories is recorded
by the database when it begins (sql/025_searches_and_changes.sql cems_begin_search, which also counts it
against the searches-per-minute quota and lets the connection's search functions run), and its results
are added once when it ends. Queries are kept as a hash, never as text."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg


@dataclass(frozen=True)
class AuditEntry:
    id: int
    at: datetime
    actor: str
    db_role: str
    action: str
    team: str | None
    memory_id: str | None
    author: str | None
    category: str | None
    query_hash: str | None
    detail: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "at": self.at.isoformat(), "actor": self.actor, "db_role": self.db_role,
                "action": self.action, "team": self.team, "memory_id": self.memory_id, "author": self.author,
                "category": self.category, "query_hash": self.query_hash, "detail": self.detail}


def query_hash(query: str) -> str:
    """SHA-256 of the query as searched (whitespace collapsed): equal queries can be told apart from others
    without the audit holding what anyone asked."""
    return hashlib.sha256(" ".join(query.split()).encode("utf-8")).hexdigest()


def begin_search(conn: psycopg.Connection, action: str, scope: str, team: str | None, query: str,
                 actor: str) -> bool:
    """Begin a search (`action` 'search' or 'recall') on a shared server: the database counts it against the
    caller's quota (psycopg.errors.ConfigurationLimitExceeded past it), records it when it reads `team`'s
    memories, and lets this connection's search functions run until the next begin, for 5 minutes or 1000
    calls. Returns whether it is recorded. `actor` is heard only from a privileged session; others are
    recorded as the database knows them. Run outside a transaction: the searches wait for its commit."""
    row = conn.execute("SELECT cems_begin_search(%s, %s, %s, %s, %s)",
                       (action, scope, team, query_hash(query), actor)).fetchone()
    return bool(row and row[0])


def end_search(conn: psycopg.Connection, results: int, shared_ids: Sequence[str]) -> None:
    """The results of the connection's search (how many; which of the team's shared memories) onto its
    audit row, once; the search functions are closed until the next begin."""
    conn.execute("SELECT cems_end_search(%s, %s::uuid[])", (min(results, 10_000), list(shared_ids)[:1000]))


def entries(conn: psycopg.Connection, *, team: str | None = None, since: datetime | None = None,
            limit: int = 200) -> list[AuditEntry]:
    """Newest first: what the caller may read (their own actions, their teams', everything for an admin)."""
    # Through the function (sql/021), which applies the visibility and these filters: a member who could
    # SELECT the table read other teams' entries.
    rows = conn.execute(
        "SELECT id, at, actor, db_role, action, team_id, memory_id, author, category, query_hash, detail "
        "FROM cems_visible_audit(%s, %s, NULL, %s)",
        (team, since, limit),
    ).fetchall()
    return [AuditEntry(int(r[0]), r[1], r[2], r[3], r[4], r[5], str(r[6]) if r[6] else None, r[7], r[8], r[9],
                       r[10] or {}) for r in rows]
