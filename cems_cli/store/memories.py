"""SQL for memory documents and their chunks: insert with dedup, read, list, archive, pin, share."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from cems_cli.store.member_access import documents_from, update_memories
from cems_cli.store.records import MemoryRecord, NewMemory, document_columns


@dataclass(frozen=True)
class Identity:
    """Who is asking: their personal memories and their team's shared ones are visible."""

    user: str
    team: str | None
    # Row-level security applies to the connection (an application role on a team server): the policies
    # filter every table too, which the planner cannot see is the same filter (see store/search.py).
    restricted: bool = False


def visibility_clause(
    identity: Identity, scope: str = "both", alias: str = "d"
) -> tuple[str, dict[str, Any]]:
    personal = f"({alias}.scope = 'personal' AND {alias}.user_id = %(vis_user)s)"
    # A user always sees what they shared themselves, even without CEMS_TEAM set.
    shared = (
        f"({alias}.scope = 'shared' AND ({alias}.team_id = %(vis_team)s OR {alias}.user_id = %(vis_user)s))"
    )
    parts = {"personal": [personal], "shared": [shared], "both": [personal, shared]}[scope]
    return "(" + " OR ".join(parts) + ")", {"vis_user": identity.user, "vis_team": identity.team}


def live_clause(alias: str = "d") -> str:
    return f"(NOT {alias}.archived AND ({alias}.expires_at IS NULL OR {alias}.expires_at > now()))"


def project_clause(alias: str = "d") -> str:
    """Matches `project:org/repo` exactly or followed by `:…` (a file reference inside the project)."""
    return (
        f"({alias}.source_ref = %(project)s "
        f"OR left({alias}.source_ref, length(%(project)s) + 1) = %(project)s || ':')"
    )


def add_conditions(where: list[str], params: dict[str, Any],
                   conditions: Sequence[tuple[str, str, Any]]) -> None:
    """Each (name, condition, value) whose value is not None: its condition, and the value as %(name)s."""
    for name, condition, value in conditions:
        if value is not None:
            where.append(condition)
            params[name] = value


def find_live_duplicate(
    conn: psycopg.Connection, identity: Identity, scope: str, team: str | None, content_hash: str
) -> str | None:
    row = conn.execute(
        f"SELECT id FROM {documents_from(identity)} d WHERE user_id = %s AND scope = %s "
        "AND coalesce(team_id, '') = %s AND content_hash = %s AND NOT archived",
        (identity.user, scope, team or "", content_hash),
    ).fetchone()
    return str(row[0]) if row else None


_EVIDENCE_TAGS = ("session:", "branch:")


def keep_earliest_evidence(conn: psycopg.Connection, memory_id: str, memory: NewMemory,
                           identity: Identity | None = None) -> None:
    """The same text stored again from an earlier moment by the same source (the observer reading a backlog
    of transcripts in path order, not in time order): the memory dates from, and cites, the earliest time it
    was seen. Another source's copy changes nothing (what the user wrote stays theirs)."""
    _move_evidence(conn, memory_id, memory, "created_at > %(at)s AND source IS NOT DISTINCT FROM %(source)s",
                   identity)


def _move_evidence(conn: psycopg.Connection, memory_id: str, memory: NewMemory, when: str,
                   identity: Identity | None = None) -> None:
    """Date the memory from `memory`'s sighting and cite it, where `when` (SQL) holds. Its session and
    branch tags follow the evidence; tags of any other kind stay."""
    if memory.created_at is None:
        return
    moving = [t for t in memory.tags if t.startswith(_EVIDENCE_TAGS)]
    if identity is not None and identity.restricted:  # a member: read, then change through the function
        row = conn.execute(
            f"SELECT tags FROM {documents_from(identity, '%(ids)s::uuid[]')} d WHERE id = %(id)s AND {when}",
            {"ids": [memory_id], "id": memory_id, "at": memory.created_at, "source": memory.source},
        ).fetchone()
        if row is not None:
            kept = [t for t in (row[0] or []) if not t.startswith(_EVIDENCE_TAGS)]
            update_memories(conn, [memory_id], {"created_at": memory.created_at.isoformat(),
                                                "source_ref": memory.source_ref, "tags": kept + moving})
        return
    conn.execute(
        "UPDATE memory_documents SET created_at = %(at)s, source_ref = %(ref)s, tags = ARRAY("
        "  SELECT t FROM unnest(tags) AS t WHERE NOT t LIKE ANY(%(kinds)s::text[])"
        f") || %(moving)s::text[] WHERE id = %(id)s AND {when}",
        {"at": memory.created_at, "ref": memory.source_ref, "moving": moving, "id": memory_id,
         "source": memory.source, "kinds": [f"{prefix}%" for prefix in _EVIDENCE_TAGS]},
    )


