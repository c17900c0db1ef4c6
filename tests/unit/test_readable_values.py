"""The compact `--explain` lines and `cems show`'s values, without a store."""

from __future__ import annotations

from cems_cli.cli.common import plain_value
from cems_cli.cli.explain import compact

EXPLAIN = {
    "fusion": {"method": "linear", "ranks": {"original:vector": 1, "original:lexical": 3}, "lists": {},
               "lexical": 0.25, "vector": 0.6123, "score": 0.43},
    "rerank": {"rank": 2, "fused": 0.43, "rerank": 0.9, "w_fused": 0.7, "w_rerank": 0.3, "score": 0.571},
    "adjust": {"base": 0.571, "priority": 1.0, "days_since_access": 3.2, "time_decay": 0.98, "pinned": 1.0,
               "project": 1.3, "source": 1.0,
               "unclamped": 0.727, "score": 0.727,
               "superseded_by": {"id": "1a2b3c4d-0000", "replaced": ["kafka"], "cosine": 0.8, "weight": 0.5}},
    "chunk_index": 0,
    "dedup": [{"document_id": "feedbeef-1111", "cosine": 0.97}],
    "novel_stage": {"weight": 0.5, "notes": "line one\nline two", "parts": [1, 2, 3]},
}


def test_compact_explain_is_one_line_per_factor_in_pipeline_order():
    lines = compact(EXPLAIN)
    assert [name for name, _ in lines] == ["fusion", "rerank", "adjust", "dedup", "novel_stage"]
    text = dict(lines)
    assert text["fusion"] == ("lexical 0.25, vector 0.612 → 0.43 "
                              "(ranks: original:vector #1, original:lexical #3)")
    assert text["rerank"] == "fused 0.43 × 0.7 + reranker 0.9 × 0.3 → 0.571"
    # Only the factors that moved the score; a superseded memory says by which.
    assert text["adjust"] == ("0.571 × time_decay 0.98 × project 1.3 → 0.727; "
                              "superseded by 1a2b3c4d (kafka), weight 0.5")
    assert text["dedup"] == "absorbed 1: feedbeef (cosine 0.97)"
    # A stage of unknown shape: its numbers, nested values counted, newlines folded: still one line.
    assert text["novel_stage"] == "weight 0.5, notes line one line two, parts (3)"
    assert all("\n" not in value for _, value in lines)


def test_a_known_stage_of_another_shape_falls_back_to_its_numbers():
    assert compact({"rerank": {"rank": 1, "fused": 0.4}}) == [("rerank", "rank 1, fused 0.4")]


def test_plain_values_are_what_a_person_reads():
    assert plain_value(["deploy", "staging"]) == "deploy, staging"
    assert plain_value(True) == "yes" and plain_value(False) == "no"
    assert plain_value(None) == plain_value("") == plain_value([]) == "—"
    assert plain_value(1.05) == "1.05" and plain_value({"a": None}) == "a: —"
