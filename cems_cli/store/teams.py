"""SQL for teams on a shared server (sql/009_teams_rls.sql): who the session is, teams and their members,
quotas. Teams, members and quotas are written only through the migration's SECURITY DEFINER functions,
which check the caller; application roles hold no write privilege on those tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import psycopg

from cems_cli.store.member_access import all_documents_from


@dataclass(frozen=True)
class Session:
    """Who a connection is to CEMS. `restricted`: row-level security applies to it (an application role),
    so the user comes from the database, never from CEMS_USER."""

    restricted: bool
    role: str  # the role that logged in (session_user)
    user: str  # cems_user(): the admin's mapping of the role, else its name
    teams: tuple[str, ...]
    admin_teams: tuple[str, ...]
    cems_admin: bool  # may create teams and set quotas

    def to_json(self) -> dict[str, Any]:
        return {"restricted": self.restricted, "role": self.role, "user": self.user,
                "teams": list(self.teams),
                "admin_teams": list(self.admin_teams), "cems_admin": self.cems_admin}


def session(conn: psycopg.Connection) -> Session:
    """One round trip. row_security_active answers for the table the policies guard, so a table owner that
    is subject to FORCE ROW LEVEL SECURITY counts as restricted too."""
    row = conn.execute(
        "SELECT row_security_active('memory_documents'), session_user, cems_user(), cems_my_teams(), "
        "cems_admin_teams(), cems_is_admin()"
    ).fetchone()
    assert row is not None
    return Session(bool(row[0]), str(row[1]), str(row[2]), tuple(row[3] or ()), tuple(row[4] or ()),
                   bool(row[5]))


# Teams ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Member:
    user: str
    admin: bool
    added_by: str
    added_at: Any

    def to_json(self) -> dict[str, Any]:
        return {"user": self.user, "admin": self.admin, "added_by": self.added_by,
                "added_at": self.added_at.isoformat() if self.added_at else None}


@dataclass(frozen=True)
class TeamRow:
    name: str
    created_by: str
    created_at: Any
    members: int
    admin: bool  # is the caller an admin of it

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "created_by": self.created_by,
                "created_at": self.created_at.isoformat() if self.created_at else None,
                "members": self.members, "admin": self.admin}


def create_team(conn: psycopg.Connection, name: str) -> None:
    conn.execute("SELECT cems_team_create(%s)", (name,))


def add_member(conn: psycopg.Connection, team: str, member: str, admin: bool) -> str:
    row = conn.execute("SELECT cems_team_add(%s, %s, %s)", (team, member, admin)).fetchone()
    return str(row[0]) if row else member


def remove_member(conn: psycopg.Connection, team: str, member: str) -> str:
    row = conn.execute("SELECT cems_team_remove(%s, %s)", (team, member)).fetchone()
    return str(row[0]) if row else member


def list_teams(conn: psycopg.Connection) -> list[TeamRow]:
    """The teams the caller can see: their own, or every team for an administrator."""
    rows = conn.execute(
        "SELECT t.name, t.created_by, t.created_at, "
        "  (SELECT count(*) FROM cems_visible_team_members() m WHERE m.team_id = t.name), "
        "  t.name = ANY (cems_admin_teams()) "
        # Through functions (sql/021): a member who could SELECT the tables read other teams' rows.
        "FROM cems_visible_teams() t ORDER BY t.name"
    ).fetchall()
    return [TeamRow(r[0], r[1], r[2], int(r[3]), bool(r[4])) for r in rows]


def get_team(conn: psycopg.Connection, name: str) -> TeamRow | None:
    return next((team for team in list_teams(conn) if team.name == name), None)


def members(conn: psycopg.Connection, team: str) -> list[Member]:
    rows = conn.execute(
        "SELECT user_id, is_admin, added_by, added_at FROM cems_visible_team_members() WHERE team_id = %s "
        "ORDER BY NOT is_admin, user_id",
        (team,),
    ).fetchall()
    return [Member(r[0], bool(r[1]), r[2], r[3]) for r in rows]


def shared_counts(conn: psycopg.Connection, team: str, *, restricted: bool = False) -> dict[str, int]:
    """Live shared memories of the team the caller can see, by category."""
    rows = conn.execute(
        f"SELECT category, count(*) FROM {all_documents_from(restricted)} d WHERE scope = 'shared' "
        "AND team_id = %s AND NOT archived AND (expires_at IS NULL OR expires_at > now()) "
        "GROUP BY 1 ORDER BY 1",
        (team,),
    ).fetchall()
    return {r[0]: int(r[1]) for r in rows}


def shared_rules(conn: psycopg.Connection, team: str, *, restricted: bool = False) -> list[dict[str, Any]]:
    rules = "cems_visible_rules()" if restricted else "rules"
    rows = conn.execute(
        "SELECT d.id, r.tool, r.pattern, r.action, r.reason, d.user_id, r.created_at "
        f"FROM {rules} r JOIN {all_documents_from(restricted)} d ON d.id = r.document_id "
        "WHERE d.scope = 'shared' AND d.team_id = %s AND NOT d.archived ORDER BY r.created_at, d.id",
        (team,),
    ).fetchall()
    return [{"id": str(r[0]), "tool": r[1], "pattern": r[2], "action": r[3], "reason": r[4], "author": r[5],
             "created_at": r[6].isoformat()} for r in rows]


# Quotas ---------------------------------------------------------------------------------------------------


def memory_usage(conn: psycopg.Connection) -> tuple[int | None, int]:
    """(limit, live memories) of the caller; limit None when there is none."""
    row = conn.execute("SELECT max_memories, stored FROM cems_memory_usage()").fetchone()
    return (None, 0) if row is None or row[0] is None else (int(row[0]), int(row[1]))


def set_quota(conn: psycopg.Connection, user: str, max_memories: int | None,
              searches_per_minute: int | None) -> None:
    conn.execute("SELECT cems_set_quota(%s, %s, %s)", (user, max_memories, searches_per_minute))


def quotas(conn: psycopg.Connection) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT user_id, max_memories, searches_per_minute FROM cems_visible_quotas() "
        "ORDER BY user_id <> '*', user_id"
    ).fetchall()
    return [{"user": r[0], "max_memories": r[1], "searches_per_minute": r[2]} for r in rows]


# A member can switch off the timeouts `cems admin grant` gives their role (statement_timeout and the idle
# ones are settings any session may change): a transaction left open holds its locks, and a migration's
# ALTER queued behind it makes every teammate's reads queue too. Only another session can end it.
_STUCK_MEMBER_SESSIONS = """
SELECT a.pid, a.usename::text, a.state,
       extract(epoch FROM now() - CASE WHEN a.state = 'active' THEN a.query_start ELSE a.state_change END),
       pg_terminate_backend(a.pid)
