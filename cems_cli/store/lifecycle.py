"""SQL for lifecycle maintenance: near-duplicate pairs (HNSW), merging, expiry, pruning, the run record.

Everything here works on one user's own memories (personal and those they shared) and never changes a pinned
memory. The orchestration (which memory survives a merge, one transaction per step) is engine/maintain.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from cems_cli.models import project_of
from cems_cli.store.member_access import is_restricted, lock_memories, update_memories
from cems_cli.store.scrub import mark_scrub_pending

# Captured `context` memories: written by the capture triggers, not by a person (cems_cli/capture/).
CONTEXT_SOURCES = ("session", "observer")

# The project a memory belongs to, from its source_ref: `project:<name>`, up to any further ':' (captured
# refs go on with the session and line, `project:acme/api:session:<id>:L12`; a typed one may name a file).
# Without one (no source_ref, or another kind of reference), ''; such memories pair only with each other.
# The project part of a source_ref in SQL, as models.project_of computes it ('' for none); {a}: the alias.
PROJECT_SQL = "coalesce(substring({a}.source_ref from '^project:[^:]*'), '')"


# The search of near duplicates: each memory's nearest neighbours of the same owner, scope, team, category
# and project. Alike texts of two projects are two facts (each project's own test command, say), and a
# memory filed under another category is kept for another purpose. A near duplicate is among the very
# nearest, so a small beam finds it; iterative scans keep the search going past other users' vectors
# (pgvector >= 0.8).
PAIR_NEIGHBOURS = 8
PAIR_EF_SEARCH = 40
PAIR_BATCH = 2000  # memories probed per statement
# Up to this many unpinned mergeable memories, every pair of the user's own is compared instead of probing
# the index: the index is approximate, and on a shared server other users' identical vectors crowd it. n²
# work: 0.4 s for 1000 memories of one category here (1.8 s for 2000, 11 s for 4000). sql/022 holds the
# same limit.
PAIR_EXACT_LIMIT = 1000

# What may take part in a merge: live, neither a rule (it carries a structured spec the PreToolUse hook
# enforces) nor embedded with a context (its vector mixes in the surrounding text, so two neighbouring turns
# of a conversation look alike although they say different things).
_MERGEABLE = (
    "{a}.user_id = %(user)s AND NOT {a}.archived AND ({a}.expires_at IS NULL OR {a}.expires_at > now()) "
    "AND {a}.category <> 'rules' AND {a}.context IS NULL"
)


@dataclass(frozen=True)
class Candidate:
    """A memory taking part in a merge, with what deciding and merging need."""

    id: str
    content: str
    category: str
    pinned: bool
    priority: float
    access_count: int
    last_accessed: datetime | None
    last_recalled: datetime | None
    created_at: datetime
    expires_at: datetime | None
    title: str | None
    tags: list[str]
    source: str | None
    source_ref: str | None
    merged_from: list[dict[str, Any]]
    chunks: int

    @property
    def project(self) -> str:
        return project_of(self.source_ref)

    @property
    def recency(self) -> datetime:
        """When it was last used or, never used, recorded."""
        return max(self.created_at, self.last_accessed or self.created_at)

    def provenance(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "source_ref": self.source_ref,
            "created_at": self.created_at.isoformat(),
        }


# A member of a team server holds no privilege on the memory tables (sql/019_member_api.sql): maintenance of
# their own memories reads them through cems_visible_documents and cems_visible_chunks, writes through
# cems_update_memories, and locks rows through cems_lock_memories.
def _documents(conn: psycopg.Connection, ids: str | None = None) -> str:
    if not is_restricted(conn):
        return "memory_documents"
    return f"cems_visible_documents({ids})" if ids else "cems_visible_documents()"


def _chunks(conn: psycopg.Connection, documents: str) -> str:
    return f"cems_visible_chunks({documents})" if is_restricted(conn) else "memory_chunks"


def _plain(value: Any) -> Any:
    """A value as cems_update_memories reads it from JSON."""
    if isinstance(value, Jsonb):
        return value.obj
    return value.isoformat() if isinstance(value, datetime) else value


def take_lock(conn: psycopg.Connection, user: str, *, wait: bool) -> bool:
    """Serialise maintenance of one user until the current transaction ends: a second `cems maintain` (or the
    observer's) waits, then finds the merges already done. With `wait` false, False when it is held.

    A row lock through cems_lock_maintenance (sql/021), not an advisory lock: any role of a team server may
    take any advisory key, and held another user's key to stop their maintenance."""
    row = conn.execute("SELECT cems_lock_maintenance(%s, %s)", (user, wait)).fetchone()
    return bool(row and row[0])


def near_duplicate_pairs(
    conn: psycopg.Connection, user: str, threshold: float, neighbours: int = PAIR_NEIGHBOURS
) -> list[tuple[str, str, float]]:
    """(a, b, cosine) of the user's live mergeable memories whose first chunks are at least `threshold`
    alike, same scope, team, category and project (PROJECT_SQL), each pair once (a < b). Call inside a
    transaction (the SET LOCALs).

    One HNSW probe per memory, driven from the unpinned ones only (two pinned memories are never merged);
    up to PAIR_EXACT_LIMIT of them, an exact comparison instead. The vectors never leave the server."""
    probes = [
        row[0]
        for row in conn.execute(
            f"SELECT d.id FROM {_documents(conn)} d WHERE {_MERGEABLE.format(a='d')} AND NOT d.pinned",
            {"user": user},
        ).fetchall()
    ]
    if len(probes) <= PAIR_EXACT_LIMIT and not is_restricted(conn):  # a member's function decides itself
        return _each_pair_once(_exact_pairs(conn, user, neighbours, threshold) if probes else [])
    conn.execute(f"SET LOCAL hnsw.ef_search = {int(max(PAIR_EF_SEARCH, neighbours))}")
    conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
    # On a shared server most of what the index yields is other users' (row-level security hides it after
    # the scan): the default 20,000 scanned tuples could end a probe before it reached the user's own copy.
    # The LIMIT still ends each probe as soon as its neighbours are found.
    conn.execute("SET LOCAL hnsw.max_scan_tuples = 1000000")
    # The other plan for "nearest first" is an exact distance to every chunk and a sort, per probe: n² work
    # that the planner may think cheap on a small or freshly loaded store. Without sorting, HNSW is the plan.
    conn.execute("SET LOCAL enable_sort = off")
    rows: list[tuple[Any, Any, float]] = []
    for start in range(0, len(probes), PAIR_BATCH):  # no one statement runs long (shared servers time out)
        if is_restricted(conn):  # the same query, run as the tables' owner on the caller's own memories
            rows += conn.execute(
                "SELECT probe, document_id, similarity FROM cems_near_duplicates(%s::uuid[], %s, %s)",
                (probes[start : start + PAIR_BATCH], neighbours, threshold),
            ).fetchall()
            continue
        rows += conn.execute(
            "WITH mine AS MATERIALIZED ("
            "  SELECT d.id, d.scope, coalesce(d.team_id, '') AS team, d.category, "
            f"   {PROJECT_SQL.format(a='d')} AS project, c.embedding "
            "  FROM memory_documents d JOIN memory_chunks c ON c.document_id = d.id AND c.chunk_index = 0 "
            "  WHERE d.id = ANY(%(probes)s::uuid[])) "
            "SELECT m.id, n.document_id, n.similarity FROM mine m CROSS JOIN LATERAL ("
            "  SELECT c.document_id, 1 - (c.embedding <=> m.embedding) AS similarity FROM memory_chunks c "
            "  WHERE c.chunk_index = 0 AND c.document_id <> m.id "
            # A scalar subquery, not a join: it stays a primary-key lookup per chunk the index yields, where
            # a join would be planned as a scan of all the owner's memories for every probe.
            # Category and project are filtered here, not after the LIMIT: copies in other projects must not
            # take a real near duplicate's place among the nearest.
            f" AND coalesce((SELECT {_MERGEABLE.format(a='o')} AND o.scope = m.scope"
            "    AND coalesce(o.team_id, '') = m.team AND o.category = m.category"
            f"   AND {PROJECT_SQL.format(a='o')} = m.project"
            "    FROM memory_documents o WHERE o.id = c.document_id), false) "
            "  ORDER BY c.embedding <=> m.embedding LIMIT %(neighbours)s"
            ") n WHERE n.similarity >= %(threshold)s",
            {"user": user, "threshold": threshold, "neighbours": neighbours,
             "probes": probes[start : start + PAIR_BATCH]},
        ).fetchall()
    conn.execute("SET LOCAL enable_sort = on")  # the rest of the transaction sorts as usual
    return _each_pair_once(rows)


def _exact_pairs(
    conn: psycopg.Connection, user: str, neighbours: int, threshold: float
) -> list[tuple[Any, Any, float]]:
    """near_duplicate_pairs for a small store: each unpinned memory against all the user's own, exactly."""
    own = (
        "SELECT d.id, d.pinned, d.scope, coalesce(d.team_id, '') AS team, d.category, "
        f"{PROJECT_SQL.format(a='d')} AS project, c.embedding "
        "FROM memory_documents d JOIN memory_chunks c ON c.document_id = d.id AND c.chunk_index = 0 "
        f"WHERE {_MERGEABLE.format(a='d')}"
    )
    return conn.execute(
        f"WITH own AS MATERIALIZED ({own}) "
        "SELECT m.id, n.id, n.similarity FROM own m CROSS JOIN LATERAL ("
        "  SELECT o.id, 1 - (o.embedding <=> m.embedding) AS similarity FROM own o "
        "  WHERE o.id <> m.id AND o.scope = m.scope AND o.team = m.team AND o.category = m.category "
        "    AND o.project = m.project "
        "  ORDER BY o.embedding <=> m.embedding LIMIT %(neighbours)s) n "
        "WHERE NOT m.pinned AND n.similarity >= %(threshold)s",
        {"user": user, "neighbours": neighbours, "threshold": threshold},
    ).fetchall()


def _each_pair_once(rows: Sequence[tuple[Any, Any, float]]) -> list[tuple[str, str, float]]:
    pairs: dict[tuple[str, str], float] = {}
    for first, second, similarity in rows:
        a, b = sorted((str(first), str(second)))
        pairs[(a, b)] = max(pairs.get((a, b), 0.0), float(similarity))
    return [(a, b, similarity) for (a, b), similarity in sorted(pairs.items())]


def aligned_similarity(
    conn: psycopg.Connection, pairs: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], float]:
    """For memories of several chunks: the lowest cosine between chunks at the same place. Two long
    memories are near duplicates only when every part is, not just their openings."""
    if not pairs:
        return {}
    rows = conn.execute(
        "WITH ch AS MATERIALIZED (SELECT document_id, chunk_index, embedding "
        f"  FROM {_chunks(conn, '%(all)s::uuid[]')} c WHERE document_id = ANY(%(all)s::uuid[])) "
        "SELECT p.a, p.b, min(1 - (x.embedding <=> y.embedding)) "
        "FROM unnest(%(a)s::uuid[], %(b)s::uuid[]) AS p(a, b) "
        "JOIN ch x ON x.document_id = p.a "
        "JOIN ch y ON y.document_id = p.b AND y.chunk_index = x.chunk_index "
        "GROUP BY p.a, p.b",
        {"a": [a for a, _ in pairs], "b": [b for _, b in pairs],
         "all": sorted({i for pair in pairs for i in pair})},
    ).fetchall()
    return {(str(r[0]), str(r[1])): float(r[2]) for r in rows}


