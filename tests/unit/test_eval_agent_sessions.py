"""Session sets written by others: the converters (SpecStory Markdown, Claude Code archives, mini-swe-agent
trajectories) give the transcripts the session benchmark replays, BM25 over the raw turns is scored like a
recall block, and the committed question files are loadable and big enough. The data here is the small
synthetic samples under tests/fixtures/agent-sessions/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cems_cli.evaluation import bm25_reference, convert_claude, convert_specstory, convert_swebench
from cems_cli.evaluation.agent_sessions import SETS, chosen_sets, load_set
from cems_cli.evaluation.datasets import DatasetError
from cems_cli.evaluation.sessions_data import SessionQuestion, load_questions, load_transcript, split_turns

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "agent-sessions"
QUESTIONS = REPO / "bench" / "agent-sessions"


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _blocks(records: list[dict], kind: str) -> list[dict]:
    return [block for r in records if isinstance(r["message"]["content"], list)
            for block in r["message"]["content"] if block["type"] == kind]


# --------------------------------------------------------------------------- SpecStory


def test_specstory_export_becomes_a_claude_code_transcript(tmp_path):
    written = convert_specstory.convert(FIXTURES / "chef-chopsky", tmp_path, "/cursor/chef-chopsky")
    assert len(written) == 2  # README.txt is not an export
    assert {p.parent.name for p in written} == {"-cursor-chef-chopsky"}
    port = next(p for p in written if load_transcript(tmp_path, p).started.startswith("2025-09-19"))
    records = _records(port)
    prompts = [r["message"]["content"] for r in records
               if r["type"] == "user" and isinstance(r["message"]["content"], str)]
    assert prompts == ["The frontend can't reach the agent service. Which port is it on?",
                       "Update the frontend config to point at it."]  # the `---` after a prompt is dropped
    calls = {b["name"]: b["input"] for b in _blocks(records, "tool_use")}
    commands = [b["input"]["command"] for b in _blocks(records, "tool_use") if b["name"] == "Bash"]
    assert commands == ["cd agent && npm run test:integration", "npm run test:e2e"]
    assert calls["Edit"]["file_path"] == "frontend/lib/config.ts" and "3001" in calls["Edit"]["new_string"]
    assert "read_file" in calls  # another tool keeps Cursor's name
    results = [b["content"] for b in _blocks(records, "tool_result")]
    assert any("ECONNREFUSED 127.0.0.1:3001" in text for text in results)
    # No exit code in the export: the result is not marked failed, the capture engine reads the output.
    assert not any(b.get("is_error") for b in _blocks(records, "tool_result"))
    said = [b["text"] for b in _blocks(records, "text")]
    assert any("listens on port 3001" in text for text in said)
    # Dated by the file name; the second prompt 35 minutes after the first, as the headers say.
    stamps = [r["timestamp"] for r in records
              if r["type"] == "user" and isinstance(r["message"]["content"], str)]
    assert stamps == ["2025-09-19T19:30:00.000Z", "2025-09-19T20:05:00.000Z"]
    turns, identity = split_turns(port.read_bytes())
    assert len(turns) == 2 and all(t.stop for t in turns) and identity["cwd"] == "/cursor/chef-chopsky"
    bash = [e for t in turns for e in t.tool_events.values() if e.tool_name == "Bash"]
    assert [e.event for e in bash] == ["PostToolUse", "PostToolUse"]


def test_specstory_refuses_a_folder_without_exports(tmp_path):
    (tmp_path / "notes.md").write_text("# not an export\n")
    with pytest.raises(DatasetError, match="no SpecStory export"):
        convert_specstory.convert(tmp_path, tmp_path / "out", "/x")


# --------------------------------------------------------------------------- mini-swe-agent


def test_swebench_run_becomes_a_session_of_its_repository(tmp_path):
    written = convert_swebench.convert(FIXTURES / "swebench-mini", tmp_path)
    assert sorted(p.parent.name for p in written) == ["-swebench-django", "-swebench-sympy",
                                                      "-swebench-sympy"]
    run = next(p for p in written if "sympy" in p.parent.name and "pytest" in p.read_text())
    records = _records(run)
    first = records[0]
    assert first["type"] == "user" and first["cwd"] == "/swebench/sympy"
    # The task is the PR description; the harness's fixed instructions are left out.
    assert "Symbol instances have __dict__" in first["message"]["content"]
    assert "Task Instructions" not in first["message"]["content"]
    results = _blocks(records, "tool_result")
    assert results[0]["is_error"] is True and results[0]["content"].startswith("Exit code 1\n")
    assert "No module named pytest" in results[0]["content"]
    assert "is_error" not in results[1] and "22 passed" in results[1]["content"]
    meta = [r for r in records if r.get("isMeta")]
    assert len(meta) == 1 and "EXACTLY ONE action" in meta[0]["message"]["content"]
    # Dated by the model API's `created`, in order.
    stamps = [r["timestamp"] for r in records]
    assert stamps == sorted(stamps) and stamps[1].startswith("2025-11-18T23:53:53")
    turns, _identity = split_turns(run.read_bytes())
    assert len(turns) == 1  # one typed task; the reminder starts no turn
    events = [turns[0].tool_events[i] for i in sorted(turns[0].tool_events)]
    assert [e.event for e in events] == ["PostToolUseFailure", "PostToolUse"]  # the last one never ran
    assert events[1].tool_input == {"command": "bin/test sympy/core/tests/test_basic.py"}


def test_swebench_timed_out_command_is_a_failed_call(tmp_path):
    written = convert_swebench.convert(FIXTURES / "swebench-mini", tmp_path)
    run = next(p for p in written if "timed out" in p.read_text())
    (result,) = _blocks(_records(run), "tool_result")
    assert result["is_error"] is True and "timed out" in result["content"]


def test_swebench_subset_takes_the_first_runs_of_each_repository():
    runs = convert_swebench.runs(FIXTURES / "swebench-mini")
    assert [r.instance_id for r in runs] == ["django__django-11099", "sympy__sympy-11618",
                                             "sympy__sympy-20590"]
    assert [r.instance_id for r in convert_swebench.subset(runs, 1)] == ["django__django-11099",
                                                                          "sympy__sympy-11618"]
    assert convert_swebench.subset(runs, None) == runs


def test_swebench_refuses_a_badly_named_run(tmp_path):
    (tmp_path / "whatever.traj.json").write_text("{}")
    with pytest.raises(DatasetError, match="not named"):
        convert_swebench.runs(tmp_path)


# --------------------------------------------------------------------------- Claude Code archives


def test_claude_archive_is_laid_out_by_cwd_without_subagents(tmp_path):
    written = convert_claude.convert(FIXTURES / "m-claude", tmp_path)
    assert [p.relative_to(tmp_path).as_posix() for p in written] == [
        "-Users--USER-/5a1e0000-0000-4000-8000-000000000001.jsonl"]
    source = FIXTURES / "m-claude" / written[0].name
    assert written[0].read_bytes() == source.read_bytes()  # kept as it is
    assert written[0].stat().st_mode & 0o077 == 0


# --------------------------------------------------------------------------- BM25 over the raw turns


def _question(text: str, facts: list[list[str]], cwd: str = "/swebench/sympy") -> SessionQuestion:
    return SessionQuestion(qid=text[:10], project=cwd.rsplit("/", 1)[-1], project_cwd=cwd, question=text,
                           category="x", facts=tuple(tuple(f) for f in facts))


def _set(tmp_path: Path, name: str, questions: list[SessionQuestion]):
    spec = next(s for s in SETS if s.name == name)
    folder = tmp_path / "questions"
    folder.mkdir(exist_ok=True)
    rows = [{"qid": q.qid, "project_cwd": q.project_cwd, "question": q.question,
             "facts": [list(f) for f in q.facts]} for q in questions]
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return load_set(spec, FIXTURES, folder, tmp_path / "work")


def test_bm25_reference_ranks_the_raw_step_that_answers(tmp_path):
    asked = _question("pytest is missing: how do I run the sympy tests with bin/test?", [["bin/test"]])
    unrelated = _question("Which port does the agent listen on?", [["3001"]])
    dataset = _set(tmp_path, "swebench-mini", [asked, unrelated])
    scored = bm25_reference.rank(dataset, dataset.questions, lambda text: len(text.split()))
    (q1, block1, score1), (_q2, block2, score2) = scored
    assert score1.facts_present == [True] and block1.count("\n") <= 2  # at most three units
    assert score2.facts_present == [False]  # another project's words are never searched
    assert all(line.startswith("- [bm25-") for line in block1.splitlines())


def test_units_pair_a_tool_call_with_its_result(tmp_path):
    written = convert_swebench.convert(FIXTURES / "swebench-mini", tmp_path)
    django = next(p for p in written if "django" in p.parent.name)
    units = list(bm25_reference.units(django.read_bytes().splitlines()))
    assert units[0].startswith("Consider the following PR description")
    assert any(u.startswith("Bash: ./tests/runtests.py auth_tests.test_validators\n") and "Ran 22 tests" in u
               for u in units)


# --------------------------------------------------------------------------- sets and question files


def test_chosen_sets_need_their_questions_file(tmp_path):
    with pytest.raises(DatasetError, match="holds no questions file"):
        chosen_sets(tmp_path, None)
    (tmp_path / "m-claude.jsonl").write_text("")
    assert [s.name for s in chosen_sets(tmp_path, None)] == ["m-claude"]
    with pytest.raises(DatasetError, match="no chef-chopsky.jsonl"):
        chosen_sets(tmp_path, ["chef-chopsky"])
    with pytest.raises(DatasetError, match="unknown set 'nope'"):
        chosen_sets(tmp_path, ["nope"])


def test_committed_question_files():
    total = 0
    for spec in SETS:
        questions = load_questions(QUESTIONS / f"{spec.name}.jsonl")
        total += len(questions)
        assert len(questions) >= 20, spec.name
        assert all(q.asked_at and q.session_id and q.category for q in questions)
        # Some questions have no answer in any session: whatever is injected for them is noise.
        assert sum(1 for q in questions if not q.facts) >= 3, spec.name
        assert all(q.category == "none" for q in questions if not q.facts)
    assert total >= 60


def test_windows_cwd_is_named_as_git_bash_names_it(tmp_path):
    assert convert_claude.posix_cwd("C:\\Users\\Mischa") == "/c/Users/Mischa"
    assert convert_claude.posix_cwd("C:\\") == "/c"
    assert convert_claude.posix_cwd("/Users/[USER]") == "/Users/[USER]"
    folder = tmp_path / "archive"
    folder.mkdir()
    line = {"type": "user", "cwd": "C:\\Users\\Mischa", "sessionId": "s", "timestamp": "2026-01-10T01:07:21Z",
            "message": {"role": "user", "content": "dir C:\\Users\\Mischa"}}
    (folder / "s.jsonl").write_bytes(json.dumps(line, separators=(",", ":")).encode() + b"\n")
    (written,) = convert_claude.convert(folder, tmp_path / "out")
    assert written.parent.name == "-c-Users-Mischa"
    record = json.loads(written.read_bytes())
    # Only the cwd field is renamed: the prompt's own path stays as the user typed it.
    assert record["cwd"] == "/c/Users/Mischa" and record["message"]["content"] == "dir C:\\Users\\Mischa"
