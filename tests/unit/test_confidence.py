"""The confidence model: a probability in 0..1 that rises with every kind of evidence."""

from __future__ import annotations

import math

import pytest

from cems_cli.retrieval.confidence import CAPTURED_PRIOR, confidence


def test_more_evidence_of_any_kind_means_more_confidence():
    base = {"cosine": 0.4, "lexical": 0.3, "relative": 0.5}
    at_base = confidence(**base)
    for name in base:
        assert confidence(**{**base, name: base[name] + 0.3}) > at_base, name
    assert 0.0 < confidence(cosine=0, lexical=0, relative=0) < confidence(cosine=1, lexical=1, relative=1) < 1


def test_a_best_result_that_matches_is_far_likelier_than_one_that_only_comes_first():
    # "xyzzy plugh frobnicate": MiniLM still puts some memory at cosine ~0.23, and it is the best result.
    nothing = confidence(cosine=0.23, lexical=0.0, relative=1.0)
    assert nothing < 0.2
    assert confidence(cosine=0.75, lexical=1.0, relative=1.0) > 3 * nothing
    assert confidence(cosine=0.1, lexical=0.0, relative=0.2) < 0.01  # far below the best result


def test_a_rerank_score_is_half_of_the_judgement():
    without = confidence(cosine=0.5, lexical=0.5, relative=1.0)
    assert confidence(cosine=0.5, lexical=0.5, relative=1.0, rerank=1.0) == pytest.approx((without + 1) / 2)
    assert confidence(cosine=0.5, lexical=0.5, relative=1.0, rerank=0.0) == pytest.approx(without / 2)


def test_a_captured_memory_is_less_certain_than_one_the_user_wrote():
    written = confidence(cosine=0.6, lexical=0.6, relative=1.0)
    assert confidence(cosine=0.6, lexical=0.6, relative=1.0, captured=True) == pytest.approx(
        written * CAPTURED_PRIOR)


def test_out_of_range_and_non_finite_inputs_are_clamped():
    top = confidence(cosine=1, lexical=1, relative=1)
    assert confidence(cosine=7, lexical=2, relative=1.5) == pytest.approx(top)
    assert confidence(cosine=math.nan, lexical=-1, relative=math.inf, rerank=math.nan) == pytest.approx(
        confidence(cosine=0, lexical=0, relative=0))
