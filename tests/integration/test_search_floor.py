"""The confidence floor (CEMS_RECALL_MIN_CONFIDENCE) holds for `cems search`, the library and the prompt
hook alike: nothing under it is shown unless all results are asked for, and then it is marked weak."""

from __future__ import annotations

import pytest

from cems_cli import defaults

pytestmark = pytest.mark.real_model  # judges confidence: the real model

MEMORIES = (
    ("In this repo we use pnpm, never npm.", "preferences"),
    ("Run the test suite with `make test`; it creates the virtualenv first.", "patterns"),
    ("The staging database was migrated to PostgreSQL 18.", "context"),
)
NONSENSE = "zebra quantum banana"


def _remember(cli) -> None:
    for text, category in MEMORIES:
        assert cli("remember", text, "--category", category).code == 0


def test_a_query_that_matches_nothing_prints_nothing(cli):
    _remember(cli)
    assert defaults.RECALL_MIN_CONFIDENCE > 0
    for query in (NONSENSE, "xyzzy plugh frobnicate"):
        result = cli("search", query)
        assert (result.code, result.stdout) == (0, ""), result.stderr
        assert cli("search", query, "--json").json() == {"results": []}


def test_all_shows_what_is_under_the_floor_marked_weak(cli):
    _remember(cli)
    everything = cli("search", NONSENSE, "--all", "--json").json()["results"]
    assert everything, "--all shows results under the floor"
    assert all(r["weak"] is True and r["confidence"] < defaults.RECALL_MIN_CONFIDENCE for r in everything)
    shown = cli("search", NONSENSE, "--all")
    assert shown.code == 0 and "weak" in shown.stdout


def test_a_memory_that_answers_is_shown_and_not_weak(cli):
    _remember(cli)
    results = cli("search", "which package manager do we use, pnpm or npm?", "--json").json()["results"]
    assert results and "pnpm" in results[0]["content"]
    assert all(r["weak"] is False and r["confidence"] >= defaults.RECALL_MIN_CONFIDENCE for r in results)


def test_explain_says_what_the_confidence_is_built_from(cli):
    _remember(cli)
    results = cli("search", "how do I run the tests?", "--explain", "--json").json()["results"]
    built = results[0]["explain"]["confidence"]["built_from"]
    assert set(built["terms"]) == {"relative*cosine", "relative*lexical"}
    assert all({"value", "weight", "contribution"} <= set(term) for term in built["terms"].values())
    human = cli("search", "how do I run the tests?", "--explain").stdout
    assert "confidence" in human and "logistic(" in human and "× relative*cosine" in human


def test_the_library_follows_the_same_floor_and_can_return_all(env):
    import cems

    with cems.open() as memory:
        for text, category in MEMORIES:
            memory.remember(text, category=category)
        assert memory.search(NONSENSE) == []
        weak = memory.search(NONSENSE, include_weak=True)
        assert weak and all(r.weak for r in weak)


def test_the_prompt_hook_never_injects_a_line_under_the_floor(cli, env, monkeypatch):
    """Through the hook handler and the real search server: every injected line's confidence is at or
    above the floor, and a prompt about nothing stored injects nothing."""
    from pathlib import Path

    from cems_cli.hookhandlers import user_prompt_submit
    from cems_cli.server.daemon import stop_server

    assert defaults.RECALL_MIN_CONFIDENCE > 0  # a floor of 0 let lines of confidence 0.01-0.06 through
    _remember(cli)
    monkeypatch.setenv("CEMS_RECALL_TIME_BUDGET", "30")  # the first prompt starts the search server
    env_home = Path(env["CEMS_HOME"])
    try:
        for prompt in ("which package manager should I use here?", "how do I run the test suite?",
                       "what version is the staging database on?", "write a haiku about autumn leaves",
                       NONSENSE):
            answer = user_prompt_submit.handle({"session_id": "s", "hook_event_name": "UserPromptSubmit",
                                                "cwd": "/tmp", "prompt": prompt})
            if prompt in ("write a haiku about autumn leaves", NONSENSE):
                assert answer is None, prompt
                continue
            text = (answer or {}).get("hookSpecificOutput", {}).get("additionalContext", "")
            lines = [line for line in text.splitlines() if line.startswith("- [")]
            assert lines, prompt
            for line in lines:
                confidence = float(line.split("confidence ")[1].split(";")[0].split(")")[0])
                assert confidence >= defaults.RECALL_MIN_CONFIDENCE, (prompt, line)
    finally:
        stop_server(env_home)
