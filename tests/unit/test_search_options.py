"""One options object for a search and for a recall (retrieval/options.py): filled from the settings, its
defaults the defaults module's, and carried whole from a front end to the stage that reads it."""

from __future__ import annotations

import dataclasses

import pytest

from cems_cli import defaults
from cems_cli.config import Settings
from cems_cli.retrieval.options import RecallOptions, SearchOptions


def _settings(**values: object) -> Settings:
    # model_construct: no environment, no config.toml, only the fields' defaults and what is given here.
    return Settings.model_construct(**values)


def _setting_fields(cls: type[SearchOptions]) -> dict[str, str]:
    return {item.name: item.metadata["setting"] or item.name
            for item in dataclasses.fields(cls) if "setting" in item.metadata}


@pytest.mark.parametrize("cls", [SearchOptions, RecallOptions])
def test_each_option_filled_from_a_setting_defaults_to_that_settings_default(cls):
    fields = _setting_fields(cls)
    assert len(fields) >= 20
    defaults_of = {name: getattr(cls(), name) for name in fields}
    assert defaults_of == {name: Settings.model_fields[setting].default for name, setting in fields.items()}


def test_from_settings_reads_the_settings_then_the_overrides():
    settings = _settings(search_limit=7, fusion_vector_weight=0.25, recall_min_relative=0.4, recall_limit=2)
    search = SearchOptions.from_settings(settings, mode="vector", category=None)
    assert (search.limit, search.fusion_vector_weight, search.mode) == (7, 0.25, "vector")
    # A search has no relative floor; the prompt hook's recall has the one its settings give.
    assert search.min_relative is None
    recall = RecallOptions.from_settings(settings, limit=None, min_score=0.0)
    assert (recall.limit, recall.min_relative, recall.min_score) == (2, 0.4, 0.0)
    assert recall.mode == defaults.SEARCH_MODE  # recall has no mode of its own: the search mode
    assert (recall.other_projects_captured, recall.general_needs_evidence) == (False, True)


def test_an_unknown_option_is_refused():
    with pytest.raises(TypeError, match="no option min_relativ"):
        RecallOptions.from_settings(_settings(), min_relativ=0.5)


def test_the_options_are_frozen():
    options = SearchOptions()
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.limit = 3  # type: ignore[misc]
    assert options.replace(limit=3).limit == 3 and options.limit == defaults.SEARCH_LIMIT


def test_include_weak_lifts_the_confidence_floor():
    assert SearchOptions().confidence_floor == defaults.RECALL_MIN_CONFIDENCE
    assert SearchOptions(include_weak=True).confidence_floor is None


def test_every_recall_setting_is_a_knob_the_prompt_hook_can_send():
    """The hook sends CEMS_RECALL_<NAME> as <name>; the server takes RecallOptions.knobs(): each `recall_*`
    setting must be one of them, or the hook's environment would not reach it."""
    recall_settings = {name for name in Settings.model_fields if name.startswith("recall_")}
    assert {f"recall_{name}" for name in RecallOptions.knobs()} == recall_settings
    assert RecallOptions.knobs()["limit"] is int and RecallOptions.knobs()["min_relative"] is float


def test_the_prompt_hook_sends_every_recall_knob_of_its_environment():
    from cems_cli.hookhandlers.user_prompt_submit import _recall_overrides

    environ = {
        "CEMS_RECALL_LIMIT": "2", "CEMS_RECALL_MIN_RELATIVE": "0.5",
        "CEMS_RECALL_SOME_NEW_KNOB": "3.5",  # a knob added later reaches the server without a change here
        "CEMS_RECALL_MIN_SCORE": "0", "CEMS_RECALL_MIN_SIMILARITY": "abc",  # left to the server's settings
        "CEMS_RECALL_TIME_BUDGET": "3",  # the hook's own budget
        "CEMS_RECALL_QUERY": "1", "CEMS_RECALL_BUDGET_MS": "9",  # never the request's own keys
        "CEMS_SEARCH_LIMIT": "4",
        "CEMS_RECALL_MIN_CONFIDENCE": "inf", "CEMS_RECALL_MAX_LINES": "nan",  # not finite: left too
    }
    assert _recall_overrides(environ) == {"limit": 2, "min_relative": 0.5, "some_new_knob": 3.5}


@pytest.mark.parametrize("raw", [float("inf"), float("-inf"), float("nan"), "Infinity", 0, -1, "x", None, []])
def test_the_server_leaves_a_knob_that_is_not_a_finite_positive_number_to_its_settings(raw):
    """A request's knob of inf would recall nothing (a floor of inf) or raise OverflowError (int(inf))."""
    from cems_cli.server.daemon import _number

    assert _number({"limit": raw}, "limit", int) is None
    assert _number({"min_score": raw}, "min_score", float) is None
    assert _number({"limit": "3"}, "limit", int) == 3 and _number({"x": 0.5}, "x", float) == 0.5


def test_the_library_takes_options_or_keywords_not_both():
    from cems_cli.api import Memory

    memory = Memory(_settings())  # nothing connects: the call is refused before any work
    with pytest.raises(TypeError, match="options or keywords"):
        memory.search("which package manager", SearchOptions(), limit=3)
    with pytest.raises(TypeError, match="options or keywords"):
        memory.recall("which package manager", RecallOptions(), min_relative=0.5)