FROM pg_stat_activity a
WHERE a.backend_type = 'client backend' AND a.pid <> pg_backend_pid() AND a.usename IS NOT NULL
  AND a.usename <> current_user AND pg_has_role(a.usename, 'cems_app', 'MEMBER')
  AND ((a.state IN ('idle in transaction', 'idle in transaction (aborted)')
        AND a.state_change < now() - make_interval(secs => %(idle)s))
       OR (a.state = 'active' AND a.query_start < now() - make_interval(secs => %(statement)s)))
"""


def may_end_member_sessions(conn: psycopg.Connection) -> bool:
    """Whether this role sees other roles' sessions' states and may end them: a superuser, or a role with
    pg_read_all_stats and pg_signal_backend (to anyone else pg_stat_activity shows no state to judge)."""
    row = conn.execute(
        "SELECT rolsuper OR (pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') "
        "AND pg_has_role(current_user, 'pg_signal_backend', 'USAGE')) "
        "FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    return bool(row and row[0])


def end_stuck_member_sessions(conn: psycopg.Connection, idle_seconds: float,
                              statement_seconds: float) -> list[dict[str, Any]]:
    """End the sessions of the server's members (roles of cems_app) idle in a transaction for longer than
    `idle_seconds`, or running one statement for longer than `statement_seconds`; what was ended, each
    with `ended` False where this role may not signal that session."""
    rows = conn.execute(_STUCK_MEMBER_SESSIONS, {"idle": idle_seconds, "statement": statement_seconds})
    return [{"pid": r[0], "role": r[1], "state": r[2], "seconds": round(float(r[3]), 1), "ended": bool(r[4])}
            for r in rows.fetchall()]
