"""`cems eval --sessions DIR --data FOLDER` end to end on the small samples of the three formats under
tests/fixtures/agent-sessions/: each set converted, captured and asked in its own throwaway home, reported
apart and together, with BM25 over the raw turns beside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.real_model  # judges recall: the real model

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agent-sessions"
QUESTIONS = {
    "chef-chopsky": [
        {"qid": "chef/1", "project_cwd": "/cursor/chef-chopsky", "question": "Which port does the agent "
         "service listen on?", "facts": [["3001"]], "asked_at": "2025-09-20T09:00:00Z"},
        {"qid": "chef/2", "project_cwd": "/cursor/chef-chopsky", "question": "Write a haiku about autumn.",
         "facts": [], "category": "none", "asked_at": "2025-09-20T09:00:00Z"},
    ],
    "m-claude": [
        {"qid": "mac/1", "project_cwd": "/Users/[USER]", "question": "What is the tmux shortcut for Claude "
         "called?", "facts": [["Claude Tmux"]], "asked_at": "2026-01-17T09:00:00Z"},
    ],
    "swebench-mini": [
        {"qid": "sympy/1", "project_cwd": "/swebench/sympy", "question": "python -m pytest says No module "
         "named pytest: how do I run the sympy tests?", "facts": [["bin/test"]],
         "asked_at": "2025-11-20T09:00:00Z"},
    ],
}
SUMMARY_KEYS = {"questions", "facts", "fact_recall", "stored_recall", "all_facts", "noise", "injected",
                "tokens_per_question", "distractors", "latency_p50_ms", "lines_per_question", "sessions",
                "memories", "memories_per_session"}


def _questions(folder: Path, names: list[str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS[name]))
    return folder



@pytest.mark.slow
def test_sets_apart_and_together_with_bm25(cli, tmp_path, private_tmp):
    questions = _questions(tmp_path / "questions", list(QUESTIONS))
    out, details = tmp_path / "result.json", tmp_path / "details.jsonl"
    run = cli("eval", "--sessions", str(questions), "--data", str(FIXTURES), "--swebench-per-repo", "2",
              "--out", str(out), "--details", str(details), "--json")
    assert run.code == 0, run.stderr
    result = json.loads(out.read_text())
    assert result == run.json() and set(result) == {"sets", "together", "config"}
    assert list(result["sets"]) == ["chef-chopsky", "m-claude", "swebench-mini"]
    sessions = {name: entry["summary"]["sessions"] for name, entry in result["sets"].items()}
    assert sessions == {"chef-chopsky": 2, "m-claude": 1, "swebench-mini": 3}  # no subagent, no empty file
    for entry in [*result["sets"].values(), result["together"]]:
        assert set(entry["summary"]) == SUMMARY_KEYS
        assert {"fact_recall", "noise", "tokens_per_question", "lines_per_question"} <= set(entry["bm25"])
    together = result["together"]["summary"]
    assert (together["questions"], together["facts"], together["sessions"]) == (4, 3, 6)
    assert together["memories"] == sum(e["summary"]["memories"] for e in result["sets"].values())
    assert 0.0 <= result["together"]["bm25"]["fact_recall"] <= 1.0
    assert result["sets"]["swebench-mini"]["run"]["config"]["kind"] == "sessions"
    config = result["config"]
    assert (config["kind"], config["swebench_per_repo"], config["bm25_top_k"]) == ("agent-sessions", 2, 3)

    rows = [json.loads(line) for line in details.read_text().splitlines()]
    assert [r["set"] for r in rows] == ["chef-chopsky", "chef-chopsky", "m-claude", "swebench-mini"]
    assert all({"facts", "block", "bm25"} <= set(r) for r in rows)
    port = next(r for r in rows if r["qid"] == "chef/1")
    assert port["bm25"]["facts"] == [True] and "3001" in port["bm25"]["block"]  # the step that says it
    assert not list(private_tmp.iterdir())  # throwaway homes and converted transcripts are gone


def test_table_names_every_set_and_together(cli, tmp_path, private_tmp):
    questions = _questions(tmp_path / "questions", ["m-claude"])
    run = cli("eval", "--sessions", str(questions), "--data", str(FIXTURES))
    assert run.code == 0, run.stderr
    assert "sets written by others" in run.stdout and "together" in run.stdout and "m-claude" in run.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bench", ".", "--data", "."], "--data applies to --sessions DIR"),
        (["--sessions", ".", "--set", "m-claude"], "--set and --swebench-per-repo apply to"),
        (["--sessions", ".", "--data", ".", "--questions", "q.jsonl"], "--data applies to --sessions DIR"),
        (["--sessions", "/nonexistent/q", "--data", "."], "is not a folder"),
        (["--sessions", ".", "--data", "/nonexistent/data"], "is not a folder"),
        (["--sessions", ".", "--data", ".", "--set", "nope"], "unknown set 'nope'"),
        (["--sessions", ".", "--data", ".", "--swebench-per-repo", "0"], "--swebench-per-repo"),
    ],
)
def test_errors_are_one_line(cli, args, message):
    result = cli("eval", *args)
    assert result.code == 2, (result.stdout, result.stderr)
    assert message in result.stderr and result.stderr.strip().count("\n") == 0, result.stderr
