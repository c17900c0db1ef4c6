"""Reranking without I/O: the position-aware blend, the snippet a reranker sees, the offline cosine backend.

Blend (seed 001, QMD): the higher a candidate already ranks, the more its retrieval score is trusted:

    rank 1-3:  final = 0.75 * fused + 0.25 * rerank
    rank 4-10: final = 0.60 * fused + 0.40 * rerank
    rank 11+:  final = 0.40 * fused + 0.60 * rerank

`fused` is the candidate's score after fusion (0..1). Seed 001 writes the retrieval term as 1/(k + rank),
but with k = 60 that is at most 0.0164: 0.75 of it is smaller than 0.25 of any reranker score above 0.05,
so "trust retrieval at the top" would do nothing. Both terms must be on the same 0..1 scale (the seed's own
point about magnitude mismatch), and the fused score is the retrieval score on that scale.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from cems_cli.retrieval.types import Candidate

# (last rank of the tier, weight of the fused score); the reranker gets 1 - weight.
DEFAULT_POSITION_WEIGHTS: tuple[tuple[int, float], ...] = ((3, 0.75), (10, 0.60))
DEFAULT_REST_WEIGHT = 0.40
DEFAULT_SNIPPET_CHARS = 300
_MIN_PREFIX_TERM = 4  # "deploy" matches "deployment"; "go" must not match "google"


def fused_weight_for_rank(
    rank: int,
    position_weights: Sequence[tuple[int, float]] = DEFAULT_POSITION_WEIGHTS,
    rest_weight: float = DEFAULT_REST_WEIGHT,
) -> float:
    for last_rank, weight in position_weights:
        if rank <= last_rank:
            return weight
    return rest_weight


def _unit(value: float) -> float:
    return min(1.0, max(0.0, value)) if math.isfinite(value) else 0.0


def blend_rerank(
    candidates: Sequence[Candidate],
    rerank_scores: Mapping[str, float],
    *,
    position_weights: Sequence[tuple[int, float]] = DEFAULT_POSITION_WEIGHTS,
    rest_weight: float = DEFAULT_REST_WEIGHT,
) -> list[Candidate]:
    """Blend reranker scores (0..1, keyed by document_id) into candidates given in fused order.

    Rank is the 1-based position in `candidates`. A candidate the reranker did not score keeps its fused
    score: no judgement is no evidence either way. Returns the candidates re-sorted, best first.
    """
    for rank, cand in enumerate(candidates, start=1):
        fused = cand.score
        if cand.document_id not in rerank_scores:
            cand.explain["rerank"] = {"rank": rank, "fused": fused, "rerank": None, "score": fused}
            continue
        rerank = _unit(rerank_scores[cand.document_id])
        w_fused = fused_weight_for_rank(rank, position_weights, rest_weight)
        cand.score = w_fused * fused + (1.0 - w_fused) * rerank
        cand.explain["rerank"] = {
            "rank": rank,
            "fused": fused,
            "rerank": rerank,
            "w_fused": w_fused,
            "w_rerank": 1.0 - w_fused,
            "score": cand.score,
        }
    return sorted(candidates, key=lambda c: -c.score)


def _terms_match(token: str, terms: set[str], prefixes: tuple[str, ...]) -> str | None:
    if token in terms:
        return token
    return next((p for p in prefixes if token.startswith(p)), None)


def best_snippet(content: str, query_terms: Sequence[str], width: int = DEFAULT_SNIPPET_CHARS) -> str:
    """The `width`-character window of `content` that holds the most query terms (what a reranker sees).

    Windows are compared by distinct terms, then by total occurrences, then the earliest wins. The chosen
    matches are centred in the window and the edges moved to word boundaries where that keeps them.
    Without any match the window is the start of the text (seed 001's fallback).
    """
    if width <= 0:
        return ""
    if len(content) <= width:
        return content
    terms = {t.lower() for t in query_terms if t}
    prefixes = tuple(sorted(t for t in terms if len(t) >= _MIN_PREFIX_TERM))
    matches: list[tuple[int, int, str]] = []
    for m in re.finditer(r"\w+", content):
        term = _terms_match(m.group(0).lower(), terms, prefixes)
        if term is not None:
            matches.append((m.start(), m.end(), term))
    if not matches:
        return _trim_to_words(content, 0, width, keep=None)

    best_key: tuple[int, int] = (-1, -1)
    best_span = (0, 0)
    right = 0
    for left in range(len(matches)):
        right = max(right, left)
        while right + 1 < len(matches) and matches[right + 1][1] - matches[left][0] <= width:
            right += 1
        if matches[right][1] - matches[left][0] > width:
            continue  # a single match longer than the window: cannot be shown whole
        window = matches[left : right + 1]
        key = (len({t for _, _, t in window}), len(window))
        if key > best_key:
            best_key, best_span = key, (matches[left][0], matches[right][1])
    if best_key[0] < 0:
        return _trim_to_words(content, 0, width, keep=None)

    span_start, span_end = best_span
    slack = width - (span_end - span_start)
    start = max(0, span_start - slack // 2)
    end = min(len(content), start + width)
    start = max(0, end - width)
    return _trim_to_words(content, start, end, keep=best_span)


def _trim_to_words(content: str, start: int, end: int, keep: tuple[int, int] | None) -> str:
    """content[start:end] without a cut word at either edge, never trimming into the `keep` span."""
    end = min(end, len(content))
    if start > 0 and not content[start - 1].isspace():
        limit = keep[0] if keep else end
        first_space = next((i for i in range(start, limit) if content[i].isspace()), None)
        if first_space is not None:
            start = first_space + 1
    if end < len(content) and not content[end].isspace():
        floor = max(start, keep[1]) if keep else start
        last_space = next((i for i in range(end - 1, floor - 1, -1) if content[i].isspace()), None)
        if last_space is not None:
            end = last_space
    return content[start:end].strip()
