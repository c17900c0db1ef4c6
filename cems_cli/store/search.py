"""Candidate queries for retrieval: nearest chunks by vector (HNSW) and by full text (tsvector)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from cems_cli.store.memories import Identity, live_clause, project_clause, visibility_clause
from cems_cli.store.records import MemoryRecord, document_columns

HNSW_EF_SEARCH = 100


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
    score: float  # cosine similarity for vector hits, ts_rank_cd for lexical hits


def _where(filters: SearchFilters) -> tuple[str, dict[str, Any]]:
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


def prepare_session(conn: psycopg.Connection) -> None:
    # Iterative scans keep an HNSW search going until enough rows pass the filters (pgvector ≥ 0.8).
    conn.execute(f"SET hnsw.ef_search = {HNSW_EF_SEARCH}")
    conn.execute("SET hnsw.iterative_scan = relaxed_order")


def vector_hits(
    conn: psycopg.Connection, query_vector: np.ndarray, filters: SearchFilters, limit: int
) -> list[ChunkHit]:
    where, params = _where(filters)
    params.update(q=query_vector, limit=limit)
    rows = conn.execute(
        "SELECT c.id, c.document_id, c.chunk_index, 1 - (c.embedding <=> %(q)s) AS sim "
        "FROM memory_chunks c JOIN memory_documents d ON d.id = c.document_id "
        f"WHERE {where} ORDER BY c.embedding <=> %(q)s LIMIT %(limit)s",
        params,
    ).fetchall()
    return [ChunkHit(str(r[0]), str(r[1]), r[2], float(r[3])) for r in rows]


def lexical_hits(conn: psycopg.Connection, query: str, filters: SearchFilters, limit: int) -> list[ChunkHit]:
    """Any-term (OR) full-text match ranked by cover density: natural questions rarely contain every term."""
    where, params = _where(filters)
    params.update(query=query, limit=limit)
    rows = conn.execute(
        "WITH q AS (SELECT to_tsquery('simple', string_agg(quote_literal(lexeme), ' | ')) AS tsq "
        "           FROM unnest(to_tsvector('english', %(query)s)) AS t) "
        "SELECT c.id, c.document_id, c.chunk_index, ts_rank_cd(c.search_vector, q.tsq, 1) AS rank "
        "FROM q, memory_chunks c JOIN memory_documents d ON d.id = c.document_id "
        f"WHERE q.tsq IS NOT NULL AND c.search_vector @@ q.tsq AND {where} "
        "ORDER BY rank DESC, c.id LIMIT %(limit)s",
        params,
    ).fetchall()
    return [ChunkHit(str(r[0]), str(r[1]), r[2], float(r[3])) for r in rows]


def fetch_documents(conn: psycopg.Connection, document_ids: Sequence[str]) -> dict[str, MemoryRecord]:
    if not document_ids:
        return {}
    rows = conn.execute(
        f"SELECT {document_columns()} FROM memory_documents d WHERE d.id = ANY(%s::uuid[])",
        (list(document_ids),),
    ).fetchall()
    return {str(r[0]): MemoryRecord.from_row(r) for r in rows}


def fetch_chunks(conn: psycopg.Connection, chunk_ids: Sequence[str]) -> dict[str, tuple[str, np.ndarray]]:
    """chunk id → (content, embedding) for the candidates that reach reranking and dedup."""
    if not chunk_ids:
        return {}
    rows = conn.execute(
        "SELECT id, content, embedding FROM memory_chunks WHERE id = ANY(%s::uuid[])", (list(chunk_ids),)
    ).fetchall()
    return {str(r[0]): (r[1], as_array(r[2])) for r in rows}


def as_array(value) -> np.ndarray:
    """pgvector returns `Vector` objects (newer releases) or numpy arrays (older ones)."""
    to_numpy = getattr(value, "to_numpy", None)
    return np.asarray(to_numpy() if to_numpy else value, dtype=np.float32)


def neighbour_chunks(conn: psycopg.Connection, document_id: str, chunk_index: int) -> list[tuple[int, str]]:
    rows = conn.execute(
        "SELECT chunk_index, content FROM memory_chunks WHERE document_id = %s "
        "AND chunk_index BETWEEN %s AND %s ORDER BY chunk_index",
        (document_id, chunk_index - 1, chunk_index + 1),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]
