"""Expected answer type: which questions ask when, and which memories say when."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cems_cli.retrieval.adjust import apply_adjustments
from cems_cli.retrieval.answer_type import asks_for_time, states_time
from cems_cli.retrieval.experiments import Question, run_experiments
from cems_cli.retrieval.types import Candidate

NOW = datetime(2026, 11, 22, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize("query", [
    "When did we move the cache to Redis?", "when was the last outage", "  When's the release?",
    "What year did John start surfing?", "In which month did we switch CI providers?",
    "On what date was the key rotated?", "Which week did Tim visit the UK?",
    "How long ago was the migration?", "Since when do we pin numpy?",
])
def test_questions_that_ask_when(query):
    assert asks_for_time(query)


@pytest.mark.parametrize("query", [
    "What time management technique does Tim use?", "Why did the deploy fail when the cache was cold?",
    "How do we ship to production?", "what did we decide yesterday about the cache?",
    "Whenever possible, lint", "What data does the cron job read?", "",
])
def test_questions_that_do_not(query):
    assert not asks_for_time(query)


@pytest.mark.parametrize("content", [
    "Moved the cache to Redis yesterday.", "We deploy on Fridays.", "Rotated the keys last week.",
    "I just moved to Berlin!", "The outage was two days ago.", "Pinned numpy since 2024 because of the ABI.",
    "Switched CI providers in March.", "The audit is due March 5th.", "Released on 5 March 2025.",
    "Backups ran nightly for three years.", "Tagged v2.1 on 2024-03-05.", "We'll revisit this next month.",
    "Met the team early-June.", "It rained this morning.",
])
def test_memories_that_say_when(content):
    assert states_time(content)


@pytest.mark.parametrize("content", [
    "Redis cache settings look fine.", "I may go later.", "The 2023 budget is approved.",
    "Use ruff for linting.", "Marching band practice", "The function takes 2 arguments.",
    # A leading stamp records when the memory was written, not what it says.
    "[8 May 2023] Caroline: I love painting landscapes.", "[2024-03-05 14:02] Lint before commit.",
])
def test_memories_that_do_not(content):
    assert not states_time(content)


def test_a_stamp_does_not_hide_what_follows_it():
    assert states_time("[8 May 2023] Caroline: I went to the support group yesterday.")
    assert states_time("Noted [draft] on 5 March 2025")  # only a leading stamp is set aside


def candidate(doc_id: str, content: str, score: float) -> Candidate:
    # pinned: no time decay to muddle the comparison
    return Candidate(document_id=doc_id, chunk_id=doc_id, chunk_index=0, content=content, category="general",
                     created_at=NOW, score=score, pinned=True)


def test_a_memory_that_says_when_rises_for_a_when_question_only():
    says = candidate("says", "Moved the cache to Redis last Friday.", 0.40)
    silent = candidate("silent", "Redis cache settings: maxmemory 2gb, allkeys-lru.", 0.50)
    adjusted = apply_adjustments([silent, says], now=NOW)
    asked = Question("When did we move the cache?", NOW)
    ranked, reported = run_experiments(["time_answer"], asked, adjusted)
    assert [c.document_id for c in ranked] == ["says", "silent"]
    assert reported == {"time_answer": "time"}
    assert says.explain["adjust"]["time_answer"] == pytest.approx(1.5)
    assert says.score == pytest.approx(0.40 * 1.1 * 1.5)  # pinned 1.1, then the experiment's factor
    assert "time_answer" not in silent.explain["adjust"]

    says.score, silent.score = 0.40, 0.50
    adjusted = apply_adjustments([silent, says], now=NOW)
    ranked, reported = run_experiments(["time_answer"], Question("Where is the cache?", NOW), adjusted)
    assert [c.document_id for c in ranked] == ["silent", "says"]
    assert reported == {"time_answer": None}
    assert "time_answer" not in says.explain["adjust"]


def test_a_captured_session_records_header_is_not_the_memory_saying_when():
    header = "Claude Code session 1a2b3c4d in acme/api on branch main, 2026-11-22 14:02 UTC."
    assert not states_time(header + "\nAsked: Move the session cache to Redis.\nChanged: src/cache.py.")
    assert states_time(header + "\nAsked: Redo what we did last week.")  # the text itself still counts
