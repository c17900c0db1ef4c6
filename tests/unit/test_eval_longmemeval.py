"""LongMemEval: loading the public file format, session-level metrics, and how the report shows them."""

from __future__ import annotations

import copy
import io
import json
import math
from datetime import UTC, datetime
from pathlib import Path

import pytest
from rich.console import Console

from cems_cli.evaluation import metrics
from cems_cli.evaluation.datasets import DatasetError, Unit
from cems_cli.evaluation.indexing import unit_to_record
from cems_cli.evaluation.longmemeval import load_longmemeval, parse_longmemeval_date
from cems_cli.evaluation.report import compare_rows, render_results
from cems_cli.evaluation.runner import unscored_questions
from tests.support.paths import TESTS

MINI = TESTS / "fixtures" / "longmemeval" / "longmemeval-mini.json"


def _entries() -> list[dict]:
    return json.loads(MINI.read_text(encoding="utf-8"))


def _write(tmp_path: Path, data) -> Path:
    path = tmp_path / "lme.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


# Loading ----------------------------------------------------------------------------------------------------

def test_every_turn_is_a_unit_of_its_own_question_and_session():
    bench = load_longmemeval(MINI)
    assert bench.name == "longmemeval-mini"
    corpora = bench.units_by_corpus()
    assert list(corpora) == ["lme_user_01", "lme_asst_01", "lme_multi_01", "lme_temp_01", "lme_user_02_abs"]
    assert [u.doc_id for u in corpora["lme_user_01"]] == [
        "lme_user_01:sharegpt_pasta_0:1", "lme_user_01:sharegpt_pasta_0:2",
        "lme_user_01:answer_lme_user_01_1:1", "lme_user_01:answer_lme_user_01_1:2",
        "lme_user_01:answer_lme_user_01_1:3",
        "lme_user_01:ultrachat_kyoto_2:1", "lme_user_01:ultrachat_kyoto_2:2"]
    puppy = corpora["lme_user_01"][2]
    assert puppy.text.startswith("I just adopted a corgi puppy")
    assert puppy.session_id == "lme_user_01:answer_lme_user_01_1" and puppy.speaker == "user"
    assert puppy.timestamp == datetime(2023, 5, 20, 2, 21) and puppy.timestamp_raw == "2023/05/20 (Sat) 02:21"
    # The same session in two haystacks is two sessions: each question is its own memory space.
    assert corpora["lme_user_02_abs"][0].session_id == "lme_user_02_abs:sharegpt_pasta_0"
    assert len(bench.units) == 29


def test_questions_evidence_and_abstention():
    bench = load_longmemeval(MINI)
    first = bench.questions[0]
    assert (first.qid, first.category, first.corpus_id, first.answer) == (
        "lme_user_01", "single-session-user", "lme_user_01", "A corgi")
    assert first.asked_at == datetime(2023, 6, 1, 9, 15, tzinfo=UTC)
    assert bench.session_gold["lme_multi_01"] == ("lme_multi_01:answer_lme_multi_01_1",
                                                  "lme_multi_01:answer_lme_multi_01_2")
    assert bench.qrels["lme_multi_01"] == ("lme_multi_01:answer_lme_multi_01_1:1",
                                           "lme_multi_01:answer_lme_multi_01_2:1")
    assert bench.qrels["lme_asst_01"] == ("lme_asst_01:answer_lme_asst_01_1:2",)  # the assistant's turn
    assert "lme_temp_01" not in bench.qrels  # no has_answer flags: scored at session level only
    # The abstention question names an answer session, but is not scored.
    assert "lme_user_02_abs" not in bench.session_gold and "lme_user_02_abs" not in bench.qrels
    assert [q.qid for q in bench.scored_questions()] == ["lme_user_01", "lme_asst_01", "lme_multi_01",
                                                        "lme_temp_01"]
    assert {q.category for q in bench.scored_questions()} == {
        "single-session-user", "single-session-assistant", "multi-session", "temporal-reasoning"}


def test_absent_optional_keys_and_odd_sessions_are_tolerated(tmp_path):
    entry = {
        "question_id": "q1", "question_type": "knowledge-update", "question": "Where do I work now?",
        "haystack_session_ids": ["s1", "s2", "s1", "s3"],
        "haystack_sessions": [
            [{"role": "user", "content": "I work at Acme."}, {"role": "assistant", "content": "  "},
             {"role": "user", "content": "It is a bakery."}],
            [{"role": "user", "content": "I just started at Globex!"}],
            [{"role": "user", "content": "A repeated session is stored once."}],
            [{"content": "A turn without a role."}],
        ],
        "answer_session_ids": ["s2", "s1", "s2", "not-in-haystack"],
    }
    bench = load_longmemeval(_write(tmp_path, [entry]))
    assert [u.doc_id for u in bench.units] == ["q1:s1:1", "q1:s1:3", "q1:s2:1", "q1:s3:1"]  # blank turn 2
    assert all(u.timestamp is None for u in bench.units) and bench.units[3].speaker is None
    question = bench.questions[0]
    assert question.asked_at is None and question.answer is None
    assert bench.session_gold == {"q1": ("q1:s2", "q1:s1")}
    assert bench.qrels == {}
    assert metrics.SESSION_METRIC_NAMES[:3] == tuple(bench.score("q1", ["q1:s2:1"]))  # no turn level


