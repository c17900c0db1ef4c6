"""Ranking that respects what the user said, offline: the user's own words outrank captured session
records and weak one-word matches, and a query that matches nothing finds nothing."""

from __future__ import annotations

import json
import os
import time

import pytest

pytestmark = pytest.mark.real_model  # judges ranking: the real model

WRITTEN = "Install the frontend dependencies with pnpm, never with npm."
# The same fact as a capture trigger records it from a session: as relevant, but not the user's own words.
CAPTURED = "How to install the frontend dependencies: ran `pnpm install` (the repo has a pnpm lockfile)."


def _ids(cli, query: str) -> list[str]:
    result = cli("search", query, "--json", "--explain")
    assert result.code == 0, result.stderr
    return [r["content"] for r in result.json()["results"]]


def test_on_equal_relevance_the_users_own_words_outrank_a_captured_memory(cli, tmp_path):
    assert cli("remember", WRITTEN, "--category", "preferences").code == 0
    line = {"content": CAPTURED, "category": "patterns", "source": "session",
            "source_ref": "project:acme/api:session:1a2b3c4d:L12"}
    (tmp_path / "captured.jsonl").write_text(json.dumps(line) + "\n")
    assert cli("import", str(tmp_path / "captured.jsonl"), "--trusted").code == 0  # captured by design
    results = cli("search", "how do I install the frontend dependencies", "--json", "--explain").json()
    ranked = results["results"]
    assert [r["content"] for r in ranked][:2] == [WRITTEN, CAPTURED]
    assert ranked[0]["explain"]["adjust"]["source"] == 1.0
    assert ranked[1]["explain"]["adjust"]["source"] == 0.7  # shown in --explain


def test_the_readme_example_finds_the_preference_before_a_one_word_match(cli):
    for text, category in (
        ("I prefer pytest over unittest", "preferences"),
        ("Run the test suite with `make test`; it creates the virtualenv first.", "patterns"),
        ("I prefer Python with type hints for backend services.", "preferences"),
    ):
        assert cli("remember", text, "--category", category).code == 0
    assert _ids(cli, "which test framework do I like?")[0] == "I prefer pytest over unittest"


def test_a_query_that_matches_nothing_finds_nothing(cli):
    for text in ("I prefer pytest over unittest", "Deploys run through the pipeline on main."):
        assert cli("remember", text).code == 0
    assert _ids(cli, "xyzzy plugh frobnicate") == []
    assert cli("search", "xyzzy plugh frobnicate").stdout == ""  # prints nothing, exit 0


PREFERENCE = "In this repo we use pnpm, never npm"


def test_a_captured_session_that_asked_the_question_does_not_outrank_the_answer(
    env, cli, tmp_path, monkeypatch
):
    """The issue's example, through the real capture path: a session asked which package manager to use
    (and had a push blocked); the user's preference answers that question and must come first, in
    `cems search` and in what the prompt hook injects."""
    from cems_cli.capture.observer import Observer
    from cems_cli.capture.observer_settings import ObserverSettings
    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService
    from cems_cli.hookhandlers import user_prompt_submit
    from tests.support.transcripts import Transcript

    cwd = "/home/dev/acme/api"  # the project `env` sets: project:acme/api
    root = tmp_path / "projects"
    path = root / "-home-dev-acme-api" / "5e0b7c1d-2f4a-4d8e-9b1c-7a6f3e2d1c0b.jsonl"
    path.parent.mkdir(parents=True)
    session = Transcript(path, cwd=cwd, session="5e0b7c1d-2f4a-4d8e-9b1c-7a6f3e2d1c0b")
    session.prompt("Which package manager should I use for the frontend? Then push the branch.")
    session.say("Let me look at the lockfiles first.")
    session.bash("ls", "package.json\npnpm-lock.yaml\nsrc")
    session.denied("git push --force origin main", "Never force-push to main")
    session.say("The push was blocked by a rule: force-pushing to main is not allowed.")
    # A session of an hour ago (the writer's stamps are fixed in the past: time decay would decide alone).
    recent = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() - 3600))
    path.write_text(path.read_text().replace("2026-03-02T09:14:05.118Z", recent))
    old = time.time() - 3600
    os.utime(path, (old, old))
    with MemoryService(load_settings()) as svc:
        report = Observer(svc, ObserverSettings(observer_paths=str(root), observer_idle_seconds=0)).sync()
        assert report.errors == [] and report.observations >= 1
    assert cli("remember", PREFERENCE, "--category", "preferences").code == 0

    ranked = cli("search", "which package manager", "--json", "--explain", "--all").json()["results"]
    assert ranked[0]["content"] == PREFERENCE, [(r["score"], r["content"][:80]) for r in ranked]
    # The hook starts this home's search server when none runs (a test run before may have, or not): a cold
    # server on a busy machine is not the point here.
    monkeypatch.setenv("CEMS_RECALL_TIME_BUDGET", "30")
    answer = user_prompt_submit.handle(
        {"prompt": "which package manager should I use?", "cwd": cwd, "session_id": "s2",
         "hook_event_name": "UserPromptSubmit"}
    )
    block = answer["hookSpecificOutput"]["additionalContext"]
    echo = block.find("Which package manager")
    assert echo == -1 or block.index(PREFERENCE) < echo


def test_the_prompt_hook_leaves_out_what_capture_took_from_another_project(cli, tmp_path):
    """In repository A the prompt hook injects nothing capture derived from repository B's sessions (its
    session record, its tool patterns), though a search still finds them; B's captured preferences and what
    the user wrote in B still count."""
    from cems_cli.config import get_settings
    from cems_cli.engine.service import MemoryService

    lines = [
        {"content": "Claude Code session 9f8e7d6c in billing on branch chore/lint. Asked: Run the linters "
                    "before the release. Ran: `poetry run flake8 billing tests`.", "category": "context",
         "source": "session", "source_ref": "project:acme/billing:session:9f8e7d6c:L2"},
        {"content": "In project acme/billing the code is linted with `poetry run flake8 billing tests`.",
         "category": "patterns", "source": "tool", "source_ref": "project:acme/billing"},
        {"content": "Always run the linters before a release, in every repository.",
         "category": "preferences", "source": "session",
         "source_ref": "project:acme/billing:session:9f8e7d6c:L4"},
    ]
    (tmp_path / "billing.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert cli("import", str(tmp_path / "billing.jsonl"), "--trusted").code == 0
    question = "Which linters do we run before a release?"
    searched = [r["category"] for r in cli("search", question, "--json", "--all").json()["results"]]
    assert {"context", "patterns", "preferences"} <= set(searched)
    with MemoryService(get_settings()) as svc:
        # No relative floor: what is left out, is left out by the project it came from.
        elsewhere = svc.recall_options(current_project="project:acme/api", min_relative=0)
        recalled = svc.recall(question, elsewhere)
        assert [r.category for r in recalled] == ["preferences"]
        at_home = svc.recall(question, svc.recall_options(current_project="project:acme/billing",
                                                          min_relative=0))
        assert "context" in {r.category for r in at_home}  # at home, its own session record counts
