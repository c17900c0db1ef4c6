"""Candidate queries for retrieval: nearest chunks by vector (HNSW) and by full text (tsvector)."""

from __future__ import annotations

import itertools
import math
import time
import weakref
from collections.abc import Sequence
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
    score: float  # cosine similarity for vector hits, BM25 for lexical hits
    # Lexical hits: the BM25 score of a memory of average length holding every query term (the sum of the
    # terms' IDF). Fusion measures how much of the query a match covers against it.
    full_match: float = 0.0


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
    where, params = _where(filters)
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
        rows = conn.execute(sql, params).fetchall()  # type: ignore[arg-type]
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
            cursor = conn.execute("/* hnsw */ " + sql, params)  # type: ignore[arg-type]
            conn.execute("RESET enable_sort")
        return cursor.fetchall()
    except psycopg.Error:
        # The pipeline stopped at the failed query, before the RESET. In a transaction, its rollback undoes
        # the SET; otherwise the SET was committed on its own and is undone here.
        if conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
            conn.execute("RESET enable_sort")
        raise


# BM25 parameters (the usual defaults). Term frequency is taken as 1: memories are short and a word
# said twice in one memory rarely makes it twice as relevant.
BM25_K1 = 1.2
BM25_B = 0.4  # memories are short and similar in length: length matters less than usual
# A query term found only in a memory's context (weight D), not in its content (weight A), counts this much.
CONTEXT_TERM_WEIGHT = 0.5


# Query terms that stand next to each other ("support group", "dog park") and stand so in a memory's content
# add this much of their mean IDF: proximity is evidence that single terms cannot give. Measured on LoCoMo
# (no LLM): Recall@10 +0.003 on each half of the conversations at 1.0; 0.5 and 1.5 gained less.
PHRASE_WEIGHT = 1.0
# Terms at most this many places apart in the query count as a pair (stop words in between keep their
# places, so "trip to the beach" pairs 'trip' and 'beach' at distance 3 and matches "trip to the beach").
PHRASE_MAX_DISTANCE = 3


@dataclass(frozen=True)
class LexicalTerms:
    lexemes: list[str]  # distinct stemmed, stopword-free lexemes (the english text search configuration)
    pairs: list[tuple[str, str, int]]  # (first, second, distance) of neighbouring lexemes in the query


def neighbouring_pairs(
    positions: dict[str, Sequence[int]], max_distance: int = PHRASE_MAX_DISTANCE
) -> list[tuple[str, str, int]]:
    """Distinct (first, second, distance) for lexemes that follow each other in the query within
    `max_distance` places; a lexeme next to itself ("very very") is no phrase."""
    ordered = sorted((place, lexeme) for lexeme, places in positions.items() for place in places)
    pairs: dict[tuple[str, str, int], None] = {}
    for (place, first), (next_place, second) in itertools.pairwise(ordered):
        if first != second and 0 < next_place - place <= max_distance:
            pairs.setdefault((first, second, next_place - place), None)
    return list(pairs)


def lexical_terms(conn: psycopg.Connection, query: str) -> LexicalTerms:
    """The query's lexemes and neighbouring pairs, in one round trip."""
    rows = conn.execute(
        "SELECT lexeme, positions FROM unnest(to_tsvector('english', %s))", (query,)
    ).fetchall()
    positions = {row[0]: list(row[1] or ()) for row in rows}
    return LexicalTerms(sorted(positions), neighbouring_pairs(positions))


