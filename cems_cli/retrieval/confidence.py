"""How likely a result is to answer the query, 0..1: a calibrated probability rather than a ranking score.

A ranking score only orders one query's results; 0.4 on one query may be the answer and on another noise.
Confidence is comparable across queries, so a front end can act on it (the prompt hook injects only what
clears CEMS_RECALL_MIN_CONFIDENCE, `cems search` shows only that unless asked for all, and both show it):

    p = σ(b0 + b_cos · relative · cosine + b_lex · relative · lexical)
    p = (p + rerank) / 2                     when a reranker scored the memory (its own 0..1 judgement)
    p = p · CAPTURED_PRIOR                   a memory capture inferred, not one the user wrote or pinned

- cosine: the memory's own cosine to the query (the embedding's evidence);
- lexical: its BM25 score against a whole-query match (how much of the query it holds, rare words weighing
  more);
- relative: its adjusted score over the best result's (the pipeline's own ranking: recency, project, pins).
  It weighs the evidence rather than adding to it: the best result of a query that matches nothing is still
  first (relative 1), and only its evidence can say it matches nothing.

The coefficients are a logistic regression fitted by `bench/confidence_sessions.py` on what the prompt hook
and `cems search` find for the capture benchmarks' questions (ours and the sets recorded by others), each
candidate labelled useful (it holds a fact's keywords) or noise, with the captured prior in place; its
calibration is measured on held-out projects (bench/RESULTS.md).
"""

from __future__ import annotations

import math

# bench/confidence_sessions.py on bench/sessions, m-claude and swebench-mini (3,844 candidates of 171
# questions, through both paths, and of 114 off-topic ones; 777 useful). With every project held out once,
# expected calibration error on the prompt hook's candidates: 0.061 on bench/sessions, 0.131 on m-claude,
# 0.114 on swebench-mini.
INTERCEPT = -2.957
B_COSINE = 4.643
B_LEXICAL = 3.735
FITTED_ON = "bench/sessions, m-claude, swebench-mini (bench/confidence_sessions.py)"
# A memory capture inferred from a session is a reading of what happened, not a statement of the user's:
# on equal evidence it is less likely to be what the asker wants (the same judgement as the ranking's
# source weight, AdjustSettings.captured). The fit holds it fixed: the benchmarks hold captured memories only.
CAPTURED_PRIOR = 0.85


def logistic(z: float) -> float:
    # Split by sign so a large |z| cannot overflow exp().
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def _clamped(value: float) -> float:
    return min(1.0, max(0.0, value)) if math.isfinite(value) else 0.0


def _values(cosine: float, lexical: float, relative: float) -> dict[str, float]:
    cosine, lexical, relative = _clamped(cosine), _clamped(lexical), _clamped(relative)
    return {"relative*cosine": relative * cosine, "relative*lexical": relative * lexical}


def weights() -> dict[str, float]:
    """Each term's weight in the logit (the intercept is INTERCEPT)."""
    return {"relative*cosine": B_COSINE, "relative*lexical": B_LEXICAL}


def confidence(
    *, cosine: float, lexical: float, relative: float, rerank: float | None = None, captured: bool = False
) -> float:
    """See the module docstring; every input is clamped to 0..1."""
    values, w = _values(cosine, lexical, relative), weights()
    p = logistic(INTERCEPT + sum(w[name] * values[name] for name in values))
    if rerank is not None and math.isfinite(rerank):
        p = (p + _clamped(rerank)) / 2
    if captured:
        p *= CAPTURED_PRIOR
    return p


def breakdown(
    *, cosine: float, lexical: float, relative: float, rerank: float | None = None, captured: bool = False
) -> dict[str, object]:
    """What the confidence is built from, for `explain`: each term's value, weight and contribution to the
    logit; then the reranker's blend and the captured prior where they apply."""
    values, w = _values(cosine, lexical, relative), weights()
    reranked = rerank is not None and math.isfinite(rerank)
    return {
        "formula": "logistic(intercept + sum of weight * value)"
                   + (", averaged with the rerank score" if reranked else "")
                   + (f", times {CAPTURED_PRIOR} (captured)" if captured else ""),
        "intercept": INTERCEPT,
        "terms": {name: {"value": round(values[name], 4), "weight": w[name],
                         "contribution": round(w[name] * values[name], 4)} for name in values},
        "fitted_on": FITTED_ON,
    }
