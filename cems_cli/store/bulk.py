"""Bulk SQL for `cems import`/`cems export`: one-query dedup, COPY of documents and chunks, streaming reads.

COPY is binary with explicit types, so vectors go over the wire as pgvector's binary form (no float → text
formatting) and every document id is chosen by the caller (chunks reference them without a round trip).
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import psycopg

from cems_cli.store.lexical import forget_stats
from cems_cli.store.member_access import all_documents_from, meta_from
from cems_cli.store.records import MemoryRecord, NewMemory, document_columns

# (column, PostgreSQL type) in COPY order; binary COPY needs every type spelled out.
_DOCUMENT_COPY = (
    ("id", "uuid"),
    ("content", "text"),
    ("content_hash", "text"),
    ("user_id", "text"),
    ("team_id", "text"),
    ("scope", "text"),
    ("category", "text"),
    ("title", "text"),
    ("tags", "text[]"),
    ("source", "text"),
    ("source_ref", "text"),
    ("pinned", "bool"),
    ("pin_reason", "text"),
    ("pin_category", "text"),
    ("expires_at", "timestamptz"),
    ("created_at", "timestamptz"),
    ("updated_at", "timestamptz"),
    ("context", "text"),
)
_CHUNK_COPY = (
    ("document_id", "uuid"),
    ("chunk_index", "int4"),
    ("content", "text"),
    ("embedding", "vector"),
    ("context", "text"),
)

# Below this many new chunks, inserting into the live indexes is cheaper than rebuilding them.
REBUILD_MIN_CHUNKS = 2000
# Index builds are the slow part of a big first import; give them room (session-local, reset at commit).
_BUILD_MEMORY_MB = 512
_BUILD_SETTINGS = (
    f"SET LOCAL maintenance_work_mem = '{_BUILD_MEMORY_MB}MB'",
    "SET LOCAL max_parallel_maintenance_workers = 2",
    # A shared server's connections stop statements after 60 s (store/db.py); a build on a large store is
    # one statement that may take many minutes.
    "SET LOCAL statement_timeout = 0",
)

DedupKey = tuple[str, str, str]  # (scope, team or '', content_hash): what the live-hash unique index covers


@dataclass(frozen=True)
class DocumentRow:
    id: uuid.UUID
    memory: NewMemory
    content_hash: str
    team_id: str | None

    @property
    def key(self) -> DedupKey:
        return (self.memory.scope, self.team_id or "", self.content_hash)


@dataclass(frozen=True)
class ChunkRow:
    document_id: uuid.UUID
    chunk_index: int
    content: str
    embedding: np.ndarray
    context: str | None = None  # the memory's context, stored with each chunk (full-text weight D)


def existing_ids(conn: psycopg.Connection, user: str, hashes: Sequence[str], *,
                 restricted: bool = False) -> dict[DedupKey, str]:
    """Live memories of `user` whose content hash is among `hashes`, in one query."""
    if not hashes:
        return {}
    rows = conn.execute(
        f"SELECT id, scope, coalesce(team_id, ''), content_hash FROM {all_documents_from(restricted)} d "
        "WHERE user_id = %s AND NOT archived AND content_hash = ANY(%s::text[])",
        (user, list(set(hashes))),
    ).fetchall()
    return {(r[1], r[2], r[3]): str(r[0]) for r in rows}


def count_chunks(conn: psycopg.Connection) -> int:
    # The planner's estimate is enough to choose between inserting into and rebuilding the indexes.
    row = conn.execute("SELECT reltuples::bigint FROM pg_class WHERE relname = 'memory_chunks'").fetchone()
    return max(int(row[0]), 0) if row else 0


def write_documents(
    conn: psycopg.Connection,
    user: str,
    documents: Sequence[DocumentRow],
    chunks: Sequence[ChunkRow],
    *,
    rebuild_indexes: bool = False,
) -> dict[uuid.UUID, str]:
    """COPY documents then their chunks. Call inside a transaction: the caller owns all-or-nothing. Returns
    each document's id as stored: its own, but on a team server the database's (a member chooses none).

    With `rebuild_indexes`, the similarity and full-text indexes of memory_chunks are dropped before the COPY
    and recreated from their own definitions after it (several times faster for a large first load; it
    holds an exclusive lock on memory_chunks until commit, so searches wait for the import to finish).
    """
    row = conn.execute("SELECT now(), row_security_active('memory_documents')").fetchone()
    assert row is not None  # a SELECT without FROM returns one row
    now, restricted = row
    # An application role on a shared server owns no index to drop, PostgreSQL refuses COPY FROM into a
    # table under row-level security, and the role may create no temporary table to stage rows in (one
    # named memory_documents once stood in for ours): its rows go in as pipelined INSERTs, which the
    # policies check like any insert.
    if restricted:
        stored = _insert_rows(conn, documents, chunks)
        forget_stats(conn)
        return stored
    dropped = _drop_search_indexes(conn) if rebuild_indexes else []
    with conn.cursor() as cur:
        with cur.copy(_copy_sql("memory_documents", _DOCUMENT_COPY)) as copy:
            copy.set_types([t for _, t in _DOCUMENT_COPY])
            for doc in documents:
                copy.write_row(_document_row(doc, user, now))
        with cur.copy(_copy_sql("memory_chunks", _CHUNK_COPY)) as copy:
            copy.set_types([t for _, t in _CHUNK_COPY])
            for chunk in chunks:
                copy.write_row(_chunk_row(chunk))
    if dropped:
        for statement in _BUILD_SETTINGS:
            conn.execute(statement)
        for definition in dropped:
            conn.execute(definition)  # read back from pg_indexes just above
    forget_stats(conn)  # a bulk load moves the BM25 statistics this connection keeps
    return {doc.id: str(doc.id) for doc in documents}


def analyze(conn: psycopg.Connection) -> None:
    """Refresh planner statistics after a load that changed the tables a lot (autovacuum may take a minute,
    and until then the planner can misjudge the vector and full-text queries)."""
    conn.execute("ANALYZE memory_documents, memory_chunks")


def _document_row(doc: DocumentRow, user: str, now: Any) -> tuple:
    m = doc.memory
    created = m.created_at or now
    return (doc.id, m.content, doc.content_hash, user, doc.team_id, m.scope, m.category, m.title,
            list(m.tags), m.source, m.source_ref, m.pinned, m.pin_reason, m.pin_category, m.expires_at,
            created, created, m.context)


def _chunk_row(chunk: ChunkRow) -> tuple:
    return (chunk.document_id, chunk.chunk_index, chunk.content,
            np.asarray(chunk.embedding, dtype=np.float32), chunk.context)


def _insert_rows(conn: psycopg.Connection, documents: Sequence[DocumentRow],
                 chunks: Sequence[ChunkRow]) -> dict[uuid.UUID, str]:
    """A member's load: through the functions of sql/019_member_api.sql, which generate the ids (a chosen
    id that clashed told whether a hidden memory had it). One call per row."""
    stored: dict[uuid.UUID, str] = {}
    for doc in documents:
        m = doc.memory
        row = conn.execute(
            "SELECT cems_insert_memory(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (m.content, doc.content_hash, doc.team_id, m.scope, m.category, m.title, list(m.tags), m.source,
             m.source_ref, m.pinned, m.pin_reason, m.pin_category, m.expires_at, m.created_at, m.context),
        ).fetchone()
        if row is None or row[0] is None:  # stored meanwhile by another process: the caller tries again
            raise psycopg.errors.UniqueViolation(f"memory {doc.content_hash} was stored concurrently")
        stored[doc.id] = str(row[0])
    with conn.cursor() as cur:
        cur.executemany("SELECT cems_insert_chunk(%s, %s, %s, %s, %s)",
                        [(stored[c.document_id], *_chunk_row(c)[1:]) for c in chunks])
    return stored


def _copy_sql(table: str, columns: Sequence[tuple[str, str]]) -> str:
    names = ", ".join(c for c, _ in columns)
    return f"COPY {table} ({names}) FROM STDIN (FORMAT BINARY)"


def _drop_search_indexes(conn: psycopg.Connection) -> list[str]:
    """Drop memory_chunks' HNSW and GIN indexes; returns their CREATE statements, as migrations made them."""
    rows = conn.execute(
        "SELECT i.indexname, i.indexdef FROM pg_indexes i "
        "JOIN pg_class c ON c.relname = i.indexname JOIN pg_am a ON a.oid = c.relam "
        "WHERE i.tablename = 'memory_chunks' AND i.schemaname = current_schema() "
        "AND a.amname IN ('hnsw', 'gin')"
    ).fetchall()
    for name, _definition in rows:
        conn.execute(f'DROP INDEX "{name}"')  # a name the catalogue just gave us
    return [definition for _name, definition in rows]


