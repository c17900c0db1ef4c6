"""Position-aware rerank blending, the reranker's snippet window, and the cosine reranker."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from cems_cli.retrieval.rerank_blend import best_snippet, blend_rerank, fused_weight_for_rank
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


def test_snippet_returns_short_content_whole():
    assert best_snippet("short text", ["text"], width=300) == "short text"


def test_snippet_centres_the_matches_on_word_boundaries():
    content = "lorem " * 20 + "we tuned the postgres index with hnsw parameters for speed " + "ipsum " * 20
    # Matches span "postgres … hnsw" (24 chars); 36 chars of slack, 18 each side, then the cut words
    # "lorem"/"speed" at the edges are dropped.
    assert best_snippet(content, ["postgres", "hnsw"], width=60) == (
        "we tuned the postgres index with hnsw parameters for")


def test_snippet_prefers_distinct_terms_over_repeats():
    content = ("cache cache cache cache and some filler words here to pad it out. "
               "Later the cache eviction policy was LRU.")
    assert best_snippet(content, ["cache", "eviction"], width=40) == "Later the cache eviction policy was"


def test_snippet_prefix_match_and_fallback():
    text = "the deployment runs nightly on the build server and nothing else matters here"
    assert best_snippet(text, ["deploy"], width=30) == "the deployment runs nightly on"
    assert best_snippet("alpha beta gamma delta", ["zzz"], width=13) == "alpha beta"  # no match: the start
    assert best_snippet("alpha beta gamma delta", [], width=13) == "alpha beta"
    assert best_snippet("alpha beta gamma delta", ["go"], width=13) == "alpha beta"  # 2-letter: exact only
    assert best_snippet("anything", ["x"], width=0) == ""


def test_snippet_never_exceeds_width():
    content = " ".join(f"word{i} postgres" if i % 7 == 0 else f"word{i}" for i in range(200))
    for width in (20, 50, 120, 300):
        assert len(best_snippet(content, ["postgres"], width=width)) <= width


def test_snippet_word_boundaries_include_newlines_and_tabs():
    content = "intro\tparagraph\nthe postgres\nindex\twas rebuilt after the upgrade of everything else"
    # "postgres" spans 20..28; slack 14 → window 13..35. 13 cuts "paragraph": start moves past the "\n"
    # at 15. 35 cuts "was": end moves back to the "\t" at 34.
    assert best_snippet(content, ["postgres"], width=22) == "the postgres\nindex"
