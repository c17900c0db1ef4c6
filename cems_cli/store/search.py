"""Candidate queries for retrieval: nearest chunks by vector (HNSW) and by full text (tsvector)."""

from __future__ import annotations

import time
import weakref
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from cems_cli.store.memories import Identity, live_clause, project_clause, visibility_clause
from cems_cli.store.records import MemoryRecord, document_columns

HNSW_EF_SEARCH = 200  # bench/hnsw_recall.py: 100 is borderline for recall@10 ≥ 0.95, 200 always reaches it


@dataclass(frozen=True)
class SearchFilters:
    identity: Identity
    scope: str = "both"
    category: str | None = None
    project: str | None = None


@dataclass(frozen=True)
class ChunkHit:
    chunk_id: str
    document_id: str
    chunk_index: int
    score: float  # cosine similarity for vector hits, BM25 for lexical hits (store/lexical.py)
    # Lexical hits: the BM25 score of a memory of average length holding every query term (the sum of the
    # terms' IDF). Fusion measures how much of the query a match covers against it.
    full_match: float = 0.0


def filter_clause(filters: SearchFilters) -> tuple[str, dict[str, Any]]:
    vis, params = visibility_clause(filters.identity, filters.scope)
    where = [vis, live_clause()]
    if not filters.category:
        # Rules are enforced by the PreToolUse hook; they only crowd out recall unless asked for.
        where.append("d.category <> 'rules'")
    else:
        where.append("d.category = %(category)s")
        params["category"] = filters.category
    if filters.project:
        where.append(project_clause())
        params["project"] = filters.project
    return " AND ".join(where), params


# Connections already set up for search: the settings last as long as the session, and two SETs per search
# were two round trips of every query.
_PREPARED: weakref.WeakSet[psycopg.Connection] = weakref.WeakSet()


def prepare_session(conn: psycopg.Connection) -> None:
    if conn in _PREPARED:
        return
    # Iterative scans keep an HNSW search going until enough rows pass the filters (pgvector ≥ 0.8).
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    conn.execute(f"SET hnsw.ef_search = {HNSW_EF_SEARCH}; SET hnsw.iterative_scan = relaxed_order")
    if idle and conn.autocommit:  # inside a transaction, a rollback would undo the SETs: not remembered
        _PREPARED.add(conn)


def vector_hits(
    conn: psycopg.Connection, query_vector: np.ndarray, filters: SearchFilters, limit: int
) -> list[ChunkHit]:
    where, params = filter_clause(filters)
    params.update(q=query_vector, limit=limit)
    sql = (
        "SELECT c.id, c.document_id, c.chunk_index, 1 - (c.embedding <=> %(q)s) AS sim "
        "FROM memory_chunks c JOIN memory_documents d ON d.id = c.document_id "
        f"WHERE {where} ORDER BY c.embedding <=> %(q)s LIMIT %(limit)s"
    )
    rows = None
    if filters.identity.restricted and _steer_to_hnsw(conn, filters):
        rows = _hnsw_rows(conn, sql, params)
        if len(rows) < limit:  # the filters were narrower than they looked: let the planner choose
            rows = None
    if rows is None:
        rows = conn.execute(sql, params).fetchall()
    return [ChunkHit(str(r[0]), str(r[1]), r[2], float(r[3])) for r in rows]


# Row-level security and the HNSW index. Under the policies every table carries its own visibility filter
# besides the query's, and the planner, not knowing they select the same rows, multiplies their
# selectivities: at 100k memories it expected 1.7k visible documents of a user's 19k, so sorting the exact
# distances of "a few" looked cheaper than the index, and took 100 ms instead of 6 (bench/rls_latency.py).
# When enough chunks are visible for the iterative HNSW scan to fill the LIMIT well within its budget
# (hnsw.max_scan_tuples, 20k), a restricted session takes the index plan; below that the exact sort over the
# few visible rows is the fast and complete one, and the planner keeps choosing. The test is a bounded count,
# kept a minute per connection. Sessions the policies do not apply to (the embedded store) are not asked.
HNSW_STEER_MIN_CHUNKS = 5_000  # below this many chunks in all, the exact sort takes a few ms anyway
HNSW_STEER_MIN_VISIBLE = 1_000  # the exact sort of ~2k visible chunks took 5.5 ms, the index 3 (10k memories)
HNSW_STEER_MIN_SHARE = 0.01  # 4x what 50 results need from a 20k-tuple iterative scan
_STEER_SECONDS = 60.0
_STEER: weakref.WeakKeyDictionary[psycopg.Connection, tuple[float, bool]] = weakref.WeakKeyDictionary()


def _steer_to_hnsw(conn: psycopg.Connection, filters: SearchFilters) -> bool:
    if filters.project or filters.category:
        return False  # narrower than the visible set: the planner's estimate of them is the better guide
    now = time.monotonic()
    cached = _STEER.get(conn)
    if cached is not None and cached[0] > now:
        return cached[1]
    row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'memory_chunks'::regclass").fetchone()
    total = max(float(row[0]) if row else 0.0, 0.0)
    steer = False
    if total >= HNSW_STEER_MIN_CHUNKS:
        need = max(HNSW_STEER_MIN_VISIBLE, int(total * HNSW_STEER_MIN_SHARE))
        found = conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM memory_chunks LIMIT %s) visible", (need,)
        ).fetchone()
        steer = bool(found and found[0] >= need)
    _STEER[conn] = (now + _STEER_SECONDS, steer)
    return steer


