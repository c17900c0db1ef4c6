"""Ranking stages kept for measurement, off the default path: each one switched on by its name.

    CEMS_EXPERIMENTS=time_cue,time_answer cems eval --locomo locomo10.json --mode hybrid --as-of 2026-11-22

A stage lives here, not in the pipeline, when it helped one data set only (a heuristic is on by default only
where it helps on more than one, bench/RESULTS.md). `EXPERIMENTS` is the one place that maps a name to its
stage; the pipeline runs the named ones after the score adjustments, and a search that names none neither
runs nor imports any of them.

Each stage multiplies the adjusted score of the candidates it favours, records its factor in
`explain["adjust"]` beside the others, and returns what `--explain` shows of it under
`pipeline.stages.experiments`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from cems_cli.retrieval.types import Candidate

# The factors measured on LoCoMo (bench/RESULTS.md, "Each heuristic on both data sets"): R@10 +0.005 for the
# time cue, +0.009 for the time answer; the capture benchmark unchanged by either.
TIME_CUE_BOOST = 0.6
TIME_ANSWER_BOOST = 0.5


@dataclass(frozen=True)
class Question:
    """What an experiment may read of the search: the query and the moment it is asked."""

    query: str
    now: datetime


Experiment = Callable[[Question, Sequence[Candidate]], Any]


def _boost(cand: Candidate, factor_name: str, factor: float) -> None:
    adjust = cand.explain["adjust"]
    adjust[factor_name] = factor
    adjust["unclamped"] *= factor
    cand.score = adjust["score"] = min(1.0, max(0.0, adjust["unclamped"]))


def time_cue(question: Question, candidates: Sequence[Candidate]) -> str | None:
    """"What did we decide in March?": memories recorded at the time the query names weigh 1 + TIME_CUE_BOOST
    (retrieval/timecues.py). Returns the time named, if any."""
    from cems_cli.retrieval.timecues import parse_time_cue

    cue = parse_time_cue(question.query, question.now)
    if cue is None:
        return None
    for cand in candidates:
        if cue.matches(cand.created_at):
            _boost(cand, "time_cue", 1.0 + TIME_CUE_BOOST)
    return cue.label


def time_answer(question: Question, candidates: Sequence[Candidate]) -> str | None:
    """"When did …?": memories that say when weigh 1 + TIME_ANSWER_BOOST (retrieval/answer_type.py). Returns
    "time" for a question that asks when."""
    from cems_cli.retrieval.answer_type import asks_for_time, states_time

    if not asks_for_time(question.query):
        return None
    for cand in candidates:
        if states_time(cand.content):
            _boost(cand, "time_answer", 1.0 + TIME_ANSWER_BOOST)
    return "time"


EXPERIMENTS: dict[str, Experiment] = {"time_cue": time_cue, "time_answer": time_answer}


def run_experiments(
    names: Sequence[str], question: Question, candidates: list[Candidate]
) -> tuple[list[Candidate], dict[str, Any]]:
    """The named experiments, in order, over adjusted candidates; returns them best first (by the unclamped
    product, as the adjustments rank them) and what each experiment reported."""
    reported = {name: EXPERIMENTS[name](question, candidates) for name in names}
    return sorted(candidates, key=lambda c: -c.explain["adjust"]["unclamped"]), reported
