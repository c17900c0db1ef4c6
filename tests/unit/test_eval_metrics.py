"""Retrieval metrics against hand-computed values."""

from __future__ import annotations

import math

import pytest

from cems_cli.evaluation import metrics

RANKED = ["a", "x", "b", "y", "z", "c", "w", "v", "u", "t", "d"]
GOLD = ["a", "b", "c", "d"]


def test_recall_counts_gold_docs_within_the_cutoff():
    assert metrics.recall_at_k(RANKED, GOLD, 5) == 2 / 4
    assert metrics.recall_at_k(RANKED, GOLD, 10) == 3 / 4  # "d" is 11th
    assert metrics.recall_at_k(RANKED, GOLD, 11) == 1.0
    assert metrics.recall_at_k([], GOLD, 5) == 0.0


def test_hit_and_recall_all():
    assert metrics.hit_at_k(RANKED, GOLD, 1) == 1.0
    assert metrics.hit_at_k(RANKED, ["c"], 5) == 0.0
    assert metrics.hit_at_k(RANKED, ["c"], 6) == 1.0
    assert metrics.recall_all_at_k(RANKED, ["a", "b"], 3) == 1.0
    assert metrics.recall_all_at_k(RANKED, ["a", "b"], 2) == 0.0
    assert metrics.recall_all_at_k(RANKED, GOLD, 10) == 0.0


def test_ndcg_with_binary_gains():
    # Gold at ranks 1, 3, 6 within the top 10; the ideal puts all four gold docs at ranks 1-4.
    dcg = 1 / math.log2(2) + 1 / math.log2(4) + 1 / math.log2(7)
    ideal = 1 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4) + 1 / math.log2(5)
    assert metrics.ndcg_at_k(RANKED, GOLD, 10) == pytest.approx(dcg / ideal, abs=1e-12)
    assert metrics.ndcg_at_k(RANKED, GOLD, 10) == pytest.approx(0.7246263, abs=1e-6)
    assert metrics.ndcg_at_k(["a", "b"], ["a", "b"], 10) == 1.0
    assert metrics.ndcg_at_k(["x", "a"], ["a"], 10) == pytest.approx(1 / math.log2(3))


def test_ideal_dcg_is_capped_at_k_gold_docs():
    gold = [f"g{i}" for i in range(12)]
    assert metrics.ndcg_at_k(gold[:10], gold, 10) == 1.0
    assert metrics.recall_at_k(gold[:10], gold, 10) == pytest.approx(10 / 12)


def test_a_repeated_doc_counts_once_at_its_first_rank():
    ranked = ["a", "a", "a", "a", "a", "b"]
    assert metrics.recall_at_k(ranked, ["b"], 5) == 1.0  # deduplicated: "b" is 2nd
    assert metrics.ndcg_at_k(ranked, ["b"], 10) == pytest.approx(1 / math.log2(3))


def test_no_gold_is_an_error_not_a_zero():
    with pytest.raises(ValueError):
        metrics.recall_at_k(RANKED, [], 5)
    with pytest.raises(ValueError):
        metrics.ndcg_at_k(RANKED, [], 10)


def test_question_metrics_names_and_values():
    row = metrics.question_metrics(RANKED, GOLD)
    assert list(row) == list(metrics.METRIC_NAMES)
    assert row == {"recall@5": 0.5, "recall@10": 0.75, "ndcg@10": pytest.approx(0.7246263, abs=1e-6),
                   "hit@5": 1.0, "recall_all@5": 0.0}


def test_summarise_averages_overall_and_per_category():
    perfect = metrics.question_metrics(["a"], ["a"])
    miss = metrics.question_metrics(["x"], ["a"])
    half = metrics.question_metrics(["a", "x"], ["a", "b"])
    summary = metrics.summarise([("temporal", perfect), ("multi-hop", half), ("temporal", miss)])
    assert list(summary["by_category"]) == ["multi-hop", "temporal"]
    assert summary["by_category"]["temporal"] == {"n": 2, "recall@5": 0.5, "recall@10": 0.5, "ndcg@10": 0.5,
                                                  "hit@5": 0.5, "recall_all@5": 0.5}
    overall = summary["overall"]
    assert overall["n"] == 3
    assert overall["recall@5"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert overall["recall_all@5"] == pytest.approx(1 / 3)
    assert overall["ndcg@10"] == pytest.approx((1 + 1 / (1 + 1 / math.log2(3)) + 0) / 3)
    assert metrics.summarise([]) == {"overall": {"n": 0, **dict.fromkeys(metrics.METRIC_NAMES, 0.0)},
                                     "by_category": {}}


def test_percentile_interpolates_like_numpy():
    assert metrics.percentile([4, 1, 3, 2], 50) == 2.5
    assert metrics.percentile([1, 2, 3, 4], 95) == pytest.approx(3.85)
    assert metrics.percentile([1, 2, 3, 4], 0) == 1
    assert metrics.percentile([1, 2, 3, 4], 100) == 4
    assert metrics.percentile([7.5], 95) == 7.5
    assert metrics.percentile([], 50) == 0.0
    with pytest.raises(ValueError):
        metrics.percentile([1], 101)
