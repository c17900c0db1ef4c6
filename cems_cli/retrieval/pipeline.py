"""The search orchestrator: every stage of the retrieval seeds, in order, each one skippable.

understand → strong-signal probe → synthesis / decomposition / HyDE → candidate retrieval (vector and
lexical per query, all variants embedded in one batch) → fusion → session context → rerank → relevance
filter, semantic dedup → score adjustments (then the experiments named, retrieval/experiments.py) →
confidence → token-budgeted assembly → neighbour context.

`vector` mode makes no LLM call and reads one list; `hybrid` runs everything that is configured (no LLM
means no LLM stages, silently); `auto` lets query understanding choose between the two.

What the search asks (its filters, limits, floors and ranking knobs) is one `SearchOptions`
(retrieval/options.py), read by each stage here; `deps.settings` is for the resources only (the LLM, the
reranker backend).

`run_search` reads as its stages, in order, over one `_Search` that each stage reads and extends. The
stages' helpers are beside it: `_gather` (understanding, probe, expansions, candidates), `_rank` (fusion,
session context, rerank, confidence), `_present` (assembly, results, overview); `_search_types` holds
what they share.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from cems_cli.retrieval._gather import (
    _build_candidates,
    _expansions,
    _strong_signal,
    _understand,
    _zero_weight_lists,
)
from cems_cli.retrieval._present import _assemble, _overview, _results
from cems_cli.retrieval._rank import (
    _attach_embeddings,
    _captured_elsewhere,
    _fuse,
    _general_knowledge,
    _rate_confidence,
    _rerank,
    _session_context,
)
from cems_cli.retrieval._search_types import QueryVariant, SearchDeps, Trace
from cems_cli.retrieval.adjust import apply_adjustments
from cems_cli.retrieval.filtering import filter_by_threshold, has_evidence, semantic_dedup
from cems_cli.store import search as store_search
from cems_cli.store.lexical import lexical_hits
from cems_cli.text.terms import without_project_words

if TYPE_CHECKING:
    from cems_cli.llm import LLMClient
    from cems_cli.results import SearchResult
    from cems_cli.retrieval.options import SearchOptions
    from cems_cli.retrieval.types import Candidate, QueryAnalysis, RankedList
    from cems_cli.store.records import MemoryRecord
    from cems_cli.store.search import ChunkHit, SearchFilters

__all__ = ["QueryVariant", "SearchDeps", "Trace", "run_search"]

# A newer memory replaces an older one only on the same topic: their chunks at least this alike.
SUPERSEDE_MIN_SIMILARITY = 0.4
DEDUP_WINDOW_FACTOR = 3
# Dedup runs before the score adjustments, which move a memory by up to ~3x (project 1.3 vs 0.5, source,
# decay): a near duplicate at fused rank 19 reached the top 3 of a recall block beside its twin at rank 4
# (SWE-bench set). The head compared is at least this deep: ~0.8 ms more than 10 at 10k memories.
DEDUP_MIN_WINDOW = 30
# How many chunks each list fetches: deep enough that fusion sees documents ranked well by only one list.
MIN_DEPTH = 50
DEADLINE_RESERVE_SECONDS = 0.25


def run_search(deps: SearchDeps, query: str, options: SearchOptions) -> list[SearchResult]:
    """The results for `query` (already cleaned: one line, not empty) under `options`, best first."""
    search = _start(deps, query, options)
    _route(search)
    _probe_and_expand(search)
    _retrieve(search)
    if not search.candidates:
        search.trace.lap("assemble")
        return []
    _fuse_in_sessions(search)
    _rerank_head(search)
    _filter(search)
    _adjust(search)
    _apply_floors(search)
    return _answer(search)


@dataclass
class _Search:
    """One search as its stages hand it on: what it asks, and what each stage has found so far."""

    deps: SearchDeps
    query: str
    options: SearchOptions
    trace: Trace
    filters: SearchFilters
    depth: int
    llm: LLMClient | None = None
    analysis: QueryAnalysis | None = None
    mode: str = ""
    variants: list[QueryVariant] = field(default_factory=list)
    lexical_cache: dict[str, list[ChunkHit]] = field(default_factory=dict)
    short_circuited: list[str] = field(default_factory=list)
    query_vector: Any = None
    candidates: dict[str, Candidate] = field(default_factory=dict)
    ranked: list[RankedList] = field(default_factory=list)
    documents: dict[str, MemoryRecord] = field(default_factory=dict)
    # The candidates in their order of the moment: fused, then kept, then adjusted and floored.
    ranking: list[Candidate] = field(default_factory=list)
    now: datetime | None = None


def _start(deps: SearchDeps, query: str, options: SearchOptions) -> _Search:
    trace = Trace()
    conn = deps.conn
    store_search.prepare_session(conn)
    filters = store_search.SearchFilters(
        identity=deps.identity,
        scope=options.scope,
        category=options.category,
        project=options.project,
    )
    # Fusion needs depth (a document ranked well by only one list); a single vector list does not.
    depth = max(options.limit * 10, MIN_DEPTH) if options.mode != "vector" else max(options.limit * 3, 10)
    return _Search(deps, query, options, trace, filters, depth)


def _route(search: _Search) -> None:
    """1. Understanding and routing."""
    options, trace = search.options, search.trace
    settings = search.deps.settings
    llm = None
    if options.mode != "vector" and settings.llm_configured:  # cems_cli.llm imported only when used
        from cems_cli.llm import configured_client

        llm = configured_client(settings)
    if llm is not None and options.deadline is not None:
        # What the stages after the last LLM call need (fusion, filters, assembly): kept out of their share.
        llm = llm.until(options.deadline - DEADLINE_RESERVE_SECONDS)
    analysis = _understand(llm, search.query)
    mode = analysis.route if options.mode == "auto" else options.mode
    trace.stages["understand"] = {
        "source": analysis.source,
        "intent": analysis.intent,
        "complexity": analysis.complexity,
        "temporal": analysis.is_temporal,
        "preference": analysis.is_preference,
        "aggregation": analysis.is_aggregation,
        "entities": analysis.entities,
        "route": analysis.route,
        "mode": mode,
    }
    trace.lap("understand")
    search.llm, search.analysis, search.mode = llm, analysis, mode


def _probe_and_expand(search: _Search) -> None:
    """2-4. Strong-signal probe, then expansions only when the probe is not already decisive."""
    options, trace, query, mode = search.options, search.trace, search.query, search.mode
    search.variants = [QueryVariant("original", query, is_original=True, lexical=mode != "vector")]
    # Seed 002: a weight of 0 removes its list, so the list is not even fetched (nor, for expansions, the
    # LLM asked for them); `cems config set fusion_vector_weight 0` takes effect on the next search.
    short_circuited = search.short_circuited = _zero_weight_lists(options, mode)
    if short_circuited:
        trace.stages["short_circuited"] = short_circuited
    if mode != "vector":
        search.lexical_cache[query] = lexical_hits(
            search.deps.conn, without_project_words(query, options.current_project), search.filters,
            search.depth, options.phrase_weight,
        )
        signal = _strong_signal(search.lexical_cache[query], options)
        trace.stages["strong_signal"] = signal
        llm = search.llm
        if llm is not None and not signal["skip_expansion"] and "expansions" not in short_circuited:
            assert search.analysis is not None
            search.variants += _expansions(search.deps, llm, query, search.analysis, search.filters)
        trace.lap("expand")


def _retrieve(search: _Search) -> None:
    """5. Candidate retrieval: every variant embedded in one batch."""
    conn, trace, filters, depth = search.deps.conn, search.trace, search.filters, search.depth
    vector_variants = [v for v in search.variants if v.vector]
    vectors = search.deps.query_embedder.embed([v.text for v in vector_variants])
    search.query_vector = vectors[0]
    trace.lap("embed")
    chunk_lists: list[tuple[QueryVariant, str, list[ChunkHit]]] = []
    for variant, vector in zip(vector_variants, vectors, strict=True):
        if "vector" in search.short_circuited:
            continue  # the query vector is still made: candidates' cosines, dedup and evidence use it
        chunk_lists.append((variant, "vector", store_search.vector_hits(conn, vector, filters, depth)))
    for variant in search.variants:
        if variant.lexical:
            hits = search.lexical_cache.get(variant.text)
            if hits is None:
                hits = lexical_hits(conn, variant.text, filters, depth, search.options.phrase_weight)
            chunk_lists.append((variant, "lexical", hits))
    trace.stages["queries"] = [
        {"name": v.name, "text": v.text, "original": v.is_original} for v in search.variants
    ]
    trace.lap("retrieve")
    search.candidates, search.ranked, search.documents = _build_candidates(
        conn, chunk_lists, search.query_vector, restricted=filters.identity.restricted
    )


def _fuse_in_sessions(search: _Search) -> None:
    """6. Fusion, then the session context of each candidate."""
    options = search.options
    fused = _fuse(options, search.ranked, search.candidates)
    if search.mode != "vector" and (options.session_neighbour_weight or options.session_weight):
        fused = _session_context(search.deps.conn, fused, search.filters, options)
    search.trace.lap("fuse")
    search.ranking = fused


def _rerank_head(search: _Search) -> None:
    """7. Reranking of the head; the tail keeps its fused order below it."""
    if search.mode != "vector":
        search.ranking = _rerank(search.deps.settings, search.options, search.llm, search.query,
                                 search.ranking, search.trace)
    search.trace.lap("rerank")


def _filter(search: _Search) -> None:
    """8. Relevance filter and semantic dedup."""
    options = search.options
    kept = filter_by_threshold(search.ranking, options.relevance_threshold)
    kept = [c for c in kept if has_evidence(c, options.min_similarity)]
    # Near-duplicates can only crowd the results that will be shown: compare the head, keep the rest.
    head = kept[: max(options.limit * DEDUP_WINDOW_FACTOR, DEDUP_MIN_WINDOW)]
    _attach_embeddings(search.deps.conn, head, restricted=search.filters.identity.restricted)
    search.ranking = semantic_dedup(head) + kept[len(head) :]


def _adjust(search: _Search) -> None:
    """9. Score adjustments, the experiments named, supersession."""
    options, trace = search.options, search.trace
    now = search.now = options.now or datetime.now(UTC)
    adjusted = apply_adjustments(search.ranking, now=now, current_project=options.current_project,
                                 settings=options.adjust)
    if options.experiments:  # stages measured but off by default, switched on by name
        from cems_cli.retrieval.experiments import Question, run_experiments

        adjusted, trace.stages["experiments"] = run_experiments(
            options.experiments, Question(search.query, now), adjusted)
    if options.superseded_weight < 1.0:
        from cems_cli.retrieval.supersede import apply_supersession

        superseded = apply_supersession(adjusted, options.superseded_weight, SUPERSEDE_MIN_SIMILARITY)
        if superseded:
            adjusted.sort(key=lambda c: -c.explain["adjust"]["unclamped"])
            trace.stages["superseded"] = superseded
    search.ranking = adjusted


def _apply_floors(search: _Search) -> None:
    """9. The request's exclusions and floors, then each candidate's confidence and its floor."""
    options = search.options
    adjusted = search.ranking
    if options.exclude_ids:
        adjusted = [c for c in adjusted if c.document_id not in options.exclude_ids]
    if not options.other_projects_captured and options.current_project:
        adjusted = [c for c in adjusted if not _captured_elsewhere(c, options.current_project)]
    if options.general_needs_evidence and adjusted:
        adjusted = _general_knowledge(search.query, adjusted, search.trace)
    if options.min_score is not None:
        adjusted = [c for c in adjusted if c.score >= options.min_score]
    if options.min_relative and adjusted:
        floor = options.min_relative * max(c.score for c in adjusted)
        adjusted = [c for c in adjusted if c.score >= floor]
    _rate_confidence(adjusted)
    if options.confidence_floor is not None:
        adjusted = [c for c in adjusted if c.confidence >= options.confidence_floor]
    search.trace.lap("filter_adjust")
    search.ranking = adjusted


def _answer(search: _Search) -> list[SearchResult]:
    """10. Assembly within the token budget, the results, and an overview question's summaries."""
    options, trace = search.options, search.trace
    selected = _assemble(search.ranking, options)
    trace.lap("assemble")
    results = _results(search.deps, search.query, selected, options, trace, search.documents)
    if options.summaries and options.summary_results:
        assert search.now is not None
        results = _overview(search.deps, search.query, options, search.query_vector, search.now, results,
                            trace)
    return results
