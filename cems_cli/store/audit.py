"""SQL for the audit trail (sql/009_teams_rls.sql): append-only; application roles only read it.

Writes to shared memories and rules are recorded by triggers; searches over a team's memories through
cems_audit_search(), which records the caller as themselves. Queries are kept as a hash, never as text."""

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


def record_search(conn: psycopg.Connection, action: str, team: str | None, query: str, results: int,
                  shared_ids: Sequence[str], actor: str) -> None:
    """`actor` is heard only from a privileged session (the embedded store); others are recorded as the
    database knows them."""
    conn.execute(
        "SELECT cems_audit_search(%s, %s, %s, %s, %s::uuid[], %s)",
        (action, team, query_hash(query), results, list(shared_ids), actor),
    )


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
