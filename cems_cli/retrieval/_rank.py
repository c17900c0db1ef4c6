"""The stages that rank candidates between retrieval and assembly: fusion, session context, the reranker,
the evidence a question about the world needs, and each candidate's confidence."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cems_cli.config import Settings
    from cems_cli.llm import LLMClient
    from cems_cli.retrieval._search_types import Trace
    from cems_cli.retrieval.options import SearchOptions
    from cems_cli.retrieval.types import Candidate, RankedList
    from cems_cli.store.search import SearchFilters

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
    from cems_cli.retrieval.rerank_blend import blend_rerank
    from cems_cli.text.snippet import SNIPPET_CHARS, best_snippet
    from cems_cli.text.terms import query_terms

    backend = settings.resolved_rerank_backend
    if backend == DISABLED:
        trace.stages["rerank"] = {"backend": backend, "scored": 0}
        return fused
    head, tail = fused[: options.rerank_input_limit], fused[options.rerank_input_limit :]
    terms = query_terms(query)
    # The cosine is of the query with each candidate's stored chunk vector, computed by the server when the
    # candidates were fetched (the lexical-only ones included).
    items = [RerankItem(c.document_id, best_snippet(c.content, terms, SNIPPET_CHARS), c.vector_score)
             for c in head]
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
