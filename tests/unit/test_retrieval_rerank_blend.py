"""Position-aware rerank blending."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from cems_cli.retrieval.rerank_blend import blend_rerank, fused_weight_for_rank
from cems_cli.retrieval.types import Candidate

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def cand(doc_id: str, score: float = 0.0, embedding=None) -> Candidate:
    return Candidate(document_id=doc_id, chunk_id=f"{doc_id}-c0", chunk_index=0, content=doc_id,
                     category="general", created_at=T0, score=score, embedding=embedding)


def test_fused_weight_tiers():
    assert [fused_weight_for_rank(r) for r in (1, 3, 4, 10, 11, 40)] == [0.75, 0.75, 0.60, 0.60, 0.40, 0.40]


def test_blend_by_position():
    # Fused scores 1.00, 0.95, ..., 0.45 for ranks 1..12.
    cands = [cand(f"d{r}", round(1.0 - 0.05 * (r - 1), 2)) for r in range(1, 13)]
    rerank = {"d1": 0.0, "d3": 0.2, "d4": 1.0, "d10": 0.5, "d11": 0.9}
    result = blend_rerank(cands, rerank)
    score = {c.document_id: c.score for c in result}
    assert score["d1"] == pytest.approx(0.75)  # 0.75 * 1.00 + 0.25 * 0.0
    assert score["d3"] == pytest.approx(0.725)  # 0.75 * 0.90 + 0.25 * 0.2
    assert score["d4"] == pytest.approx(0.91)  # 0.60 * 0.85 + 0.40 * 1.0
    assert score["d10"] == pytest.approx(0.53)  # 0.60 * 0.55 + 0.40 * 0.5
    assert score["d11"] == pytest.approx(0.74)  # 0.40 * 0.50 + 0.60 * 0.9
    assert score["d2"] == pytest.approx(0.95)  # not reranked: fused score kept
    assert score["d12"] == pytest.approx(0.45)
    # d1 (blended to 0.75) and d6 (kept 0.75) tie exactly: the earlier rank stays ahead.
    assert [c.document_id for c in result[:8]] == ["d2", "d4", "d5", "d1", "d6", "d11", "d3", "d7"]
    assert cands[3].explain["rerank"] == {
        "rank": 4, "fused": 0.85, "rerank": 1.0, "w_fused": 0.6, "w_rerank": pytest.approx(0.4),
        "score": pytest.approx(0.91)}
    assert cands[1].explain["rerank"]["rerank"] is None


def test_rerank_scores_are_clamped_to_unit_range():
    cands = [cand("a", 0.4), cand("b", 0.4), cand("c", 0.4)]
    result = blend_rerank(cands, {"a": 7.5, "b": -2.0, "c": float("nan")})
    score = {c.document_id: c.score for c in result}
    assert score == {"a": pytest.approx(0.55), "b": pytest.approx(0.3), "c": pytest.approx(0.3)}
    assert not any(math.isnan(c.score) for c in result)


def test_blend_with_custom_tiers_and_empty_input():
    cands = [cand("a", 0.5), cand("b", 0.5)]
    result = blend_rerank(cands, {"a": 0.0, "b": 1.0}, position_weights=((1, 1.0),), rest_weight=0.0)
    assert [(c.document_id, c.score) for c in result] == [("b", 1.0), ("a", 0.5)]
    assert blend_rerank([], {"x": 1.0}) == []
