"""Strong-signal skip: top ≥ 0.85 and top − second ≥ 0.15 on absolute (saturated) BM25 scores."""

from __future__ import annotations

import pytest

from cems_cli.retrieval.strong_signal import StrongSignal, detect_strong_signal, saturate


def test_no_probe_hits_never_skips():
    assert detect_strong_signal([]) == StrongSignal(skip_expansion=False, top=0.0, second=0.0, gap=0.0)


def test_clear_winner_skips():
    signal = detect_strong_signal([0.9, 0.7])
    assert signal.skip_expansion
    assert signal.gap == pytest.approx(0.2)


def test_close_runner_up_does_not_skip():
    assert not detect_strong_signal([0.9, 0.8]).skip_expansion  # gap 0.10


def test_weak_top_does_not_skip():
    assert not detect_strong_signal([0.84, 0.1]).skip_expansion  # top below 0.85


def test_boundaries_are_inclusive_despite_float_error():
    # 0.95 - 0.80 is 0.1499999999999999 in binary floating point; the spec says "≥ 0.15".
    assert 0.95 - 0.80 < 0.15
    assert detect_strong_signal([0.95, 0.80]).skip_expansion
    assert detect_strong_signal([0.85, 0.70]).skip_expansion
    assert not detect_strong_signal([0.8499, 0.0]).skip_expansion


def test_lone_hit_is_compared_with_nothing():
    signal = detect_strong_signal([0.9])
    assert (signal.skip_expansion, signal.second, signal.gap) == (True, 0.0, 0.9)


def test_order_and_nan_do_not_matter():
    signal = detect_strong_signal([0.3, float("nan"), 0.92, 0.5])
    assert (signal.top, signal.second) == (0.92, 0.5)
    assert signal.skip_expansion  # gap 0.42


def test_custom_threshold_and_gap():
    assert not detect_strong_signal([0.9, 0.7], threshold=0.95).skip_expansion
    assert not detect_strong_signal([0.9, 0.7], min_gap=0.25).skip_expansion
    assert detect_strong_signal([0.6, 0.1], threshold=0.5, min_gap=0.5).skip_expansion


def test_saturate_maps_raw_scores_onto_0_1():
    assert saturate(0.0) == 0.0
    assert saturate(1.0) == 0.5
    assert saturate(9.0) == pytest.approx(0.9)
    assert saturate(-9.0) == pytest.approx(0.9)  # SQLite FTS5 bm25 is negative
    assert saturate(0.9, scale=0.1) == pytest.approx(0.9)  # calibrated for a smaller raw range
    assert saturate(float("inf")) == 0.0
    with pytest.raises(ValueError):
        saturate(1.0, scale=0.0)


def test_saturated_probe_end_to_end():
    # -12 → 12/13 = 0.923077, -3 → 3/4 = 0.75: gap 0.173077 → skip.
    strong = detect_strong_signal([saturate(-12.0), saturate(-3.0)])
    assert strong.skip_expansion
    assert strong.gap == pytest.approx(0.173077, abs=1e-6)
    # -5 → 0.833333: under 0.85 however far the runner-up is.
    assert not detect_strong_signal([saturate(-5.0), saturate(-0.1)]).skip_expansion