def candidates(
    conn: psycopg.Connection, user: str, ids: Sequence[str], *, lock: bool
) -> dict[str, Candidate]:
    """The given memories that are still live and mergeable. With `lock`, their rows are locked until the
    transaction ends (in id order, so two lockers never deadlock on each other), and what is returned is
    what was committed last: a memory pinned, forgotten or changed since the pairs were found is seen so."""
    if not ids:
        return {}
    # FOR UPDATE re-evaluates the filter on the latest committed version of a row that changed meanwhile. A
    # member locks first, through the function; the read that follows sees what was committed last.
    restricted = is_restricted(conn)
    if restricted and lock:
        lock_memories(conn, ids)
    counted = ("(SELECT count(*) FROM cems_visible_chunks(ARRAY[d.id]) c)" if restricted
               else "(SELECT count(*) FROM memory_chunks c WHERE c.document_id = d.id)")
    rows = conn.execute(
        "SELECT d.id, d.content, d.category, d.pinned, d.priority, d.access_count, d.last_accessed, "
        "d.last_recalled, d.created_at, d.expires_at, "
        f"d.title, d.tags, d.source, d.source_ref, d.merged_from, {counted} "
        f"FROM {_documents(conn, '%(ids)s::uuid[]')} d WHERE d.id = ANY(%(ids)s::uuid[]) "
        f"AND {_MERGEABLE.format(a='d')} "
        "ORDER BY d.id" + (" FOR UPDATE OF d" if lock and not restricted else ""),
        {"ids": sorted(set(ids)), "user": user},
    ).fetchall()
    return {
        str(r[0]): Candidate(
            id=str(r[0]),
            content=r[1],
            category=r[2],
            pinned=bool(r[3]),
            priority=float(r[4]),
            access_count=int(r[5]),
            last_accessed=r[6],
            last_recalled=r[7],
            created_at=r[8],
            expires_at=r[9],
            title=r[10],
            tags=list(r[11] or []),
            source=r[12],
            source_ref=r[13],
            merged_from=list(r[14] or []),
            chunks=int(r[15]),
        )
        for r in rows
    }


