"""How a store query reaches memory data for a member of a team server: a member holds no privilege on the
memory tables (sql/019_member_api.sql) and reads and changes them through SECURITY DEFINER functions; the
owner and a solo user query the tables. Each helper gives the FROM item or the call for either."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import psycopg

if TYPE_CHECKING:
    from cems_cli.store.memories import Identity


# Whether row-level security applies to a connection (a member of a team server), per connection: the
# answer never changes for its session, and store functions that are given a user, not an Identity, ask it.
_RESTRICTED: weakref.WeakKeyDictionary[psycopg.Connection, bool] = weakref.WeakKeyDictionary()


def is_restricted(conn: psycopg.Connection) -> bool:
    known = _RESTRICTED.get(conn)
    if known is None:
        row = conn.execute("SELECT row_security_active('memory_documents')").fetchone()
        known = _RESTRICTED[conn] = bool(row and row[0])
    return known


def meta_from(conn: psycopg.Connection) -> str:
    """The FROM item for `cems_meta` (store-wide keys and values): a member of a team server reads the keys
    they may see through cems_visible_meta (sql/023_member_bookkeeping.sql)."""
    return "cems_visible_meta()" if is_restricted(conn) else "cems_meta"


def lock_memories(conn: psycopg.Connection, ids: Sequence[str], *, share: bool = False) -> set[str]:
    """A member's row locks (FOR NO KEY UPDATE, or FOR SHARE) on those of `ids` they may change, until the
    transaction ends (sql/019_member_api.sql cems_lock_memories). Returns the ids locked."""
    if not ids:
        return set()
    rows = conn.execute("SELECT cems_lock_memories(%s::uuid[], %s)", (sorted(set(ids)), share)).fetchall()
    return {str(r[0]) for r in rows}


def documents_from(identity: Identity, ids: str | None = None, *, tags: str | None = None) -> str:
    """The FROM item for memory documents (its alias is the caller's). A member of a team server holds no
    privilege on the table and reads the memories it may see through cems_visible_documents
    (sql/019_member_api.sql): a query of the table, even under row-level security, showed them which hidden
    ids exist. `ids`, SQL for a uuid[], narrows the function to those memories (by primary key); `tags`,
    SQL for a text[], to the unarchived ones carrying any of those tags."""
    if not identity.restricted:
        return "memory_documents"
    return f"cems_visible_documents({ids or 'NULL'}, {tags or 'NULL'})"


def all_documents_from(restricted: bool) -> str:
    """`documents_from` for callers that know only whether the connection is a member's (all its rows)."""
    return "cems_visible_documents()" if restricted else "memory_documents"


def rules_from(identity: Identity) -> str:
    return "cems_visible_rules()" if identity.restricted else "rules"


def _jsonb(value: dict[str, Any]) -> Any:
    from psycopg.types.json import Jsonb

    return Jsonb(value)


def update_memories(conn: psycopg.Connection, ids: Sequence[str], changes: dict[str, Any]) -> list[str]:
    """A member's UPDATE: set these columns on those of `ids` they may change (sql/019_member_api.sql
    cems_update_memories; 'now' is the transaction's time). Returns the ids changed."""
    if not ids:
        return []
    rows = conn.execute("SELECT id FROM cems_update_memories(%s::uuid[], %s)",
                        (list(ids), _jsonb(changes))).fetchall()
    return [str(r[0]) for r in rows]
