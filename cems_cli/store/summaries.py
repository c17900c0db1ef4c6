"""The summaries table (sql/011_summaries.sql): what they are made of, their rows, and their search."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from cems_cli import defaults
from cems_cli.retrieval.raptor import Member, Summary
from cems_cli.store.lifecycle import PROJECT_SQL
from cems_cli.store.member_access import is_restricted
from cems_cli.store.memories import add_conditions, live_clause

if TYPE_CHECKING:
    import numpy as np

_PROJECT = PROJECT_SQL.format(a="d")


@dataclass(frozen=True)
class StoredSummary:
    id: str
    project: str
    level: int
    title: str
    content: str
    members: list[str]
    member_key: str
    period_start: datetime
    period_end: datetime
    method: str
    built_at: datetime
    cosine: float = 0.0  # to the query, when searched
    lexical: float = 0.0  # full-text rank of the query's words, when searched

    @property
    def score(self) -> float:
        return self.cosine + 0.5 * self.lexical

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "project": self.project or None,
            "level": self.level,
            "title": self.title,
            "content": self.content,
            "members": len(self.members),
            "period_start": self.period_start.isoformat(),
            "period_end": self.period_end.isoformat(),
            "method": self.method,
            "built_at": self.built_at.isoformat(),
        }


def project_members(conn: psycopg.Connection, user: str) -> dict[str, tuple[list[Member], np.ndarray]]:
    """Each project's latest SUMMARY_MAX_MEMORIES live memories of `user` (rules aside: they say what is
    allowed, not what was done), in the order they were recorded, with each memory's mean chunk embedding,
    L2-normalised. At 100k memories in one project: 1.8 s, the whole summaries step ~5 s."""
    import numpy as np

    # Each project's latest memories only (what an overview asks about, and a bound on the work): chosen
    # first, so only their chunks are read and their vectors sent.
    # A member of a team server reads through functions (sql/019_member_api.sql): the memories once, then
    # the chunks of the latest only.
    restricted = is_restricted(conn)
    documents = "visible" if restricted else "memory_documents"
    chunks = "cems_visible_chunks(ARRAY(SELECT id FROM latest))" if restricted else "memory_chunks"
    group_by = (", d.category, d.content, d.created_at, d.source, d.source_ref, d.content_hash"
               if restricted else "")
    visible = "visible AS MATERIALIZED (SELECT * FROM cems_visible_documents()), " if restricted else ""
    rows = conn.execute(
        f"WITH {visible}latest AS (SELECT id FROM (SELECT d.id, row_number() OVER (PARTITION BY {_PROJECT} "
        f"  ORDER BY d.created_at DESC, d.content_hash DESC, d.id DESC) AS n FROM {documents} d "
        f"  WHERE d.user_id = %(user)s AND d.category <> 'rules' AND {live_clause()}) ranked "
        "  WHERE n <= %(latest)s) "
        f"SELECT d.id, d.category, d.content, d.created_at, d.source, {_PROJECT} AS project, "
        "cems_entities(d.content) AS entities, avg(c.embedding) AS vector "
        f"FROM latest JOIN {documents} d ON d.id = latest.id "
        f"JOIN {chunks} c ON c.document_id = d.id "
        # Ties (the memories one turn left) in the order of their text, not of their random ids: the same
        # memories make the same groups every time.
        # A function's rows have no primary key to group by: a member's names every column it reads.
        f"GROUP BY d.id{group_by} ORDER BY d.created_at, d.content_hash, d.id",
        {"user": user, "latest": defaults.SUMMARY_MAX_MEMORIES},
    ).fetchall()
    grouped: dict[str, tuple[list[Member], list[np.ndarray]]] = {}
    for memory_id, category, content, created_at, source, project, entities, vector in rows:
        members, vectors = grouped.setdefault(project, ([], []))
        members.append(Member(str(memory_id), category, content, created_at, source, tuple(entities or ())))
        # pgvector's loader gives a Vector for avg()'s result, a numpy array for a column.
        values = vector.to_numpy() if hasattr(vector, "to_numpy") else vector
        vectors.append(np.asarray(values, dtype=np.float32))
    result = {}
    for project, (members, vectors) in grouped.items():
        matrix = np.vstack(vectors)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        result[project] = (members, matrix / np.where(norms > 0, norms, 1.0))
    return result


def _summaries(conn: psycopg.Connection) -> str:
    """What a read of summaries selects from: the table, or for a member of a team server their own rows
    through cems_my_summaries() (sql/021: a member who could SELECT the table read others' text through
    EXPLAIN). Named as the table, so a query's own WHERE stays as it is."""
    return "cems_my_summaries() memory_summaries" if is_restricted(conn) else "memory_summaries"


_COLUMNS = ("id, project, level, title, content, members, member_key, period_start, period_end, method, "
            "built_at")


def _stored(row: Sequence[Any], cosine: float = 0.0, lexical: float = 0.0) -> StoredSummary:
    return StoredSummary(str(row[0]), row[1], row[2], row[3], row[4], [str(m) for m in row[5]], row[6],
                         row[7], row[8], row[9], row[10], cosine, lexical)


