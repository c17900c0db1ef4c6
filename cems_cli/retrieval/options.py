"""What one search or recall asks for, in one frozen object: `SearchOptions` (`cems search`, the library's
`search`, MCP) and `RecallOptions` (what the prompt hook injects).

Each front end builds one (`MemoryService.search_options()` / `recall_options()`, or `from_settings`) and
hands it down: the library, the service and the pipeline pass it along whole, and each stage reads what
it needs from it. Adding a knob touches `defaults.py` (its value), the field here, and the stage that uses
it; a knob that is also a setting (CEMS_*) names it in `setting(...)` and gets its `Settings` field.

Defaults come from `cems_cli.defaults`, the one definition of each. A field made with `setting()` is filled
from the `Settings` field it names by `from_settings`; the others are what a request asks (its filters, its
moment, its deadline) and start at their default.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from cems_cli import defaults
from cems_cli.retrieval.adjust import DEFAULT_ADJUST, AdjustSettings

if TYPE_CHECKING:
    from cems_cli.config import Settings

_SETTING = "setting"
_Options = TypeVar("_Options", bound="SearchOptions")


def setting(default: Any, name: str = "") -> Any:
    """A field filled from the `Settings` field `name` (its own name when not given) by `from_settings`."""
    return field(default=default, metadata={_SETTING: name})


@dataclass(frozen=True)
class SearchOptions:
    """A search's filters, limits and ranking knobs (`cems search`, the library's `search`, MCP)."""

    # What to look in.
    category: str | None = None
    scope: str = "both"
    project: str | None = None  # only memories of this project
    # The asker's project: its memories rank higher (retrieval/adjust.py).
    current_project: str | None = None

    # How many, and how they are found.
    limit: int = setting(defaults.SEARCH_LIMIT, "search_limit")
    mode: str = setting(defaults.SEARCH_MODE, "search_mode")
    token_budget: int = setting(defaults.CONTEXT_BUDGET, "context_budget")
    explain: bool = False
    # The moment the question is asked: time decay, time cues and "yesterday" count from it. None is the
    # current time; a fixed moment makes a search reproducible (`cems eval --as-of`).
    now: datetime | None = None
    # A time.monotonic() moment the answer is due (the prompt hook's budget): the LLM stages share what is
    # left before it, independent ones run at once, and a stage that cannot finish is dropped (its
    # heuristic or the unexpanded query stands in). None: each stage has its own timeout only.
    deadline: float | None = None
    # Memories the asker's context already holds (the session's profile): left out, others take their place.
    exclude_ids: frozenset[str] = frozenset()
    # A search counts as an access to what it returns (priority, last_accessed); recall does not.
    track_access: bool = True

    # Floors. Nothing below this absolute score, nor below this share of the best result's: more likely
    # noise than help.
    min_score: float | None = None
    min_relative: float | None = None
    # A memory sharing no word with the query needs at least this cosine (retrieval/filtering.py).
    min_similarity: float = setting(defaults.MIN_SIMILARITY)
    # Nothing less likely than this to answer the query is returned (retrieval/confidence.py), unless
    # `include_weak`: then every result comes back, the ones below it marked `weak`.
    min_confidence: float = setting(defaults.RECALL_MIN_CONFIDENCE, "recall_min_confidence")
    include_weak: bool = False
    # False (what the prompt hook asks): what capture derived from another project's sessions is left out
    # (its session records and tool patterns describe that repository), preferences aside.
    other_projects_captured: bool = True
    # True (what the prompt hook asks): a question about the world rather than the asker's work ("Explain
    # what React.memo does", understand.asks_general_knowledge) gets only memories plainly about what it
    # asks (_rank.GENERAL_MIN_LEXICAL, GENERAL_MIN_COSINE), often none.
    general_needs_evidence: bool = False

    # Ranking (the Settings fields of the same names; measured in bench/RESULTS.md).
    fusion: str = setting(defaults.FUSION)
    fusion_vector_weight: float = setting(defaults.FUSION_VECTOR_WEIGHT)
    lexical_coverage: float = setting(defaults.LEXICAL_COVERAGE)
    hybrid_vector_weight: float = setting(defaults.HYBRID_VECTOR_WEIGHT)
    rrf_k: int = setting(defaults.RRF_K)
    rrf_original_weight: float = setting(defaults.RRF_ORIGINAL_WEIGHT)
    rrf_expansion_weight: float = setting(defaults.RRF_EXPANSION_WEIGHT)
    session_window: int = setting(defaults.SESSION_WINDOW)
    session_neighbour_weight: float = setting(defaults.SESSION_NEIGHBOUR_WEIGHT)
    session_weight: float = setting(defaults.SESSION_WEIGHT)
    phrase_weight: float = setting(defaults.PHRASE_WEIGHT)
    relevance_threshold: float = setting(defaults.RELEVANCE_THRESHOLD)
    strong_signal_threshold: float = setting(defaults.STRONG_SIGNAL_THRESHOLD)
    strong_signal_gap: float = setting(defaults.STRONG_SIGNAL_GAP)
    rerank_input_limit: int = setting(defaults.RERANK_INPUT_LIMIT)
    superseded_weight: float = setting(defaults.SUPERSEDED_WEIGHT)
    summaries: bool = setting(defaults.SUMMARIES)
    summary_results: int = setting(defaults.SUMMARY_RESULTS)
    experiments: tuple[str, ...] = setting(defaults.EXPERIMENTS)
    # The score adjustments' factors (retrieval/adjust.py): constants, not settings.
    adjust: AdjustSettings = DEFAULT_ADJUST

    @classmethod
    def from_settings(cls: type[_Options], settings: Settings, **overrides: Any) -> _Options:
        """Every `setting()` field from `settings`, then `overrides` (an override of None leaves the field
        as the settings or the default have it: what a caller did not ask). TypeError for an unknown one."""
        values: dict[str, Any] = {}
        for item in dataclasses.fields(cls):
            if _SETTING in item.metadata:
                values[item.name] = getattr(settings, item.metadata[_SETTING] or item.name)
        unknown = set(overrides) - {item.name for item in dataclasses.fields(cls)}
        if unknown:
            raise TypeError(f"{cls.__name__} has no option {', '.join(sorted(unknown))}")
        values.update((name, value) for name, value in overrides.items() if value is not None)
        return cls(**values)

    @property
    def confidence_floor(self) -> float | None:
        """The confidence below which nothing is returned (None: none, with `include_weak`)."""
        return None if self.include_weak else self.min_confidence

    def replace(self: _Options, **changes: Any) -> _Options:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class RecallOptions(SearchOptions):
    """What the prompt hook injects (CEMS_RECALL_*): few memories, each clearly relevant, within a token
    budget; every scope, no category, the asker's project first."""

    limit: int = setting(defaults.RECALL_LIMIT, "recall_limit")
    token_budget: int = setting(defaults.RECALL_TOKEN_BUDGET, "recall_token_budget")
    min_score: float | None = setting(defaults.RECALL_MIN_SCORE, "recall_min_score")
    min_relative: float | None = setting(defaults.RECALL_MIN_RELATIVE, "recall_min_relative")
    min_similarity: float = setting(defaults.RECALL_MIN_SIMILARITY, "recall_min_similarity")
    other_projects_captured: bool = False
    general_needs_evidence: bool = True
    track_access: bool = False
    # Recall stamps last_recalled (use, which context expiry reads); a preview (`stamp=False`) does not.
    stamp: bool = True

    @classmethod
    def knobs(cls) -> dict[str, type]:
        """The numbers a prompt hook's environment may set (CEMS_RECALL_<NAME>, sent to the search server
        as `<name>`), each with its type: the fields filled from a `recall_*` setting."""
        return {item.name: type(item.default) for item in dataclasses.fields(cls)
                if item.metadata.get(_SETTING, "").startswith("recall_")}