# A large load drops the search indexes in a committed transaction of its own (searches go on, slower, while
# it runs), then loads in committed batches and builds them again at the end. Their definitions wait here, so
# a load that is interrupted leaves what is needed to build them: the next import or `cems maintain` does.
PENDING_INDEXES_KEY = "pending_search_indexes"


def drop_search_indexes_for_load(conn: psycopg.Connection) -> None:
    """Drop the search indexes and record their definitions as pending. Call inside a transaction."""
    definitions = pending_search_indexes(conn) + _drop_search_indexes(conn)
    conn.execute(
        "INSERT INTO cems_meta (key, value) VALUES (%s, %s) "
        "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (PENDING_INDEXES_KEY, json.dumps(sorted(set(definitions)))),
    )


def pending_search_indexes(conn: psycopg.Connection) -> list[str]:
    """Definitions of search indexes a large load dropped and has not built again (a member of a team server
    reads them through sql/023's function: only the store's owner builds them)."""
    row = conn.execute(f"SELECT value FROM {meta_from(conn)} WHERE key = %s",
                       (PENDING_INDEXES_KEY,)).fetchone()
    return list(json.loads(row[0])) if row else []


IndexProgress = Callable[[str, int, int], None]  # (index name, tuples done, tuples total)


def build_pending_indexes(conn: psycopg.Connection, progress: IndexProgress | None = None,
                          watch: Callable[[], psycopg.Connection] | None = None,
                          memory_mb: int | None = None) -> list[str]:
    """Build the search indexes a load left pending (each as its migration defined it), then forget them.
    With `progress` and `watch` (a factory of a second connection), a thread reports each build's progress
    from pg_stat_progress_create_index every second. `memory_mb`: maintenance_work_mem for the builds (an
    HNSW graph that outgrows it is built on disk, several times slower). Returns the names built."""
    built = []
    for definition in pending_search_indexes(conn):
        if not _SEARCH_INDEX.fullmatch(definition):
            # Only the store's owner writes that key, but it is replayed as SQL: replay nothing else.
            raise ValueError(f"not a search index definition: {definition[:120]!r}")
        name = _index_name(definition)
        # IF NOT EXISTS: another import may have built it since (both read the same pending list).
        statement = definition.replace("CREATE INDEX ", "CREATE INDEX IF NOT EXISTS ", 1)
        with _watching(conn, name, progress, watch), conn.transaction():
            for setting in _BUILD_SETTINGS:
                conn.execute(setting)
            if memory_mb is not None and memory_mb > _BUILD_MEMORY_MB:
                conn.execute(f"SET LOCAL maintenance_work_mem = '{int(memory_mb)}MB'")
            conn.execute(statement)  # read back from pg_indexes when the load dropped it
        built.append(name)
    conn.execute("DELETE FROM cems_meta WHERE key = %s", (PENDING_INDEXES_KEY,))
    return built


