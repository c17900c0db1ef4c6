"""Token-budgeted assembly: greedy, MMR with one-per-session first, and the access-count priority."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cems_cli.retrieval.assemble import (
    Assembly,
    assemble_diverse,
    assemble_greedy,
    jaccard,
    session_from_tags,
)
from cems_cli.retrieval.types import Candidate

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def words(text: str) -> int:
    return len(text.split())


def cand(doc_id: str, content: str, score: float, session: str | None = None) -> Candidate:
    tags = [f"session:{session}"] if session else ["misc"]
    return Candidate(document_id=doc_id, chunk_id=f"{doc_id}-c0", chunk_index=0, content=content,
                     category="general", created_at=T0, score=score, tags=tags)


def ids(assembly: Assembly) -> list[str]:
    return [c.document_id for c in assembly.selected]


def test_greedy_skips_what_does_not_fit_and_continues():
    cands = [cand("a", "one two three four five", 0.9), cand("b", "w " * 8, 0.8),
             cand("c", "x y z", 0.7), cand("d", "p q r s", 0.6)]
    result = assemble_greedy(cands, words, budget=12)
    assert ids(result) == ["a", "c", "d"]  # 5 + 3 + 4 = 12; b (8) would make 13
    assert result.tokens == 12
    assert cands[2].explain["assembly"] == {"tokens": 3, "phase": "greedy"}
    assert "assembly" not in cands[1].explain


def test_greedy_limits_and_empty():
    cands = [cand("a", "one two three four five", 0.9), cand("b", "w " * 8, 0.8), cand("c", "x y z", 0.7)]
    assert ids(assemble_greedy(cands, words, budget=12, max_results=2)) == ["a", "c"]
    assert ids(assemble_greedy(cands, words, budget=2)) == []
    assert assemble_greedy([], words) == Assembly([], 0)


def test_session_from_tags():
    assert session_from_tags(cand("a", "", 0.0, session="s1")) == "session:s1"
    assert session_from_tags(cand("a", "", 0.0)) is None


def test_jaccard():
    assert jaccard(frozenset("ab"), frozenset("bc")) == pytest.approx(1 / 3)
    assert jaccard(frozenset(), frozenset()) == 0.0


def _doctor_visits() -> list[Candidate]:
    return [
        cand("A", "doctor visit cardiology appointment monday", 1.0, "s1"),
        cand("B", "doctor visit cardiology appointment tuesday", 0.9, "s1"),  # near-duplicate of A
        cand("E", "gym workout routine", 0.6, "s1"),
        cand("C", "dentist checkup cleaning teeth", 0.5, "s2"),
        cand("D", "physical therapy knee session", 0.2, "s3"),
    ]


def test_diverse_covers_every_session_before_the_runner_ups():
    # Relevance = (score - 0.2) / 0.8: A 1.0, B 0.875, E 0.5, C 0.375, D 0.0; only A and B share words.
    # Phase 1: A (0.6*1.0 = 0.6); then the best of s2/s3: C (0.6*0.375 = 0.225) over D (0.0); then D.
    # Phase 2: E (0.6*0.5 = 0.3) beats B (0.6*0.875 - 0.4*Jaccard(A,B)=4/6 → 0.525 - 0.266667 = 0.258333).
    cands = _doctor_visits()
    result = assemble_diverse(cands, words, budget=100, session_floor=0.0)
    assert ids(result) == ["A", "C", "D", "E", "B"]
    mmr = {c.document_id: c.explain["assembly"]["mmr"] for c in cands}
    assert mmr == pytest.approx({"A": 0.6, "C": 0.225, "D": 0.0, "E": 0.3, "B": 0.258333}, abs=1e-6)
    assert [c.explain["assembly"]["phase"] for c in result.selected] == [1, 1, 1, 2, 2]
    assert result.tokens == 5 + 4 + 4 + 3 + 5


def test_diverse_under_a_tight_budget_beats_greedy_on_coverage():
    # Budget 13: MMR takes A (5) + C (4) + D (4) = 13, one per session; greedy takes A, B, E: all from s1.
    cands = _doctor_visits()
    assert ids(assemble_diverse(cands, words, budget=13, session_floor=0.0)) == ["A", "C", "D"]
    assert ids(assemble_greedy(_doctor_visits(), words, budget=13)) == ["A", "B", "E"]


def test_diverse_skips_oversized_and_respects_max_results():
    cands = [cand("big", "w " * 50, 1.0, "s1"), cand("small", "tiny note", 0.5, "s2"),
             cand("other", "another small note", 0.4, "s1")]
    assert ids(assemble_diverse(cands, words, budget=10)) == ["small", "other"]
    assert ids(assemble_diverse(_doctor_visits(), words, budget=100, max_results=2, session_floor=0.0)) == [
        "A", "C"]


def test_diverse_without_sessions_is_plain_mmr():
    # No session tags: every candidate is its own session, so phase 1 is MMR over everything.
    cands = [cand("A", "alpha beta gamma", 0.9), cand("B", "alpha beta gamma", 0.85), cand("C", "delta", 0.1)]
    # A first (0.6). B: 0.6*0.9375 - 0.4*1.0 = 0.1625; C: 0.0 → B. Then C.
    assert ids(assemble_diverse(cands, words, budget=100)) == ["A", "B", "C"]
    assert cands[1].explain["assembly"]["mmr"] == pytest.approx(0.1625)


def test_diverse_custom_session_key_and_lambda():
    cands = [cand("A", "alpha beta", 0.9), cand("B", "alpha beta", 0.8), cand("C", "gamma", 0.1)]
    by_first_letter = {"A": "x", "B": "x", "C": "y"}
    result = assemble_diverse(cands, words, budget=100, session_of=lambda c: by_first_letter[c.document_id],
                              mmr_lambda=1.0, session_floor=0.0)
    assert ids(result) == ["A", "C", "B"]  # session y is covered before the second x


def test_diverse_empty_and_equal_scores():
    assert assemble_diverse([], words) == Assembly([], 0)
    cands = [cand("A", "one", 0.5, "s1"), cand("B", "two", 0.5, "s2")]
    assert ids(assemble_diverse(cands, words)) == ["A", "B"]  # all relevance 1.0; tie → earlier


def test_diverse_covers_only_sessions_with_a_relevant_memory():
    # Default floor 0.8: only A (relevance 1.0) qualifies for phase 1; C (0.375) and D (0.0) wait for phase 2,
    # where plain MMR takes E (0.3), then B (0.258333), C (0.225 - its Jaccard with nothing = 0.225), D.
    result = assemble_diverse(_doctor_visits(), words, budget=100)
    assert ids(result) == ["A", "E", "B", "C", "D"]
    assert [c.explain["assembly"]["phase"] for c in result.selected] == [1, 2, 2, 2, 2]
    # A floor of 0.3 lets session s2 in through C (0.375), not s3 through D.
    result = assemble_diverse(_doctor_visits(), words, budget=100, session_floor=0.3)
    assert ids(result)[:2] == ["A", "C"]
    assert [c.explain["assembly"]["phase"] for c in result.selected][:3] == [1, 1, 2]
