"""Re-embed every chunk with the configured model (after switching models or dimensions)."""

from __future__ import annotations

from collections.abc import Callable

import psycopg

from cems_cli.embedding import Embedder
from cems_cli.text.chunking import index_text

BATCH = 256


def reindex(
    conn: psycopg.Connection,
    embedder: Embedder,
    model_name: str,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Re-embed all chunks in one transaction (all or nothing); returns the number of chunks. Summaries are
    dropped (maintenance makes them again)."""
    row = conn.execute("SELECT count(*) FROM memory_chunks").fetchone()
    assert row is not None  # an aggregate returns one row
    total = row[0]
    with conn.transaction():
        conn.execute("DROP INDEX IF EXISTS memory_chunks_embedding")
        conn.execute("ALTER TABLE memory_chunks ALTER COLUMN embedding DROP NOT NULL")
        conn.execute(
            f"ALTER TABLE memory_chunks ALTER COLUMN embedding TYPE vector({int(embedder.dim)}) USING NULL"
        )
        done = 0
        with conn.cursor(name="reindex_chunks") as reader:
            reader.execute("SELECT id, content, context FROM memory_chunks ORDER BY id")
            while rows := reader.fetchmany(BATCH):
                vectors = embedder.embed([index_text(r[1], r[2]) for r in rows])
                with conn.cursor() as writer:
                    writer.executemany(
                        "UPDATE memory_chunks SET embedding = %s WHERE id = %s",
                        [(vectors[i], rows[i][0]) for i in range(len(rows))],
                    )
                done += len(rows)
                if progress:
                    progress(done, total)
        conn.execute("ALTER TABLE memory_chunks ALTER COLUMN embedding SET NOT NULL")
        conn.execute(
            "CREATE INDEX memory_chunks_embedding ON memory_chunks USING hnsw (embedding vector_cosine_ops)"
        )
        # Summaries are embedded too; they are made again by the next maintenance, in the new model's space.
        conn.execute("DELETE FROM memory_summaries")
        conn.execute(f"ALTER TABLE memory_summaries ALTER COLUMN embedding TYPE vector({int(embedder.dim)})")
        conn.execute("UPDATE cems_meta SET value = %s WHERE key = 'embedding_dim'", (str(embedder.dim),))
        conn.execute("UPDATE cems_meta SET value = %s WHERE key = 'embedding_model'", (model_name,))
    return total
