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
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from cems_cli.defaults import RECALL_MIN_SIMILARITY

if TYPE_CHECKING:
    import psycopg

    from cems_cli.config import Settings
    from cems_cli.embedding import Embedder
    from cems_cli.llm import LLMClient
    from cems_cli.results import SearchResult
    from cems_cli.retrieval.options import SearchOptions
    from cems_cli.retrieval.types import Candidate, QueryAnalysis, RankedList
    from cems_cli.store.memories import Identity
    from cems_cli.store.records import MemoryRecord
    from cems_cli.store.search import ChunkHit, SearchFilters

SNIPPET_CHARS = 300
# A newer memory replaces an older one only on the same topic: their chunks at least this alike.
SUPERSEDE_MIN_SIMILARITY = 0.4
DEDUP_WINDOW_FACTOR = 3
# How many chunks each list fetches: deep enough that fusion sees documents ranked well by only one list.
MIN_DEPTH = 50
# BM25 scores saturate as |x| / (|x| + 1) (QMD's normalisation, where the 0.85 / 0.15 bar comes from).
LEXICAL_SATURATION_SCALE = 1.0
DEADLINE_RESERVE_SECONDS = 0.25


@dataclass
class QueryVariant:
    name: str
    text: str
    is_original: bool
    vector: bool = True
    lexical: bool = True


class SearchDeps(Protocol):
    """What a search uses, handed in by its caller (the library's `MemoryService` is one): the pipeline
    looks nothing up and imports no front end."""

    settings: Settings

    @property
    def conn(self) -> psycopg.Connection: ...

    @property
    def identity(self) -> Identity: ...

    @property
    def query_embedder(self) -> Embedder: ...


@dataclass
class Trace:
    """What ran, for --explain: the stages, the query variants, the timings."""

    stages: dict[str, Any] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    _t: float = field(default_factory=time.perf_counter)

    def lap(self, stage: str) -> None:
        now = time.perf_counter()
        self.timings_ms[stage] = round((now - self._t) * 1000, 2)
        self._t = now


