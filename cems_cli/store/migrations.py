"""Numbered SQL migrations, applied in order on first use, once, even under concurrent processes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import psycopg

# Any constant works; it only has to be the same in every CEMS process.
_MIGRATION_LOCK = 0x43454D53  # "CEMS"
_NAME = re.compile(r"^(\d{3})_[\w-]+\.sql$")


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    path: Path


def sql_dir() -> Path:
    from cems_cli.resources import data_dir

    return data_dir("sql")


def available_migrations(directory: Path | None = None) -> list[Migration]:
    found = []
    for path in sorted((directory or sql_dir()).iterdir()):
        match = _NAME.match(path.name)
        if match:
            found.append(Migration(int(match.group(1)), path.stem, path))
    return found


def applied_versions(conn: psycopg.Connection) -> set[int]:
    row = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return set()
    return {int(r[0]) for r in conn.execute("SELECT version FROM schema_migrations")}


def migrate(conn: psycopg.Connection, embedding_dim: int, embedding_model: str) -> list[str]:
    """Apply pending migrations; returns the names applied. Cheap (one query) when up to date."""
    migrations = available_migrations()
    # Compare sets, not the highest number: a migration merged from another branch may fill a gap.
    if {m.version for m in migrations} <= applied_versions(conn):
        return []
    applied: list[str] = []
    with conn.transaction():
        # The lock serialises concurrent first runs; whoever waits re-reads what is applied.
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            " version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
        # The schema, quoted, for {{SCHEMA}}: functions name our tables with it rather than trusting a
        # search_path (sql/013_team_walls.sql).
        schema_row = conn.execute("SELECT quote_ident(current_schema())").fetchone()
        schema = str(schema_row[0]) if schema_row else "public"
        for migration in migrations:
            if migration.version in done:
                continue
            sql = (migration.path.read_text(encoding="utf-8")
                   .replace("{{EMBEDDING_DIM}}", str(embedding_dim)).replace("{{SCHEMA}}", schema))
            conn.execute(sql)  # trusted file shipped with the package
            conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES (%s, %s)",
                (migration.version, migration.name),
            )
            if migration.version == 1:
                conn.execute(
                    "INSERT INTO cems_meta (key, value) "
                    "VALUES ('embedding_dim', %s), ('embedding_model', %s)",
                    (str(embedding_dim), embedding_model),
                )
            applied.append(migration.name)
    return applied