@dataclass(frozen=True)
class Tagged:
    id: str
    content: str
    created_at: Any  # datetime
    tags: list[str]


def find_live_tagged(conn: psycopg.Connection, identity: Identity, tag: str) -> Tagged | None:
    """This owner's live personal memory carrying `tag` (the newest, should there be two)."""
    row = conn.execute(
        f"SELECT id, content, created_at, tags FROM {documents_from(identity)} d WHERE user_id = %s "
        "AND scope = 'personal' AND NOT archived AND tags @> ARRAY[%s]::text[] "
        "ORDER BY created_at DESC LIMIT 1",
        (identity.user, tag),
    ).fetchone()
    return Tagged(str(row[0]), str(row[1]), row[2], list(row[3] or [])) if row else None


def add_tag(conn: psycopg.Connection, memory_id: str, tag: str, identity: Identity | None = None) -> None:
    if identity is not None and identity.restricted:
        row = conn.execute(f"SELECT tags FROM {documents_from(identity, '%s::uuid[]')} d",
                           ([memory_id],)).fetchone()
        if row is not None and tag not in (row[0] or []):
            update_memories(conn, [memory_id], {"tags": [*(row[0] or []), tag]})
        return
    conn.execute(
        "UPDATE memory_documents SET tags = array_append(tags, %s) WHERE id = %s AND NOT %s = ANY(tags)",
        (tag, memory_id, tag),
    )


def keep_latest_evidence(conn: psycopg.Connection, memory_id: str, memory: NewMemory,
                         identity: Identity | None = None) -> None:
    """A counted memory seen again (a blocked command tried again): it dates from, and cites, the latest
    sighting, which a later question about it is most likely to mean."""
    _move_evidence(conn, memory_id, memory, "created_at < %(at)s", identity)


def insert_memory(
    conn: psycopg.Connection,
    identity: Identity,
    memory: NewMemory,
    content_hash: str,
    chunks: Sequence[str],
    vectors: np.ndarray,
    team: str | None,
) -> tuple[str, bool]:
    """Insert a document and its chunks in one transaction; returns (id, created)."""
    if identity.restricted:
        return _insert_memory_as_member(conn, identity, memory, content_hash, chunks, vectors, team)
    with conn.transaction():
        row = conn.execute(
            "INSERT INTO memory_documents (content, content_hash, user_id, team_id, scope, category, title, "
            "tags, source, source_ref, pinned, pin_reason, pin_category, expires_at, created_at, updated_at, "
            "context) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, "
            "coalesce(%s, now()), coalesce(%s, now()), %s) "
            "ON CONFLICT (user_id, scope, coalesce(team_id, ''), content_hash) WHERE NOT archived DO NOTHING "
            "RETURNING id",
            (
                memory.content,
                content_hash,
                identity.user,
                team,
                memory.scope,
                memory.category,
                memory.title,
                memory.tags,
                memory.source,
                memory.source_ref,
                memory.pinned,
                memory.pin_reason,
                memory.pin_category,
                memory.expires_at,
                memory.created_at,
                memory.created_at,
                memory.context,
            ),
        ).fetchone()
        if row is None:  # a concurrent process stored the same text first
            existing = find_live_duplicate(conn, identity, memory.scope, team, content_hash)
            if existing is None:
                raise RuntimeError("duplicate memory vanished during insert")
            return existing, False
        doc_id = row[0]
        _insert_chunks(conn, doc_id, chunks, vectors, memory.context)
    from cems_cli.store.lexical import forget_stats  # lexical reads this module: imported when used

    forget_stats(conn)  # this connection's next search counts the new memory's words
    return str(doc_id), True