def test_an_integer_answer_is_text(tmp_path):
    entry = {**_entries()[0], "answer": 3}
    assert load_longmemeval(_write(tmp_path, [entry])).questions[0].answer == "3"


def test_a_turn_over_the_memory_size_limit_is_cut_not_refused():
    # Chat answers can be long; one over CEMS_MAX_MEMORY_BYTES must not refuse the whole haystack's import.
    unit = Unit(corpus_id="q", doc_id="q:s:1", text="word " * 5000, session_id="q:s", speaker="assistant")
    content = unit_to_record(unit, None, None, 4096)["content"]
    assert len(content.encode("utf-8")) <= 4096
    assert content.startswith("assistant: word word") and content.endswith("over CEMS_MAX_MEMORY_BYTES]")
    assert unit_to_record(unit, None)["content"] == "assistant: " + unit.text.strip()


def test_longmemeval_dates():
    assert parse_longmemeval_date("2023/05/20 (Sat) 02:21", "x") == datetime(2023, 5, 20, 2, 21)
    assert parse_longmemeval_date("2023/05/20  (Sat)  14:05", "x") == datetime(2023, 5, 20, 14, 5)
    assert parse_longmemeval_date("2023/05/20", "x") == datetime(2023, 5, 20)
    for bad in ("20 May 2023", "2023/13/01 (Mon) 10:00", "2023/05/20 (Sat) 25:00", ""):
        with pytest.raises(DatasetError, match="x: not a date like"):
            parse_longmemeval_date(bad, "x")


def _without(key: str) -> list[dict]:
    entries = copy.deepcopy(_entries())
    del entries[1][key]
    return entries


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("[{not json", "lme.json: not valid JSON"),
        ({"question_id": "q1"}, "lme.json: not a LongMemEval file (expected a JSON list of questions)"),
        (["not an object"], "lme.json entry 1: expected a JSON object"),
        (_without("haystack_sessions"), "lme.json entry 2 (lme_asst_01): missing 'haystack_sessions'"),
        (_without("question_type"), "entry 2 (lme_asst_01): missing 'question_type'"),
        ([{**_entries()[0], "haystack_session_ids": ["only-one"]}], "1 haystack_session_ids for 3"),
        ([{**_entries()[0], "haystack_dates": ["2023/05/20 (Sat) 02:21"]}], "one date per session"),
        ([{**_entries()[0], "haystack_dates": ["yesterday", None, None]}],
         "entry 1 (lme_user_01) session 1 date: not a date like"),
        ([{**_entries()[0], "question_date": "soon"}], "question_date: not a date like"),
        ([{**_entries()[0], "haystack_sessions": [[{"role": "user"}], [], []]}],
         "session 1 turn 1: expected an object with a 'content' string"),
        ([{**_entries()[0], "answer_session_ids": "answer_lme_user_01_1"}], "'answer_session_ids' must be"),
        ([_entries()[0], _entries()[0]], "entry 2 (lme_user_01): question_id 'lme_user_01' appears twice"),
    ],
)
def test_bad_files_are_one_line_errors_naming_the_entry(tmp_path, data, message):
    with pytest.raises(DatasetError) as caught:
        load_longmemeval(_write(tmp_path, data))
    assert message in str(caught.value) and "\n" not in str(caught.value)


# Metrics ----------------------------------------------------------------------------------------------------

SESSION_OF = {"a1": "A", "a2": "A", "a3": "A", "b1": "B", "c1": "C", "d1": "D", "e1": "E", "f1": "F"}
# Sessions in rank order: A A B C A D E F → distinct: A B C D E F.
RANKED = ["a1", "a2", "b1", "c1", "a3", "d1", "e1", "f1"]


def test_session_metrics_count_a_session_once_at_its_first_rank():
    row = metrics.session_metrics(RANKED, SESSION_OF, ["B", "E"], ["b1", "x9"])
    assert list(row) == list(metrics.SESSION_METRIC_NAMES)
    assert row["recall_any@5"] == 1.0  # B is the 2nd distinct session
    # E is the 7th turn but the 5th distinct session: within the top 5 sessions.
    assert row["recall_all@5"] == 1.0
    # Gold sessions at distinct ranks 2 and 5; the ideal has them at ranks 1 and 2.
    expected = (1 / math.log2(3) + 1 / math.log2(6)) / (1 + 1 / math.log2(3))
    assert row["ndcg@10"] == pytest.approx(expected, abs=1e-12)
    assert row["ndcg@10"] == pytest.approx(0.624051, abs=1e-6)
    # Turn level: b1 is found, x9 never is.
    assert (row["turn_recall@5"], row["turn_recall@10"]) == (0.5, 0.5)


