"""`cems eval --longmemeval` end to end on a small file in LongMemEval's format: one memory space per
question, session-level and turn-level metrics per question type, abstention counted, bad files refused."""

from __future__ import annotations

import json

import pytest

from tests.conftest import cems_subprocess
from tests.support.paths import TESTS

pytestmark = pytest.mark.real_model  # judges recall: the real model

MINI = TESTS / "fixtures" / "longmemeval" / "longmemeval-mini.json"
METRIC_KEYS = {"n", "recall_any@5", "recall_all@5", "ndcg@10", "turn_recall@5", "turn_recall@10"}
SESSION_KEYS = {"recall_any@5", "recall_all@5", "ndcg@10"}


def test_eval_longmemeval_end_to_end(env, tmp_path):
    scratch = tmp_path / "tmp"  # where the throwaway CEMS_HOME goes, to check it is removed
    scratch.mkdir()
    out, details = tmp_path / "r.json", tmp_path / "details.jsonl"
    run = cems_subprocess(["eval", "--longmemeval", str(MINI), "--out", str(out), "--details", str(details)],
                          {**env, "TMPDIR": str(scratch)}, timeout=900)
    assert run.returncode == 0, run.stderr.decode()
    assert "overall" in run.stdout.decode() and "p50" in run.stdout.decode()

    data = json.loads(out.read_text())
    assert set(data) == {"overall", "by_category", "latency_ms", "config"}
    assert set(data["overall"]) == METRIC_KEYS
    assert data["overall"]["n"] == 4  # the abstention question is not scored
    assert {name: row["n"] for name, row in data["by_category"].items()} == {
        "multi-session": 1, "single-session-assistant": 1, "single-session-user": 1, "temporal-reasoning": 1}
    for row in [data["overall"], *data["by_category"].values()]:
        assert set(row) == METRIC_KEYS
        assert all(0.0 <= row[k] <= 1.0 for k in SESSION_KEYS)
        assert row["recall_all@5"] <= row["recall_any@5"]
    # The temporal question marks no evidence turn: no turn level for it, the others' average for overall.
    assert data["by_category"]["temporal-reasoning"]["turn_recall@5"] is None
    assert 0.0 <= data["overall"]["turn_recall@5"] <= data["overall"]["turn_recall@10"] <= 1.0
    # Each haystack has at most 7 turns, so the top 10 holds every session of it.
    assert data["overall"]["recall_any@5"] >= 0.75
    latency = data["latency_ms"]
    assert set(latency) == {"p50", "p95"} and 0 < latency["p50"] <= latency["p95"]

    config = data["config"]
    assert (config["benchmark"], config["questions"], config["corpora"], config["units"]) == (
        "longmemeval-mini", 4, 4, 25)
    assert config["dated_questions"] == 4
    assert config["unscored"] == {"n": 1, "by_category": {"single-session-user": 1}}
    assert config["questions_per_metric"] == {"turn_recall@5": 3, "turn_recall@10": 3}

    rows = {row["qid"]: row for row in map(json.loads, details.read_text().splitlines())}
    assert list(rows) == ["lme_user_01", "lme_asst_01", "lme_multi_01", "lme_temp_01"]  # file order
    for qid, row in rows.items():
        assert row["ranked"] and all(doc.startswith(f"{qid}:") for doc in row["ranked"])  # isolation
    puppy = rows["lme_user_01"]  # "What breed is the puppy I adopted?" — said in so many words
    assert puppy["asked_at"] == "2023-06-01T09:15:00+00:00"  # at its question_date
    assert puppy["gold_sessions"] == ["lme_user_01:answer_lme_user_01_1"]
    assert puppy["metrics"]["recall_any@5"] == 1.0 and puppy["metrics"]["turn_recall@5"] == 1.0

    assert not list(scratch.glob("cems-eval-*"))  # the throwaway home is gone


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"question_id": "q1"}', "not a LongMemEval file (expected a JSON list of questions)"),
        (json.dumps([{k: v for k, v in json.loads(MINI.read_text())[0].items() if k != "haystack_sessions"}]),
         "entry 1 (lme_user_01): missing 'haystack_sessions'"),
        ("[{", "not valid JSON"),
    ],
)
def test_bad_longmemeval_files_are_one_line_errors(cli, tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    result = cli("eval", "--longmemeval", str(path))
    assert result.code == 2, (result.stdout, result.stderr)
    assert message in result.stderr and result.stderr.strip().count("\n") == 0, result.stderr


def test_longmemeval_is_one_benchmark_among_the_others(cli):
    result = cli("eval", "--longmemeval", str(MINI), "--locomo", "x.json")
    assert result.code == 2 and "give exactly one of" in result.stderr and "--longmemeval" in result.stderr
    missing = cli("eval", "--longmemeval", "/nonexistent/longmemeval_s.json")
    assert missing.code == 2 and "cannot read" in missing.stderr