def merge(conn: psycopg.Connection, kept: Candidate, merged: Sequence[Candidate]) -> None:
    """Fold `merged` into `kept` and archive them, pointing at it. The survivor keeps its content and
    category; it takes the higher priority, the union of tags, the sum of accesses, the latest access and
    recall (the expiry of captured context reads them, and the survivor now stands for the merged), the later
    expiry (none if either has none), a title or provenance it lacked, and records every merged memory's
    provenance (and what had been merged into those) in merged_from, with what that memory changed on the
    survivor ("undo"), which `restore` takes back. A pinned survivor is left exactly as it is."""
    if not merged:
        return
    if not kept.pinned:
        state: dict[str, Any] = {field: getattr(kept, field) for field in _FOLDED}
        tags = list(kept.tags)
        access_count = kept.access_count
        history = list(kept.merged_from)
        for other in merged:  # one at a time, so that each one's changes are its own to undo
            before = dict(state)
            state["priority"] = max(state["priority"], other.priority)
            for field in ("last_accessed", "last_recalled"):
                known = [v for v in (state[field], getattr(other, field)) if v is not None]
                state[field] = max(known) if known else None
            if state["expires_at"] is not None:
                state["expires_at"] = None if other.expires_at is None else max(state["expires_at"],
                                                                                 other.expires_at)
            for field in ("title", "source", "source_ref"):
                state[field] = state[field] if state[field] is not None else getattr(other, field)
            added = [tag for tag in other.tags if tag not in tags]
            tags += added
            access_count += other.access_count
            changed = {
                f: [_jsonable(before[f]), _jsonable(state[f])] for f in _FOLDED if before[f] != state[f]
            }
            undo = {"changed": changed, "tags_added": added, "access_added": other.access_count}
            history += [{**other.provenance(), "undo": undo}, *other.merged_from]
        if is_restricted(conn):
            update_memories(conn, [kept.id], {
                "priority": state["priority"], "tags": tags, "access_count": access_count,
                **{f: _plain(state[f]) for f in ("last_accessed", "last_recalled", "expires_at")},
                "title": state["title"], "source": state["source"], "source_ref": state["source_ref"],
                "merged_from": history, "updated_at": "now"})
        else:
            conn.execute(
                "UPDATE memory_documents SET priority = %s, tags = %s, access_count = %s, "
                "last_accessed = %s, last_recalled = %s, expires_at = %s, title = %s, source = %s, "
                "source_ref = %s, "
                "merged_from = %s, updated_at = now() WHERE id = %s",
                (state["priority"], tags, access_count, state["last_accessed"], state["last_recalled"],
                 state["expires_at"], state["title"], state["source"], state["source_ref"], Jsonb(history),
                 kept.id),
            )
    if is_restricted(conn):
        folded = conn.execute(
            "SELECT id FROM cems_visible_documents(%(ids)s::uuid[]) WHERE NOT archived AND NOT pinned",
            {"ids": [m.id for m in merged]}).fetchall()
        update_memories(conn, [str(r[0]) for r in folded],
                        {"archived": True, "merged_into": kept.id, "updated_at": "now"})
        return
    conn.execute(
        "UPDATE memory_documents SET archived = true, merged_into = %s, updated_at = now() "
        "WHERE id = ANY(%s::uuid[]) AND NOT archived AND NOT pinned",
        (kept.id, [m.id for m in merged]),
    )