# What pg_indexes gives for memory_chunks' HNSW and GIN indexes (names, opclasses and WITH options vary).
_SEARCH_INDEX = re.compile(r'CREATE INDEX "?\w+"? ON (?:"?\w+"?\.)?memory_chunks USING (?:hnsw|gin) '
                           r"\([\w\s(),:]+\)(?: WITH \([\w\s=,'.]+\))?")


def hnsw_build_mb(chunks: int, dim: int) -> int:
    """What an in-memory HNSW build of `chunks` vectors needs: each element holds its vector and its
    neighbour lists (2·m on layer 0, m = 16), plus pgvector's overhead; a quarter more to be safe."""
    per_element = dim * 4 + 2 * 16 * 8 + 150
    return int(chunks * per_element * 1.25 / (1024 * 1024)) + 64


def _index_name(definition: str) -> str:
    words = definition.split()
    return words[words.index("INDEX") + 1].strip('"')


@contextlib.contextmanager
def _watching(conn: psycopg.Connection, name: str, progress: IndexProgress | None,
              watch: Callable[[], psycopg.Connection] | None) -> Iterator[None]:
    """Report a CREATE INDEX's progress (tuples done of total; blocks while the table is scanned) from a
    second connection, as PostgreSQL publishes it for the backend that builds."""
    if progress is None or watch is None:
        yield
        return
    pid = conn.info.backend_pid
    stop = threading.Event()

    def poll() -> None:
        try:
            with watch() as observer:
                while not stop.wait(1.0):
                    row = observer.execute(
                        "SELECT tuples_done, tuples_total, blocks_done, blocks_total "
                        "FROM pg_stat_progress_create_index WHERE pid = %s", (pid,)).fetchone()
                    if row is None:
                        continue
                    done, total = (row[0], row[1]) if row[1] else (row[2], row[3])
                    progress(name, int(done or 0), int(total or 0))
        except psycopg.Error:
            return  # progress is a courtesy: the build goes on without it

    thread = threading.Thread(target=poll, name="cems-index-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)


def chunk_vectors(conn: psycopg.Connection, document_ids: Sequence[str], *,
                  restricted: bool = False) -> dict[str, list[np.ndarray]]:
    """Each document's chunk vectors, in chunk order (for an export that carries them)."""
    from cems_cli.store.search import as_array

    vectors: dict[str, list[np.ndarray]] = {}
    # A member of a team server holds no privilege on the tables (sql/019_member_api.sql).
    source = "cems_visible_chunks(%(ids)s::uuid[])" if restricted else "memory_chunks"
    rows = conn.execute(
        f"SELECT document_id, embedding FROM {source} c WHERE document_id = ANY(%(ids)s::uuid[]) "
        "ORDER BY document_id, chunk_index", {"ids": list(document_ids)}).fetchall()
    for document_id, embedding in rows:
        vectors.setdefault(str(document_id), []).append(as_array(embedding))
    return vectors


def iter_owned_memories(conn: psycopg.Connection, user: str, batch: int = 1000, *,
                        restricted: bool = False) -> Iterator[MemoryRecord]:
    """The user's own live memories (personal and those they shared), oldest first, streamed.
    Ties keep the order they were recorded in, so a re-import keeps each session's order.

    Rules are left out: a rule is a memory plus the structured spec in `rules`, moved with `cems rule`.
    """
    with conn.transaction(), conn.cursor(name="cems_export") as cur:
        cur.execute(
            f"SELECT {document_columns()} FROM {all_documents_from(restricted)} d "
            "WHERE d.user_id = %s AND NOT d.archived AND d.category <> 'rules' ORDER BY d.created_at, d.seq",
            (user,),
        )
        while rows := cur.fetchmany(batch):
            for row in rows:
                yield MemoryRecord.from_row(row)
