"""Candidate queries for retrieval: nearest chunks by vector (HNSW) and by full text (tsvector)."""

from __future__ import annotations

import time
import weakref
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from cems_cli.store.member_access import documents_from
from cems_cli.store.memories import Identity, live_clause, project_clause, visibility_clause
from cems_cli.store.records import MemoryRecord, document_columns

# The HNSW beam, by store size. Recall@10 of the product's vector query against exact search, for real
# questions over memories of real text (bench/scale.py; pgvector 0.8, m 16, ef_construction 64): 100k chunks
# 0.935 at ef 100, 0.989 at 200; 200k chunks 0.806 at 200, 0.888 at 400, 0.962 at 800 (the vector query alone
# 6.1, 9.0 and 16.4 ms p50). A denser graph did not help: ef_construction 128 gave 0.790 / 0.905. 1M (200k
# real, the rest filler), four builds: 0.912–0.949 at 400, 0.955–0.991 at 800; the vector query alone
# p50 19 -> 34 ms, the whole vector search 36 -> 59 ms. A graph of m 32 (two builds) gave 0.962 / 0.971 at
# 400, but each step of the beam costs twice as much: the vector query at ef 400 took as long as m 16's at 800
# (20–22 against 18–21 ms with the index in the page cache), and the index took twice as long to build.
HNSW_EF_SEARCH = 200
HNSW_EF_SEARCH_LARGE = 800
HNSW_LARGE_STORE = 150_000  # chunks in the store (planner statistics) from which the larger beam is used


def ef_search_for(chunks: float) -> int:
    return HNSW_EF_SEARCH_LARGE if chunks >= HNSW_LARGE_STORE else HNSW_EF_SEARCH


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


# Connections already set up for search, until when: two SETs per search were two round trips of every
# query. Looked at again every few minutes, as a long-lived connection (the search server's) sees the store
# grow past HNSW_LARGE_STORE.
_PREPARED: weakref.WeakKeyDictionary[psycopg.Connection, float] = weakref.WeakKeyDictionary()
_PREPARED_SECONDS = 600.0


def prepare_session(conn: psycopg.Connection) -> None:
    now = time.monotonic()
    if _PREPARED.get(conn, 0.0) > now:
        return
    row = conn.execute("SELECT reltuples FROM pg_class WHERE oid = 'memory_chunks'::regclass").fetchone()
    ef_search = ef_search_for(max(float(row[0]) if row else 0.0, 0.0))
    # Iterative scans keep an HNSW search going until enough rows pass the filters (pgvector ≥ 0.8).
    idle = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    conn.execute(f"SET hnsw.ef_search = {ef_search}; SET hnsw.iterative_scan = relaxed_order")
    if idle and conn.autocommit:  # inside a transaction, a rollback would undo the SETs: not remembered
        _PREPARED[conn] = now + _PREPARED_SECONDS


def vector_hits(
    conn: psycopg.Connection, query_vector: np.ndarray, filters: SearchFilters, limit: int
) -> list[ChunkHit]:
    if filters.identity.restricted:
        # A member of a team server: through the function (sql/017_member_functions.sql), which reads as the
        # tables' owner and returns only what the member may read; its plan is not the member's to see.
        rows = conn.execute(
            "SELECT id, document_id, chunk_index, similarity FROM cems_vector_hits(%s, %s, %s, %s, %s, %s)",
            (query_vector, limit, filters.scope, filters.identity.team, filters.category or None,
             filters.project or None),
        ).fetchall()
        return [ChunkHit(str(r[0]), str(r[1]), r[2], float(r[3])) for r in rows]
    where, params = filter_clause(filters)
    params.update(q=query_vector, limit=limit)
    sql = (
        "SELECT c.id, c.document_id, c.chunk_index, 1 - (c.embedding <=> %(q)s) AS sim "
        "FROM memory_chunks c JOIN memory_documents d ON d.id = c.document_id "
        f"WHERE {where} ORDER BY c.embedding <=> %(q)s LIMIT %(limit)s"
    )
    rows = conn.execute(sql, params).fetchall()
    return [ChunkHit(str(r[0]), str(r[1]), r[2], float(r[3])) for r in rows]


