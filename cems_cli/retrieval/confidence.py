"""How likely a result is to answer the query, 0..1: a calibrated probability rather than a ranking score.

A ranking score only orders one query's results; 0.4 on one query may be the answer and on another noise.
Confidence is comparable across queries, so a front end can act on it (the prompt hook injects only what
clears CEMS_RECALL_MIN_CONFIDENCE, and shows it):

    p = σ(b0 + b_cos · cosine + b_lex · lexical + b_rel · relative + b_both · cosine · lexical)
    p = (p + rerank) / 2                     when a reranker scored the memory (its own 0..1 judgement)
    p = p · CAPTURED_PRIOR                   a memory capture inferred, not one the user wrote or pinned

- cosine: the memory's own cosine to the query (the embedding's evidence);
- lexical: its BM25 score against a whole-query match (how much of the query it holds, rare words weighing
  more);
- relative: its adjusted score over the best result's (the pipeline's own ranking: recency, project, pins);
- cosine · lexical: corroboration, both retrievers agreeing.

The coefficients are a logistic regression fitted by `bench/confidence_fit.py` on LoCoMo's gold turns among
the top-10 results (conversations 26-43; bench/RESULTS.md gives its calibration on the held-out
conversations and on the capture benchmark, which it never saw).
"""

from __future__ import annotations

import math

# bench/confidence_fit.py, LoCoMo conversations 26-43, hybrid, no LLM (9,966 results, 940 gold). On the
# held-out conversations 44-50: expected calibration error 0.015, log loss 0.257. The pipeline's own relative
# score carries most of it; the evidence terms separate a best result that matches from one that does not.
INTERCEPT = -9.436
B_COSINE = 0.497
B_LEXICAL = 1.167
B_RELATIVE = 7.411
B_BOTH = 0.663
# A memory capture inferred from a session is a reading of what happened, not a statement of the user's:
# on equal evidence it is less likely to be what the asker wants (the same judgement as the ranking's
# source weight, AdjustSettings.captured).
CAPTURED_PRIOR = 0.85


def logistic(z: float) -> float:
    # Split by sign so a large |z| cannot overflow exp().
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def confidence(
    *, cosine: float, lexical: float, relative: float, rerank: float | None = None, captured: bool = False
) -> float:
    """See the module docstring; every input is clamped to 0..1."""
    cosine, lexical, relative = (min(1.0, max(0.0, v)) if math.isfinite(v) else 0.0
                                 for v in (cosine, lexical, relative))
    z = (INTERCEPT + B_COSINE * cosine + B_LEXICAL * lexical + B_RELATIVE * relative
         + B_BOTH * cosine * lexical)
    p = logistic(z)
    if rerank is not None and math.isfinite(rerank):
        p = (p + min(1.0, max(0.0, rerank))) / 2
    if captured:
        p *= CAPTURED_PRIOR
    return p
