"""Ranking that respects what the user said, offline: the user's own words outrank captured session
records and weak one-word matches, and a query that matches nothing finds nothing."""

from __future__ import annotations

import json

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
    assert cli("import", str(tmp_path / "captured.jsonl")).code == 0
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
    assert cli("search", "xyzzy plugh frobnicate").stdout.strip() == "No memories found."