# The survivor's fields a merge may change (besides tags, access_count and merged_from).
_FOLDED = ("priority", "last_accessed", "last_recalled", "expires_at", "title", "source", "source_ref")


def _jsonable(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


def _same(value: Any, recorded: Any) -> bool:
    """A column's value against one recorded by `_jsonable` (a time as an instant: the offset it was written
    with depends on the session's time zone)."""
    if isinstance(value, datetime) and isinstance(recorded, str):
        try:
            return value == datetime.fromisoformat(recorded)
        except ValueError:
            return False
    return bool(value == recorded)


def kept_apart(a: Candidate, b: Candidate) -> bool:
    """Whether the user restored one of the two after it had been merged into the other, or into a memory
    the other absorbed since: a pair `cems restore` separated is never merged again. Both ends say so: the
    survivor's entry of the restored memory is marked restored, and the restored memory names the
    survivor (`kept_apart_from`), which also holds when the survivor was pinned (left as it was) or has
    itself been merged into another memory since."""
    def absorbed(memory: Candidate) -> set[str]:
        return {memory.id, *(str(e["id"]) for e in memory.merged_from if e.get("id"))}

    def apart(x: Candidate, y: Candidate) -> bool:
        targets = absorbed(y)
        return any(
            (entry.get("restored") and entry.get("id") == y.id) or entry.get("kept_apart_from") in targets
            for entry in x.merged_from
        )

    return apart(a, b) or apart(b, a)


@dataclass
class Restored:
    id: str
    category: str
    merged_into: str | None = None  # the memory it had been merged into
    undone: list[str] = field(default_factory=list)  # what the merge had changed there and was taken back
    expiry_cleared: bool = False  # it had expired: its expiry is gone, or it would stay hidden

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "merged_into": self.merged_into, "undone": list(self.undone),
                "expiry_cleared": self.expiry_cleared}