def _insert_memory_as_member(
    conn: psycopg.Connection, identity: Identity, memory: NewMemory, content_hash: str,
    chunks: Sequence[str], vectors: np.ndarray, team: str | None,
) -> tuple[str, bool]:
    """insert_memory through the functions (sql/019_member_api.sql): the ids are the database's."""
    with conn.transaction():
        row = conn.execute(
            "SELECT cems_insert_memory(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (memory.content, content_hash, team, memory.scope, memory.category, memory.title, memory.tags,
             memory.source, memory.source_ref, memory.pinned, memory.pin_reason, memory.pin_category,
             memory.expires_at, memory.created_at, memory.context),
        ).fetchone()
        doc_id = row[0] if row else None
        if doc_id is None:  # a live memory of theirs already holds this text
            existing = find_live_duplicate(conn, identity, memory.scope, team, content_hash)
            if existing is None:
                raise RuntimeError("duplicate memory vanished during insert")
            return existing, False
        _insert_chunks(conn, str(doc_id), chunks, vectors, memory.context, member=True)
    from cems_cli.store.lexical import forget_stats  # lexical reads this module: imported when used

    forget_stats(conn)
    return str(doc_id), True


def _insert_chunks(conn: psycopg.Connection, memory_id: Any, chunks: Sequence[str], vectors: np.ndarray,
                   context: str | None, *, member: bool = False) -> None:
    """A memory's chunks; a `member` (restricted identity) through the function (sql/019_member_api.sql)."""
    statement = ("SELECT cems_insert_chunk(%s, %s, %s, %s, %s)" if member else
                 "INSERT INTO memory_chunks (document_id, chunk_index, content, embedding, context) "
                 "VALUES (%s, %s, %s, %s, %s)")
    rows = [(memory_id, i, text, vectors[i], context) for i, text in enumerate(chunks)]
    with conn.cursor() as cur:
        cur.executemany(statement, rows)


def replace_content(
    conn: psycopg.Connection,
    identity: Identity,
    memory_id: str,
    memory: NewMemory,
    content_hash: str,
    chunks: Sequence[str],
    vectors: np.ndarray,
) -> bool:
    """Give a live memory of this owner new content (and chunks, vectors, title, tags) in one transaction.
    False when it is gone (archived, forgotten) or another live memory already holds this text."""
    if identity.restricted:
        return _replace_content_as_member(conn, identity, memory_id, memory, content_hash, chunks, vectors)
    with conn.transaction():
        row = conn.execute(
            "UPDATE memory_documents d SET content = %s, content_hash = %s, title = %s, tags = %s, "
            "context = %s, updated_at = now() "
            "WHERE d.id = %s AND d.user_id = %s AND NOT d.archived AND NOT EXISTS ("
            " SELECT 1 FROM memory_documents o WHERE o.user_id = d.user_id AND o.scope = d.scope"
            " AND coalesce(o.team_id, '') = coalesce(d.team_id, '') AND o.content_hash = %s"
            " AND NOT o.archived AND o.id <> d.id) RETURNING id",
            (
                memory.content,
                content_hash,
                memory.title,
                memory.tags,
                memory.context,
                memory_id,
                identity.user,
                content_hash,
            ),
        ).fetchone()
        if row is None:
            return False
        conn.execute("SELECT cems_delete_chunks(%s)", (memory_id,))  # see forget_memories: no table DELETE
        _insert_chunks(conn, memory_id, chunks, vectors, memory.context)
    return True


def _replace_content_as_member(
    conn: psycopg.Connection, identity: Identity, memory_id: str, memory: NewMemory, content_hash: str,
    chunks: Sequence[str], vectors: np.ndarray,
) -> bool:
    with conn.transaction():
        row = conn.execute(
            f"SELECT d.id FROM {documents_from(identity, '%(ids)s::uuid[]')} d "
            "WHERE d.user_id = %(user)s AND NOT d.archived AND NOT EXISTS ("
            f" SELECT 1 FROM {documents_from(identity)} o WHERE o.user_id = d.user_id AND o.scope = d.scope"
            " AND coalesce(o.team_id, '') = coalesce(d.team_id, '') AND o.content_hash = %(hash)s"
            " AND NOT o.archived AND o.id <> d.id)",
            {"ids": [memory_id], "user": identity.user, "hash": content_hash},
        ).fetchone()
        if row is None:
            return False
        try:
            with conn.transaction():  # a concurrent write of the same text: the unique index says so
                changed = update_memories(conn, [memory_id], {
                    "content": memory.content, "content_hash": content_hash, "title": memory.title,
                    "tags": list(memory.tags), "context": memory.context, "updated_at": "now"})
        except psycopg.errors.UniqueViolation:
            return False
        if not changed:
            return False
        conn.execute("SELECT cems_delete_chunks(%s)", (memory_id,))
        _insert_chunks(conn, memory_id, chunks, vectors, memory.context, member=True)
    return True


