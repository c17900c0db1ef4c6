"""How much memory the store asks of the machine: PostgreSQL's page cache and the size of what it caches.

A search reads the HNSW index and the chunk rows it points to; while they fit in the page cache
(shared_buffers, then the kernel's), searches stay in memory. `cems status` states both, so a store that has
outgrown its cache is visible before it is slow.
"""

from __future__ import annotations

from typing import Any

import psycopg


def page_cache(conn: psycopg.Connection) -> dict[str, Any]:
    """shared_buffers, and the bytes of the tables and search indexes a search reads (None where this role
    may not see a size)."""
    try:
        buffers = conn.execute(
            "SELECT setting::bigint * pg_size_bytes(coalesce(unit, '8kB')) FROM pg_settings "
            "WHERE name = 'shared_buffers'").fetchone()
        sizes = conn.execute(
            "SELECT coalesce(sum(pg_relation_size(c.oid) + coalesce(pg_relation_size(c.reltoastrelid), 0)) "
            "FILTER (WHERE c.relkind = 'r'), 0), "
            "coalesce(sum(pg_relation_size(c.oid)) FILTER (WHERE a.amname = 'hnsw'), 0), "
            "coalesce(sum(pg_relation_size(c.oid)) FILTER (WHERE a.amname = 'gin'), 0) "
            "FROM pg_class c LEFT JOIN pg_am a ON a.oid = c.relam "
            "WHERE c.relnamespace = current_schema()::regnamespace "
            "AND (c.relname IN ('memory_documents', 'memory_chunks') "
            "OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'memory_chunks'::regclass))"
        ).fetchone()
    except psycopg.Error:
        return {"shared_buffers_bytes": None, "tables_bytes": None, "hnsw_bytes": None, "gin_bytes": None}
    tables, hnsw, gin = (int(v) for v in sizes) if sizes else (0, 0, 0)
    return {"shared_buffers_bytes": int(buffers[0]) if buffers else None, "tables_bytes": tables,
            "hnsw_bytes": hnsw, "gin_bytes": gin}
