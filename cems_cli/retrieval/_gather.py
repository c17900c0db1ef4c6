"""The stages that gather candidates: query understanding, the strong-signal probe, the LLM's expansions,
and one candidate per memory out of the ranked lists."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cems_cli.retrieval._search_types import QueryVariant, SearchDeps

if TYPE_CHECKING:
    from cems_cli.llm import LLMClient
    from cems_cli.retrieval.options import SearchOptions
    from cems_cli.retrieval.types import Candidate, QueryAnalysis, RankedList
    from cems_cli.store.records import MemoryRecord
    from cems_cli.store.search import ChunkHit, SearchFilters

# BM25 scores saturate as |x| / (|x| + 1) (QMD's normalisation, where the 0.85 / 0.15 bar comes from).
LEXICAL_SATURATION_SCALE = 1.0


def _zero_weight_lists(options: SearchOptions, mode: str) -> list[str]:
    """The lists whose weight is 0 under the fusion in use: "vector" (linear fusion's cosine weight, in a
    hybrid search) and "expansions" (rrf's expansion weight)."""
    skipped: list[str] = []
    if mode != "vector" and options.fusion == "linear" and options.fusion_vector_weight == 0:
        skipped.append("vector")
    if options.fusion == "rrf" and options.rrf_expansion_weight == 0:
        skipped.append("expansions")
    return skipped


def _understand(llm: LLMClient | None, query: str) -> QueryAnalysis:
    from cems_cli.retrieval.understand import heuristic_analysis, parse_llm_analysis

    if llm is None:
        return heuristic_analysis(query)
    from cems_cli.retrieval.llm_stages import llm_understand

    answer = llm_understand(llm, query)
    return parse_llm_analysis(answer, query) if answer else heuristic_analysis(query)


def _strong_signal(hits: list[ChunkHit], options: SearchOptions) -> dict[str, Any]:
    from cems_cli.retrieval.strong_signal import detect_strong_signal, saturate

    scores = [saturate(h.score, LEXICAL_SATURATION_SCALE) for h in _best_per_document(hits)[:2]]
    signal = detect_strong_signal(
        scores, threshold=options.strong_signal_threshold, min_gap=options.strong_signal_gap
    )
    return {"skip_expansion": signal.skip_expansion, "top": round(signal.top, 4), "gap": round(signal.gap, 4)}


def _expansions(
    deps: SearchDeps, llm: LLMClient, query: str, analysis: QueryAnalysis, filters: SearchFilters
) -> list[QueryVariant]:
    """Synthesised reformulations, sub-questions and a hypothetical memory (HyDE)."""
    from cems_cli.retrieval import llm_stages

    kind: llm_stages.Kind = (
        "temporal" if analysis.is_temporal else "preference" if analysis.is_preference else "standard"
    )
    profile = _preference_profile(deps, filters) if kind == "preference" else []
    variants: list[QueryVariant] = []
    seen = {query.lower()}
    # Three independent calls: asked at once, so they cost the slowest of them, not the sum (the prompt
    # hook's 1.5 s could not hold three 2 s timeouts in a row).
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=3, thread_name_prefix="cems-expand") as pool:
        synthesized = pool.submit(llm_stages.synthesize_queries, llm, query, kind=kind, profile=profile)
        decomposed = (
            pool.submit(llm_stages.decompose, llm, query) if analysis.complexity != "simple" else None
        )
        hypothesised = pool.submit(llm_stages.hyde, llm, query, kind=kind, profile=profile)
        texts = synthesized.result() + (decomposed.result() if decomposed is not None else [])
        hypothetical = hypothesised.result()
    for i, text in enumerate(texts):
        if text.lower() not in seen:
            seen.add(text.lower())
            variants.append(QueryVariant(f"expansion{i + 1}", text, is_original=False))
    if hypothetical:
        # A hypothetical memory is prose: it helps the embedding match, not the keyword match.
        variants.append(QueryVariant("hyde", hypothetical, is_original=False, lexical=False))
    return variants


def _preference_profile(deps: SearchDeps, filters: SearchFilters) -> list[str]:
    """The user's own 'I use / I prefer' statements ground the preference variant of synthesis."""
    from dataclasses import replace

    from cems_cli.store.lexical import lexical_hits
    from cems_cli.store.search import fetch_documents

    probe = lexical_hits(
        deps.conn, "I prefer like use always usually favorite", replace(filters, category="preferences"), 8
    )
    documents = fetch_documents(deps.conn, [h.document_id for h in probe],
                                restricted=filters.identity.restricted)
    return [documents[h.document_id].content[:200] for h in probe if h.document_id in documents][:5]


def _best_per_document(hits: list[ChunkHit]) -> list[ChunkHit]:
    seen: set[str] = set()
    best = []
    for hit in hits:
        if hit.document_id not in seen:
            seen.add(hit.document_id)
            best.append(hit)
    return best


def _build_candidates(
    conn, chunk_lists, query_vector, *, restricted: bool = False
) -> tuple[dict[str, Candidate], list[RankedList], dict[str, MemoryRecord]]:
    """One candidate per document (its chunk closest to the query), one ranked list per retrieval, and the
    candidates' documents."""
    from cems_cli.retrieval.types import Candidate, RankedItem, RankedList
    from cems_cli.store.search import fetch_candidates

    ranked: list[RankedList] = []
    chunk_ids: dict[str, set[str]] = {}
    index_of: dict[str, int] = {}
    for variant, kind, hits in chunk_lists:
        for hit in hits:
            chunk_ids.setdefault(hit.document_id, set()).add(hit.chunk_id)
            index_of[hit.chunk_id] = hit.chunk_index
        ranked.append(
            RankedList(
                name=f"{variant.name}:{kind}",
                kind=kind,
                is_original=variant.is_original,
                items=[RankedItem(h.document_id, h.score) for h in _best_per_document(hits)],
                full_match=hits[0].full_match if kind == "lexical" and hits else None,
            )
        )
    documents, chunks = fetch_candidates(conn, [c for ids in chunk_ids.values() for c in ids], query_vector,
                                          restricted=restricted)
    candidates: dict[str, Candidate] = {}
    for doc_id, ids in chunk_ids.items():
        record = documents.get(doc_id)
        scored = [(chunks[c][1], c) for c in ids if c in chunks]
        if record is None or not scored:
            continue
        similarity, chunk_id = max(scored)
        candidates[doc_id] = Candidate(
            document_id=doc_id,
            chunk_id=chunk_id,
            chunk_index=index_of[chunk_id],
            content=chunks[chunk_id][0],
            category=record.category,
            created_at=record.created_at,
            last_accessed=record.last_accessed,
            priority=record.priority,
            pinned=record.pinned,
            source=record.source,
            source_ref=record.source_ref,
            tags=record.tags,
            title=record.title,
            vector_score=max(0.0, similarity),
        )
    for ranked_list in ranked:  # a document whose row vanished mid-search drops out of every list
        ranked_list.items = [item for item in ranked_list.items if item.document_id in candidates]
    return candidates, ranked, documents