def get_memory(
    conn: psycopg.Connection, identity: Identity, memory_id: str, include_archived: bool = True
) -> MemoryRecord | None:
    vis, params = visibility_clause(identity)
    archived = "" if include_archived else " AND NOT d.archived"
    row = conn.execute(
        f"SELECT {document_columns()} FROM {documents_from(identity)} d "
        f"WHERE d.id::text = %(id)s AND {vis}{archived}",
        {**params, "id": memory_id},
    ).fetchone()
    return MemoryRecord.from_row(row) if row else None


def get_memories(conn: psycopg.Connection, identity: Identity, memory_ids: list[str]) -> list[MemoryRecord]:
    """The visible memories among these full ids (archived ones too), in one query; a member of a team
    server reads through cems_documents (sql/017_member_functions.sql), as a search does."""
    if not memory_ids:
        return []
    vis, params = visibility_clause(identity)
    source = "cems_documents(%(ids)s::uuid[]) d" if identity.restricted else "memory_documents d"
    rows = conn.execute(
        f"SELECT {document_columns()} FROM {source} WHERE d.id = ANY(%(ids)s::uuid[]) AND {vis}",
        {**params, "ids": memory_ids},
    ).fetchall()
    return [MemoryRecord.from_row(row) for row in rows]


def looks_like_id(text: str) -> bool:
    """An id or an id prefix (at least 4 hex digits, dashes allowed), whether or not it names a memory."""
    value = text.strip().lower()
    return len(value) >= 4 and all(c in "0123456789abcdef-" for c in value)


def resolve_id(conn: psycopg.Connection, identity: Identity, prefix: str) -> str | None:
    """A full id, or a unique prefix of one (users copy the short ids the tables show)."""
    if not looks_like_id(prefix):
        return None
    prefix = prefix.strip().lower()
    vis, params = visibility_clause(identity)
    rows = conn.execute(
        f"SELECT d.id FROM {documents_from(identity)} d WHERE d.id::text LIKE %(prefix)s AND {vis} LIMIT 2",
        {**params, "prefix": prefix + "%"},
    ).fetchall()
    return str(rows[0][0]) if len(rows) == 1 else None


def list_memories(
    conn: psycopg.Connection,
    identity: Identity,
    *,
    scope: str = "both",
    category: str | None = None,
    project: str | None = None,
    limit: int = 50,
    include_archived: bool = False,
) -> list[MemoryRecord]:
    vis, params = visibility_clause(identity, scope)
    where = [vis]
    if not include_archived:
        where.append(live_clause())
    add_conditions(where, params, [("category", "d.category = %(category)s", category or None),
                                   ("project", project_clause(), project or None)])
    params["limit"] = limit
    rows = conn.execute(
        f"SELECT {document_columns()} FROM {documents_from(identity)} d WHERE {' AND '.join(where)} "
        "ORDER BY d.pinned DESC, d.created_at DESC LIMIT %(limit)s",
        params,
    ).fetchall()
    return [MemoryRecord.from_row(r) for r in rows]


def resolve_ids(
    conn: psycopg.Connection, identity: Identity, prefixes: Sequence[str]
) -> dict[str, str | None]:
    """Each given id or unique prefix → the full id it names, None when it names no memory you can see (or
    several). Full ids are looked up by primary key, the prefixes together in one scan: forgetting many
    memories costs two queries, not one scan per id."""
    cleaned = {given: given.strip().lower() for given in prefixes}
    full: set[str] = set()
    partial: set[str] = set()
    for value in cleaned.values():
        if not looks_like_id(value):
            continue
        (full if len(value) == 36 and _is_uuid(value) else partial).add(value)
    vis, params = visibility_clause(identity)
    found: list[str] = []
    if full:
        found += [str(r[0]) for r in conn.execute(
            f"SELECT d.id FROM {documents_from(identity, '%(ids)s::uuid[]')} d "
            f"WHERE d.id = ANY(%(ids)s::uuid[]) AND {vis}",
            {**params, "ids": sorted(full)},
        ).fetchall()]
    if partial:
        found += [str(r[0]) for r in conn.execute(
            f"SELECT d.id FROM {documents_from(identity)} d "
            f"WHERE d.id::text LIKE ANY(%(patterns)s) AND {vis}",
            {**params, "patterns": [p + "%" for p in sorted(partial)]},
        ).fetchall()]
    resolved: dict[str, str | None] = {}
    for given, value in cleaned.items():
        matches = {memory_id for memory_id in found if memory_id.startswith(value)} if value else set()
        resolved[given] = matches.pop() if len(matches) == 1 else None
    return resolved


