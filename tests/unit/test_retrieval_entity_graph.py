"""Entity links: a memory naming what a strong candidate names borrows part of its score, by hand."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cems_cli.retrieval.entity_graph import apply_entity_links
from cems_cli.retrieval.types import Candidate

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def cand(doc_id: str, score: float) -> Candidate:
    return Candidate(document_id=doc_id, chunk_id=f"{doc_id}-c", chunk_index=0, content=doc_id,
                     category="general", created_at=T0, score=score)


def test_hand_computed_scores():
    # The best result names redux (idf 3) and cartbutton.tsx (idf 1): "fix" names the file only.
    cands = [cand("best", 0.8), cand("other", 0.5), cand("fix", 0.2), cand("loose", 0.1)]
    entities = {"best": ["redux", "cartbutton.tsx"], "fix": ["cartbutton.tsx", "zustand"],
                "loose": ["kafka"], "other": []}
    idf = {"redux": 3.0, "cartbutton.tsx": 1.0, "zustand": 2.0, "kafka": 2.0}
    out = apply_entity_links(cands, entities, idf, weight=0.5, top=2)
    scores = {c.document_id: c.score for c in out}
    link = 0.8 * 1.0 / 4.0  # fused(best) x the share of best's entity mass that "fix" names
    assert scores == pytest.approx({"best": 0.8, "other": 0.5, "fix": 0.2 + 0.5 * link * 0.8, "loose": 0.1})
    explain = out[2].explain["entities"]
    assert (explain["via"], explain["shared"]) == ("best", ["cartbutton.tsx"])
    assert (explain["link"], explain["before"], explain["score"]) == pytest.approx((link, 0.2, scores["fix"]))
    assert "entities" not in out[0].explain and "entities" not in out[3].explain


def test_only_the_top_candidates_lend_and_nothing_is_ever_taken():
    cands = [cand("a", 0.9), cand("b", 0.7), cand("c", 0.3)]
    entities = {"a": ["x"], "b": ["y"], "c": ["x", "y"]}
    idf = {"x": 1.0, "y": 1.0}
    lent = {c.document_id: c.score for c in apply_entity_links(cands, entities, idf, weight=1.0, top=1)}
    assert lent["c"] == pytest.approx(0.3 + 0.9 * 0.7) and lent["b"] == 0.7  # b is not linked to a
    unchanged = [cand("a", 0.9), cand("b", 0.7)]
    assert [c.score for c in apply_entity_links(unchanged, {}, {}, weight=1.0)] == [0.9, 0.7]
    assert [c.score for c in apply_entity_links(unchanged, {"a": ["x"], "b": ["x"]}, {"x": 1.0},
                                                weight=0.0)] == [0.9, 0.7]
    with pytest.raises(ValueError):
        apply_entity_links(unchanged, {}, {}, weight=-1)