class RestoreError(ValueError):
    """The memory cannot be restored (not archived, or its text is live again in another memory)."""


def restore(conn: psycopg.Connection, user: str, memory_id: str) -> Restored | None:
    """Bring back one of the user's archived memories (merged, expired or forgotten), inside the caller's
    transaction. A merged one is taken out of the memory it was merged into: what the merge changed there
    is set back where nothing changed it since (the priority, an expiry, a title or provenance it took, the
    tags it added, the accesses it brought), and its entry there is marked restored, so consolidation never
    merges the two again. An expired one loses its expiry. None when `user` has no memory of that id."""
    restricted = is_restricted(conn)
    if restricted:
        lock_memories(conn, [memory_id])
    row = conn.execute(
        "SELECT id, archived, merged_into, category, scope, coalesce(team_id, ''), content_hash, "
        f"expires_at <= now(), merged_from FROM {_documents(conn, '%(ids)s::uuid[]')} d "
        "WHERE id = %(id)s AND user_id = %(user)s" + ("" if restricted else " FOR UPDATE"),
        {"ids": [memory_id], "id": memory_id, "user": user},
    ).fetchone()
    if row is None:
        return None
    _, archived, merged_into, category, scope, team, content_hash, expired, own_history = row
    if not archived:
        raise RestoreError(f"memory {memory_id} is not archived: nothing to restore")
    twin = conn.execute(
        f"SELECT id FROM {_documents(conn)} d WHERE user_id = %s AND scope = %s "
        "AND coalesce(team_id, '') = %s AND content_hash = %s AND NOT archived",
        (user, scope, team, content_hash),
    ).fetchone()
    if twin is not None:
        raise RestoreError(f"memory {twin[0]} holds the same text and is live: nothing to restore")
    result = Restored(str(memory_id), category, str(merged_into) if merged_into else None,
                      expiry_cleared=bool(expired))
    if merged_into is not None:
        result.undone = _undo_merge(conn, user, str(merged_into), str(memory_id), list(own_history or []))
    marks = [{"kept_apart_from": result.merged_into}] if result.merged_into else []
    if restricted:
        changes: dict[str, Any] = {"archived": False, "merged_into": None, "updated_at": "now",
                                   "merged_from": list(own_history or []) + marks}
        if expired:
            changes["expires_at"] = None
        update_memories(conn, [str(memory_id)], changes)
        return result
    conn.execute(
        "UPDATE memory_documents SET archived = false, merged_into = NULL, updated_at = now(), "
        "merged_from = merged_from || %s, "
        "expires_at = CASE WHEN expires_at <= now() THEN NULL ELSE expires_at END WHERE id = %s",
        (Jsonb(marks), memory_id),
    )
    return result