def list_summaries(conn: psycopg.Connection, user: str, project: str | None = None) -> list[StoredSummary]:
    where, params = "user_id = %s", [user]
    if project is not None:
        where += " AND project = %s"
        params.append(project)
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM {_summaries(conn)} WHERE {where} "
        "ORDER BY project, level DESC, period_end DESC",
        params,
    ).fetchall()
    return [_stored(r) for r in rows]


def replace_project(
    conn: psycopg.Connection,
    user: str,
    project: str,
    summaries: Iterable[tuple[Summary, np.ndarray | None]],
) -> tuple[int, int]:
    """Make the project's summaries exactly `summaries`: rows of groups that did not change are kept as they
    are, the others deleted or inserted. Returns (inserted, deleted). A summary kept from the store comes
    without a vector (None): its row is already there."""
    wanted = {(s.level, s.member_key): (s, v) for s, v in summaries}
    existing = conn.execute(
        f"SELECT id, level, member_key FROM {_summaries(conn)} WHERE user_id = %s AND project = %s",
        (user, project),
    ).fetchall()
    keep = {(level, key) for _id, level, key in existing if (level, key) in wanted}
    stale = [row[0] for row in existing if (row[1], row[2]) not in keep]
    if stale:
        # Members delete through functions (sql/017_member_functions.sql): no DELETE privilege, no LOCK.
        conn.execute("SELECT cems_delete_summaries(%s, %s::uuid[])", (user, stale))
    inserted = 0
    restricted = is_restricted(conn)
    for key, (summary, vector) in wanted.items():
        if key in keep:
            continue
        values = (project, summary.level, summary.title, summary.content, list(summary.members),
                  summary.member_key, summary.period_start, summary.period_end, summary.method, vector)
        if restricted:  # sql/023: the member's own live memories only, the owner named by the function
            conn.execute("SELECT cems_insert_summary(%s, %s, %s, %s, %s::uuid[], %s, %s, %s, %s, %s)", values)
        else:
            conn.execute(
                "INSERT INTO memory_summaries (user_id, project, level, title, content, members, member_key, "
                "period_start, period_end, method, embedding) "
                "VALUES (%s, %s, %s, %s, %s, %s::uuid[], %s, %s, %s, %s, %s)",
                (user, *values),
            )
        inserted += 1
    return inserted, len(stale)


def drop_projects(conn: psycopg.Connection, user: str, keep: Iterable[str]) -> int:
    """Delete the summaries of projects that no longer have memories to summarise."""
    row = conn.execute("SELECT cems_delete_summaries_except(%s, %s::text[])", (user, list(keep))).fetchone()
    return int(row[0]) if row else 0


def kept_keys(
    conn: psycopg.Connection, user: str, project: str
) -> dict[tuple[int, str], tuple[str, str, str]]:
    """(level, member_key) → (title, content, method) of the project's current summaries: an unchanged group
    keeps its text (an LLM's summary is not asked for again)."""
    rows = conn.execute(
        f"SELECT level, member_key, title, content, method FROM {_summaries(conn)} "
        "WHERE user_id = %s AND project = %s",
        (user, project),
    ).fetchall()
    return {(r[0], r[1]): (r[2], r[3], r[4]) for r in rows}


def search_summaries(
    conn: psycopg.Connection,
    user: str,
    query_vector: np.ndarray,
    query: str,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    level: int | None = None,
    project: str | None = None,
    limit: int = 20,
) -> list[StoredSummary]:
    """The summaries most alike the query: cosine, plus half the full-text rank (words of the query in the
    title or text). `since`/`until`: only summaries whose period overlaps that time; `level`, `project`:
    only those."""
    where = ["user_id = %(user)s"]
    params: dict[str, Any] = {"user": user, "q": query_vector, "text": query, "limit": limit}
    add_conditions(where, params, [("level", "level = %(level)s", level),
                                   ("project", "project = %(project)s", project),
                                   ("since", "period_end >= %(since)s", since),
                                   ("until", "period_start < %(until)s", until)])
    # A handful of rows per project: an exact scan, no vector index needed.
    rows = conn.execute(
        f"SELECT {_COLUMNS}, 1 - (embedding <=> %(q)s) AS cosine, "
        # ts_rank gives 1e-20, not 0, to a text without the words.
        "CASE WHEN search_vector @@ plainto_tsquery('english', %(text)s) "
        "THEN ts_rank(search_vector, plainto_tsquery('english', %(text)s)) ELSE 0 END AS lexical "
        f"FROM {_summaries(conn)} WHERE {' AND '.join(where)} "
        "ORDER BY 1 - (embedding <=> %(q)s) + 0.5 * ts_rank(search_vector, plainto_tsquery('english', "
        "%(text)s)) DESC, level DESC LIMIT %(limit)s",
        params,
    ).fetchall()
    return [_stored(r[:-2], float(r[-2]), float(r[-1])) for r in rows]
