"""Weighted RRF, top-rank bonus, normalisation and the vector blend, checked against hand-computed numbers."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from cems_cli.retrieval.fusion import (
    effective_weight,
    fuse_candidates,
    linear_fuse,
    min_max_normalise,
    weighted_rrf,
)
from cems_cli.retrieval.types import Candidate, ListKind, RankedItem, RankedList

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def ranked(name: str, doc_ids: list[str], *, original: bool = False, weight: float | None = None,
           kind: ListKind = "vector") -> RankedList:
    items = [RankedItem(d, 1.0 - i / 100) for i, d in enumerate(doc_ids)]
    return RankedList(name=name, kind=kind, items=items, is_original=original, weight=weight)


def cand(doc_id: str, vector_score: float = 0.0) -> Candidate:
    return Candidate(document_id=doc_id, chunk_id=f"{doc_id}-c0", chunk_index=0, content=doc_id,
                     category="general", created_at=T0, vector_score=vector_score)


def by_id(fused):
    return {f.document_id: f for f in fused}


def test_seed_worked_example_three_lists():
    # Seed 000: original rank 1, expansion rank 3, HyDE rank 2, k = 60:
    #   2/61 + 0.05 + 1/63 + 0.02 + 1/62 + 0.02 = 0.032787 + 0.015873 + 0.016129 + 0.09 = 0.154789
    # The seed prints 0.1553 because it wrote 1/63 as 0.0164 (that is 1/61 = 0.01639); 1/63 = 0.01587.
    # The seed's own formula gives 0.1548, and that is what fusion must produce.
    fused = weighted_rrf([
        ranked("original", ["D", "a", "b"], original=True),
        ranked("expansion", ["c", "e", "D"]),
        ranked("hyde", ["f", "D"]),
    ])
    d = by_id(fused)["D"]
    assert d.rrf == pytest.approx(0.154789, abs=1e-6)
    assert round(d.rrf, 4) == 0.1548
    assert d.ranks == {"original": 1, "expansion": 3, "hyde": 2}
    assert d.parts["original"] == pytest.approx(2 / 61)
    assert d.parts["expansion"] == pytest.approx(1 / 63)
    assert d.bonuses == {"original": 0.05, "expansion": 0.02, "hyde": 0.02}
    assert fused[0].document_id == "D"


def test_seed_arithmetic_slip_is_the_only_way_to_0_1553():
    # The seed's printed terms do sum to 0.1553, but one of them is not 1/63: guard the explanation above.
    printed = [0.0328, 0.05, 0.0164, 0.02, 0.0161, 0.02]
    assert round(sum(printed), 4) == 0.1553
    assert round(1 / 63, 4) == 0.0159 and round(1 / 61, 4) == 0.0164


def test_peer_worked_example_weights_without_bonus():
    # Seed 004: semantic 0.7, BM25 0.3; A is #1 semantic / #5 BM25, B is #3 semantic / #1 BM25.
    #   A = 0.7/61 + 0.3/65 = 0.0114754 + 0.0046154 = 0.0160908   (seed rounds the terms first: 0.01610)
    #   B = 0.7/63 + 0.3/61 = 0.0111111 + 0.0049180 = 0.0160291
    fused = weighted_rrf(
        [ranked("semantic", ["A", "x", "B", "y", "z"], weight=0.7),
         ranked("bm25", ["B", "p", "q", "r", "A"], weight=0.3, kind="lexical")],
        top_rank_bonus=(0.0, 0.0),
    )
    scores = {f.document_id: f.rrf for f in fused}
    assert scores["A"] == pytest.approx(0.0160908, abs=1e-7)
    assert scores["B"] == pytest.approx(0.0160291, abs=1e-7)
    assert [f.document_id for f in fused[:2]] == ["A", "B"]


def test_weight_zero_removes_list_and_its_bonus():
    # Seed 002: keywordWeight 0 → FTS-only documents never enter, and shared ones get nothing from it.
    fused = weighted_rrf([ranked("semantic", ["A", "B"], weight=1.0),
                          ranked("keyword", ["C", "A"], weight=0.0, kind="lexical")])
    scores = by_id(fused)
    assert set(scores) == {"A", "B"}
    assert scores["A"].rrf == pytest.approx(1 / 61 + 0.05)  # 0.066393
    assert scores["B"].rrf == pytest.approx(1 / 62 + 0.02)  # 0.036129
    assert scores["A"].ranks == {"semantic": 1}


def test_default_weights_follow_the_list_role():
    # Original list weight 2.0, expansion 1.0; ranks beyond 3 get no bonus: 2/64 = 0.03125, 1/64 = 0.015625.
    fused = weighted_rrf([ranked("orig", ["a", "b", "c", "X"], original=True),
                          ranked("exp", ["d", "e", "f", "Y"])])
    scores = by_id(fused)
    assert scores["X"].rrf == pytest.approx(0.03125)
    assert scores["Y"].rrf == pytest.approx(0.015625)
    assert effective_weight(ranked("o", [], original=True)) == 2.0
    assert effective_weight(ranked("e", [])) == 1.0
    assert effective_weight(ranked("e", [], original=True, weight=0.5)) == 0.5
    assert effective_weight(ranked("o", [], original=True), original_weight=3.0) == 3.0


def test_repeated_document_counts_once_at_first_position():
    # Two chunks of A in one list: B is the second distinct document, rank 2 (1/62 + 0.02 = 0.036129).
    fused = weighted_rrf([ranked("v", ["A", "A", "B"], weight=1.0)])
    scores = by_id(fused)
    assert scores["B"].ranks == {"v": 2}
    assert scores["B"].rrf == pytest.approx(1 / 62 + 0.02)
    assert scores["A"].rrf == pytest.approx(1 / 61 + 0.05)


def test_ties_keep_first_appearance_order():
    # Mirror images: A = 1/61 + 0.05 + 1/62 + 0.02 = B. A appeared first, so it stays first.
    fused = weighted_rrf([ranked("v", ["A", "B"], weight=1.0), ranked("l", ["B", "A"], weight=1.0)])
    assert fused[0].rrf == fused[1].rrf
    assert [f.document_id for f in fused] == ["A", "B"]


def test_empty_inputs():
    assert weighted_rrf([]) == []
    assert weighted_rrf([ranked("v", [])]) == []
    assert fuse_candidates([], {}) == []


def test_invalid_parameters_raise():
    with pytest.raises(ValueError):
        weighted_rrf([ranked("v", ["A"], weight=-1.0)])
    with pytest.raises(ValueError):
        weighted_rrf([ranked("v", ["A"], weight=float("nan"))])
    with pytest.raises(ValueError):
        weighted_rrf([ranked("v", ["A"])], k=0)
    with pytest.raises(ValueError):
        fuse_candidates([ranked("v", ["A"])], {"A": cand("A")}, hybrid_vector_weight=1.5)


def test_fuse_candidates_normalises_and_blends_half_and_half():
    # orig vector [A, B, C] (w 2), expansion vector [C, A] (w 1):
    #   A = 2/61 + 0.05 + 1/62 + 0.02 = 0.1189159   (max)
    #   B = 2/62 + 0.02               = 0.0522581   (min)
    #   C = 2/63 + 0.02 + 1/61 + 0.05 = 0.1181395   (rank 3 in orig still earns the 0.02 bonus)
    # norm C = (0.1181395 - 0.0522581) / (0.1189159 - 0.0522581) = 0.9883518
    # final = 0.5 * norm + 0.5 * vector: A = 0.5 + 0.4 = 0.9, C = 0.4941759 + 0.2 = 0.6941759, B = 0.45
    candidates = {"A": cand("A", 0.8), "B": cand("B", 0.9), "C": cand("C", 0.4)}
    result = fuse_candidates([ranked("orig", ["A", "B", "C"], original=True), ranked("exp", ["C", "A"])],
                             candidates, hybrid_vector_weight=0.5)
    assert [c.document_id for c in result] == ["A", "C", "B"]
    assert [c.score for c in result] == pytest.approx([0.9, 0.6941759, 0.45], abs=1e-7)
    explain = candidates["C"].explain["fusion"]
    assert explain["ranks"] == {"orig": 3, "exp": 1}
    assert explain["rrf"] == pytest.approx(0.1181395, abs=1e-7)
    assert explain["rrf_normalised"] == pytest.approx(0.9883518, abs=1e-7)
    assert explain["rank_bonus"] == {"orig": 0.02, "exp": 0.05}
    assert explain["rrf_parts"]["orig"] == pytest.approx(2 / 63)


def test_blend_weight_extremes_and_vector_clamp():
    lists = [ranked("orig", ["A", "B"], original=True)]
    only_rank = fuse_candidates(lists, {"A": cand("A", 0.1), "B": cand("B", 0.9)}, hybrid_vector_weight=0.0)
    assert [(c.document_id, c.score) for c in only_rank] == [("A", 1.0), ("B", 0.0)]
    only_vector = fuse_candidates(lists, {"A": cand("A", 0.1), "B": cand("B", 0.9)}, hybrid_vector_weight=1.0)
    assert [(c.document_id, c.score) for c in only_vector] == [("B", 0.9), ("A", pytest.approx(0.1))]
    # Negative cosine counts as 0, above 1 as 1, NaN as 0: the fused score stays within 0..1.
    clamped = fuse_candidates(lists, {"A": cand("A", -0.4), "B": cand("B", 1.7)}, hybrid_vector_weight=0.5)
    assert {c.document_id: c.score for c in clamped} == {"A": 0.5, "B": 0.5}
    nan = fuse_candidates([ranked("orig", ["A"], original=True)], {"A": cand("A", float("nan"))},
                          hybrid_vector_weight=0.5)
    assert nan[0].score == 0.5 and not math.isnan(nan[0].score)


def test_single_candidate_normalises_to_one():
    result = fuse_candidates([ranked("orig", ["A"], original=True)], {"A": cand("A", 0.6)},
                             hybrid_vector_weight=0.5)
    assert result[0].explain["fusion"]["rrf_normalised"] == 1.0
    assert result[0].score == pytest.approx(0.8)  # 0.5 * 1.0 + 0.5 * 0.6


def test_missing_candidate_is_a_wiring_error():
    with pytest.raises(ValueError, match="without a candidate"):
        fuse_candidates([ranked("orig", ["A", "B"], original=True)], {"A": cand("A")})


def test_min_max_normalise():
    assert min_max_normalise([]) == []
    assert min_max_normalise([2.0, 4.0, 3.0]) == [0.0, 1.0, 0.5]
    assert min_max_normalise([5.0, 5.0]) == [1.0, 1.0]
    assert min_max_normalise([0.0, 0.0]) == [0.0, 0.0]
    assert min_max_normalise([float("nan"), 1.0, 3.0]) == pytest.approx([0.0, 1 / 3, 1.0])


# --- linear score fusion ---------------------------------------------------------------------------------


def scored(name: str, items: list[tuple[str, float]], *, kind: ListKind, original: bool = True,
           weight: float | None = None) -> RankedList:
    return RankedList(name=name, kind=kind, items=[RankedItem(d, s) for d, s in items], is_original=original,
                      weight=weight)


def test_linear_fuse_hand_computed():
    # lexical: bm25 8, 4, 2 → 1.0, 0.5, 0.25; vector: cosines; v = 1.5, score = (lex + 1.5 vec) / 2.5.
    lists = [scored("original:lexical", [("a", 8.0), ("b", 4.0), ("c", 2.0)], kind="lexical"),
             scored("original:vector", [("b", 0.8), ("d", 0.6)], kind="vector")]
    cands = {d: cand(d, v) for d, v in {"a": 0.1, "b": 0.8, "c": 0.3, "d": 0.6}.items()}
    fused = linear_fuse(lists, cands, vector_weight=1.5)
    scores = {c.document_id: c.score for c in fused}
    assert scores == pytest.approx({"a": (1.0 + 0.15) / 2.5, "b": (0.5 + 1.2) / 2.5, "c": (0.25 + 0.45) / 2.5,
                                    "d": 0.9 / 2.5})
    assert [c.document_id for c in fused] == ["b", "a", "d", "c"]
    assert cands["a"].explain["fusion"]["lexical"] == 1.0 and cands["a"].lexical_score == 1.0
    # a is only in the lexical list, but its cosine to the query (computed for every candidate) counts.
    assert cands["a"].explain["fusion"]["vector"] == pytest.approx(0.1)


def test_linear_fuse_expansions_count_at_their_relative_weight():
    # original weight 2, expansion 1: an expansion's normalised score counts half.
    lists = [scored("original:lexical", [("a", 10.0)], kind="lexical"),
             scored("expansion1:lexical", [("b", 3.0)], kind="lexical", original=False),
             scored("expansion1:vector", [("c", 0.9)], kind="vector", original=False)]
    cands = {d: cand(d, 0.0) for d in "abc"}
    fused = {c.document_id: c for c in linear_fuse(lists, cands, vector_weight=1.0)}
    assert fused["a"].score == pytest.approx(0.5)
    assert fused["b"].score == pytest.approx(0.25)  # (0.5 * 1.0 + 0) / 2
    assert fused["c"].score == pytest.approx(0.225)  # (0 + 0.5 * 0.9) / 2


def test_linear_fuse_edge_cases():
    cands = {"a": cand("a", -0.4), "b": cand("b", float("nan"))}
    lists = [scored("original:lexical", [("a", 0.0), ("b", 0.0)], kind="lexical"),
             scored("dropped:vector", [("a", 0.9)], kind="vector", weight=0.0)]
    fused = linear_fuse(lists, cands, vector_weight=1.5)
    # No positive BM25 and no usable cosine: scores are 0, never negative or NaN; weight 0 adds nothing.
    assert [c.score for c in fused] == [0.0, 0.0]
    assert linear_fuse([], cands) == []
    with pytest.raises(ValueError, match="without a candidate"):
        linear_fuse([scored("original:vector", [("zzz", 0.5)], kind="vector")], cands)
    with pytest.raises(ValueError, match="vector weight"):
        linear_fuse(lists, cands, vector_weight=-1)


def test_linear_fuse_takes_a_documents_best_chunk_and_records_ranks():
    lists = [scored("original:lexical", [("a", 4.0), ("b", 3.0), ("a", 1.0)], kind="lexical"),
             scored("original:vector", [("b", 0.2), ("a", 0.5), ("b", 0.6)], kind="vector")]
    cands = {"a": cand("a", 0.0), "b": cand("b", 0.0)}
    fused = {c.document_id: c for c in linear_fuse(lists, cands, vector_weight=1.0)}
    assert fused["a"].score == pytest.approx((1.0 + 0.5) / 2)
    assert fused["b"].score == pytest.approx((0.75 + 0.6) / 2)
    assert fused["b"].explain["fusion"]["ranks"] == {"original:lexical": 2, "original:vector": 1}