def _is_uuid(value: str) -> bool:
    import uuid

    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


def forget_memories(
    conn: psycopg.Connection, identity: Identity, memory_ids: Sequence[str], *, purge: bool,
    admin_teams: Sequence[str] = (),
) -> dict[str, str]:
    """Archive (soft delete) or, with `purge`, delete the owner's memories among `memory_ids`, in one
    statement; returns id → category of those forgotten. Only the owner may forget a memory, and on a team
    server an admin of its team may forget a shared one (`admin_teams`; the row policies say the same); an
    archived one can still be purged. All-or-nothing is the caller's: run it in a transaction and roll back
    when an id is missing from the result."""
    if not memory_ids:
        return {}
    mine = "(user_id = %(user)s OR (scope = 'shared' AND team_id = ANY(%(admin_teams)s::text[])))"
    teams = list(admin_teams)
    if purge:
        # A purge leaves no copy of the text: also the archived memories that consolidation merged into
        # these (near duplicates that state the same values), and the capture record a session's context
        # memory was rendered from. Its bytes stay in the database files until `cems maintain` scrubs them
        # (store/scrub.scrub), which the mark below asks for.
        # Deleted through cems_delete_memories (sql/016_no_table_locks.sql): on a team server a member holds
        # no table-wide DELETE, which would let them lock the table against every teammate's search.
        cursor = conn.execute(
            "WITH RECURSIVE doomed(id) AS ("
            f"  SELECT id FROM {documents_from(identity, '%(ids)s::uuid[]')} d "
            f"  WHERE id = ANY(%(ids)s::uuid[]) AND {mine}"
            f"  UNION SELECT d.id FROM {documents_from(identity)} d JOIN doomed ON d.merged_into = doomed.id"
            "  WHERE d.user_id = %(user)s AND d.archived AND NOT d.pinned) "
            "SELECT id, category FROM cems_delete_memories(ARRAY(SELECT id FROM doomed))",
            {"ids": list(memory_ids), "user": identity.user, "admin_teams": teams},
        )
        done = {str(r[0]): r[1] for r in cursor.fetchall()}
        if done:
            conn.execute(  # through the function: members hold no DELETE (sql/017_member_functions.sql)
                "SELECT cems_delete_capture_sessions(%s, %s::uuid[])", (identity.user, list(done)),
            )
            from cems_cli.store.scrub import mark_scrub_pending

            mark_scrub_pending(conn, identity.user)
        return done
    if identity.restricted:
        live = conn.execute(
            f"SELECT id FROM {documents_from(identity, '%(ids)s::uuid[]')} d "
            f"WHERE {mine} AND NOT archived",
            {"ids": list(memory_ids), "user": identity.user, "admin_teams": teams},
        ).fetchall()
        rows = conn.execute(
            "SELECT id, category FROM cems_update_memories(%s::uuid[], %s)",
            ([str(r[0]) for r in live], Jsonb({"archived": True, "updated_at": "now"})),
        ).fetchall()
        return {str(r[0]): r[1] for r in rows}
    cursor = conn.execute(
        "UPDATE memory_documents SET archived = true, updated_at = now() "
        f"WHERE id = ANY(%(ids)s::uuid[]) AND {mine} AND NOT archived RETURNING id, category",
        {"ids": list(memory_ids), "user": identity.user, "admin_teams": teams},
    )
    return {str(r[0]): r[1] for r in cursor.fetchall()}


def owned_live_ids(
    conn: psycopg.Connection, identity: Identity, *, tag: str | None = None, source: str | None = None,
    rules: bool = True,
) -> list[str]:
    """The owner's live memories (personal and those they shared) with this tag and/or this source, oldest
    first: what `cems forget --tag/--source` selects (without `rules`, rule memories are left out)."""
    where = ["d.user_id = %(user)s", live_clause()]
    if not rules:
        where.append("d.category <> 'rules'")
    params: dict[str, Any] = {"user": identity.user}
    add_conditions(where, params, [("tag", "%(tag)s = ANY(d.tags)", tag),
                                   ("source", "d.source = %(source)s", source)])
    rows = conn.execute(
        f"SELECT d.id FROM {documents_from(identity)} d WHERE {' AND '.join(where)} "
        "ORDER BY d.created_at, d.seq",
        params,
    ).fetchall()
    return [str(r[0]) for r in rows]