def run_search(deps: SearchDeps, query: str, options: SearchOptions) -> list[SearchResult]:
    """The results for `query` (already cleaned: one line, not empty) under `options`, best first."""
    from cems_cli.store import search as store_search
    from cems_cli.store.lexical import lexical_hits
    from cems_cli.text.terms import without_project_words

    settings = deps.settings
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

    # 1. Understanding and routing.
    llm = None
    if options.mode != "vector" and settings.llm_configured:  # cems_cli.llm imported only when used
        from cems_cli.llm import configured_client

        llm = configured_client(settings)
    if llm is not None and options.deadline is not None:
        # What the stages after the last LLM call need (fusion, filters, assembly): kept out of their share.
        llm = llm.until(options.deadline - DEADLINE_RESERVE_SECONDS)
    analysis = _understand(llm, query)
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

    variants = [QueryVariant("original", query, is_original=True, lexical=mode != "vector")]
    lexical_cache: dict[str, list[ChunkHit]] = {}

    # 2-4. Strong-signal probe, then expansions only when the probe is not already decisive.
    # Seed 002: a weight of 0 removes its list, so the list is not even fetched (nor, for expansions, the
    # LLM asked for them); `cems config set fusion_vector_weight 0` takes effect on the next search.
    short_circuited = _zero_weight_lists(options, mode)
    if short_circuited:
        trace.stages["short_circuited"] = short_circuited
    if mode != "vector":
        lexical_cache[query] = lexical_hits(
            conn, without_project_words(query, options.current_project), filters, depth,
            options.phrase_weight,
        )
        signal = _strong_signal(lexical_cache[query], options)
        trace.stages["strong_signal"] = signal
        if llm is not None and not signal["skip_expansion"] and "expansions" not in short_circuited:
            variants += _expansions(deps, llm, query, analysis, filters)
        trace.lap("expand")

    # 5. Candidate retrieval: every variant embedded in one batch.
    vector_variants = [v for v in variants if v.vector]
    vectors = deps.query_embedder.embed([v.text for v in vector_variants])
    query_vector = vectors[0]
    trace.lap("embed")
    chunk_lists: list[tuple[QueryVariant, str, list[ChunkHit]]] = []
    for variant, vector in zip(vector_variants, vectors, strict=True):
        if "vector" in short_circuited:
            continue  # the query vector is still made: candidates' cosines, dedup and evidence use it
        chunk_lists.append((variant, "vector", store_search.vector_hits(conn, vector, filters, depth)))
    for variant in variants:
        if variant.lexical:
            hits = lexical_cache.get(variant.text)
            if hits is None:
                hits = lexical_hits(conn, variant.text, filters, depth, options.phrase_weight)
            chunk_lists.append((variant, "lexical", hits))
    trace.stages["queries"] = [{"name": v.name, "text": v.text, "original": v.is_original} for v in variants]
    trace.lap("retrieve")

    candidates, ranked, documents = _build_candidates(conn, chunk_lists, query_vector,
                                                      restricted=filters.identity.restricted)
    if not candidates:
        trace.lap("assemble")
        return []

    # 6. Fusion, then the session context of each candidate.
    fused = _fuse(options, ranked, candidates)
    if mode != "vector" and (options.session_neighbour_weight or options.session_weight):
        fused = _session_context(conn, fused, filters, options)
    trace.lap("fuse")

    # 7. Reranking of the head; the tail keeps its fused order below it.
    if mode != "vector":
        fused = _rerank(settings, options, llm, query, fused, trace)
    trace.lap("rerank")

    # 8. Relevance filter and semantic dedup.
    from cems_cli.retrieval.filtering import filter_by_threshold, has_evidence, semantic_dedup

    kept = filter_by_threshold(fused, options.relevance_threshold)
    kept = [c for c in kept if has_evidence(c, options.min_similarity)]
    # Near-duplicates can only crowd the results that will be shown: compare the head, keep the rest.
    head = kept[: max(options.limit * DEDUP_WINDOW_FACTOR, 10)]
    _attach_embeddings(conn, head, restricted=filters.identity.restricted)
    kept = semantic_dedup(head) + kept[len(head) :]

    # 9. Score adjustments.
    from cems_cli.retrieval.adjust import apply_adjustments

    now = options.now or datetime.now(UTC)
    adjusted = apply_adjustments(kept, now=now, current_project=options.current_project,
                                 settings=options.adjust)
    if options.experiments:  # stages measured but off by default, switched on by name
        from cems_cli.retrieval.experiments import Question, run_experiments

        adjusted, trace.stages["experiments"] = run_experiments(
            options.experiments, Question(query, now), adjusted)
    if options.superseded_weight < 1.0:
        from cems_cli.retrieval.supersede import apply_supersession

        superseded = apply_supersession(adjusted, options.superseded_weight, SUPERSEDE_MIN_SIMILARITY)
        if superseded:
            adjusted.sort(key=lambda c: -c.explain["adjust"]["unclamped"])
            trace.stages["superseded"] = superseded
    if options.exclude_ids:
        adjusted = [c for c in adjusted if c.document_id not in options.exclude_ids]
    if not options.other_projects_captured and options.current_project:
        adjusted = [c for c in adjusted if not _captured_elsewhere(c, options.current_project)]
    if options.general_needs_evidence and adjusted:
        adjusted = _general_knowledge(query, adjusted, trace)
    if options.min_score is not None:
        adjusted = [c for c in adjusted if c.score >= options.min_score]
    if options.min_relative and adjusted:
        floor = options.min_relative * max(c.score for c in adjusted)
        adjusted = [c for c in adjusted if c.score >= floor]
    _rate_confidence(adjusted)
    if options.confidence_floor is not None:
        adjusted = [c for c in adjusted if c.confidence >= options.confidence_floor]
    trace.lap("filter_adjust")

    # 10. Assembly within the token budget.
    selected = _assemble(adjusted, options)
    trace.lap("assemble")
    results = _results(deps, query, selected, options, trace, documents)
    if options.summaries and options.summary_results:
        results = _overview(deps, query, options, query_vector, now, results, trace)
    return results


# --- stages -----------------------------------------------------------------------------------------------


# A question about the world needs a memory sharing this much of its words (the normalised full-text score:
# about a third of them by weight) or this close in meaning. On the capture benchmark the memories injected
# for its 5 such questions shared at most 0.08 and came within 0.27–0.39 cosine: all were noise.
GENERAL_MIN_LEXICAL = 0.3
GENERAL_MIN_COSINE = 0.5