def _quoted(lexeme: str) -> str:
    """A lexeme as tsquery text: quoted, so any character in it is taken literally."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _phrase(first: str, second: str, distance: int) -> str:
    """Two lexemes `distance` places apart, both in the content (weight A)."""
    return f"{_quoted(first)}:A <{distance}> {_quoted(second)}:A"


def lexical_hits(conn: psycopg.Connection, query: str, filters: SearchFilters, limit: int) -> list[ChunkHit]:
    """BM25 over the full-text index: any query term may match (natural questions rarely contain every
    term), and rare terms count more than common ones (inverse document frequency over what the asker can
    see). PostgreSQL's own ts_rank has no IDF, which on conversational memories ranks filler words as
    highly as names and topics. Neighbouring query terms found side by side in a memory add a phrase bonus."""
    terms = lexical_terms(conn, query)
    lexemes = terms.lexemes
    if not lexemes:
        return []
    where, params = _where(filters)
    # Each lexeme as a tsquery, once for any weight and once for content only (weight A). The SQL text is the
    # same for every query, so psycopg prepares it after a few runs and the server stops re-planning it.
    params.update(
        any_weight=[_quoted(lexeme) for lexeme in lexemes],
        content_only=[_quoted(lexeme) + ":A" for lexeme in lexemes],
    )
    # Document frequencies come from the GIN index, one probe per term, and count content only (a memory's
    # context repeats its neighbours' words). N counts the visible documents, no chunk scan.
    stats = conn.execute(
        f"SELECT (SELECT count(*) FROM memory_documents d WHERE {where}), "
        "  array(SELECT (SELECT count(*) FROM memory_chunks c JOIN memory_documents d "
        f"                ON d.id = c.document_id WHERE c.search_vector @@ t.q AND {where}) "
        "        FROM unnest(%(content_only)s::tsquery[]) WITH ORDINALITY AS t(q, i) ORDER BY t.i)",
        params,
    ).fetchone()
    total, frequencies_found = int(stats[0]), stats[1]
    idf = [math.log(1.0 + (total - df + 0.5) / (df + 0.5)) for df in frequencies_found]
    idf_of = dict(zip(lexemes, idf, strict=True))
    params.update(
        idf=idf, limit=limit, k1=BM25_K1, b=BM25_B, ctx=CONTEXT_TERM_WEIGHT,
        any_term=" | ".join(params["any_weight"]),
        phrases=[_phrase(*pair) for pair in terms.pairs],
        phrase_weights=[PHRASE_WEIGHT * (idf_of[a] + idf_of[b]) / 2 for a, b, _ in terms.pairs],
    )
    # The average length is taken over the matching chunks (a window over the match set, no extra scan).
    rows = conn.execute(
        "WITH m AS ("
        "  SELECT c.id, c.document_id, c.chunk_index, length(ts_filter(c.search_vector, '{a}')) AS dl, "
        "    (SELECT sum(t.idf * CASE WHEN c.search_vector @@ t.qa THEN 1.0 ELSE %(ctx)s END) "
        "     FROM unnest(%(any_weight)s::tsquery[], %(content_only)s::tsquery[], %(idf)s::float8[]) "
        "       AS t(q, qa, idf) "
        "     WHERE c.search_vector @@ t.q) "
        "    + coalesce((SELECT sum(p.w) FROM unnest(%(phrases)s::tsquery[], %(phrase_weights)s::float8[]) "
        "       AS p(q, w) WHERE c.search_vector @@ p.q), 0) AS s "
        "  FROM memory_chunks c JOIN memory_documents d ON d.id = c.document_id "
        f" WHERE c.search_vector @@ %(any_term)s::tsquery AND {where}) "
        "SELECT id, document_id, chunk_index, "
        "  s * (%(k1)s + 1) / (1 + %(k1)s * (1 - %(b)s + %(b)s * dl / greatest(avg(dl) OVER (), 1))) "
        "  AS score "
        "FROM m ORDER BY score DESC, id LIMIT %(limit)s",
        params,
    ).fetchall()
    full_match = sum(idf)
    return [ChunkHit(str(r[0]), str(r[1]), r[2], float(r[3]), full_match) for r in rows]


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
    conn: psycopg.Connection, sessions: Sequence[str], document_ids: Sequence[str], filters: SearchFilters
) -> dict[tuple[str, str], int]:
    """(document id, session tag) → 0-based place among the session's visible memories, in recorded order,
    for the given documents; the sessions' other memories are only counted, never fetched."""
    if not sessions or not document_ids:
        return {}
    where, params = _where(filters)
    params.update(sessions=list(sessions), ids=list(document_ids))
    rows = conn.execute(
        "SELECT id, tag, pos FROM ("
        "  SELECT d.id, t.tag, "
        "    row_number() OVER (PARTITION BY t.tag ORDER BY d.created_at, d.seq) - 1 AS pos "
        "  FROM memory_documents d CROSS JOIN LATERAL unnest(d.tags) AS t(tag) "
        f" WHERE d.tags && %(sessions)s::text[] AND t.tag = ANY(%(sessions)s::text[]) AND {where}"
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
