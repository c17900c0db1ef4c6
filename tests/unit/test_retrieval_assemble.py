"""Token-budgeted assembly (greedy) and the session a candidate belongs to."""

from __future__ import annotations

from datetime import UTC, datetime

from cems_cli.retrieval.assemble import Assembly, assemble_greedy, session_from_tags
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
