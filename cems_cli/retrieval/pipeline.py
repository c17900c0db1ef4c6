"""The search orchestrator: retrieve candidates per query, fuse, and assemble results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cems_cli.service import MemoryService, SearchResult
    from cems_cli.store.search import ChunkHit

SNIPPET_CHARS = 240


@dataclass(frozen=True)
class SearchRequest:
    query: str
    limit: int
    category: str | None
    scope: str
    project_filter: str | None
    current_project: str | None
    mode: str
    explain: bool = False


def best_chunk_per_document(hits: list[ChunkHit]) -> list[ChunkHit]:
    """Chunk-level dedup: a document ranks by its best chunk only (hits arrive best first)."""
    seen: set[str] = set()
    best: list[ChunkHit] = []
    for hit in hits:
        if hit.document_id not in seen:
            seen.add(hit.document_id)
            best.append(hit)
    return best


def run_search(service: MemoryService, request: SearchRequest) -> list[SearchResult]:
    from cems_cli.store import search as store_search

    conn = service.conn
    store_search.prepare_session(conn)
    filters = store_search.SearchFilters(
        identity=service.identity, scope=request.scope, category=request.category, project=request.project_filter
    )
    depth = max(request.limit * 10, 50)
    query_vector = service.embedder.embed([request.query])[0]
    lists: dict[str, list[ChunkHit]] = {
        "vector": best_chunk_per_document(store_search.vector_hits(conn, query_vector, filters, depth)),
    }
    if request.mode != "vector":
        lists["lexical"] = best_chunk_per_document(store_search.lexical_hits(conn, request.query, filters, depth))

    k = service.settings.rrf_k
    fused: dict[str, float] = {}
    best_hit: dict[str, ChunkHit] = {}
    ranks: dict[str, dict[str, int]] = {}
    for name, hits in lists.items():
        for rank, hit in enumerate(hits, start=1):
            fused[hit.document_id] = fused.get(hit.document_id, 0.0) + 1.0 / (k + rank)
            ranks.setdefault(hit.document_id, {})[name] = rank
            best_hit.setdefault(hit.document_id, hit)
    order = sorted(fused, key=lambda d: (-fused[d], d))[: request.limit]
    return _assemble(service, order, fused, best_hit, ranks, len(lists), k)


def _assemble(service, order, fused, best_hit, ranks, n_lists, k) -> list[SearchResult]:
    from cems_cli.service import SearchResult
    from cems_cli.store import search as store_search

    documents = store_search.fetch_documents(service.conn, order)
    chunks = store_search.fetch_chunks(service.conn, [best_hit[d].chunk_id for d in order])
    top_possible = n_lists / (k + 1)  # a document ranked first everywhere
    results = []
    for doc_id in order:
        record = documents.get(doc_id)
        if record is None:
            continue
        chunk_text = chunks.get(best_hit[doc_id].chunk_id, (record.content, None))[0]
        results.append(SearchResult(
            id=doc_id, score=fused[doc_id] / top_possible, category=record.category, content=record.content,
            snippet=_snippet(chunk_text), title=record.title, tags=record.tags, scope=record.scope,
            source_ref=record.source_ref, pinned=record.pinned, created_at=record.created_at,
            explain={"ranks": ranks[doc_id], "rrf": fused[doc_id]},
        ))
    return results


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1].rstrip() + "…"
