"""`cems eval --sessions` end to end on a session set the test writes: transcripts of two projects are
captured through the real hooks and observer, questions are asked through the prompt hook, and a fact
established in an earlier session comes back in the injected block."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from cems_cli.capture.extraction import EXTRACTION_SYSTEM
from tests.support.transcripts import Transcript, redis_turn

pytestmark = pytest.mark.real_model  # judges recall: the real model

API, WEB = "/home/dev/tiny-api", "/home/dev/tiny-web"
SESSIONS = ("0a6c1d2e-1111-4e1a-9c55-2d8f0b6a1e01", "0a6c1d2e-2222-4e1a-9c55-2d8f0b6a1e02",
            "0a6c1d2e-3333-4e1a-9c55-2d8f0b6a1e03")
QUESTIONS = [
    {"qid": "api/1", "project": "tiny-api", "project_cwd": API, "category": "decision",
     "question": "Which store backs the session cache?", "facts": [["redis"]],
     "distractors": [["memcached"]]},
    {"qid": "web/1", "project": "tiny-web", "project_cwd": WEB, "category": "preference",
     "question": "Which package manager do I use to install dependencies here?", "facts": [["pnpm"]]},
    {"qid": "api/2", "project": "tiny-api", "project_cwd": API, "category": "none",
     "question": "Write a haiku about autumn leaves.", "facts": []},
]
TOP_KEYS = {"overall", "by_project", "by_category", "capture", "latency_ms", "targets", "config"}
ROW_KEYS = {"questions", "facts", "fact_recall", "stored_recall", "all_facts", "noise", "injected",
            "tokens_per_question", "distractors", "latency_p50_ms"}


def _transcript(root: Path, cwd: str, session: str) -> Transcript:
    folder = root / "projects" / re.sub(r"[^A-Za-z0-9]", "-", cwd)
    folder.mkdir(parents=True, exist_ok=True)
    return Transcript(folder / f"{session}.jsonl", cwd=cwd, session=session)


def write_set(root: Path) -> Path:
    first = _transcript(root, API, SESSIONS[0])
    first.prompt("The admin login needs a session cache. We'll use Redis for the session cache because it "
                 "gives us per-key TTLs.")
    first.edit("src/acme/cache.py")
    first.bash("pytest -q", "42 passed in 0.49s")
    first.say("The session cache is in src/acme/cache.py, backed by Redis. All 42 tests pass.")
    redis_turn(_transcript(root, API, SESSIONS[1]))  # a failing test run, an edit, a passing run
    web = _transcript(root, WEB, SESSIONS[2])
    web.prompt("Set up the web app. Always use pnpm in this repo, never npm.")
    web.bash("pnpm install", "Lockfile is up to date\nDone in 3.1s")
    web.denied("npm install left-pad", "this repo uses pnpm")
    web.bash("pnpm test", " Test Files  3 passed (3)\n      Tests  12 passed (12)")
    web.say("Installed with pnpm; the 12 tests pass.")
    rows = [{**q, "asked_at": "2026-03-03T09:00:00Z"} for q in QUESTIONS]
    (root / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return root



def _details(path: Path) -> dict[str, dict]:
    return {row["qid"]: row for row in map(json.loads, path.read_text().splitlines())}


def test_sessions_end_to_end_offline(cli, tmp_path, private_tmp):
    dataset = write_set(tmp_path / "set")
    own = cli("remember", "My own memory must not be touched by the eval.", "--json").json()["id"]
    out, details = tmp_path / "result.json", tmp_path / "details.jsonl"
    run = cli("eval", "--sessions", str(dataset), "--out", str(out), "--details", str(details), "--json")
    assert run.code == 0, run.stderr
    result = json.loads(out.read_text())
    assert result == run.json() and set(result) == TOP_KEYS

    assert set(result["overall"]) == ROW_KEYS and result["overall"]["questions"] == 3
    assert result["overall"]["facts"] == 2
    assert set(result["by_category"]) == {"decision", "preference", "none"}
    projects = result["by_project"]
    assert set(projects) == {"tiny-api", "tiny-web"}
    assert (projects["tiny-api"]["sessions"], projects["tiny-web"]["sessions"]) == (2, 1)
    for row in [result["overall"], *result["by_project"].values(), *result["by_category"].values()]:
        assert ROW_KEYS <= set(row) and 0.0 <= row["noise"] <= 1.0

    capture = result["capture"]
    assert (capture["trigger"], capture["sessions"], capture["turns"], capture["stop_hooks"]) == (
        "both", 3, 3, 3)
    # Tool calls that ran fire PostToolUse(Failure); the one a rule denied does not.
    assert capture["tool_events"] == 8
    assert capture["duplicates"] == {"same_content": 0, "same_source": 0, "total": 0}  # two triggers, once
    assert capture["by_category"]["context"] == 3  # one context record per session
    assert capture["memories"] == sum(capture["by_category"].values())
    assert capture["memories_per_session"] == round(capture["memories"] / 3, 2)
    assert {"session", "tool"} <= set(capture["by_source"]) and capture["errors"] == []

    rows = _details(details)
    assert rows["api/1"]["facts"] == [{"keywords": ["redis"], "present": True}]  # learnt two sessions before
    assert "<memory-recall>" in rows["api/1"]["block"]
    assert all(m["useful"] for m in rows["api/1"]["memories"] if re.search(r"\bredis\b", m["text"], re.I))
    haiku = rows["api/2"]
    assert haiku["noise_tokens"] == haiku["tokens"]  # whatever is recalled for it is noise
    assert result["overall"]["fact_recall"] >= 0.5
    assert result["overall"]["stored_recall"] >= result["overall"]["fact_recall"] - 1e-9

    latency = result["latency_ms"]
    assert set(latency) == {"p50", "p95", "max", "timeouts"} and 0 < latency["p50"] <= latency["p95"]
    assert set(result["targets"]) == {"fact_recall", "noise", "duplicates", "memories_per_session",
                                      "latency_p50_ms"}
    assert result["targets"]["duplicates"]["met"] is True
    config = result["config"]
    assert (config["kind"], config["trigger"], config["questions"], config["sessions"]) == (
        "sessions", "both", 3, 3)
    assert config["llm_configured"] is False and config["recall"]["token_budget"] == 1000

    assert not list(private_tmp.glob("cems-eval-*"))  # the throwaway home is gone
    assert [m["id"] for m in cli("list", "--json").json()["memories"]] == [own]

    compared = cli("eval", "--compare", str(out), str(out), "--json")
    assert compared.code == 0, compared.stderr
    deltas = {(r["section"], r["metric"]): r["delta"] for r in compared.json()["rows"]}
    assert deltas[("overall", "fact_recall")] == 0 and ("tiny-web", "noise") in deltas
    assert ("capture", "duplicates") in deltas and ("latency_ms", "p95") in deltas


def test_sessions_table_and_observer_trigger(cli, tmp_path, private_tmp):
    dataset = write_set(tmp_path / "set")
    run = cli("eval", "--sessions", str(dataset), "--trigger", "observer", "--limit-questions", "1")
    assert run.code == 0, run.stderr
    assert "trigger observer" in run.stdout and "tiny-api" in run.stdout and "targets:" in run.stdout
    assert "duplicates 0" in run.stdout


def extraction(body: dict) -> str:
    """A model that answers extraction requests with one decision; every other stage gets nothing."""
    if body["messages"][0]["content"] != EXTRACTION_SYSTEM:
        return "{}"
    transcript = body["messages"][1]["content"]
    if "Redis for the session cache" not in transcript:
        return json.dumps({"observations": []})
    return json.dumps({"observations": [{
        "category": "decisions", "title": "Session cache",
        "text": "tiny-api keeps its session cache in Redis, chosen for per-key TTLs."}]})


def test_sessions_with_an_llm(cli, tmp_path, private_tmp, fake_openai):
    fake_openai.responder = extraction
    dataset = write_set(tmp_path / "set")
    run = cli("eval", "--sessions", str(dataset), "--json", "--details", str(tmp_path / "d.jsonl"),
              extra_env={"CEMS_LLM_BASE_URL": fake_openai.base_url, "CEMS_LLM_API_KEY": "sk-test"})
    assert run.code == 0, run.stderr
    result = run.json()
    assert result["config"]["llm_configured"] is True and result["capture"]["errors"] == []
    prompts = [r.body["messages"][0]["content"] for r in fake_openai.chat_requests]
    assert prompts.count(EXTRACTION_SYSTEM) >= 3  # each ended turn was extracted by the model
    assert result["capture"]["duplicates"]["total"] == 0
    assert _details(tmp_path / "d.jsonl")["api/1"]["facts"][0]["present"] is True


def test_sessions_with_questions_of_another_file(cli, tmp_path, private_tmp):
    dataset = write_set(tmp_path / "set")
    other = tmp_path / "overview.jsonl"
    row = {"qid": "api/overview", "project": "tiny-api", "project_cwd": API, "category": "overview",
           "question": "What have we done on the session cache so far?", "facts": [["redis"]],
           "asked_at": "2026-03-03T09:00:00Z"}
    other.write_text(json.dumps(row) + "\n", encoding="utf-8")
    run = cli("eval", "--sessions", str(dataset), "--questions", str(other), "--json")
    assert run.code == 0, run.stderr
    result = run.json()
    assert result["config"]["questions"] == 1 and set(result["by_category"]) == {"overview"}
    assert result["capture"]["summaries"]["projects"] >= 0  # made before the questions, as maintenance would
    missing = cli("eval", "--sessions", str(dataset), "--questions", str(tmp_path / "nope.jsonl"))
    assert missing.code == 2 and missing.stderr.strip().count("\n") == 0 and "nope.jsonl" in missing.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--sessions", "/nonexistent/set"], "is not a folder"),
        (["--bench", ".", "--trigger", "hooks"], "--trigger applies to --sessions only"),
        (["--bench", ".", "--questions", "q.jsonl"], "--questions applies to --sessions only"),
        (["--sessions", ".", "--trigger", "cron"], "unknown trigger 'cron'"),
        (["--sessions", ".", "--as-of", "2026-01-01"], "--as-of does not apply to --sessions"),
        (["--sessions", ".", "--bench", "."], "give exactly one of"),
    ],
)
def test_sessions_errors_are_one_line(cli, args, message):
    result = cli("eval", *args)
    assert result.code == 2, (result.stdout, result.stderr)
    assert message in result.stderr and result.stderr.strip().count("\n") == 0, result.stderr
