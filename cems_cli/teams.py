"""Teams on a shared PostgreSQL: the administrator's operations (init, grant, quotas) and the translation of
the database's refusals into one-line errors. The rules themselves live in the database
(sql/009_teams_rls.sql: row-level security, SECURITY DEFINER functions): this module only asks and explains.

Roles on a team server
- `cems_app` (NOLOGIN): the group role of every person's login role; no superuser, no BYPASSRLS, so every
  policy applies. `cems admin grant ROLE` makes a login role a member.
- `cems_admin` (NOLOGIN): members create teams, manage any team's members, set quotas, read the whole audit.
- The administrator who runs `cems admin init` owns the schema: a superuser, or on a managed service a role
  with CREATEROLE that owns the database.
- Every login role of cems_app gets lock, statement and idle-in-transaction time limits (defaults.py).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from cems_cli.errors import UserError

if TYPE_CHECKING:
    from cems_cli.config import Settings

APP_ROLE = "cems_app"
ADMIN_ROLE = "cems_admin"
# SQLSTATEs the migration's functions and policies raise for a refusal or bad input: their message is
# already one line meant for the user.
_REFUSALS = (
    psycopg.errors.InsufficientPrivilege,  # 42501: a policy or a function's own check
    psycopg.errors.UniqueViolation,  # 23505: the team exists
    psycopg.errors.NoDataFound,  # P0002: no such team or member
    psycopg.errors.InvalidParameterValue,  # 22023: a bad name
    psycopg.errors.ConfigurationLimitExceeded,  # 53400: a quota
    psycopg.errors.CheckViolation,  # 23514: e.g. a negative quota
)


def refusal(error: BaseException) -> str | None:
    """The one-line reason the database refused, for errors that are the user's to fix (None otherwise)."""
    if not isinstance(error, _REFUSALS):
        return None
    message = (error.diag.message_primary or str(error)).strip().splitlines()[0]
    if message.startswith("new row violates row-level security policy"):
        return "refused by the team server: this write is not yours to make (row-level security)"
    if message.startswith("permission denied"):
        return f"refused by the team server: {message}"
    return message


@contextlib.contextmanager
def database_refusals() -> Iterator[None]:
    """Turn the database's refusals into UserError (one line, exit code 2)."""
    try:
        yield
    except psycopg.Error as error:
        reason = refusal(error)
        if reason is None:
            raise
        raise UserError(reason) from None


_SINCE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(text: str, now: datetime) -> datetime:
    """`30m`, `12h`, `1d`, `2w` back from `now`, or an ISO 8601 timestamp (UTC when it names no zone)."""
    match = _SINCE.match(text)
    if match:
        return now - timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UserError(f"--since {text!r}: expected a duration (30m, 12h, 1d, 2w) or an ISO 8601 time"
                        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=now.tzinfo)


def _connect(settings: Settings) -> psycopg.Connection:
    from cems_cli.store.db import connect

    return connect(settings, check_dimension=False)


