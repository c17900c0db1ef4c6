"""Fit the confidence model (cems_cli/retrieval/confidence.py) and measure its calibration.

Every LoCoMo question is searched (hybrid, no LLM, the product's defaults) and each of its top-10 results
becomes one example: its features (cosine, lexical coverage, adjusted score relative to the best) and
whether it is a gold turn. A logistic regression (Newton's method) is fitted on conversations 26-43 and its
calibration reported on 44-50, which it never saw: per bin of predicted confidence, the share of results
that were gold, and the expected calibration error (ECE). The current coefficients are reported the same
way, so a refit can be compared with what ships.

    python bench/confidence_fit.py path/to/locomo10.json [--as-of 2026-11-22]

The capture benchmark's check (what the prompt hook injects at each CEMS_RECALL_MIN_CONFIDENCE) is
`cems eval --sessions bench/sessions --details FILE`: each injected line shows its confidence.
"""

from __future__ import annotations

import argparse
import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

FIT_CORPORA = {f"conv-{n}" for n in range(26, 44)}
BINS = 10


def features(explain: dict) -> list[float]:
    c = explain["confidence"]
    return [c["cosine"], c["lexical"], c["relative"], c["cosine"] * c["lexical"]]


def collect(path: Path, as_of: datetime) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(features, gold labels, fitting-half mask, shipped confidences) over every question's top 10."""
    from cems_cli.config import get_settings
    from cems_cli.evaluation.datasets import load_locomo
    from cems_cli.evaluation.runner import ingest_corpus, throwaway_home

    bench = load_locomo(path)
    units = bench.units_by_corpus()
    questions = bench.scored_questions()
    rows, labels, fit, shipped = [], [], [], []
    with throwaway_home() as home:
        for corpus_id in sorted({q.corpus_id for q in questions}):
            with ingest_corpus(corpus_id, units[corpus_id], get_settings(), home, lambda *_: None) as space:
                for question in (q for q in questions if q.corpus_id == corpus_id):
                    gold = set(bench.qrels[question.qid])
                    results = space.service.search(question.question, limit=10, mode="hybrid", explain=True,
                                                   track_access=False, now=as_of, include_weak=True)
                    for result in results:
                        rows.append(features(result.explain))
                        labels.append(any(doc in gold for doc in space.docs_of.get(result.id, [])))
                        fit.append(corpus_id in FIT_CORPORA)
                        shipped.append(result.confidence)
            print(f"{corpus_id}: {len(rows)} results so far", flush=True)
    return np.array(rows), np.array(labels, dtype=float), np.array(fit), np.array(shipped)


def fit_logistic(x: np.ndarray, y: np.ndarray, ridge: float = 1e-3, steps: int = 50) -> np.ndarray:
    """Intercept and coefficients by Newton's method (a little ridge keeps the Hessian invertible)."""
    design = np.hstack([np.ones((len(x), 1)), x])
    weights = np.zeros(design.shape[1])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-design @ weights))
        gradient = design.T @ (p - y) + ridge * weights
        hessian = (design * (p * (1 - p))[:, None]).T @ design + ridge * np.eye(len(weights))
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-8:
            break
    return weights


def predict(weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-(weights[0] + x @ weights[1:])))


def calibration(p: np.ndarray, y: np.ndarray) -> tuple[float, float, list[tuple[str, int, float, float]]]:
    """(ECE, log loss, per-bin rows: range, count, mean predicted, share gold)."""
    table, ece = [], 0.0
    for b in range(BINS):
        low, high = b / BINS, (b + 1) / BINS
        inside = (p >= low) & ((p < high) if b < BINS - 1 else (p <= high))
        if not inside.any():
            continue
        predicted, observed = float(p[inside].mean()), float(y[inside].mean())
        ece += inside.sum() / len(p) * abs(predicted - observed)
        table.append((f"{low:.1f}-{high:.1f}", int(inside.sum()), predicted, observed))
    clipped = np.clip(p, 1e-6, 1 - 1e-6)
    loss = float(-(y * np.log(clipped) + (1 - y) * np.log(1 - clipped)).mean())
    return ece, loss, table


def report(name: str, p: np.ndarray, y: np.ndarray) -> None:
    ece, loss, table = calibration(p, y)
    print(f"\n{name}: {len(p)} results, {int(y.sum())} gold; ECE {ece:.3f}, log loss {loss:.3f}")
    print(f"{'bin':>9} {'n':>6} {'predicted':>10} {'gold share':>11}")
    for span, count, predicted, observed in table:
        print(f"{span:>9} {count:>6} {predicted:>10.3f} {observed:>11.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("locomo", type=Path)
    parser.add_argument("--as-of", default="2026-11-22")
    args = parser.parse_args()
    as_of = datetime.fromisoformat(args.as_of).replace(tzinfo=UTC)
    x, y, fit, shipped = collect(args.locomo, as_of)
    weights = fit_logistic(x[fit], y[fit])
    names = ["intercept", "cosine", "lexical", "relative", "cosine*lexical"]
    print("\nfitted on conversations 26-43: " + ", ".join(f"{n} {w:+.3f}" for n, w in zip(names, weights,
                                                                                         strict=True)))
    report("refit, held-out conversations 44-50", predict(weights, x[~fit]), y[~fit])
    report("shipped coefficients, held-out conversations 44-50", shipped[~fit], y[~fit])
    report("shipped coefficients, all conversations", shipped, y)
    if not math.isfinite(float(weights.sum())):
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