# A member of a team server reads memories and chunks through functions that return only what they may read
# (sql/017_member_functions.sql); everyone else reads the tables. The same columns either way.
def _documents_from(restricted: bool, ids: str) -> str:
    return f"cems_documents({ids}) d" if restricted else "memory_documents d"


def fetch_documents(conn: psycopg.Connection, document_ids: Sequence[str], *,
                    restricted: bool = False) -> dict[str, MemoryRecord]:
    if not document_ids:
        return {}
    rows = conn.execute(
        f"SELECT {document_columns()} FROM {_documents_from(restricted, '%(ids)s::uuid[]')} "
        "WHERE d.id = ANY(%(ids)s::uuid[])",
        {"ids": list(document_ids)},
    ).fetchall()
    return {str(r[0]): MemoryRecord.from_row(r) for r in rows}


def fetch_candidates(
    conn: psycopg.Connection, chunk_ids: Sequence[str], query_vector: np.ndarray, *, restricted: bool = False
) -> tuple[dict[str, MemoryRecord], dict[str, tuple[str, float]]]:
    """In one round trip: the documents of the given chunks, and chunk id → (content, cosine similarity to
    the query), computed by the server (no vectors travel)."""
    if not chunk_ids:
        return {}, {}
    if restricted:
        sql = (f"SELECT c.chunk_id, c.content, c.similarity, {document_columns('(c.document)')} "
               "FROM cems_candidates(%(ids)s::uuid[], %(q)s) c")
    else:
        sql = (f"SELECT c.id, c.content, 1 - (c.embedding <=> %(q)s), {document_columns()} "
               "FROM memory_chunks c JOIN memory_documents d ON d.id = c.document_id "
               "WHERE c.id = ANY(%(ids)s::uuid[])")
    rows = conn.execute(sql, {"q": query_vector, "ids": list(chunk_ids)}).fetchall()
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


def fetch_embeddings(conn: psycopg.Connection, chunk_ids: Sequence[str], *,
                     restricted: bool = False) -> dict[str, np.ndarray]:
    """chunk id → stored embedding of its text alone, in binary (parsing 384 floats from text per row is the
    slow part). Chunks embedded with a context are left out: their vector mixes in the surrounding text,
    so two neighbours that quote each other would look like duplicates (seen on LoCoMo: adjacent turns)."""
    if not chunk_ids:
        return {}
    if restricted:  # the function returns only those two columns of what the member may read
        sql = "SELECT id, embedding FROM cems_chunk_embeddings(%(ids)s::uuid[])"
    else:
        sql = "SELECT id, embedding FROM memory_chunks WHERE id = ANY(%(ids)s::uuid[]) AND context IS NULL"
    with conn.cursor(binary=True) as cur:
        rows = cur.execute(sql, {"ids": list(chunk_ids)}).fetchall()
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
        f"  FROM {documents_from(filters.identity, tags='%(sessions)s::text[]')} d "
        "  CROSS JOIN LATERAL unnest(d.tags) AS t(tag) "
        f" WHERE d.tags && %(sessions)s::text[] AND t.tag = ANY(%(sessions)s::text[]) AND {where}"
        "   AND d.category <> ALL(%(leave_out)s::text[])"
        ") placed WHERE id = ANY(%(ids)s::uuid[])",
        params,
    ).fetchall()
    return {(str(r[0]), r[1]): int(r[2]) for r in rows}


def neighbour_chunks(conn: psycopg.Connection, document_id: str, chunk_index: int, *,
                     restricted: bool = False) -> list[tuple[int, str]]:
    params = {"document": document_id, "from": chunk_index - 1, "to": chunk_index + 1}
    if restricted:
        sql = "SELECT chunk_index, content FROM cems_document_chunks(%(document)s, %(from)s, %(to)s)"
    else:
        sql = ("SELECT chunk_index, content FROM memory_chunks WHERE document_id = %(document)s "
               "AND chunk_index BETWEEN %(from)s AND %(to)s")
    rows = conn.execute(sql + " ORDER BY chunk_index", params).fetchall()
    return [(r[0], r[1]) for r in rows]
