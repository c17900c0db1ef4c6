"""Relevance threshold, chunk-level dedup and semantic near-duplicate removal."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from cems_cli.retrieval.filtering import filter_by_threshold, semantic_dedup
from cems_cli.retrieval.types import Candidate

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def cand(doc_id: str, score: float, embedding=None, chunk: int = 0, vector_score: float = 0.0,
         content: str = "The tests run with pytest.") -> Candidate:
    return Candidate(document_id=doc_id, chunk_id=f"{doc_id}-c{chunk}", chunk_index=chunk, content=content,
                     category="general", created_at=T0, score=score, embedding=embedding,
                     vector_score=vector_score)


def ids(cands):
    return [c.chunk_id for c in cands]


def test_threshold_keeps_equal_and_above_in_order():
    cands = [cand("a", 0.5), cand("b", 0.29999), cand("c", 0.3), cand("d", float("nan"))]
    assert ids(filter_by_threshold(cands, 0.3)) == ["a-c0", "c-c0"]  # NaN never passes
    assert ids(filter_by_threshold(cands)) == ["a-c0", "b-c0", "c-c0"]  # the default: defaults.py
    assert ids(filter_by_threshold(cands, 0.0)) == ["a-c0", "b-c0", "c-c0"]
    assert filter_by_threshold([], 0.3) == []


def test_semantic_dedup_keeps_the_higher_score():
    s93 = math.sqrt(1 - 0.93**2)  # 0.367560
    s91 = math.sqrt(1 - 0.91**2)  # 0.414608
    a = cand("A", 0.8, [1.0, 0.0, 0.0])
    b = cand("B", 0.9, [0.93, s93, 0.0])  # cos(A, B) = 0.93 ≥ 0.92: A, the lower score, goes
    c = cand("C", 0.7, [0.91, -s91, 0.0])  # cos(C, B) = 0.8463 - 0.1524 = 0.6939: kept
    d = cand("D", 0.95, [0.0, 0.0, 5.0])  # unnormalised on purpose
    e = cand("E", 0.1)  # no embedding: always kept
    survivors = semantic_dedup([a, b, c, d, e])
    assert ids(survivors) == ["B-c0", "C-c0", "D-c0", "E-c0"]  # input order kept
    assert b.explain["dedup"] == [{"document_id": "A", "cosine": pytest.approx(0.93)}]
    assert "dedup" not in c.explain


def test_semantic_dedup_threshold_is_inclusive_and_ties_keep_the_first():
    # [0.6, 0.8]·[0.8, 0.6] = 0.96 exactly representable: cos ≥ 0.96 drops the second of equal scores.
    first, second = cand("X", 0.5, [0.6, 0.8]), cand("Y", 0.5, [0.8, 0.6])
    assert ids(semantic_dedup([first, second], threshold=0.96)) == ["X-c0"]
    assert ids(semantic_dedup([first, second], threshold=0.961)) == ["X-c0", "Y-c0"]


def test_semantic_dedup_keeps_alike_texts_that_state_other_values():
    # Embeddings put these 0.95 apart; they are two facts, and a question about staging needs the first.
    staging = cand("S", 0.8, [0.6, 0.8], content="Staging runs Kubernetes 1.29.")
    production = cand("P", 0.9, [0.6, 0.8], content="Production runs Kubernetes 1.27.")
    assert ids(semantic_dedup([staging, production])) == ["S-c0", "P-c0"]
    reworded = cand("R", 0.7, [0.6, 0.8], content="The staging cluster runs Kubernetes 1.29.")
    assert ids(semantic_dedup([staging, production, reworded])) == ["S-c0", "P-c0"]


def test_one_command_in_more_detail_is_one_line():
    """"tests run with `pytest`" and "… `pytest -v`" took two of three recall lines on the SWE-bench set;
    a command that changes a word ("`npm`" / "`pnpm`", another folder) is another value and stays."""
    line = "In project demo the tests run with `{}`."
    short = cand("A", 0.8, [0.6, 0.8], content=line.format("pytest"))
    longer = cand("B", 0.7, [0.6, 0.8], content=line.format("python3 -m pytest -v"))
    assert ids(semantic_dedup([short, longer])) == ["A-c0"]
    assert short.explain["dedup"] == [{"document_id": "B", "cosine": pytest.approx(1.0)}]
    # "./bin/test" is "bin/test"; the cosine still has to be that of near duplicates.
    dotted = cand("D", 0.8, [1.0, 0.0], content=line.format("./bin/test"))
    plain = cand("E", 0.7, [0.93, math.sqrt(1 - 0.93**2)], content=line.format("bin/test --verbose"))
    assert ids(semantic_dedup([dotted, plain])) == ["D-c0"]
    far = cand("F", 0.7, [0.85, math.sqrt(1 - 0.85**2)], content=line.format("bin/test --verbose"))
    assert ids(semantic_dedup([dotted, far])) == ["D-c0", "F-c0"]
    for other in ("pytest tests/integration", "tox"):
        pair = [cand("U", 0.8, [0.6, 0.8], content=line.format("pytest tests/unit")),
                cand("V", 0.7, [0.6, 0.8], content=line.format(other))]
        assert ids(semantic_dedup(pair)) == ["U-c0", "V-c0"]
    npm = cand("N", 0.8, [0.6, 0.8], content="We install with `npm`.")
    pnpm = cand("P", 0.7, [0.6, 0.8], content="We install with `pnpm`.")
    assert ids(semantic_dedup([npm, pnpm])) == ["N-c0", "P-c0"]
    # The words around the command must agree too.
    never = cand("X", 0.8, [0.6, 0.8], content="Never run `git push --force` on main.")
    always = cand("Y", 0.7, [0.6, 0.8], content="Always run `git push` on main.")
    assert ids(semantic_dedup([never, always])) == ["X-c0", "Y-c0"]


def test_semantic_dedup_degenerate_inputs():
    assert semantic_dedup([]) == []
    lone = [cand("A", 0.5, [1.0, 0.0])]
    assert semantic_dedup(lone) == lone
    # A zero vector has no direction and a vector of another size cannot be compared: both are kept.
    zero_and_mismatch = [cand("A", 0.5, [0.0, 0.0]), cand("B", 0.4, [1.0, 0.0]),
                         cand("C", 0.3, [1.0, 0.0, 0.0])]
    assert ids(semantic_dedup(zero_and_mismatch)) == ["A-c0", "B-c0", "C-c0"]


def test_a_candidate_needs_a_shared_word_or_a_close_enough_meaning():
    from datetime import UTC, datetime

    from cems_cli.defaults import MIN_SIMILARITY
    from cems_cli.retrieval.filtering import has_evidence
    from cems_cli.retrieval.types import Candidate

    def cand(lexical: float, cosine: float) -> Candidate:
        return Candidate(document_id="d", chunk_id="c", chunk_index=0, content="x", category="general",
                         created_at=datetime.now(UTC), lexical_score=lexical, vector_score=cosine)

    assert has_evidence(cand(0.01, 0.0))  # any shared word is evidence
    assert has_evidence(cand(0.0, MIN_SIMILARITY))
    assert not has_evidence(cand(0.0, MIN_SIMILARITY - 0.01))
    assert not has_evidence(cand(0.0, 0.25), min_similarity=0.3)


def test_the_search_dedups_deeper_than_the_results_it_shows(monkeypatch):
    """Dedup runs before the score adjustments, which can lift a candidate from far down the fused list:
    a twin at fused rank 19 of a recall of 3 must still be compared with the one at rank 4."""
    from types import SimpleNamespace

    from cems_cli.retrieval import pipeline

    line = "In project demo the tests run with `{}`."
    ranking = [cand(f"n{i}", 0.9 - i * 0.01, [0.0, 1.0, float(i)], content=f"note number {i}")
               for i in range(25)]
    ranking[4] = cand("short", 0.85, [1.0, 0.0, 0.0], content=line.format("pytest"))
    ranking[19] = cand("long", 0.7, [1.0, 0.0, 0.0], content=line.format("python3 -m pytest"))
    monkeypatch.setattr(pipeline, "_attach_embeddings", lambda conn, head, restricted=False: None)
    search = SimpleNamespace(
        options=SimpleNamespace(relevance_threshold=0.0, min_similarity=0.0, limit=3),
        ranking=ranking, deps=SimpleNamespace(conn=None),
        filters=SimpleNamespace(identity=SimpleNamespace(restricted=False)))
    pipeline._filter(search)
    kept = [c.document_id for c in search.ranking]
    assert "short" in kept and "long" not in kept and len(kept) == 24
