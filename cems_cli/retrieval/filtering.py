"""Dropping candidates: below the relevance threshold, near-duplicates, and extra chunks of one document."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from cems_cli import defaults
from cems_cli.retrieval.types import Candidate
from cems_cli.text.values import one_command_in_more_detail, same_values

DEFAULT_DUPLICATE_COSINE = 0.92


def filter_by_threshold(
    candidates: Iterable[Candidate], threshold: float = defaults.RELEVANCE_THRESHOLD
) -> list[Candidate]:
    """Keep candidates whose score is at least `threshold`, in their order."""
    return [c for c in candidates if c.score >= threshold]


# A memory that shares no word with the query and whose meaning is this far from it answers nothing: MiniLM
# puts unrelated text at cosine ~0.0-0.1 and a paraphrase of the answer well above 0.2. Without this floor
# "xyzzy plugh frobnicate" returned the five least unrelated memories. It is a floor, not a classifier:
# MiniLM puts a true synonym below nonsense at times ("which bundler" is 0.18 from "The web app uses Vite",
# "xyzzy plugh frobnicate" 0.23 from "I prefer ruff over flake8"), so it stays low.
def has_evidence(cand: Candidate, min_similarity: float = defaults.MIN_SIMILARITY) -> bool:
    """A lexical match, or a cosine to the query of at least `min_similarity`."""
    return cand.lexical_score > 0 or cand.vector_score >= min_similarity


def _unit_rows(candidates: Sequence[Candidate]) -> tuple[Any, list[int]]:
    """Row-normalised embedding matrix of the candidates that have a usable one, and their positions."""
    import numpy as np

    rows, positions = [], []
    dim: int | None = None
    for index, cand in enumerate(candidates):
        if cand.embedding is None:
            continue
        vec = np.asarray(cand.embedding, dtype=np.float64).ravel()
        norm = float(np.linalg.norm(vec))
        if norm == 0.0 or not np.isfinite(norm) or (dim is not None and vec.shape[0] != dim):
            continue
        dim = vec.shape[0]
        rows.append(vec / norm)
        positions.append(index)
    matrix = np.vstack(rows) if rows else np.zeros((0, 0))
    return matrix, positions


def semantic_dedup(
    candidates: Sequence[Candidate], threshold: float = DEFAULT_DUPLICATE_COSINE
) -> list[Candidate]:
    """Drop near-duplicates: of two candidates whose embeddings have cosine ≥ `threshold` and whose texts
    state the same values (text/values.py: "Staging runs Kubernetes 1.29" is no duplicate of "Production
    runs Kubernetes 1.27"), or that say one command in more detail (`_one_fact`), keep the higher score (the
    earlier one on a tie). Candidates without an embedding are always kept.

    Returns the survivors in their input order; each keeper lists what it absorbed in explain["dedup"].
    """
    matrix, positions = _unit_rows(candidates)
    if len(positions) < 2:
        return list(candidates)
    similarity = matrix @ matrix.T
    # Visit by score, best first; sorted() is stable so equal scores keep input order.
    order = sorted(range(len(positions)), key=lambda i: -candidates[positions[i]].score)
    kept_rows: list[int] = []
    dropped: set[int] = set()
    for row in order:
        keeper = next(
            (k for k in kept_rows if _one_fact(candidates[positions[row]].content,
                                               candidates[positions[k]].content,
                                               float(similarity[row, k]), threshold)),
            None,
        )
        if keeper is None:
            kept_rows.append(row)
            continue
        dropped.add(positions[row])
        duplicate, winner = candidates[positions[row]], candidates[positions[keeper]]
        winner.explain.setdefault("dedup", []).append(
            {"document_id": duplicate.document_id, "cosine": float(similarity[row, keeper])}
        )
    return [c for i, c in enumerate(candidates) if i not in dropped]


def _one_fact(a: str, b: str, cosine: float, threshold: float) -> bool:
    """What one result line should say once: near duplicates that state the same values, or one command in
    more detail ("tests run with `pytest`" / "`python3 -m pytest`": two of three recall lines for one fact
    on the sets written by others). Both memories stay stored; only the weaker line is not shown."""
    return cosine >= threshold and (same_values(a, b) or one_command_in_more_detail(a, b))
