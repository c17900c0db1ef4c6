"""Time cues: what a query's date, month, year or relative phrase makes of created_at."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cems_cli.retrieval.adjust import apply_adjustments
from cems_cli.retrieval.experiments import Question, run_experiments
from cems_cli.retrieval.timecues import parse_time_cue
from cems_cli.retrieval.types import Candidate

NOW = datetime(2026, 11, 22, 15, 0, tzinfo=UTC)


def at(year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, 12, tzinfo=UTC)


@pytest.mark.parametrize("query", ["What did she paint on October 13, 2023?", "on 13 October 2023",
                                   "the 13th of October, 2023 meeting", "notes from 2023-10-13",
                                   "notes from Oct. 13, 2023"])
def test_a_day_takes_in_the_day_before_and_the_week_after(query):
    cue = parse_time_cue(query, NOW)
    assert cue is not None
    assert cue.matches(at(2023, 10, 12)) and cue.matches(at(2023, 10, 13)) and cue.matches(at(2023, 10, 20))
    assert not cue.matches(at(2023, 10, 10)) and not cue.matches(at(2023, 10, 21))


def test_month_and_year_and_a_bare_month_and_a_year():
    month = parse_time_cue("What setback did Melanie face in October 2023?", NOW)
    assert month.label == "October 2023"
    assert month.matches(at(2023, 10, 1)) and month.matches(at(2023, 11, 7))
    assert not month.matches(at(2023, 11, 9)) and not month.matches(at(2022, 10, 5))
    june = parse_time_cue("When did Melanie go camping in June?", NOW)
    assert june.month == 6 and june.matches(at(2021, 6, 30)) and june.matches(at(2023, 7, 3))
    assert not june.matches(at(2023, 7, 20)) and not june.matches(at(2023, 5, 31))
    assert parse_time_cue("the offsite in mid-June", NOW).month == 6
    year = parse_time_cue("How many times did we deploy in 2024?", NOW)
    assert year.matches(at(2024, 3, 1)) and not year.matches(at(2023, 12, 31))
    # A naive timestamp is taken as UTC.
    assert year.matches(datetime(2024, 3, 1))


def test_relative_cues_count_back_from_now():
    yesterday = parse_time_cue("what did we decide yesterday about the cache?", NOW)
    assert yesterday.matches(at(2026, 11, 21)) and not yesterday.matches(at(2026, 11, 10))
    ago = parse_time_cue("the bug we fixed two weeks ago", NOW)
    assert ago.matches(at(2026, 11, 8)) and not ago.matches(at(2026, 11, 20))
    assert parse_time_cue("changes from last week", NOW).matches(at(2026, 11, 15))


@pytest.mark.parametrize("query", ["May I ask how the cache works?", "what is 2023 in hex",
                                   "February 31, 2023", "why does the build fail"])
def test_no_cue(query):
    assert parse_time_cue(query, NOW) is None


def test_matching_memories_are_boosted_by_the_time_cue_experiment():
    def cand(doc_id: str, created: datetime) -> Candidate:
        # pinned: no time decay to muddle the comparison
        return Candidate(document_id=doc_id, chunk_id=doc_id, chunk_index=0, content=doc_id,
                         category="general", created_at=created, score=0.5, pinned=True)

    inside, outside = cand("in", at(2023, 10, 14)), cand("out", at(2023, 6, 1))
    adjusted = apply_adjustments([outside, inside], now=NOW)
    assert "time_cue" not in inside.explain["adjust"]  # off by default (bench/RESULTS.md)
    ranked, reported = run_experiments(["time_cue"], Question("on October 13, 2023", NOW), adjusted)
    assert [c.document_id for c in ranked] == ["in", "out"]
    assert reported == {"time_cue": "October 13, 2023"}
    assert inside.explain["adjust"]["time_cue"] == pytest.approx(1.6)
    assert "time_cue" not in outside.explain["adjust"]


@pytest.mark.parametrize(
    "query", ["fix the bug in march.py", "in mar.ts the parser fails", "look in march/ first", "in may_utils"]
)
def test_a_month_name_inside_a_file_name_or_path_is_not_a_time_cue(query):
    assert parse_time_cue(query, datetime(2026, 11, 25, tzinfo=UTC)) is None
