"""Retrieval metrics (pure): per question from a ranked list of doc ids and the gold set, then averaged.

Definitions: Recall@k = |top-k ∩ gold| / |gold|; hit@k = 1 if any gold doc is
in the top k; recall_all@k = 1 if every gold doc is; nDCG@k with binary gains, ideal = all gold ranked first.
A ranked list may repeat a doc id (two results mapping to one doc); only its first position counts.

Session-level scoring (LongMemEval: the units are turns, the evidence is whole sessions) maps every retrieved
unit to its session and scores that list with the same functions: a session's second turn in the list adds
nothing, so the top k is the first k distinct sessions in rank order (LongMemEval's own turn-to-session
evaluation counts the same way).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

METRIC_NAMES = ("recall@5", "recall@10", "ndcg@10", "hit@5", "recall_all@5")
# Session level (recall_any@5 is hit@5 over sessions), then turn level over the turns marked as evidence.
SESSION_METRIC_NAMES = ("recall_any@5", "recall_all@5", "ndcg@10", "turn_recall@5", "turn_recall@10")


def _top(ranked: Sequence[str], k: int) -> list[str]:
    return list(dict.fromkeys(ranked))[:k]


def recall_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("recall needs at least one relevant doc")
    return len(gold_set.intersection(_top(ranked, k))) / len(gold_set)


def hit_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    return 1.0 if set(gold).intersection(_top(ranked, k)) else 0.0


def recall_all_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    gold_set = set(gold)
    return 1.0 if gold_set and gold_set.issubset(_top(ranked, k)) else 0.0


def ndcg_at_k(ranked: Sequence[str], gold: Iterable[str], k: int) -> float:
    gold_set = set(gold)
    if not gold_set:
        raise ValueError("nDCG needs at least one relevant doc")
    top = _top(ranked, k)
    dcg = sum(1.0 / math.log2(rank + 1) for rank, doc in enumerate(top, start=1) if doc in gold_set)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(len(gold_set), k) + 1))
    return dcg / ideal


def question_metrics(ranked: Sequence[str], gold: Iterable[str]) -> dict[str, float]:
    gold = list(gold)
    return {
        "recall@5": recall_at_k(ranked, gold, 5),
        "recall@10": recall_at_k(ranked, gold, 10),
        "ndcg@10": ndcg_at_k(ranked, gold, 10),
        "hit@5": hit_at_k(ranked, gold, 5),
        "recall_all@5": recall_all_at_k(ranked, gold, 5),
    }


def session_metrics(ranked: Sequence[str], session_of: Mapping[str, str], gold_sessions: Iterable[str],
                    gold_turns: Iterable[str] = ()) -> dict[str, float]:
    """SESSION_METRIC_NAMES for one question: `ranked` doc ids (turns), `session_of` doc id → session.

    The turn-level pair is left out when no gold turn is known (a file without `has_answer` flags), so
    `average` takes it over the questions that have them rather than counting those as misses."""
    gold_sessions = list(gold_sessions)
    sessions = [session_of[doc] for doc in ranked if doc in session_of]
    row = {
        "recall_any@5": hit_at_k(sessions, gold_sessions, 5),
        "recall_all@5": recall_all_at_k(sessions, gold_sessions, 5),
        "ndcg@10": ndcg_at_k(sessions, gold_sessions, 10),
    }
    gold_turns = list(gold_turns)
    if gold_turns:
        row["turn_recall@5"] = recall_at_k(ranked, gold_turns, 5)
        row["turn_recall@10"] = recall_at_k(ranked, gold_turns, 10)
    return row


def average(rows: Sequence[dict[str, float]],
            names: Sequence[str] = METRIC_NAMES) -> dict[str, float | int | None]:
    """{"n", metric: mean} over per-question metric dicts (zeros when there are none). A metric some rows
    lack is averaged over the rows that have it; None when rows exist but none has it."""
    out: dict[str, float | int | None] = {"n": len(rows)}
    for name in names:
        values = [r[name] for r in rows if name in r]
        out[name] = sum(values) / len(values) if values else (None if rows else 0.0)
    return out


def summarise(scored: Sequence[tuple[str, dict[str, float]]],
              names: Sequence[str] = METRIC_NAMES) -> dict[str, dict]:
    """(category, metrics) per question → {"overall": …, "by_category": {name: …}} (categories sorted)."""
    by_category: dict[str, list[dict[str, float]]] = {}
    for category, row in scored:
        by_category.setdefault(category, []).append(row)
    return {
        "overall": average([row for _, row in scored], names),
        "by_category": {name: average(rows, names) for name, rows in sorted(by_category.items())},
    }


def percentile(values: Sequence[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); 0 for no values."""
    if not 0 <= p <= 100:
        raise ValueError("percentile must be within [0, 100]")
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * p / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)