def pin_memory(
    conn: psycopg.Connection,
    identity: Identity,
    memory_id: str,
    *,
    pinned: bool,
    reason: str | None,
    pin_category: str | None,
    admin_teams: Sequence[str] = (),
) -> bool:
    """Pin (or unpin) a live memory of the caller's, or a shared memory of a team in `admin_teams`: a pinned
    shared memory opens every teammate's session, so on a team server only the team's admins pin one (the
    database's guard says so too, and records who pinned it in pinned_by)."""
    if identity.restricted:
        found = conn.execute(
            f"SELECT id FROM {documents_from(identity)} d WHERE id::text = %s AND NOT archived "
            "AND (user_id = %s OR (scope = 'shared' AND team_id = ANY(%s)))",
            (memory_id, identity.user, list(admin_teams)),
        ).fetchone()
        return found is not None and bool(update_memories(conn, [str(found[0])], {
            "pinned": pinned, "pin_reason": reason if pinned else None,
            "pin_category": pin_category if pinned else None, "updated_at": "now"}))
    row = conn.execute(
        "UPDATE memory_documents SET pinned = %s, pin_reason = %s, pin_category = %s, pinned_by = %s, "
        "updated_at = now() "
        "WHERE id::text = %s AND NOT archived AND (user_id = %s OR (scope = 'shared' AND team_id = ANY(%s))) "
        "RETURNING id",
        (pinned, reason if pinned else None, pin_category if pinned else None,
         identity.user if pinned else None, memory_id, identity.user, list(admin_teams)),
    ).fetchone()
    return row is not None


def pinned_by(conn: psycopg.Connection, memory_ids: Sequence[str],
              identity: Identity | None = None) -> dict[str, str]:
    """Who pinned each of these memories (those with a pin)."""
    if not memory_ids:
        return {}
    source = documents_from(identity, "%(ids)s::uuid[]") if identity else "memory_documents"
    rows = conn.execute(
        f"SELECT id::text, pinned_by FROM {source} d "
        "WHERE id = ANY(%(ids)s::uuid[]) AND pinned_by IS NOT NULL",
        {"ids": list(memory_ids)},
    ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}


def record_access(conn: psycopg.Connection, document_ids: Sequence[str]) -> None:
    """Every search that returns a memory bumps its access count and priority (memory-model formula)."""
    if not document_ids:
        return
    # A function, not an UPDATE: on a team server a member may not update a teammate's shared memory, only
    # bump its counters (sql/014_touch_functions.sql).
    ids = list(document_ids)
    for start in range(0, len(ids), 1000):  # the function takes 1000 at a time
        conn.execute("SELECT cems_record_access(%s::uuid[])", (ids[start:start + 1000],))


def record_recall(conn: psycopg.Connection, document_ids: Sequence[str]) -> None:
    """Prompt recall injected these memories: stamp last_recalled only. Being injected is no access (no
    access_count or priority change: that fed back into what gets injected), but it is use, which the
    expiry of captured context memories must see (store/lifecycle.py).

    Rows another transaction holds (maintenance merging them, a capture rewriting one) are skipped rather
    than waited for: the prompt hook has a time budget, and the expiry the stamp feeds is counted in days
    (CEMS_CONTEXT_TTL_DAYS), so one missed stamp is of no consequence. Not waiting also rules out a
    deadlock with maintenance, which locks rows in id order."""
    if not document_ids:
        return
    with conn.transaction():
        # Bookkeeping on the prompt's path: the commit need not wait for the WAL to reach the disk (a crash
        # loses at most this stamp, never makes anything inconsistent), which saves the prompt an fsync.
        conn.execute("SET LOCAL synchronous_commit = off")
        conn.execute("SELECT cems_record_recall(%s::uuid[])", (list(document_ids)[:1000],))


def counts(conn: psycopg.Connection, identity: Identity) -> list[tuple[str, str, int]]:
    vis, params = visibility_clause(identity)
    return [
        (r[0], r[1], int(r[2]))
        for r in conn.execute(
            f"SELECT d.scope, d.category, count(*) FROM {documents_from(identity)} d "
            f"WHERE {vis} AND {live_clause()} "
            "GROUP BY 1, 2 ORDER BY 1, 2",
            params,
        ).fetchall()
    ]