def _undo_merge(
    conn: psycopg.Connection, user: str, kept_id: str, memory_id: str, own_history: list[dict[str, Any]]
) -> list[str]:
    restricted = is_restricted(conn)
    if restricted:
        lock_memories(conn, [kept_id])
    row = conn.execute(
        f"SELECT tags, access_count, merged_from, {', '.join(_FOLDED)} "
        f"FROM {_documents(conn, '%(ids)s::uuid[]')} d "
        "WHERE id = %(id)s AND user_id = %(user)s" + ("" if restricted else " FOR UPDATE"),
        {"ids": [kept_id], "id": kept_id, "user": user},
    ).fetchone()
    if row is None:  # pruned or purged since: nothing left to set back
        return []
    tags, access_count, history = list(row[0] or []), int(row[1]), list(row[2] or [])
    current = dict(zip(_FOLDED, row[3:], strict=True))
    entry = next((e for e in history if e.get("id") == memory_id and not e.get("restored")), None)
    if entry is None:
        return []
    undo = entry.get("undo") or {}
    undone: list[str] = []
    updates: dict[str, Any] = {}
    for name, (before, after) in (undo.get("changed") or {}).items():
        if name in current and _same(current[name], after):  # else something changed it since
            updates[name] = before
            undone.append(name)
    removed = [tag for tag in undo.get("tags_added") or [] if tag in tags]
    if removed:
        updates["tags"] = [tag for tag in tags if tag not in removed]
        undone.append("tags")
    if undo.get("access_added"):
        updates["access_count"] = max(0, access_count - int(undo["access_added"]))
        undone.append("access_count")
    # Its entry stays, marked restored (the two are kept apart from now on); the history it brought along
    # is its own again (those memories still point at it).
    brought = {e.get("id") for e in own_history}
    updates["merged_from"] = Jsonb([
        {"id": memory_id, "restored": True} if e is entry else e
        for e in history if e is entry or e.get("id") not in brought
    ])
    if restricted:
        update_memories(conn, [kept_id], {**{k: _plain(v) for k, v in updates.items()}, "updated_at": "now"})
        return undone
    assignments = ", ".join(f"{name} = %({name})s" for name in updates)
    conn.execute(
        f"UPDATE memory_documents SET {assignments}, updated_at = now() WHERE id = %(id)s",
        {**updates, "id": kept_id},
    )
    return undone


# A captured context memory's last sign of use: recorded, rewritten as its session went on, found by an
# explicit search (last_accessed) or injected by prompt recall (last_recalled, which is no access: see
# server/daemon.py). greatest() skips the NULLs of what never happened.
_ACTIVITY = "greatest(d.created_at, d.updated_at, d.last_accessed, d.last_recalled)"
_CAPTURED_CONTEXT = "(d.category = 'context' AND d.source = ANY(%(sources)s))"
_TTL_END = f"{_ACTIVITY} + %(ttl_days)s * interval '1 day'"
_EXPIRED = (
    "d.user_id = %(user)s AND NOT d.archived AND NOT d.pinned "
    f"AND (d.expires_at <= now() OR ({_CAPTURED_CONTEXT} AND {_TTL_END} <= now()))"
)


