"""What memories name (the `entities` column, sql/010_entities.sql) and how rare each entity is."""

from __future__ import annotations

from collections.abc import Sequence

import psycopg

from cems_cli.store.lexical import bm25_idf
from cems_cli.store.memories import Identity, live_clause, visibility_clause


def document_entities(conn: psycopg.Connection, document_ids: Sequence[str]) -> dict[str, list[str]]:
    if not document_ids:
        return {}
    rows = conn.execute(
        "SELECT id, entities FROM memory_documents WHERE id = ANY(%s::uuid[]) AND entities <> '{}'",
        (list(document_ids),),
    ).fetchall()
    return {str(r[0]): list(r[1]) for r in rows}


def entity_idf(
    conn: psycopg.Connection, entities: Sequence[str], identity: Identity, scope: str
) -> dict[str, float]:
    """Inverse document frequency of each entity over the live memories the asker can see (one GIN probe
    an entity, and one count)."""
    if not entities:
        return {}
    where, params = visibility_clause(identity, scope)
    where = f"{where} AND {live_clause()}"
    row = conn.execute(
        f"SELECT (SELECT count(*) FROM memory_documents d WHERE {where}), "
        "  array(SELECT (SELECT count(*) FROM memory_documents d "
        f"                WHERE d.entities @> ARRAY[t.e] AND {where}) "
        "        FROM unnest(%(entities)s::text[]) WITH ORDINALITY AS t(e, i) ORDER BY t.i)",
        {**params, "entities": list(entities)},
    ).fetchone()
    assert row is not None  # a SELECT without FROM returns one row
    return {entity: bm25_idf(int(row[0]), df) for entity, df in zip(entities, row[1], strict=True)}