def _general_knowledge(query: str, candidates: list[Candidate], trace: Trace) -> list[Candidate]:
    """Of a question about the world ("What's the difference between a Deployment and a StatefulSet?"), the
    memories plainly about what it asks; every memory when the question is about the asker's work."""
    from cems_cli.retrieval.understand import asks_general_knowledge

    if not asks_general_knowledge(query):
        return candidates
    kept = [c for c in candidates
            if c.lexical_score >= GENERAL_MIN_LEXICAL or c.vector_score >= GENERAL_MIN_COSINE]
    trace.stages["general_knowledge"] = {"candidates": len(candidates), "kept": len(kept)}
    return kept


# A summary sharing no word with the question's topic needs this cosine; and every summary this score
# (cosine plus half its full-text rank, after the project factor): "an overview of xyzzy" gets none.
SUMMARY_MIN_COSINE = RECALL_MIN_SIMILARITY
SUMMARY_MIN_SCORE = 0.2


def _overview(
    deps: SearchDeps,
    query: str,
    options: SearchOptions,
    query_vector: Any,
    now: datetime,
    results: list[SearchResult],
    trace: Trace,
) -> list[SearchResult]:
    """Step 14.5 (RAPTOR): an overview question ("catch me up", "what have we done on billing this
    month?") gets the summaries of groups of memories most like it first (cems_cli/summaries.py), in place
    of the weakest memories; a question naming no topic, its project's overview first. A time the question
    names keeps the summaries whose period overlaps it."""
    from cems_cli.retrieval.adjust import normalised_project, project_factor
    from cems_cli.retrieval.understand import is_overview, overview_topic
    from cems_cli.store.summaries import search_summaries

    # Summaries are personal (their owner's memories, any scope): not for a search of shared memories only.
    if options.category is not None or options.scope == "shared" or not is_overview(query):
        return results
    from cems_cli.retrieval.timecues import parse_time_cue

    cue = parse_time_cue(query, now)
    start = cue.start if cue is not None else None
    end = cue.end if cue is not None else None
    topic = overview_topic(query)
    current = normalised_project(options.current_project)
    if not topic:
        # "Catch me up": the project's overview, whatever its words; without a project, the overviews of
        # the projects worked on last.
        found = search_summaries(deps.conn, deps.identity.user, query_vector, "", since=start, until=end,
                                 level=2, project=options.project or current)
        ranked = sorted(found, key=lambda s: s.period_end, reverse=True)
    else:
        # Full-text rank on the topic alone: every summary says "overview" or "memories".
        found = search_summaries(deps.conn, deps.identity.user, query_vector, " ".join(topic), since=start,
                                 until=end, project=options.project)
        # Evidence first, as for memories: a word of the topic, or a cosine that close.
        scored = [(s.score * project_factor(s.project or None, options.current_project), s) for s in found
                  if s.lexical > 0 or s.cosine >= SUMMARY_MIN_COSINE]
        ranked = [s for score, s in sorted(scored, key=lambda item: item[0], reverse=True)
                  if score >= SUMMARY_MIN_SCORE]
    wanted = min(options.summary_results, max(1, options.limit // 2))
    chosen = ranked[:wanted]
    trace.stages["summaries"] = [{"id": s.id, "level": s.level, "cosine": round(s.cosine, 4),
                                  "lexical": round(s.lexical, 4)} for s in chosen]
    if not chosen:
        return results
    from cems_cli.results import SearchResult

    confidence = {r.id: r.confidence for r in results}
    shown = [
        SearchResult(
            id=s.id,
            score=s.score,
            category="summary",
            content=s.content,
            snippet=s.content,
            title=s.title,
            tags=[f"summary:level{s.level}"],
            scope="personal",
            source_ref=s.project or None,
            pinned=False,
            created_at=s.period_end,
            source="summary",
            # As likely to answer as the likeliest of its memories the search found, else unknown (0).
            confidence=max((confidence[m] for m in s.members if m in confidence), default=0.0),
            explain={"summary": {"level": s.level, "members": len(s.members), "method": s.method}}
            if options.explain else {},
        )
        for s in chosen
    ]
    if options.confidence_floor:
        shown = [r for r in shown if r.confidence >= options.confidence_floor]
    if not shown:
        return results
    if results and "pipeline" in results[0].explain:
        shown[0].explain["pipeline"] = results[0].explain.pop("pipeline")
    return _within_budget(shown, results, options.token_budget,
                          max(options.limit, len(shown)))


def _within_budget(first: list[SearchResult], rest: list[SearchResult], budget: int,
                   limit: int) -> list[SearchResult]:
    """`first`, then `rest` in order, as many as fit the token budget and the limit (one that does not fit
    is left out, not the end of the list)."""
    from cems_cli.retrieval.assemble import assemble_greedy
    from cems_cli.text.tokens import count_tokens

    return assemble_greedy([*first, *rest], count_tokens, budget, limit,
                           text=lambda result: result.snippet or result.content).selected


def _captured_elsewhere(cand: Candidate, current_project: str) -> bool:
    """Captured (not written by hand, not pinned) in another project, and not a preference."""
    from cems_cli.models import CAPTURED_SOURCES
    from cems_cli.retrieval.adjust import project_relation

    if cand.source not in CAPTURED_SOURCES or cand.pinned or cand.category == "preferences":
        return False
    return project_relation(cand.source_ref, current_project) == "other"


def _rate_confidence(candidates: list[Candidate]) -> None:
    """Each candidate's confidence (retrieval/confidence.py), from its evidence and its adjusted score
    relative to the best one's."""
    from cems_cli.models import CAPTURED_SOURCES
    from cems_cli.retrieval.confidence import breakdown, confidence

    if not candidates:
        return
    best = max(c.explain["adjust"]["unclamped"] for c in candidates)
    for cand in candidates:
        rerank = (cand.explain.get("rerank") or {}).get("rerank")
        relative = cand.explain["adjust"]["unclamped"] / best if best > 0 else 0.0
        captured = cand.source in CAPTURED_SOURCES and not cand.pinned
        cand.confidence = confidence(cosine=cand.vector_score, lexical=cand.lexical_score, relative=relative,
                                     rerank=rerank, captured=captured)
        built = breakdown(cosine=cand.vector_score, lexical=cand.lexical_score, relative=relative,
                          rerank=rerank, captured=captured)
        # The raw inputs (what bench/confidence_sessions.py fits on) and how the probability is built.
        cand.explain["confidence"] = {"cosine": cand.vector_score, "lexical": cand.lexical_score,
                                      "relative": relative, "rerank": rerank, "captured": captured,
                                      "confidence": cand.confidence, "built_from": built}


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


def _fuse(
    options: SearchOptions, ranked: list[RankedList], candidates: dict[str, Candidate]
) -> list[Candidate]:
    from cems_cli.retrieval.fusion import fuse_candidates, linear_fuse

    if options.fusion == "linear":
        return linear_fuse(
            ranked,
            candidates,
            vector_weight=options.fusion_vector_weight,
            lexical_coverage=options.lexical_coverage,
            original_weight=options.rrf_original_weight,
            expansion_weight=options.rrf_expansion_weight,
        )
    return fuse_candidates(
        ranked,
        candidates,
        k=options.rrf_k,
        original_weight=options.rrf_original_weight,
        expansion_weight=options.rrf_expansion_weight,
        hybrid_vector_weight=options.hybrid_vector_weight,
    )


# A `patterns` memory ("the tests run with `make test`") says how the project works, whichever session
# capture first saw it in: the memories recorded next to it say nothing of its relevance, nor it of theirs.
# Placed in that session, it rode on the session's best match: "Which Go version are we on?" injected
# `make test` beside the session record that answered it.
OUTSIDE_SESSIONS = frozenset({"patterns"})


def _session_context(
    conn, fused: list[Candidate], filters: SearchFilters, options: SearchOptions
) -> list[Candidate]:
    """Neighbours in the same session lend evidence (one query places the candidates in their sessions)."""
    from cems_cli.retrieval.assemble import session_from_tags
    from cems_cli.retrieval.neighbours import SessionPosition, apply_session_context
    from cems_cli.store.search import session_positions

    sessions = {c.document_id: s for c in fused
                if c.category not in OUTSIDE_SESSIONS and (s := session_from_tags(c))}
    if not sessions:
        return fused
    placed = session_positions(conn, sorted(set(sessions.values())), list(sessions), filters,
                               leave_out=OUTSIDE_SESSIONS)
    positions = {
        doc: SessionPosition(session, placed[(doc, session)])
        for doc, session in sessions.items()
        if (doc, session) in placed
    }
    return apply_session_context(
        fused,
        positions,
        window=options.session_window,
        neighbour_weight=options.session_neighbour_weight,
        session_weight=options.session_weight,
    )


def _attach_embeddings(conn, candidates: list[Candidate], *, restricted: bool = False) -> None:
    """Stored vectors for the few candidates semantic dedup compares (fetched only for them; a memory
    embedded with its context has none to compare, and is always kept)."""
    from cems_cli.store.search import fetch_embeddings

    vectors = fetch_embeddings(conn, [c.chunk_id for c in candidates], restricted=restricted)
    for cand in candidates:
        cand.embedding = vectors.get(cand.chunk_id)


def _rerank(
    settings: Settings, options: SearchOptions, llm: LLMClient | None, query: str, fused: list[Candidate],
    trace: Trace,
) -> list[Candidate]:
    from cems_cli.plugins import DISABLED, RERANKERS, PluginError, RerankItem, load
    from cems_cli.retrieval.rerank_blend import best_snippet, blend_rerank
    from cems_cli.text.terms import query_terms

    backend = settings.resolved_rerank_backend
    if backend == DISABLED:
        trace.stages["rerank"] = {"backend": backend, "scored": 0}
        return fused
    head, tail = fused[: options.rerank_input_limit], fused[options.rerank_input_limit :]
    terms = query_terms(query)
    # The cosine is of the query with each candidate's stored chunk vector, computed by the server when the
    # candidates were fetched (the lexical-only ones included).
    items = [RerankItem(c.document_id, best_snippet(c.content, terms, 300), c.vector_score) for c in head]
    try:
        scores = load(RERANKERS, backend)(settings, llm).score(query, items)
    except PluginError as error:  # a search never fails over its optional stage: shown in --explain
        trace.stages["rerank"] = {"backend": backend, "scored": 0, "error": str(error)}
        return fused
    trace.stages["rerank"] = {"backend": backend, "scored": len(scores) if scores else 0}
    if not scores:
        return fused
    reranked = blend_rerank(head, scores)
    # Candidates past the rerank window stay below every reranked one, in their fused order.
    return reranked + tail


def _assemble(candidates: list[Candidate], options: SearchOptions) -> list[Candidate]:
    from cems_cli.retrieval.assemble import assemble_greedy

    budget = options.token_budget
    counter = _token_counter(candidates, budget)
    return assemble_greedy(candidates, counter, budget, max_results=options.limit).selected


def _token_counter(candidates: list[Candidate], budget: int):
    """Exact tiktoken counts only when they can matter: a token is at least one byte, so if every
    candidate's bytes fit the budget together, byte length is a safe stand-in and the encoder never loads."""
    total_bytes = sum(len(c.content.encode("utf-8")) for c in candidates)
    if total_bytes <= budget:
        return lambda text: len(text.encode("utf-8"))
    from cems_cli.text.tokens import count_tokens

    return count_tokens


def _results(
    deps: SearchDeps,
    query: str,
    selected: list[Candidate],
    options: SearchOptions,
    trace: Trace,
    documents: dict[str, MemoryRecord],
) -> list[SearchResult]:
    from cems_cli.results import SearchResult
    from cems_cli.retrieval.rerank_blend import best_snippet
    from cems_cli.store.search import neighbour_chunks
    from cems_cli.text.terms import query_terms

    terms = query_terms(query)
    results = []
    for cand in selected:
        record = documents.get(cand.document_id)
        if record is None:
            continue
        context: list[str] = []
        if cand.content != record.content:  # a chunk of a longer memory: its neighbours are context
            context = [
                text
                for index, text in neighbour_chunks(deps.conn, cand.document_id, cand.chunk_index,
                                                          restricted=deps.identity.restricted)
                if index != cand.chunk_index
            ]
        explain = {k: v for k, v in cand.explain.items()} if options.explain else {}
        if options.explain:
            explain["chunk_index"] = cand.chunk_index
        results.append(
            SearchResult(
                id=cand.document_id,
                score=cand.score,
                confidence=cand.confidence,
                category=record.category,
                content=record.content,
                snippet=best_snippet(cand.content, terms, SNIPPET_CHARS),
                title=record.title,
                tags=record.tags,
                scope=record.scope,
                source=record.source,
                source_ref=record.source_ref,
                pinned=record.pinned,
                created_at=record.created_at,
                explain=explain,
                context=context,
            )
        )
    if options.explain and results:
        results[0].explain["pipeline"] = {"stages": trace.stages, "timings_ms": trace.timings_ms}
    return results
