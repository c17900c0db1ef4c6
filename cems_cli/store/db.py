"""Connections: the embedded server by default, any PostgreSQL+pgvector via `CEMS_DATABASE_URL`."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg

from cems_cli.config import Settings
from cems_cli.paths import pgdata_path
from cems_cli.store import migrations
from cems_cli.store.embedded import ServerError, data_dir, ensure_server, password_file
from cems_cli.store.member_access import meta_from

if TYPE_CHECKING:
    from psycopg_pool import ConnectionPool

_log = logging.getLogger("cems.db")


class StoreError(RuntimeError):
    """A database problem worth one line to the user."""


class DimensionMismatch(StoreError):
    pass


@dataclass(frozen=True)
class Location:
    conninfo: str
    description: str
    embedded: bool


def locate(settings: Settings, *, start: bool = True) -> Location:
    if settings.database_url:
        return Location(settings.database_url, _safe_url(settings.database_url), embedded=False)
    pgdata = pgdata_path(settings.home)
    if not start:
        return Location("", f"embedded PostgreSQL in {pgdata}", embedded=True)
    try:
        state = ensure_server(pgdata)
    except ServerError as error:
        raise StoreError(str(error)) from None
    return Location(state.conninfo(), f"embedded PostgreSQL in {data_dir(pgdata)}", embedded=True)


def _safe_url(url: str) -> str:
    """The URL without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "the configured CEMS_DATABASE_URL"
    host = info.get("host") or "localhost"
    port = info.get("port") or "5432"
    db = info.get("dbname") or info.get("user") or ""
    return f"PostgreSQL at {host}:{port}/{db}"


def connect(
    settings: Settings, *, check_dimension: bool = True, autocommit: bool = True
) -> psycopg.Connection:
    """Open a connection, apply pending migrations, and check the embedding dimension."""
    location = locate(settings)
    try:
        conn = psycopg.connect(location.conninfo, autocommit=autocommit, connect_timeout=10)
    except psycopg.OperationalError as error:
        reason = str(error).strip().splitlines()[-1] if str(error).strip() else "connection failed"
        if location.embedded and "password authentication failed" in str(error):
            reason = "password authentication failed"
            # pg.pass no longer matches the cluster (copied or edited): the next start sets a new one.
            reason += (
                f"; fix: remove {password_file(pgdata_path(settings.home))} and run `cems db stop`, "
                "the next command sets a new password"
            )
        raise StoreError(f"cannot reach {location.description}: {reason}") from None
    except psycopg.ProgrammingError as error:
        raise StoreError(f"invalid CEMS_DATABASE_URL: {error}") from None
    try:
        if location.embedded is False:
            # A shared server may be busy; never let one statement hang a hook or command forever.
            conn.execute("SET statement_timeout = '60s'")
        try:
            migrations.migrate(conn, settings.resolved_embedding_dim, settings.resolved_embedding_model)
        except psycopg.errors.InsufficientPrivilege:
            # An application role on a shared server owns nothing: the schema is the administrator's.
            raise StoreError(
                f"the CEMS schema on {location.description} needs migrations this role may not apply: "
                "an administrator runs `cems admin init`"
            ) from None
        if check_dimension:
            check_embedding_meta(conn, settings)
        _register_vector(conn)
    except psycopg.Error as error:
        conn.close()
        raise StoreError(f"database error on {location.description}: {_first_line(error)}") from None
    except StoreError:
        conn.close()
        raise
    return conn


def connection_pool(settings: Settings, *, max_size: int, name: str) -> ConnectionPool:
    """A pool of connections configured like `connect`'s, for a long-lived process that answers many
    clients (the warm search server): at most `max_size` connections to a shared server per machine,
    requests served side by side, a broken connection replaced rather than failing every later request.
    Migrations and the dimension check are `connect`'s: open one connection with it first."""
    from psycopg_pool import ConnectionPool

    location = locate(settings)

    def configure(conn: psycopg.Connection) -> None:
        if location.embedded is False:
            conn.execute("SET statement_timeout = '60s'")
        _register_vector(conn)

    return ConnectionPool(
        location.conninfo,
        min_size=1,
        max_size=max_size,
        kwargs={"autocommit": True, "connect_timeout": 10},
        configure=configure,
        check=ConnectionPool.check_connection,
        name=name,
        open=True,
    )


def _register_vector(conn: psycopg.Connection) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)


def _first_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def stored_embedding_meta(conn: psycopg.Connection) -> tuple[int, str]:
    rows: dict[str, str] = dict(conn.execute(
        f"SELECT key, value FROM {meta_from(conn)} WHERE key IN ('embedding_dim', 'embedding_model')"
    ).fetchall())
    return int(rows.get("embedding_dim", "0")), rows.get("embedding_model", "")


def check_embedding_meta(conn: psycopg.Connection, settings: Settings) -> None:
    dim, model = stored_embedding_meta(conn)
    want_dim, want_model = settings.resolved_embedding_dim, settings.resolved_embedding_model
    if dim != want_dim or model != want_model:
        raise DimensionMismatch(
            f"stored embeddings are {model} ({dim} dims) but the configured model is {want_model} "
            f"({want_dim} dims): run `cems reindex` to re-embed your memories"
        )
