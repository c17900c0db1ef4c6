"""Reranking without I/O: the position-aware blend (the snippet a reranker sees is cems_cli/text/snippet.py).

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
from collections.abc import Mapping, Sequence

from cems_cli.retrieval.types import Candidate

# (last rank of the tier, weight of the fused score); the reranker gets 1 - weight.
DEFAULT_POSITION_WEIGHTS: tuple[tuple[int, float], ...] = ((3, 0.75), (10, 0.60))
DEFAULT_REST_WEIGHT = 0.40


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