def expire(
    conn: psycopg.Connection, user: str, context_ttl_days: float, *, dry_run: bool
) -> list[tuple[str, str]]:
    """Archive (or, dry, find) the user's unpinned memories past their expires_at, and captured context
    memories unused for `context_ttl_days`; those get the expires_at they reached. (id, category) each."""
    params = {"user": user, "sources": list(CONTEXT_SOURCES), "ttl_days": context_ttl_days}
    if dry_run:
        rows = conn.execute(f"SELECT d.id, d.category FROM {_documents(conn)} d WHERE {_EXPIRED}", params)
    elif is_restricted(conn):
        found = conn.execute(
            "SELECT d.id, d.category, CASE "
            f" WHEN {_CAPTURED_CONTEXT} THEN least(coalesce(d.expires_at, 'infinity'), {_TTL_END}) "
            f" ELSE d.expires_at END FROM cems_visible_documents() d WHERE {_EXPIRED}",
            params,
        ).fetchall()
        expired: list[tuple[str, str]] = []
        for memory_id, category, expires_at in found:  # each its own expiry: one call per memory
            if update_memories(conn, [str(memory_id)], {"archived": True, "updated_at": "now",
                                                        "expires_at": _plain(expires_at)}):
                expired.append((str(memory_id), category))
        return expired
    else:
        rows = conn.execute(
            "UPDATE memory_documents d SET archived = true, updated_at = now(), expires_at = CASE "
            f" WHEN {_CAPTURED_CONTEXT} THEN least(coalesce(d.expires_at, 'infinity'), {_TTL_END}) "
            " ELSE d.expires_at END "
            f"WHERE {_EXPIRED} RETURNING d.id, d.category",
            params,
        )
    return [(str(r[0]), r[1]) for r in rows.fetchall()]


def prune(conn: psycopg.Connection, user: str, grace_days: float, *, dry_run: bool) -> int:
    """Delete for good (or, dry, count) the user's unpinned memories archived more than `grace_days` ago;
    their chunks (and a rule's spec) go with them (ON DELETE CASCADE)."""
    where = (
        "user_id = %(user)s AND archived AND NOT pinned "
        "AND archived_at <= now() - %(grace_days)s * interval '1 day'"
    )
    params = {"user": user, "grace_days": grace_days}
    if dry_run:
        row = conn.execute(f"SELECT count(*) FROM {_documents(conn)} d WHERE {where}", params).fetchone()
        return int(row[0]) if row else 0
    # Through cems_delete_memories: a member holds no table-wide DELETE (sql/016_no_table_locks.sql).
    deleted = len(conn.execute(
        f"SELECT id FROM cems_delete_memories(ARRAY(SELECT id FROM {_documents(conn)} d WHERE {where}))",
        params
    ).fetchall())
    if deleted:
        mark_scrub_pending(conn, user)  # their text is still in the files until the scrub
    return deleted


def record_run(conn: psycopg.Connection, user: str, report: dict[str, Any]) -> None:
    if is_restricted(conn):  # a member's own row, through sql/023_member_bookkeeping.sql
        conn.execute("SELECT cems_record_maintenance_run(%s)", (Jsonb(report),))
        return
    conn.execute(
        "INSERT INTO maintenance_runs (user_id, last_run_at, report) VALUES (%s, now(), %s) "
        "ON CONFLICT (user_id) DO UPDATE SET last_run_at = now(), report = excluded.report",
        (user, Jsonb(report)),
    )


def seconds_since_last_run(conn: psycopg.Connection, user: str) -> float | None:
    """By the database's clock (several processes, maybe several machines, share the record)."""
    table = "cems_my_maintenance_run()" if is_restricted(conn) else "maintenance_runs"
    row = conn.execute(
        f"SELECT extract(epoch FROM now() - last_run_at) FROM {table} WHERE user_id = %s", (user,)
    ).fetchone()
    return float(row[0]) if row else None