def _hnsw_rows(conn: psycopg.Connection, sql: str, params: dict[str, Any]) -> list[Any]:
    """`sql` with sorting disabled, so the ordered HNSW scan is the plan: SET, query and RESET go in one
    round trip (a pipeline). The query has its own statement text: psycopg prepares repeated statements,
    and a plan cached with sorting off must not serve the other path."""
    try:
        with conn.pipeline():
            conn.execute("SET enable_sort = off")
            cursor = conn.execute("/* hnsw */ " + sql, params)
            conn.execute("RESET enable_sort")
        return cursor.fetchall()
    except psycopg.Error:
        # The pipeline stopped at the failed query, before the RESET. In a transaction, its rollback undoes
        # the SET; otherwise the SET was committed on its own and is undone here.
        if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            conn.execute("RESET enable_sort")
        raise


def fetch_documents(conn: psycopg.Connection, document_ids: Sequence[str]) -> dict[str, MemoryRecord]:
    if not document_ids:
        return {}
    rows = conn.execute(
        f"SELECT {document_columns()} FROM memory_documents d WHERE d.id = ANY(%s::uuid[])",
        (list(document_ids),),
    ).fetchall()
    return {str(r[0]): MemoryRecord.from_row(r) for r in rows}


def fetch_candidates(
    conn: psycopg.Connection, chunk_ids: Sequence[str], query_vector: np.ndarray
) -> tuple[dict[str, MemoryRecord], dict[str, tuple[str, float]]]:
    """In one round trip: the documents of the given chunks, and chunk id → (content, cosine similarity to
    the query), computed by the server (no vectors travel)."""
    if not chunk_ids:
        return {}, {}
    rows = conn.execute(
        f"SELECT c.id, c.content, 1 - (c.embedding <=> %s), {document_columns()} "
        "FROM memory_chunks c JOIN memory_documents d ON d.id = c.document_id WHERE c.id = ANY(%s::uuid[])",
        (query_vector, list(chunk_ids)),
    ).fetchall()
    documents: dict[str, MemoryRecord] = {}
    chunks: dict[str, tuple[str, float]] = {}
    for row in rows:
        chunks[str(row[0])] = (row[1], float(row[2]))
        document_id = str(row[3])
        if document_id not in documents:
            documents[document_id] = MemoryRecord.from_row(row[3:])
    return documents, chunks


def as_array(value) -> np.ndarray:
    """pgvector returns `Vector` objects (newer releases) or numpy arrays (older ones)."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)


def fetch_embeddings(conn: psycopg.Connection, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
    """chunk id → stored embedding of its text alone, in binary (parsing 384 floats from text per row is the
    slow part). Chunks embedded with a context are left out: their vector mixes in the surrounding text,
    so two neighbours that quote each other would look like duplicates (seen on LoCoMo: adjacent turns)."""
    if not chunk_ids:
        return {}
    with conn.cursor(binary=True) as cur:
        rows = cur.execute(
            "SELECT id, embedding FROM memory_chunks WHERE id = ANY(%s::uuid[]) AND context IS NULL",
            (list(chunk_ids),),
        ).fetchall()
    return {str(r[0]): as_array(r[1]) for r in rows}


def session_positions(
    conn: psycopg.Connection,
    sessions: Sequence[str],
    document_ids: Sequence[str],
    filters: SearchFilters,
    leave_out: Collection[str] = (),
) -> dict[tuple[str, str], int]:
    """(document id, session tag) → 0-based place among the session's visible memories, in recorded order,
    for the given documents; the sessions' other memories are only counted, never fetched. Memories of the
    `leave_out` categories are not part of any session."""
    if not sessions or not document_ids:
        return {}
    where, params = filter_clause(filters)
    params.update(sessions=list(sessions), ids=list(document_ids), leave_out=list(leave_out))
    rows = conn.execute(
        "SELECT id, tag, pos FROM ("
        "  SELECT d.id, t.tag, "
        "    row_number() OVER (PARTITION BY t.tag ORDER BY d.created_at, d.seq) - 1 AS pos "
        "  FROM memory_documents d CROSS JOIN LATERAL unnest(d.tags) AS t(tag) "
        f" WHERE d.tags && %(sessions)s::text[] AND t.tag = ANY(%(sessions)s::text[]) AND {where}"
        "   AND d.category <> ALL(%(leave_out)s::text[])"
        ") placed WHERE id = ANY(%(ids)s::uuid[])",
        params,
    ).fetchall()
    return {(str(r[0]), r[1]): int(r[2]) for r in rows}


def neighbour_chunks(conn: psycopg.Connection, document_id: str, chunk_index: int) -> list[tuple[int, str]]:
    rows = conn.execute(
        "SELECT chunk_index, content FROM memory_chunks WHERE document_id = %s "
        "AND chunk_index BETWEEN %s AND %s ORDER BY chunk_index",
        (document_id, chunk_index - 1, chunk_index + 1),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]