def init_database(settings: Settings) -> dict[str, Any]:
    """Bring a database to CEMS's schema (the vector extension, every migration, the roles cems_app and
    cems_admin with their grants, the policies) and say what a team server needs that is still missing."""
    # Connecting applies pending migrations (sql/), creating the roles in 009.
    with contextlib.closing(_connect(settings)) as conn, database_refusals():
        row = conn.execute(
            "SELECT current_user, r.rolsuper, r.rolbypassrls, current_database(), "
            "  (SELECT extversion FROM pg_extension WHERE extname = 'vector'), "
            "  (SELECT max(version) FROM schema_migrations), "
            "  (SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = %s), "
            "  pg_has_role(current_user, %s, 'MEMBER') "
            "FROM pg_roles r WHERE r.rolname = current_user",
            (APP_ROLE, ADMIN_ROLE),
        ).fetchone()
        assert row is not None
        role, superuser, bypass, database, vector, version, app_privileged, admin_member = row
        notes: list[str] = []
        if app_privileged:
            notes.append(f"{APP_ROLE} is a superuser or has BYPASSRLS: policies would not apply to it")
        if not (superuser or bypass or admin_member):
            # The schema's owner may administer teams; creating cems_admin gave it the right to join it.
            try:
                with conn.transaction():
                    conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(ADMIN_ROLE),
                                                                   sql.Identifier(role)))
            except psycopg.errors.InsufficientPrivilege:
                notes.append(f"{role} could not join {ADMIN_ROLE}: a superuser grants it")
        # An earlier CEMS marked the full-text match LEAKPROOF (it let EXPLAIN show whether a hidden row
        # matched); migration 013 undoes it when a superuser applies it, this when one runs init later.
        leakproof = _leakproof_fts(conn)
        if leakproof and superuser:
            conn.execute("ALTER FUNCTION pg_catalog.ts_match_vq(tsvector, tsquery) NOT LEAKPROOF")
            leakproof = _leakproof_fts(conn)
        if leakproof:
            notes.append("pg_catalog.ts_match_vq is marked LEAKPROOF (an earlier CEMS did it), which "
                         "lets members probe rows they cannot read: a superuser runs `cems admin init` "
                         "once to undo it")
        limited = apply_limits(conn)
    return {
        "database": database,
        "role": role,
        "superuser": bool(superuser),
        "bypassrls": bool(bypass),
        "vector": vector,
        "schema_version": version,
        "app_role": APP_ROLE,
        "admin_role": ADMIN_ROLE,
        "fts_leakproof": leakproof,
        "limited_roles": limited,
        "notes": notes,
    }


def _limit_role(conn: psycopg.Connection, role: str) -> None:
    from cems_cli import defaults

    for name, value in (("lock_timeout", defaults.DB_LOCK_TIMEOUT_MS),
                        ("statement_timeout", defaults.DB_STATEMENT_TIMEOUT_MS),
                        ("idle_in_transaction_session_timeout", defaults.DB_IDLE_IN_TRANSACTION_TIMEOUT_MS)):
        conn.execute(sql.SQL("ALTER ROLE {} SET {} = {}").format(
            sql.Identifier(role), sql.Identifier(name), sql.Literal(value)))
    # The connection limit needs CREATEROLE with ADMIN OPTION on the role (PostgreSQL 16+), temp_file_limit a
    # superuser: each in a savepoint, skipped where the administrator may not (a managed service's admin).
    for statement in (sql.SQL("ALTER ROLE {} CONNECTION LIMIT {}").format(
                          sql.Identifier(role), sql.Literal(defaults.DB_MEMBER_CONNECTION_LIMIT)),
                      sql.SQL("ALTER ROLE {} SET temp_file_limit = {}").format(
                          sql.Identifier(role), sql.Literal(defaults.DB_MEMBER_TEMP_FILE_LIMIT))):
        with contextlib.suppress(psycopg.errors.InsufficientPrivilege), conn.transaction():
            conn.execute(statement)


def apply_limits(conn: psycopg.Connection) -> int:
    """Time limits (cems_cli/defaults.py) on every login role of cems_app, so that one member's lock or open
    transaction holds the others up for seconds, not for as long as they like, and a connection limit (and,
    under a superuser, a limit on temporary files) so that one member cannot take every connection. A
    member may still SET their own timeouts lower or higher: these are defaults, not walls. A role's settings
    apply when that role logs in (a group role's do not reach its members), hence one ALTER ROLE per member;
    `cems admin grant` sets them on the roles it grants. Returns how many roles were limited."""
    roles = [str(r[0]) for r in conn.execute(
        "SELECT r.rolname FROM pg_roles r WHERE r.rolcanlogin AND NOT (r.rolsuper OR r.rolbypassrls) "
        "AND pg_has_role(r.oid, %s, 'MEMBER') ORDER BY 1", (APP_ROLE,))]
    for role in roles:
        _limit_role(conn, role)
    return len(roles)


def _leakproof_fts(conn: psycopg.Connection) -> bool:
    row = conn.execute(
        "SELECT proleakproof FROM pg_proc "
        "WHERE oid = 'pg_catalog.ts_match_vq(tsvector, tsquery)'::regprocedure"
    ).fetchone()
    return bool(row and row[0])


_ROLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.@-]{0,62}$")


def check_role_name(role: str) -> str:
    if not _ROLE_NAME.match(role):
        raise UserError(f"{role!r} is not a role name CEMS manages (letters, digits, _ . @ -; at most 63)")
    return role


def grant(settings: Settings, role: str, *, user: str | None = None, create: bool = False,
          password: str | None = None, admin: bool = False) -> dict[str, Any]:
    """Make `role` a CEMS member of this server: member of cems_app (and cems_admin with `admin`), mapped to
    the CEMS user `user` (else known by its own name). With `create`, a missing role is created (LOGIN, no
    superuser, no BYPASSRLS). A password is hashed here (SCRAM-SHA-256, as libpq does for psql's
    \\password), so the server, its logs and its statistics never see it in clear."""
    check_role_name(role)
    if user is not None and not user.strip():
        raise UserError("--user must not be empty")
    with contextlib.closing(_connect(settings)) as conn, database_refusals(), conn.transaction():
        row = conn.execute(
            "SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = %s", (role,)
        ).fetchone()
        created = False
        if row is None:
            if not create:
                raise UserError(f"no database role {role!r}: --create creates it (LOGIN, no superuser)")
            conn.execute(sql.SQL(
                "CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE INHERIT"
            ).format(sql.Identifier(role)))
            created, can_login = True, True
        elif row[0] or row[1]:
            raise UserError(f"{role!r} is a superuser or has BYPASSRLS: row-level security would not "
                            "apply to it; grant an ordinary login role")
        else:
            can_login = bool(row[2])
        if password is not None:
            if not password:
                raise UserError("the password is empty")
            verifier = conn.pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256")
            conn.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                sql.Identifier(role), sql.Literal(verifier.decode())))
        for group in (APP_ROLE, ADMIN_ROLE) if admin else (APP_ROLE,):
            conn.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group), sql.Identifier(role)))
        _limit_role(conn, role)
        if user is not None:
            conn.execute(
                "INSERT INTO cems_role_map (role_name, user_id) VALUES (%s, %s) "
                "ON CONFLICT (role_name) DO UPDATE SET user_id = excluded.user_id",
                (role, user.strip()),
            )
        mapped = conn.execute("SELECT cems_user_of(%s)", (role,)).fetchone()
    return {"role": role, "user": mapped[0] if mapped else role, "created": created, "can_login": can_login,
            "password_set": password is not None, "admin": admin, "app_role": APP_ROLE}


def set_quota(settings: Settings, user: str, *, max_memories: int | None,
              searches_per_minute: int | None) -> list[dict[str, Any]]:
    """Set (both None: remove) the quota of a user or role, '*' for everyone's default; returns all quotas."""
    from cems_cli.store import teams as store

    with contextlib.closing(_connect(settings)) as conn, database_refusals():
        store.set_quota(conn, user, max_memories, searches_per_minute)
        return store.quotas(conn)


def list_quotas(settings: Settings) -> list[dict[str, Any]]:
    from cems_cli.store import teams as store

    with contextlib.closing(_connect(settings)) as conn:
        return store.quotas(conn)


def end_stuck_sessions(settings: Settings, idle_seconds: float,
                       statement_seconds: float) -> list[dict[str, Any]]:
    """`cems admin watchdog`: end members' sessions left idle in a transaction or stuck in one statement
    (store/teams.end_stuck_member_sessions says why the database's own timeouts are not enough)."""
    from cems_cli.store import teams as store

    with contextlib.closing(_connect(settings)) as conn:
        conn.autocommit = True  # nothing of this session's own is held open between passes
        if not store.may_end_member_sessions(conn):
            raise UserError("this role may not end other roles' sessions: run the "
                            "watchdog as a superuser or a role with pg_read_all_stats and pg_signal_backend")
        with database_refusals():
            return store.end_stuck_member_sessions(conn, idle_seconds, statement_seconds)
