"""Weighted reciprocal rank fusion with top-rank bonus, normalisation and the vector-score blend.

    rrf(d)   = Σ over lists L containing d, weight(L) > 0:  weight(L) / (k + rank_L(d)) + bonus(rank_L(d))
    bonus(r) = 0.05 if r == 1, 0.02 if r in (2, 3), else 0         (per list, so it stacks across lists)
    norm(d)  = (rrf(d) - min rrf) / (max rrf - min rrf)            (1.0 for all when they are equal)
    score(d) = (1 - w) * norm(d) + w * vector_score(d)             (w = hybrid_vector_weight, 0.5)

Ranks are 1-based positions among the distinct documents of a list (a document repeated in a list, e.g.
through a second chunk, counts once, at its first position). A list with weight 0 contributes nothing,
not even its bonus, and a document seen only in such lists does not enter the result.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from cems_cli import defaults
from cems_cli.retrieval.types import Candidate, RankedList

DEFAULT_TOP_RANK_BONUS = (0.05, 0.02)  # rank 1, ranks 2-3


@dataclass
class FusedScore:
    document_id: str
    rrf: float
    ranks: dict[str, int] = field(default_factory=dict)  # list name -> 1-based rank
    parts: dict[str, float] = field(default_factory=dict)  # list name -> weight / (k + rank)
    bonuses: dict[str, float] = field(default_factory=dict)  # list name -> top-rank bonus


def _finite_or_zero(value: float) -> float:
    # A score that could not be computed carries no evidence; NaN would poison every comparison after it.
    return value if math.isfinite(value) else 0.0


def min_max_normalise(scores: Sequence[float]) -> list[float]:
    """Map scores linearly onto 0..1. Equal scores all become 1.0 (0.0 if they are all ≤ 0)."""
    clean = [_finite_or_zero(s) for s in scores]
    if not clean:
        return []
    low, high = min(clean), max(clean)
    if high == low:
        return [1.0 if high > 0 else 0.0 for _ in clean]
    span = high - low
    return [(s - low) / span for s in clean]


def effective_weight(
    ranked: RankedList,
    original_weight: float = defaults.RRF_ORIGINAL_WEIGHT,
    expansion_weight: float = defaults.RRF_EXPANSION_WEIGHT,
) -> float:
    if ranked.weight is not None:
        return ranked.weight
    return original_weight if ranked.is_original else expansion_weight


def _distinct_in_order(ranked: RankedList) -> Iterable[str]:
    seen: set[str] = set()
    for item in ranked.items:
        if item.document_id not in seen:
            seen.add(item.document_id)
            yield item.document_id


def weighted_rrf(
    lists: Sequence[RankedList],
    *,
    k: int = defaults.RRF_K,
    top_rank_bonus: tuple[float, float] = DEFAULT_TOP_RANK_BONUS,
    original_weight: float = defaults.RRF_ORIGINAL_WEIGHT,
    expansion_weight: float = defaults.RRF_EXPANSION_WEIGHT,
) -> list[FusedScore]:
    """Fuse ranked lists; best first, ties kept in order of first appearance."""
    if k <= 0:
        raise ValueError(f"RRF k must be positive, got {k}")
    bonus_first, bonus_top3 = top_rank_bonus
    fused: dict[str, FusedScore] = {}
    for ranked in lists:
        weight = effective_weight(ranked, original_weight, expansion_weight)
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"list {ranked.name!r} has invalid weight {weight!r}")
        if weight == 0:
            continue  # seed 002: weight 0 removes the list entirely
        for rank, doc_id in enumerate(_distinct_in_order(ranked), start=1):
            entry = fused.setdefault(doc_id, FusedScore(document_id=doc_id, rrf=0.0))
            part = weight / (k + rank)
            bonus = bonus_first if rank == 1 else (bonus_top3 if rank <= 3 else 0.0)
            entry.rrf += part + bonus
            entry.ranks[ranked.name] = rank
            entry.parts[ranked.name] = part
            if bonus:
                entry.bonuses[ranked.name] = bonus
    # sorted() is stable, so equal scores keep first-appearance order: deterministic output.
    return sorted(fused.values(), key=lambda f: -f.rrf)


def fuse_candidates(
    lists: Sequence[RankedList],
    candidates: Mapping[str, Candidate],
    *,
    k: int = defaults.RRF_K,
    top_rank_bonus: tuple[float, float] = DEFAULT_TOP_RANK_BONUS,
    original_weight: float = defaults.RRF_ORIGINAL_WEIGHT,
    expansion_weight: float = defaults.RRF_EXPANSION_WEIGHT,
    hybrid_vector_weight: float = defaults.HYBRID_VECTOR_WEIGHT,
) -> list[Candidate]:
    """Score candidates (keyed by document_id) by fused rank blended with their vector score.

    Sets `score` and `explain["fusion"]` on every returned candidate, returns them best first. Every
    document in a weighted list must have a candidate: a missing one is a wiring bug, so it raises.
    """
    if not 0.0 <= hybrid_vector_weight <= 1.0:
        raise ValueError(f"hybrid_vector_weight must be within 0..1, got {hybrid_vector_weight}")
    fused = weighted_rrf(
        lists,
        k=k,
        top_rank_bonus=top_rank_bonus,
        original_weight=original_weight,
        expansion_weight=expansion_weight,
    )
    missing = [f.document_id for f in fused if f.document_id not in candidates]
    if missing:
        raise ValueError(f"ranked lists name documents without a candidate: {missing[:5]}")
    normalised = min_max_normalise([f.rrf for f in fused])
    result: list[Candidate] = []
    for entry, norm in zip(fused, normalised, strict=True):
        cand = candidates[entry.document_id]
        # Cosine can be negative; outside 0..1 it would break the "all scores are 0..1" contract.
        vector = min(1.0, max(0.0, _finite_or_zero(cand.vector_score)))
        cand.score = (1.0 - hybrid_vector_weight) * norm + hybrid_vector_weight * vector
        cand.explain["fusion"] = {
            "ranks": dict(entry.ranks),
            "rrf_parts": dict(entry.parts),
            "rank_bonus": dict(entry.bonuses),
            "rrf": entry.rrf,
            "rrf_normalised": norm,
            "vector_score": vector,
            "score": cand.score,
        }
        result.append(cand)
    result.sort(key=lambda c: -c.score)
    return result


# --- score fusion -----------------------------------------------------------------------------------------
#
#   lexical(d) = max over lexical lists L:  w(L) * bm25_L(d) / max(max bm25_L, c * full_L)   (0..1)
#   vector(d)  = max(cosine of d's chunk to the query, max over vector lists L: w(L) * cosine_L(d))   (0..1)
#   score(d)   = (lexical(d) + v * vector(d)) / (1 + v)                          (v = vector_weight)
#
# w(L) is 1 for the original query's lists and expansion_weight / original_weight for expansions. Unlike
# RRF, this keeps how far apart the retrievers' scores are: a memory that matches the rare words of a
# question nearly as well as the best one stays near it, instead of falling a rank step behind. Measured on
# LoCoMo, no LLM, every other stage unchanged: Recall@5 / @10 0.637 / 0.721 with RRF → 0.691 / 0.767.
#
# full_L is the BM25 score of a memory holding every term of the query (the sum of their IDF), and c the
# lexical coverage (0..1). Dividing by the best match alone gave a memory sharing one common word with the
# question ("test" in "which test framework do I like?") the full lexical score whenever nothing matched
# better, which in a small store outranked the memory that answers by meaning. With c > 0 a best match
# that covers less than c of the query's IDF mass keeps its partial score. c = 0 is the old normalisation.
def linear_fuse(
    lists: Sequence[RankedList],
    candidates: Mapping[str, Candidate],
    *,
    vector_weight: float = defaults.FUSION_VECTOR_WEIGHT,
    lexical_coverage: float = defaults.LEXICAL_COVERAGE,
    original_weight: float = defaults.RRF_ORIGINAL_WEIGHT,
    expansion_weight: float = defaults.RRF_EXPANSION_WEIGHT,
) -> list[Candidate]:
    """Score every candidate in a weighted list by normalised BM25 plus weighted cosine; best first.

    Sets `score`, `lexical_score` and `explain["fusion"]`. The scores are 0..1. A list with weight 0
    contributes nothing, and a document seen only in such lists does not enter the result.
    """
    if not math.isfinite(vector_weight) or vector_weight < 0:
        raise ValueError(f"fusion vector weight must be ≥ 0, got {vector_weight}")
    lexical: dict[str, float] = {}
    vector: dict[str, float] = {}
    parts: dict[str, dict[str, float]] = {}
    ranks: dict[str, dict[str, int]] = {}
    for ranked in lists:
        weight = effective_weight(ranked, original_weight, expansion_weight)
        if not math.isfinite(weight) or weight < 0:
            raise ValueError(f"list {ranked.name!r} has invalid weight {weight!r}")
        if weight == 0:
            continue
        relative = weight / max(original_weight, expansion_weight, 1e-12)
        if ranked.kind == "lexical":
            scores = [i.score for i in ranked.items]
            normalised = _lexical_normalise(scores, ranked.full_match, lexical_coverage)
            target = lexical
        else:
            normalised = [min(1.0, max(0.0, _finite_or_zero(i.score))) for i in ranked.items]
            target = vector
        values: dict[str, float] = {}
        for item, value in zip(ranked.items, normalised, strict=True):  # a document's best chunk counts
            values[item.document_id] = max(values.get(item.document_id, 0.0), value)
        for rank, doc_id in enumerate(_distinct_in_order(ranked), start=1):
            ranks.setdefault(doc_id, {})[ranked.name] = rank
        for doc_id, value in values.items():
            if doc_id not in candidates:
                raise ValueError(f"ranked lists name documents without a candidate: [{doc_id!r}]")
            target[doc_id] = max(target.get(doc_id, 0.0), relative * value)
            parts.setdefault(doc_id, {})[ranked.name] = value
    result: list[Candidate] = []
    for doc_id in parts:
        cand = candidates[doc_id]
        own_cosine = min(1.0, max(0.0, _finite_or_zero(cand.vector_score)))
        vec = max(vector.get(doc_id, 0.0), own_cosine)
        lex = lexical.get(doc_id, 0.0)
        cand.lexical_score = lex
        cand.score = (lex + vector_weight * vec) / (1.0 + vector_weight)
        cand.explain["fusion"] = {"method": "linear", "ranks": ranks[doc_id], "lists": parts[doc_id],
                                  "lexical": lex, "vector": vec, "score": cand.score}
        result.append(cand)
    result.sort(key=lambda c: -c.score)
    return result


def _lexical_normalise(scores: Sequence[float], full_match: float | None, coverage: float) -> list[float]:
    """BM25 scores in 0..1: divided by the best one, or by `coverage` of a whole-query match if that is
    larger (the best match then covered too little of the query to count fully)."""
    clean = [max(0.0, _finite_or_zero(s)) for s in scores]
    ceiling = max(max(clean, default=0.0), coverage * _finite_or_zero(full_match or 0.0))
    if ceiling <= 0:
        return [0.0 for _ in clean]
    return [min(1.0, s / ceiling) for s in clean]
