"""Strong-signal skip: when a cheap lexical probe already has one clear winner, don't expand the query.

Seed 001 (phase 1): probe BM25 for the top 2, skip synthesis/HyDE when top ≥ 0.85 AND top − second ≥ 0.15.

The scores must be on an absolute, query-independent 0..1 scale. Seed 001 normalises its fusion stream by
dividing by the maximum, but that cannot serve the probe: the top would always be 1.0, and min-max over
two results would always give a gap of 1.0, so every query would skip. QMD, where the 0.85/0.15 numbers
come from, maps each raw BM25 score on its own with x / (1 + x); `saturate` does that, with a `scale`
so a scorer whose raw numbers run smaller (PostgreSQL's ts_rank) can be calibrated: scale is the raw
score that should map to 0.5.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from cems_cli import defaults

# 0.95 - 0.80 is 0.1499999... in binary floating point; a boundary the spec calls "≥" must pass.
_EPSILON = 1e-9


@dataclass(frozen=True)
class StrongSignal:
    skip_expansion: bool
    top: float
    second: float
    gap: float


def saturate(raw: float, scale: float = 1.0) -> float:
    """|raw| / (|raw| + scale): monotonic, 0 for no match, approaching 1 for a strong one."""
    if scale <= 0:
        raise ValueError(f"scale must be positive, got {scale}")
    if not math.isfinite(raw):
        return 0.0
    magnitude = abs(raw)  # SQLite FTS5 reports bm25 as negative numbers; only the size matters
    return magnitude / (magnitude + scale)


def detect_strong_signal(
    scores: Sequence[float],
    *,
    threshold: float = defaults.STRONG_SIGNAL_THRESHOLD,
    min_gap: float = defaults.STRONG_SIGNAL_GAP,
) -> StrongSignal:
    """Decide from normalised probe scores (any order; the two best are used)."""
    clean = sorted((s for s in scores if math.isfinite(s)), reverse=True)
    if not clean:
        return StrongSignal(skip_expansion=False, top=0.0, second=0.0, gap=0.0)
    top = clean[0]
    second = clean[1] if len(clean) > 1 else 0.0  # a lone hit is separated from "nothing" by itself
    gap = top - second
    skip = top + _EPSILON >= threshold and gap + _EPSILON >= min_gap
    return StrongSignal(skip_expansion=skip, top=top, second=second, gap=gap)
