"""The session benchmark's pure parts: keyword and fact matching, noise, turns of a transcript, the time
shift, and the committed data set (in sync with its generator, big enough, loadable)."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from cems_cli.evaluation.datasets import DatasetError
from cems_cli.evaluation.sessions_data import (
    SessionQuestion,
    fact_present,
    keyword_present,
    latest_moment,
    load_questions,
    load_session_set,
    memory_lines,
    score_block,
    shift_line,
    split_turns,
)

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "bench" / "sessions"


@pytest.mark.parametrize(
    ("keyword", "text", "present"),
    [
        ("uv", "Always use `uv` for dependencies", True),
        ("uv", "run it under uvicorn", False),  # whole words only
        ("redis", "REDIS_URL is optional", False),  # an underscore continues the word
        ("Redis", "switch the session cache to redis.", True),  # case folded
        ("-race", "go test -race -count=1 ./...", True),  # a keyword starting with a symbol
        ("/v2", "mounted at `/v2` next to /v1", True),
        ("ingest.<tenant>", "subjects ingest.<tenant>.> per tenant", True),
        ("docker compose up -d postgres", "run docker  compose\nup -d postgres first", True),  # spacing
        ("advisory lock", "Postgres advisory locks", False),
        ("5 retries", "max 5 retries", True),
    ],
)
def test_keyword_present(keyword, text, present):
    assert keyword_present(keyword, text) is present


def test_a_fact_needs_all_its_keywords():
    assert fact_present(("pytest", "-m integration"), "uv run pytest -m integration -q")
    assert not fact_present(("pytest", "-m integration"), "uv run pytest -q")


def _question(facts, distractors=()) -> SessionQuestion:
    return SessionQuestion("q1", "api", "/home/dev/api", "how?", "pattern", tuple(map(tuple, facts)),
                           tuple(map(tuple, distractors)))


def _block(*memories: str) -> str:
    lines = [f"- [{i:08x}] (patterns, 2026-11-02) {text}" for i, text in enumerate(memories)]
    return ("<memory-recall>\nMemories from earlier sessions that may be relevant (id, category, date):\n"
            + "\n".join(lines) + "\n</memory-recall>")


def words(text: str) -> int:
    return len(text.split())


def test_noise_is_the_share_of_tokens_in_memories_that_answer_nothing():
    block = _block("Use pnpm here, never npm.", "The build runs with `pnpm build`.",
                   "Unrelated: the staging database is on PostgreSQL 18 now.")
    assert len(memory_lines(block)) == 3
    score = score_block(_question([["pnpm build"]]), block, words)
    assert score.facts_present == [True]
    assert [line.useful for line in score.lines] == [False, True, False]
    assert score.tokens == sum(words(line) for line in memory_lines(block))  # header lines not counted
    assert score.noise_tokens == score.tokens - words(memory_lines(block)[1])


def test_a_fact_spread_over_memories_makes_each_part_useful():
    block = _block("Integration tests use `pytest -m integration`.", "Start `docker compose up -d postgres`.",
                   "Something else entirely.")
    score = score_block(_question([["-m integration", "docker compose"]]), block, words)
    assert score.facts_present == [True]
    assert [line.useful for line in score.lines] == [True, True, False]


def test_distractors_and_empty_blocks():
    block = _block("The session cache is Memcached.", "Switched the session cache from Memcached to Redis.")
    score = score_block(_question([["redis"]], [["memcached"]]), block, words)
    # The newer memory names the old answer too, but it answers: only the stale one is a distractor.
    assert [(line.useful, line.distractor) for line in score.lines] == [(False, True), (True, False)]
    assert score.distractor
    empty = score_block(_question([["redis"]]), "", words)
    assert empty.facts_present == [False] and empty.tokens == 0 and not empty.distractor


def _line(**record) -> bytes:
    base = {"sessionId": "s-1", "cwd": "/home/dev/api", "timestamp": "2026-09-01T10:00:00.000Z"}
    return json.dumps({**base, **record}).encode() + b"\n"


def _assistant(*blocks) -> bytes:
    return _line(type="assistant", message={"id": "msg_1", "role": "assistant", "content": list(blocks)})


def _result(tool_id: str, content: str, error: bool = False, result=None) -> bytes:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    if error:
        block["is_error"] = True
    return _line(type="user", message={"role": "user", "content": [block]}, toolUseResult=result)


def test_turns_stop_and_tool_hooks():
    bash = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "pytest -q"}}
    blocked = {"type": "tool_use", "id": "t2", "name": "Bash", "input": {"command": "git push -f"}}
    refused = {"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "rm -rf .venv"}}
    data = b"".join([
        json.dumps({"type": "file-history-snapshot", "messageId": "m0", "snapshot": {}}).encode() + b"\n",
        _line(type="user", message={"role": "user", "content": "Run the tests."}),
        _assistant(bash),
        _result("t1", "Exit code 1\nE   KeyError: 'X'\n1 failed in 0.1s", error=True),
        _assistant(blocked),
        _result("t2", "PreToolUse:Bash hook error: Blocked by CEMS rule 5d1c: no force pushes", error=True),
        _assistant({"type": "text", "text": "Tests fail with KeyError."}),
        json.dumps({"type": "file-history-snapshot", "messageId": "m1", "snapshot": {}}).encode() + b"\n",
        _line(type="user", message={"role": "user", "content": "Clean the venv."}),
        _assistant(refused),
        _result("t3", "The user doesn't want to proceed with this tool use. The tool use was rejected", True),
        _line(type="user", message={"role": "user", "content": [
            {"type": "text", "text": "[Request interrupted by user for tool use]"}]}),
        _line(type="user", isMeta=True, message={"role": "user", "content": "Caveat: The messages below…"}),
        _line(type="user", message={"role": "user", "content": "<command-name>/clear</command-name>"}),
        _line(type="user", message={"role": "user",
                                    "content": "<local-command-stdout></local-command-stdout>"}),
    ])
    turns, identity = split_turns(data)
    assert identity == {"session_id": "s-1", "cwd": "/home/dev/api", "started": "2026-09-01T10:00:00.000Z"}
    assert [len(t.lines) for t in turns] == [7, 6, 2]  # each snapshot goes with the prompt after it
    first, second, command = turns
    assert first.stop and first.last_message == "Tests fail with KeyError."
    # The failed run fires PostToolUseFailure; the call a rule blocked never ran: no hook.
    assert [(e.event, e.tool_use_id) for e in first.tool_events.values()] == [("PostToolUseFailure", "t1")]
    assert not second.stop and second.tool_events == {}  # interrupted at the permission prompt
    assert not command.stop  # a local slash command: no model turn


def test_shift_line_moves_every_timestamp_and_nothing_else():
    line = (b'{"a":"timestamp 2026","timestamp":"2026-09-02T08:41:12.345Z",'
            b'"snapshot":{"timestamp":"2026-09-02T08:41:12Z"}}')
    shifted = shift_line(line, timedelta(days=1, milliseconds=700))
    # Each stamp keeps its own precision: whole seconds stay whole seconds.
    assert shifted == (b'{"a":"timestamp 2026","timestamp":"2026-09-03T08:41:13.045Z",'
                       b'"snapshot":{"timestamp":"2026-09-03T08:41:12Z"}}')


def test_question_file_errors(tmp_path):
    path = tmp_path / "questions.jsonl"
    path.write_text('{"qid": "a", "project_cwd": "/p", "question": "q", "facts": [["x"], []]}\n')
    with pytest.raises(DatasetError, match="line 1: 'facts' must be a list of non-empty lists"):
        load_questions(path)
    path.write_text('{"qid": "a", "project_cwd": "/p", "question": "q"}\n' * 2)
    with pytest.raises(DatasetError, match="line 2: duplicate qid 'a'"):
        load_questions(path)
    with pytest.raises(DatasetError, match="has no projects/ folder"):
        load_session_set(tmp_path)


def test_committed_set_is_what_the_generator_makes():
    check = subprocess.run([sys.executable, str(BENCH / "generate.py"), "--check"], capture_output=True,
                           text=True, timeout=60)
    assert check.returncode == 0, check.stderr


def test_committed_set_size_and_shape():
    dataset = load_session_set(BENCH)
    projects = {t.cwd for t in dataset.transcripts}
    assert len(projects) >= 4 and len(dataset.transcripts) >= 40 and len(dataset.questions) >= 120
    assert {q.project_cwd for q in dataset.questions} == projects  # every project is asked about
    turns = [turn for t in dataset.transcripts for turn in t.turns]
    events = [e for turn in turns for e in turn.tool_events.values()]
    assert any(e.event == "PostToolUseFailure" for e in events) and sum(t.stop for t in turns) < len(turns)
    evidence = {json.loads(line)["qid"]: json.loads(line)["evidence_sessions"]
                for line in (BENCH / "questions.jsonl").read_text().splitlines()}
    sessions = {t.session_id for t in dataset.transcripts}
    for question in dataset.questions:
        assert set(evidence[question.qid]) <= sessions
        assert bool(question.facts) == bool(evidence[question.qid])
    asked = latest_moment(dataset)
    assert asked is not None and all(t.started < asked.isoformat() for t in dataset.transcripts)


def test_a_fact_is_found_in_what_a_memory_says_never_in_its_header():
    from cems_cli.evaluation.sessions_data import memory_text

    line = ("- [1a2b3c4d] (patterns, 2026-11-20, confidence 0.82; session 1a2b3c4d, transcript line 12 "
            "(project acme/web)) Run `make test` before pushing.")
    assert memory_text(line) == "Run `make test` before pushing."
    assert memory_text("- [1a2b3c4d] (learnings, 2026-11-20) x (y)") == "x (y)"
    # What the block made inert is still what the memory says: a fact with a '<' is found in it.
    from cems_cli.engine.recall import format_recall

    block = format_recall([{"id": "1a2b3c4d", "category": "decisions", "created_at": "2026-11-20",
                            "content": "Subjects are ingest.<tenant>.<kind>."}])
    assert "ingest.<tenant>" not in block
    assert [memory_text(line) for line in block.splitlines()[2:3]] == ["Subjects are ingest.<tenant>.<kind>."]
    # _block writes "(patterns, 2026-11-02)" headers: "patterns" there answers nothing.
    score = score_block(_question([["patterns", "pnpm"]]), _block("Use pnpm here."), words)
    assert score.facts_present == [False] and not score.lines[0].useful
