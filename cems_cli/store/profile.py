"""SQL for the session profile: the few memories worth showing at the start of every session."""

from __future__ import annotations

import psycopg

from cems_cli.store.member_access import documents_from
from cems_cli.store.memories import Identity, live_clause, project_clause, visibility_clause
from cems_cli.store.records import MemoryRecord, document_columns

PER_SECTION = 12
PINNED = "Pinned guidelines"


def _query(
    conn: psycopg.Connection, identity: Identity, extra: str, order: str, params: dict
) -> list[MemoryRecord]:
    vis, vis_params = visibility_clause(identity)
    rows = conn.execute(
        f"SELECT {document_columns()} FROM {documents_from(identity)} d WHERE {vis} AND {live_clause()} "
        f"AND d.category <> 'rules' AND {extra} ORDER BY {order} LIMIT {PER_SECTION}",
        {**vis_params, **params},
    ).fetchall()
    return [MemoryRecord.from_row(r) for r in rows]


def profile_sections(
    conn: psycopg.Connection, identity: Identity, project: str | None
) -> list[tuple[str, list[MemoryRecord]]]:
    in_project = project_clause() if project else "true"
    params = {"project": project} if project else {}
    # Pinned memories without a project are global guidelines; those of another project stay out.
    pinned_scope = f"(d.source_ref IS NULL OR {in_project})" if project else "true"
    return [
        (
            PINNED,
            _query(
                conn,
                identity,
                f"d.pinned AND {pinned_scope}",
                "d.pin_category NULLS LAST, d.updated_at DESC",
                params,
            ),
        ),
        (
            "Preferences",
            _query(
                conn,
                identity,
                "d.category = 'preferences'",
                "d.priority DESC, d.access_count DESC, d.created_at DESC",
                {},
            ),
        ),
        (
            "Recent context and learnings in this project" if project else "Recent context and learnings",
            _query(
                conn,
                identity,
                f"d.category IN ('context', 'learnings', 'decisions') AND {in_project}",
                "d.created_at DESC",
                params,
            ),
        ),
    ]
