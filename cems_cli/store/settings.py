"""Stored settings (sql/008_settings.sql): rows per user and per team, and the change counter. A member of a
team server reads and writes them through functions (sql/023_member_bookkeeping.sql): a table they may query,
even under its policy, let EXPLAIN spell out other users' values."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from cems_cli.store.member_access import is_restricted


def version(conn: psycopg.Connection) -> int:
    """A number that moves whenever a stored setting changes: the sum of every writer's change counter
    (sql/021: one counter per writer, so no writer's open transaction holds back another's change)."""
    row = conn.execute("SELECT cems_settings_version()").fetchone()
    return int(row[0]) if row else 0


def stored(conn: psycopg.Connection, user: str, team: str | None) -> dict[str, dict[str, Any]]:
    """{"user": {key: value}, "team": {key: value}} for this user and team."""
    found: dict[str, dict[str, Any]] = {"user": {}, "team": {}}
    table = "cems_visible_settings()" if is_restricted(conn) else "stored_settings"
    rows = conn.execute(
        f"SELECT owner_kind, key, value FROM {table} "
        "WHERE (owner_kind = 'user' AND owner = %s) OR (owner_kind = 'team' AND owner = %s)",
        (user, team or ""),
    ).fetchall()
    for kind, key, value in rows:
        found[kind][key] = value
    return found


def put(conn: psycopg.Connection, kind: str, owner: str, key: str, value: Any, by: str) -> None:
    if is_restricted(conn):  # the function names the writer itself: the caller
        conn.execute("SELECT cems_put_setting(%s, %s, %s, %s)", (kind, owner, key, Jsonb(value)))
        return
    conn.execute(
        "INSERT INTO stored_settings (owner_kind, owner, key, value, updated_by) VALUES (%s, %s, %s, %s, %s) "
        "ON CONFLICT (owner_kind, owner, key) DO UPDATE "
        "SET value = excluded.value, updated_at = now(), updated_by = excluded.updated_by",
        (kind, owner, key, Jsonb(value), by),
    )


def delete(conn: psycopg.Connection, kind: str, owner: str, key: str) -> bool:
    # Through the function, which applies the delete policy: members hold no DELETE on the table (it would
    # let them lock it, and every hook reads it).
    row = conn.execute("SELECT cems_delete_setting(%s, %s, %s)", (kind, owner, key)).fetchone()
    return bool(row and row[0] == 1)