def test_two_turns_of_one_gold_session_count_once():
    row = metrics.session_metrics(["a1", "a2", "b1"], SESSION_OF, ["A"])
    assert (row["recall_any@5"], row["recall_all@5"], row["ndcg@10"]) == (1.0, 1.0, 1.0)  # not 1 + 1/log2(3)
    late = metrics.session_metrics(["c1", "c1", "a1", "a2", "a3", "d1"], SESSION_OF, ["A", "D"])
    # Distinct sessions C A D: A at rank 2, D at rank 3.
    assert late["recall_all@5"] == 1.0
    assert late["ndcg@10"] == pytest.approx((1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3)))
    assert "turn_recall@5" not in late  # no evidence turns given


def test_sessions_beyond_the_fifth_and_unknown_docs():
    # Distinct sessions A B C D E F: F is 6th, so recall_all@5 misses it while recall_any@5 finds B.
    row = metrics.session_metrics(RANKED + ["stranger"], SESSION_OF, ["B", "F"])
    assert (row["recall_any@5"], row["recall_all@5"]) == (1.0, 0.0)
    assert metrics.session_metrics([], SESSION_OF, ["A"])["ndcg@10"] == 0.0


def test_a_metric_some_questions_lack_is_averaged_over_the_others():
    full = metrics.session_metrics(["b1"], SESSION_OF, ["B"], ["b1"])
    sessions_only = metrics.session_metrics(["a1"], SESSION_OF, ["B"])
    summary = metrics.summarise([("multi-session", full), ("temporal-reasoning", sessions_only)],
                                metrics.SESSION_METRIC_NAMES)
    overall = summary["overall"]
    assert overall["n"] == 2 and overall["recall_any@5"] == 0.5
    assert overall["turn_recall@5"] == 1.0  # over the one question that marks its evidence turns
    assert summary["by_category"]["temporal-reasoning"]["turn_recall@10"] is None


def test_the_benchmark_scores_through_its_sessions():
    bench = load_longmemeval(MINI)
    ranked = ["lme_user_01:answer_lme_user_01_1:2", "lme_user_01:answer_lme_user_01_1:1",
              "lme_user_01:sharegpt_pasta_0:1"]
    row = bench.score("lme_user_01", ranked)
    assert row == {"recall_any@5": 1.0, "recall_all@5": 1.0, "ndcg@10": 1.0, "turn_recall@5": 1.0,
                   "turn_recall@10": 1.0}
    assert bench.gold("lme_user_01") == {"gold": ["lme_user_01:answer_lme_user_01_1:1"],
                                         "gold_sessions": ["lme_user_01:answer_lme_user_01_1"]}


def test_abstention_questions_are_counted_per_type():
    bench = load_longmemeval(MINI)
    scored = bench.scored_questions()
    everything = {"n": 1, "by_category": {"single-session-user": 1}}
    assert unscored_questions(bench, scored, limited=False) == everything
    # The first two scored questions come before the abstention question in the file.
    assert unscored_questions(bench, scored[:2], limited=True) == {"n": 0, "by_category": {}}


# Report -----------------------------------------------------------------------------------------------------

def _result(overall: dict, temporal: dict) -> dict:
    return {"overall": overall, "by_category": {"temporal-reasoning": temporal},
            "latency_ms": {"p50": 12.0, "p95": 30.0},
            "config": {"benchmark": "longmemeval-mini", "mode": "hybrid", "limit": 10,
                       "unscored": {"n": 1, "by_category": {"single-session-user": 1}},
                       "questions_per_metric": {"turn_recall@5": 3, "turn_recall@10": 3}}}


ROW = {"n": 4, "recall_any@5": 0.75, "recall_all@5": 0.5, "ndcg@10": 0.6, "turn_recall@5": 0.5,
       "turn_recall@10": 1.0}
TEMPORAL = {"n": 1, "recall_any@5": 1.0, "recall_all@5": 0.0, "ndcg@10": 0.5, "turn_recall@5": None,
            "turn_recall@10": None}


def test_the_table_shows_the_session_metrics_and_what_is_not_scored():
    out = io.StringIO()
    render_results(_result(ROW, TEMPORAL), Console(file=out, width=200))
    text = out.getvalue()
    for header in ("any@5", "all@5", "nDCG@10", "turn R@5", "turn R@10", "temporal-reasoning", "overall"):
        assert header in text
    assert "0.750" in text and "—" in text  # the temporal row has no turn level
    assert "p50 12.0 ms" in text
    assert "not scored, no evidence (abstention): 1 question — 1 single-session-user" in text
    assert "turn R@5, turn R@10: over 3 questions (the others mark no evidence turn)" in text


def test_compare_uses_the_metrics_the_files_report():
    better = {**ROW, "recall_any@5": 1.0}
    rows = {(r.section, r.metric): r for r in compare_rows(_result(ROW, TEMPORAL), _result(better, TEMPORAL))}
    assert rows[("overall", "recall_any@5")].delta == pytest.approx(0.25)
    assert rows[("temporal-reasoning", "turn_recall@5")].delta is None
    assert ("overall", "recall@5") not in rows and ("latency_ms", "p95") in rows
