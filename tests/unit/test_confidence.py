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
    assert confidence(cosine=0.1, lexical=0.0, relative=0.2) < 0.06  # far below the best result


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


def test_the_confidence_rises_with_each_kind_of_evidence_alone_everywhere_in_its_range():
    steps = [i / 10 for i in range(11)]
    for name in ("cosine", "lexical", "relative"):
        for other in (0.0, 0.5, 1.0):
            base = {"cosine": other, "lexical": other, "relative": other}
            values = [confidence(**{**base, name: step}) for step in steps]
            assert values == sorted(values), (name, other)  # never less for more evidence
            # Strictly more wherever it can count: the relative rank weighs the evidence, so with none
            # (or ranked at nothing) the other inputs have nothing to weigh.
            assert values[-1] > values[0] or other == 0.0, (name, other)


def test_a_query_that_matches_nothing_is_under_the_floor():
    from cems_cli.defaults import RECALL_MIN_CONFIDENCE

    assert RECALL_MIN_CONFIDENCE > 0
    # "zebra quantum banana" / "xyzzy plugh frobnicate": no shared word, the best result at a MiniLM cosine
    # of ~0.25 (relative 1.0 since it comes first), written by hand or captured.
    for captured in (False, True):
        assert confidence(cosine=0.25, lexical=0.0, relative=1.0, captured=captured) < RECALL_MIN_CONFIDENCE
    # A memory that holds the question's words and meaning clears it.
    assert confidence(cosine=0.7, lexical=0.8, relative=1.0) > RECALL_MIN_CONFIDENCE


def test_the_breakdown_says_what_the_confidence_is_built_from():
    from cems_cli.retrieval.confidence import INTERCEPT, breakdown, logistic, weights

    built = breakdown(cosine=0.6, lexical=0.4, relative=0.9)
    terms = built["terms"]
    assert isinstance(terms, dict) and set(terms) == set(weights())
    assert built["intercept"] == INTERCEPT
    logit = INTERCEPT + sum(t["contribution"] for t in terms.values())
    assert logistic(logit) == pytest.approx(confidence(cosine=0.6, lexical=0.4, relative=0.9), abs=1e-3)
    assert "captured" in str(breakdown(cosine=0.6, lexical=0.4, relative=0.9, captured=True)["formula"])
