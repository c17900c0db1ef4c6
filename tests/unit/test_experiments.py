"""The experiments registry: ranking stages off by default, switched on by name (CEMS_EXPERIMENTS)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cems_cli.config import Settings, SettingsError, load_settings
from cems_cli.retrieval.adjust import apply_adjustments
from cems_cli.retrieval.experiments import EXPERIMENTS, Question, run_experiments
from cems_cli.retrieval.types import Candidate

NOW = datetime(2026, 11, 22, 15, 0, tzinfo=UTC)


def test_nothing_runs_by_default_and_names_are_read_from_a_comma_separated_list(monkeypatch):
    monkeypatch.delenv("CEMS_EXPERIMENTS", raising=False)
    assert load_settings().experiments == ()
    monkeypatch.setenv("CEMS_EXPERIMENTS", " time_answer, Time_Cue,,time_answer ")
    assert load_settings().experiments == ("time_answer", "time_cue")
    assert Settings(experiments=["time_cue"]).experiments == ("time_cue",)  # config.toml's list


def test_an_unknown_name_is_a_one_line_error_naming_the_variable(monkeypatch):
    monkeypatch.setenv("CEMS_EXPERIMENTS", "time_cue,entity_links")
    with pytest.raises(SettingsError) as raised:
        load_settings()
    message = str(raised.value)
    assert "\n" not in message
    assert "CEMS_EXPERIMENTS" in message and "'entity_links'" in message
    assert "time_answer, time_cue" in message


def test_dormant_stages_have_no_setting_of_their_own():
    # Deleted (entity links, recency factor, MMR assembly) or moved into the registry (the time boosts).
    gone = {"entity_weight", "entity_top", "temporal_strength", "diverse_aggregation", "time_cue_boost",
            "time_answer_boost"}
    assert gone.isdisjoint(Settings.model_fields)
    assert set(EXPERIMENTS) == {"time_cue", "time_answer"}


def test_experiments_multiply_the_adjusted_score_as_the_adjustments_did():
    # "When did … in March 2026?": recorded in March and saying when → ×1.6 ×1.5 on its adjusted score.
    both = Candidate(document_id="both", chunk_id="b", chunk_index=0, content="We moved it last Friday.",
                     category="general", created_at=datetime(2026, 3, 20, tzinfo=UTC), score=0.3, pinned=True)
    neither = Candidate(document_id="neither", chunk_id="n", chunk_index=0, content="Redis setup.",
                        category="general", created_at=datetime(2025, 1, 1, tzinfo=UTC), score=0.6,
                        pinned=True)
    adjusted = apply_adjustments([neither, both], now=NOW)
    ranked, reported = run_experiments(["time_cue", "time_answer"],
                                       Question("When did we move it in March 2026?", NOW), adjusted)
    assert [c.document_id for c in ranked] == ["both", "neither"]
    assert reported == {"time_cue": "March 2026", "time_answer": "time"}
    assert both.explain["adjust"]["unclamped"] == pytest.approx(0.3 * 1.1 * 1.6 * 1.5)
    assert both.score == pytest.approx(0.792)
    assert neither.score == pytest.approx(0.66)
