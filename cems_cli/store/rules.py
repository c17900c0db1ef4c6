"""SQL for rules: each rule is a `rules`-category memory document plus its enforceable spec."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import psycopg

from cems_cli.store.member_access import documents_from, rules_from
from cems_cli.store.memories import Identity, live_clause, visibility_clause


@dataclass(frozen=True)
class RuleRow:
    id: str
    tool: str
    pattern: str
    field: str | None
    action: str
    reason: str
    regex: bool
    project: str | None
    scope: str
    user_id: str
    team_id: str | None
    created_at: datetime


def insert_rule_spec(
    conn: psycopg.Connection,
    document_id: str,
    *,
    tool: str,
    pattern: str,
    field: str | None,
    action: str,
    reason: str,
    regex: bool,
    project: str | None,
    restricted: bool = False,
) -> bool:
    if restricted:  # a member writes no table (sql/019_member_api.sql)
        row = conn.execute("SELECT cems_insert_rule(%s, %s, %s, %s, %s, %s, %s, %s)",
                           (document_id, tool, pattern, field, action, reason, regex, project)).fetchone()
        return bool(row and row[0])
    row = conn.execute(
        "INSERT INTO rules (document_id, tool, pattern, field, action, reason, is_regex, project) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (document_id) DO NOTHING RETURNING document_id",
        (document_id, tool, pattern, field, action, reason, regex, project),
    ).fetchone()
    return row is not None


def visible_rules(conn: psycopg.Connection, identity: Identity, project: str | None = None) -> list[RuleRow]:
    """Live rules the user is bound by: their own and their team's (and, if given, only this project's)."""
    vis, params = visibility_clause(identity)
    where = [vis, live_clause()]
    if project:
        where.append("(r.project IS NULL OR r.project = %(project)s)")
        params["project"] = project
    rows = conn.execute(
        "SELECT d.id, r.tool, r.pattern, r.field, r.action, r.reason, r.is_regex, r.project, d.scope, "
        f"d.user_id, d.team_id, r.created_at FROM {rules_from(identity)} r "
        f"JOIN {documents_from(identity)} d ON d.id = r.document_id "
        f"WHERE {' AND '.join(where)} ORDER BY r.created_at, d.id",
        params,
    ).fetchall()
    return [RuleRow(str(r[0]), *r[1:]) for r in rows]


def rule_owner(conn: psycopg.Connection, rule_id: str, identity: Identity | None = None) -> str | None:
    rules, documents = ((rules_from(identity), documents_from(identity)) if identity
                        else ("rules", "memory_documents"))
    row = conn.execute(
        f"SELECT d.user_id FROM {rules} r JOIN {documents} d ON d.id = r.document_id WHERE d.id::text = %s",
        (rule_id,),
    ).fetchone()
    return row[0] if row else None
