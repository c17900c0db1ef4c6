"""Session context: neighbours and the session's best memory lend part of their score."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cems_cli.retrieval.assemble import session_from_tags
from cems_cli.retrieval.neighbours import SessionPosition, apply_session_context
from cems_cli.retrieval.types import Candidate

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def cand(doc_id: str, score: float, tags: list[str] | None = None) -> Candidate:
    return Candidate(document_id=doc_id, chunk_id=f"{doc_id}-c", chunk_index=0, content=doc_id,
                     category="general", created_at=T0, score=score, tags=tags or [])


def test_the_session_is_the_first_session_tag():
    assert session_from_tags(cand("x", 0.1, ["doc:x", "session:s1", "session:s2"])) == "session:s1"
    assert session_from_tags(cand("y", 0.1, ["topic"])) is None


def test_hand_computed_scores():
    # s1 places: q=3 (0.9), a=4 (0.3), far=9 (0.5); s2: lone=0 (0.6); none: no session (0.41).
    cands = [cand("q", 0.9), cand("lone", 0.6), cand("far", 0.5), cand("none", 0.41), cand("a", 0.3)]
    positions = {"q": SessionPosition("s1", 3), "a": SessionPosition("s1", 4),
                 "far": SessionPosition("s1", 9), "lone": SessionPosition("s2", 0)}
    out = apply_session_context(cands, positions, window=2, neighbour_weight=0.5, session_weight=0.2)
    scores = {c.document_id: c.score for c in out}
    assert scores == pytest.approx({
        "q": 0.9,  # its neighbours matched less: context lends, never takes
        "a": (0.3 + 0.5 * 0.9 + 0.2 * 0.9) / 1.7,  # the answer right after the matching question rises
        "far": 0.5,  # 6 places away: no neighbour; the session's best alone would lower it
        "lone": 0.6,  # a session of one: exactly as if it had none
        "none": 0.41,  # no session: left as it is
    })
    assert [c.document_id for c in out] == ["q", "lone", "a", "far", "none"]
    assert cands[4].explain["session"] == {"session": "s1", "position": 4, "neighbour": 0.9,
                                           "session_best": 0.9, "score": pytest.approx(scores["a"])}
    assert "session" not in cands[3].explain


def test_window_and_zero_weights():
    positions = {"x": SessionPosition("s", 0), "y": SessionPosition("s", 3)}
    out = apply_session_context([cand("x", 0.8), cand("y", 0.2)], positions, window=3, neighbour_weight=1.0,
                                session_weight=0.0)
    assert {c.document_id: c.score for c in out} == pytest.approx({"x": 0.8, "y": 0.5})
    same = apply_session_context([cand("x", 0.8), cand("y", 0.2)], positions, window=0, neighbour_weight=0.0,
                                 session_weight=0.0)
    assert [c.score for c in same] == pytest.approx([0.8, 0.2])
    with pytest.raises(ValueError):
        apply_session_context([], {}, window=-1)


def test_a_captured_memory_keeps_the_score_a_hand_written_one_would_have():
    """Mixed stores: a memory tagged with its session and no matching neighbour ranks as if untagged."""
    captured, written = cand("captured", 0.6), cand("written", 0.6)
    out = apply_session_context([captured, written], {"captured": SessionPosition("s1", 0)})
    assert {c.document_id: c.score for c in out} == pytest.approx({"captured": 0.6, "written": 0.6})
