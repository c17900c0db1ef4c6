"""What a search returns: the candidates that fit the token budget, as results (snippets, neighbour
chunks), and for an overview question the summaries first."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from cems_cli.defaults import RECALL_MIN_SIMILARITY

if TYPE_CHECKING:
    from cems_cli.results import SearchResult
    from cems_cli.retrieval._search_types import SearchDeps, Trace
    from cems_cli.retrieval.options import SearchOptions
    from cems_cli.retrieval.types import Candidate
    from cems_cli.store.records import MemoryRecord


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


def _term_weights(deps: SearchDeps, options: SearchOptions, terms: list[str]) -> dict[str, float] | None:
    """Each query term's BM25 IDF over what the asker can see, for choosing the window a long memory shows
    (text/snippet.py). The lexical stage counted the same lexemes a moment ago: usually no query at all."""
    import contextlib

    import psycopg

    from cems_cli.store.lexical import bm25_idf, collection_stats
    from cems_cli.text.values import snowball_stem

    # PostgreSQL's `english` configuration stems with the same Snowball stemmer.
    lexemes = {term: snowball_stem(term) for term in terms}
    wanted = sorted(set(lexemes.values()))
    if not wanted:
        return None
    conn = deps.conn
    # Inside an open transaction, a savepoint: a failed count must not abort the search's transaction.
    # Outside one (autocommit, the usual case) a transaction would only cost two round trips.
    guard = conn.transaction() if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE \
        else contextlib.nullcontext()
    try:
        with guard:
            total, _average, frequencies = collection_stats(conn, deps.identity, options.scope, wanted)
    except psycopg.Error:  # a window weighted equally is still a window: the search goes on
        return None
    idf = {lexeme: bm25_idf(total, count) for lexeme, count in zip(wanted, frequencies, strict=True)}
    return {term: idf[lexeme] for term, lexeme in lexemes.items()}


def _results(
    deps: SearchDeps,
    query: str,
    selected: list[Candidate],
    options: SearchOptions,
    trace: Trace,
    documents: dict[str, MemoryRecord],
) -> list[SearchResult]:
    from cems_cli.results import SearchResult
    from cems_cli.store.search import neighbour_chunks
    from cems_cli.text.snippet import SNIPPET_CHARS, best_snippet
    from cems_cli.text.terms import query_terms

    terms = query_terms(query)
    weights = _term_weights(deps, options, terms) if any(
        len(cand.content) > SNIPPET_CHARS for cand in selected) else None
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
                snippet=best_snippet(cand.content, terms, SNIPPET_CHARS, weights),
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


# A summary sharing no word with the question's topic needs this cosine; and every summary this score
# (cosine plus half its full-text rank, after the project factor): "an overview of xyzzy" gets none.


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
    month?") gets the summaries of groups of memories most like it first (engine/summaries.py), in place
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
                  if s.lexical > 0 or s.cosine >= RECALL_MIN_SIMILARITY]
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
