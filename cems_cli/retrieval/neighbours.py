"""Session context: a memory recorded next to relevant ones is more likely relevant itself.

Memories of one session (the `session:<id>` tag the hooks, the observer and imports give them) were
recorded in order, and neighbours share a topic: the answer follows the question, the fix follows the
error. A single memory often matches a query only in part (a reply that says "the Wolves" but not
"basketball"); its neighbours supply the rest. So, after fusion:

    neighbour(d) = max fused score of the candidates within `window` positions of d in its session
    session(d)   = max fused score of the candidates of d's session
    score(d)     = max(fused(d), (fused(d) + a * neighbour(d) + b * session(d)) / (1 + a + b))   (0..1)

Only candidates count (a neighbour that no retriever found contributes 0): measured on LoCoMo, scoring
the unretrieved neighbours too changed nothing. Context only lends score, it never takes any: a memory
whose neighbours matched less keeps its own score, exactly as a memory without a session does (dividing
by 1 + a + b used to cut a captured memory's 0.6 to 0.42 beside a hand-written one's untouched 0.6, so a
mixed store ranked by where a memory came from).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cems_cli import defaults
from cems_cli.retrieval.types import Candidate


@dataclass(frozen=True)
class SessionPosition:
    session: str
    position: int  # 0-based place of the memory among its session's visible memories, in recorded order


def apply_session_context(
    candidates: Sequence[Candidate],
    positions: Mapping[str, SessionPosition],
    *,
    window: int = defaults.SESSION_WINDOW,
    neighbour_weight: float = defaults.SESSION_NEIGHBOUR_WEIGHT,
    session_weight: float = defaults.SESSION_WEIGHT,
) -> list[Candidate]:
    """Rescore candidates (keyed by document id in `positions`) and return them best first.

    Records `explain["session"]` (neighbour and session evidence) on every candidate that has a position.
    """
    if window < 0 or neighbour_weight < 0 or session_weight < 0:
        raise ValueError("session context window and weights must be ≥ 0")
    by_place: dict[tuple[str, int], float] = {}
    session_best: dict[str, float] = {}
    for cand in candidates:
        place = positions.get(cand.document_id)
        if place is None:
            continue
        by_place[(place.session, place.position)] = cand.score  # read before any score is rewritten
        session_best[place.session] = max(session_best.get(place.session, 0.0), cand.score)
    scale = 1.0 + neighbour_weight + session_weight
    for cand in candidates:
        place = positions.get(cand.document_id)
        if place is None:
            continue
        neighbour = max(
            (
                by_place.get((place.session, place.position + offset), 0.0)
                for offset in range(-window, window + 1)
                if offset
            ),
            default=0.0,
        )
        session = session_best[place.session]
        blended = (cand.score + neighbour_weight * neighbour + session_weight * session) / scale
        cand.score = max(cand.score, blended)
        cand.explain["session"] = {
            "session": place.session,
            "position": place.position,
            "neighbour": neighbour,
            "session_best": session,
            "score": cand.score,
        }
    return sorted(candidates, key=lambda c: -c.score)
