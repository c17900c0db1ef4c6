"""Score adjustments from memory metadata (seeds 000/003 stage 8, clamped per seed 001 phase 5).

    score *= priority                        1.0..2.0 (clamped into that range)
    score *= 1 / (1 + days / 60)             days since last_accessed, else created_at; pinned: exempt
    score *= 1.1                             pinned
    score *= 1.3 | 0.5 | 0.9                 same project | other project | no project reference
    score *= 0.7                             captured by a trigger (session, observer, tool), not pinned
    score *= 0.85                            stored by the agent (MCP remember), not pinned
    score  = clamp(score, 0, 1)

Every factor is recorded in candidate.explain["adjust"]. `now` is a parameter so tests control time.
Stages measured but off by default (a time the query names, a memory that says when) are experiments
(retrieval/experiments.py), run after these when named.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from cems_cli.models import AGENT_SOURCE, CAPTURED_SOURCES
from cems_cli.retrieval.types import Candidate

_PROJECT_PREFIX = "project:"


@dataclass(frozen=True)
class AdjustSettings:
    decay_days: float = 60.0
    pinned_boost: float = 1.1
    same_project: float = 1.3
    # Another project's memory answers this project's question less often than it shares its words: on the
    # capture benchmark 0.8 let `ingest-gateway`'s "keep the dependencies down" top `ledger-api`'s "which
    # tool adds a dependency"; 0.5 cut injected noise in every one of its 5 projects and lost no fact.
    other_project: float = 0.5
    no_project: float = 0.9
    # What the user wrote outweighs what capture inferred from a session on equal relevance: a digest that
    # mentions "npm" must not outrank "In this repo we use pnpm, never npm" on "which package manager".
    captured: float = 0.7
    # What the agent chose to store (MCP): deliberate, one self-contained fact, so above a capture's digest;
    # but the agent's paraphrase, possibly steered by the repository it was reading, so on equal relevance
    # the person's own memory wins. Halfway between the two: a hand-written memory outranks an agent's note
    # unless the note is more than ~18% more relevant (1 / 0.85), a capture's unless it is 43% more.
    agent: float = 0.85
    min_priority: float = 1.0
    max_priority: float = 2.0


DEFAULT_ADJUST = AdjustSettings()


def _as_utc(moment: datetime) -> datetime:
    # A naive timestamp is taken as UTC: comparing naive with aware datetimes raises TypeError.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


def whole_days_between(earlier: datetime, now: datetime) -> int:
    """Whole days elapsed (timedelta.days, as the seed), never negative for clock skew or future dates."""
    return max(0, (_as_utc(now) - _as_utc(earlier)).days)


def time_decay(days: int, decay_days: float = 60.0) -> float:
    return 1.0 / (1.0 + days / decay_days)


def normalised_project(project: str | None) -> str | None:
    if project is None or not project.strip():
        return None
    value = project.strip().lower()
    return value if value.startswith(_PROJECT_PREFIX) else _PROJECT_PREFIX + value


def project_factor(
    source_ref: str | None, current_project: str | None, settings: AdjustSettings = DEFAULT_ADJUST
) -> float:
    """Same project: source_ref is `project:<current>`, exactly or followed by ':' (`project:o/r:src/x.py`).

    Plain prefix matching would let `project:acme` claim `project:acme-web`. With no current project
    there is nothing to compare against, so no factor (1.0).
    """
    where = project_relation(source_ref, current_project)
    if where is None:
        return 1.0
    factors = {"same": settings.same_project, "other": settings.other_project, "none": settings.no_project}
    return factors[where]


def project_relation(source_ref: str | None, current_project: str | None) -> str | None:
    """"same" (source_ref is `project:<current>`, exactly or followed by ':'), "other" (another project's),
    "none" (no project), or None when there is no current project to compare with."""
    current = normalised_project(current_project)
    if current is None:
        return None
    ref = (source_ref or "").strip().lower()
    if ref == current or ref.startswith(current + ":"):
        return "same"
    return "other" if ref.startswith(_PROJECT_PREFIX) else "none"


def _source_factor(cand: Candidate, settings: AdjustSettings) -> float:
    """Who wrote it: the person (1.0), the agent (`agent`) or a capture trigger (`captured`). A pin is the
    person's word (or one the agent says the person confirmed): pinned memories weigh 1.0."""
    if cand.pinned:
        return 1.0
    if cand.source in CAPTURED_SOURCES:
        return settings.captured
    return settings.agent if cand.source == AGENT_SOURCE else 1.0


def adjust_candidate(
    cand: Candidate,
    *,
    now: datetime,
    current_project: str | None = None,
    settings: AdjustSettings = DEFAULT_ADJUST,
) -> float:
    """Apply every factor to cand.score; records them in cand.explain["adjust"] and returns the new score."""
    base = cand.score if math.isfinite(cand.score) else 0.0
    priority = cand.priority if math.isfinite(cand.priority) else settings.min_priority
    priority = min(settings.max_priority, max(settings.min_priority, priority))
    reference = cand.last_accessed or cand.created_at
    days = whole_days_between(reference, now)
    decay = 1.0 if cand.pinned else time_decay(days, settings.decay_days)
    pinned = settings.pinned_boost if cand.pinned else 1.0
    project = project_factor(cand.source_ref, current_project, settings)
    source = _source_factor(cand, settings)
    unclamped = base * priority * decay * pinned * project * source
    cand.score = min(1.0, max(0.0, unclamped))
    cand.explain["adjust"] = {
        "base": base,
        "priority": priority,
        "days_since_access": days,
        "time_decay": decay,
        "pinned": pinned,
        "project": project,
        "source": source,
        "unclamped": unclamped,
        "score": cand.score,
    }
    return cand.score


def apply_adjustments(
    candidates: Sequence[Candidate],
    *,
    now: datetime,
    current_project: str | None = None,
    settings: AdjustSettings = DEFAULT_ADJUST,
) -> list[Candidate]:
    """Adjust every candidate in place; returns them best first (ties keep their order)."""
    for cand in candidates:
        adjust_candidate(cand, now=now, current_project=current_project, settings=settings)
    # Rank by the unclamped product: clamping to 1.0 would otherwise tie every strong, boosted memory.
    return sorted(candidates, key=lambda c: -c.explain["adjust"]["unclamped"])
