"""Score adjustments: priority, time decay, pinning, project scoping, source, clamping."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cems_cli.retrieval.adjust import (
    AdjustSettings,
    adjust_candidate,
    apply_adjustments,
    project_factor,
    time_decay,
    whole_days_between,
)
from cems_cli.retrieval.types import Candidate

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def cand(doc_id: str = "A", score: float = 0.5, *, age_days: float = 0, accessed_days: float | None = None,
         priority: float = 1.0, pinned: bool = False, source_ref: str | None = None) -> Candidate:
    return Candidate(
        document_id=doc_id, chunk_id=f"{doc_id}-c0", chunk_index=0, content=doc_id, category="general",
        created_at=NOW - timedelta(days=age_days),
        last_accessed=None if accessed_days is None else NOW - timedelta(days=accessed_days),
        priority=priority, pinned=pinned, source_ref=source_ref, score=score,
    )


def test_time_decay_values():
    assert time_decay(0) == 1.0
    assert time_decay(30) == pytest.approx(2 / 3)  # 1 / (1 + 0.5)
    assert time_decay(60) == 0.5
    assert time_decay(180) == 0.25


def test_decay_uses_created_at_when_never_accessed():
    c = cand(score=0.5, age_days=30)
    assert adjust_candidate(c, now=NOW) == pytest.approx(1 / 3)  # 0.5 * 2/3


def test_decay_prefers_last_accessed():
    c = cand(score=0.5, age_days=300, accessed_days=60)
    assert adjust_candidate(c, now=NOW) == pytest.approx(0.25)  # 0.5 * 0.5


def test_pinned_is_exempt_from_decay_and_boosted():
    c = cand(score=0.5, age_days=120, pinned=True)
    assert adjust_candidate(c, now=NOW) == pytest.approx(0.55)  # 0.5 * 1.0 * 1.1
    assert c.explain["adjust"]["time_decay"] == 1.0
    assert c.explain["adjust"]["pinned"] == 1.1


@pytest.mark.parametrize(("priority", "expected"), [(1.5, 0.6), (3.0, 0.8), (0.5, 0.4), (float("nan"), 0.4)])
def test_priority_is_clamped_to_one_two(priority, expected):
    # score 0.4, fresh: 0.4 * 1.5 = 0.6; 3.0 → 2.0 → 0.8; 0.5 → 1.0 → 0.4; NaN → 1.0
    assert adjust_candidate(cand(score=0.4, priority=priority), now=NOW) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("source_ref", "factor"),
    [
        ("project:acme/web", 1.3),
        ("project:acme/web:src/x.py", 1.3),
        ("project:ACME/Web", 1.3),
        ("project:acme/web-api", 0.5),  # prefix of another project's name: different project
        ("project:acme/web/sub", 0.5),
        ("project:acme", 0.5),
        (None, 0.9),
        ("", 0.9),
        ("repo:src/api.py:42", 0.9),
    ],
)
def test_project_factor(source_ref, factor):
    assert project_factor(source_ref, "project:acme/web") == factor
    assert project_factor(source_ref, "acme/web") == factor  # unprefixed current project is accepted


def test_project_factor_without_current_project():
    assert project_factor("project:acme/web", None) == 1.0
    assert project_factor(None, "  ") == 1.0


def test_all_factors_multiply_and_are_recorded():
    # 0.5 * priority 1.2 * decay(30) 2/3 * project 0.5 = 0.2
    c = cand(score=0.5, age_days=30, priority=1.2, source_ref="project:other/repo")
    assert adjust_candidate(c, now=NOW, current_project="project:acme/web") == pytest.approx(0.2)
    assert c.explain["adjust"] == {
        "base": 0.5, "priority": 1.2, "days_since_access": 30, "time_decay": pytest.approx(2 / 3),
        "pinned": 1.0, "project": 0.5, "source": 1.0, "unclamped": pytest.approx(0.2),
        "score": pytest.approx(0.2),
    }


def test_final_score_is_clamped():
    # 0.9 * 2.0 * 1.1 * 1.3 = 2.574 → 1.0
    high = cand(score=0.9, priority=2.0, pinned=True, source_ref="project:acme/web")
    assert adjust_candidate(high, now=NOW, current_project="acme/web") == 1.0
    assert high.explain["adjust"]["unclamped"] == pytest.approx(2.574)
    assert adjust_candidate(cand(score=-0.3), now=NOW) == 0.0
    assert adjust_candidate(cand(score=float("nan")), now=NOW) == 0.0


def test_whole_days_floor_future_and_naive_datetimes():
    assert whole_days_between(NOW - timedelta(hours=23), NOW) == 0
    assert whole_days_between(NOW - timedelta(days=1, hours=23), NOW) == 1
    assert whole_days_between(NOW + timedelta(days=5), NOW) == 0  # clock skew: not negative
    naive = datetime(2025, 1, 30, 12, 0)  # taken as UTC
    assert whole_days_between(naive, NOW) == 30


def test_custom_settings():
    settings = AdjustSettings(decay_days=30.0, no_project=1.0)
    c = cand(score=0.6, age_days=30)
    assert adjust_candidate(c, now=NOW, current_project="acme/web", settings=settings) == pytest.approx(0.3)


def test_apply_adjustments_reorders():
    fresh = cand("fresh", score=0.5, age_days=0)  # 0.5
    stale = cand("stale", score=0.6, age_days=120)  # 0.6 / 3 = 0.2
    pinned = cand("pinned", score=0.45, age_days=400, pinned=True)  # 0.495
    assert [c.document_id for c in apply_adjustments([stale, pinned, fresh], now=NOW)] == [
        "fresh", "pinned", "stale"]
    assert apply_adjustments([], now=NOW) == []


def test_the_agents_own_notes_weigh_between_the_users_words_and_captured_ones_unless_pinned():
    by = {}
    for source in ("manual", "mcp", "session", None):
        by[source] = cand(score=0.5)
        by[source].source = source
        adjust_candidate(by[source], now=NOW)
    assert by["mcp"].explain["adjust"]["source"] == pytest.approx(0.85)
    assert by["manual"].score == by[None].score > by["mcp"].score > by["session"].score
    pinned = cand(score=0.5, pinned=True)
    pinned.source = "mcp"
    adjust_candidate(pinned, now=NOW)
    assert pinned.explain["adjust"]["source"] == 1.0


def test_captured_memories_weigh_less_than_the_users_own_words_unless_pinned():
    written = cand(score=0.5)
    captured = cand(score=0.5)
    captured.source = "session"
    pinned_capture = cand(score=0.5, pinned=True)
    pinned_capture.source = "observer"
    assert adjust_candidate(written, now=NOW) == pytest.approx(0.5)
    assert adjust_candidate(captured, now=NOW) == pytest.approx(0.35)
    assert captured.explain["adjust"]["source"] == pytest.approx(0.7)
    assert pinned_capture.explain.get("adjust") is None
    adjust_candidate(pinned_capture, now=NOW)
    assert pinned_capture.explain["adjust"]["source"] == 1.0
