"""Fit the confidence (cems_cli/retrieval/confidence.py) on what the prompt hook would inject, and choose
its floor (CEMS_RECALL_MIN_CONFIDENCE).

Each capture benchmark's sessions are captured as `cems eval --sessions` captures them; then, before the
questions are asked, every question is recalled as the prompt hook recalls it, with its floors (score,
relative, similarity, confidence) off and up to 10 results, and searched as `cems search` searches it (no
floor); so are a few questions no memory is about (OFF_TOPIC). Each candidate becomes one example: its
features (cosine, lexical, relative; captured or not) and its label, useful (its injected line holds a
fact's keywords, as `sessions_data.score_block` judges) or noise. The examples are written to a JSONL file
so the fit can be redone without capturing again (`--load`).

The fit is a logistic regression with the captured prior in place (`fit_scaled`), judged on held-out
projects only: every project is left out once, fitted on all the others (of every set), and its candidates
scored by that fit. Calibration is reported per set and path, then the hook is simulated at each floor (the
recall floors, then the confidence floor, then 3 lines within 1,000 tokens): fact recall, noise (share of
injected tokens in lines that hold no fact) and lines per question, per set.

    python bench/confidence_sessions.py --sessions bench/sessions --out /tmp/ours.jsonl
    python bench/confidence_sessions.py --sessions bench/agent-sessions \
        --data DATA/agent-sessions --set m-claude --set swebench-mini \
        --swebench-per-repo 5 --out /tmp/others.jsonl
    python bench/confidence_sessions.py --load /tmp/ours.jsonl --load /tmp/others.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from confidence_fit import calibration, fit_logistic, predict  # noqa: E402

if TYPE_CHECKING:
    from cems_cli.engine.service import MemoryService
    from cems_cli.evaluation.sessions_data import SessionQuestion, SessionSet

# The product's model (retrieval/confidence.py): the evidence, weighed by how the pipeline ranks the memory
# against the best one. A best result that matches nothing (relative 1, cosine 0.2, no shared word) stays
# low, where a plain sum of relative and evidence put it at 0.45 on the off-topic questions.
FEATURES = ("relative*cosine", "relative*lexical")
FLOORS = (0.0, 0.02, 0.05, 0.08, 0.1, 0.12, 0.15, 0.18, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5)


def features(row: dict[str, Any]) -> list[float]:
    return [row["relative"] * row["cosine"], row["relative"] * row["lexical"]]


# --------------------------------------------------------------------------- collecting


# Questions no memory is about, asked in every project through `cems search`'s path: the fit must see what
# a best result that matches nothing looks like (the benchmark's own such questions mostly get no candidate
# at all from the prompt hook's path, whose general-knowledge gate drops them).
OFF_TOPIC = ("zebra quantum banana", "xyzzy plugh frobnicate", "recipe for a lemon meringue pie",
             "who won the 1998 football world cup", "write a haiku about autumn leaves",
             "how far is the moon from the earth")


def _probe(set_name: str, rows: list[dict[str, Any]]) -> Any:
    """What run_sessions calls once the set is captured: every question's candidates, floors off, through
    the prompt hook's path ("recall") and `cems search`'s ("search"); then the off-topic questions."""
    from cems_cli import defaults
    from cems_cli.engine.recall import format_recall
    from cems_cli.evaluation.sessions_data import score_block
    from cems_cli.project import project_for_dir
    from cems_cli.text.tokens import count_tokens

    def add(question: SessionQuestion | None, qid: str, project: str, cwd: str, path: str,
            results: list[Any]) -> None:
        best = max((r.score for r in results), default=0.0)
        for rank, result in enumerate(results):
            line = format_recall([result.to_json()], project_for_dir(cwd)).splitlines()[2]
            useful, present, tokens = False, [], count_tokens(line)
            if question is not None:
                score = score_block(question, line, count_tokens)
                useful = score.lines[0].useful
                present = [i for i, hit in enumerate(score.facts_present) if hit]
            c = result.explain["confidence"]
            rows.append({
                "set": set_name, "project": project, "qid": qid, "path": path,
                "facts": len(question.facts) if question else 0, "rank": rank, "id": result.id,
                "cosine": c["cosine"], "lexical": c["lexical"], "relative": c["relative"],
                "captured": bool(c["captured"]), "shipped": result.confidence, "score": result.score,
                # The hook's own floors, which stay: the confidence floor comes after them.
                "floors": result.score >= defaults.RECALL_MIN_SCORE
                and result.score >= defaults.RECALL_MIN_RELATIVE * best
                and (c["lexical"] > 0 or c["cosine"] >= defaults.RECALL_MIN_SIMILARITY),
                "line": line, "tokens": tokens, "useful": useful, "facts_present": present,
            })
        if not results:
            rows.append({"set": set_name, "project": project, "qid": qid, "path": path,
                         "facts": len(question.facts) if question else 0, "rank": -1})

    def probe(service: MemoryService, questions: list[SessionQuestion]) -> None:
        for question in questions:
            project = project_for_dir(question.project_cwd)
            unfiltered = service.recall_options(current_project=project, limit=10, token_budget=100_000,
                                                min_score=0.0, min_relative=0.0, min_similarity=0.0,
                                                min_confidence=0.0, explain=True)
            results = service.recall(question.question, unfiltered)
            add(question, question.qid, question.project, question.project_cwd, "recall", results)
            asked = service.search_options(limit=10, explain=True, cwd=question.project_cwd,
                                           track_access=False, include_weak=True)
            found = service.search(question.question, asked)
            add(question, question.qid, question.project, question.project_cwd, "search", found)
        for name, cwd in sorted({(q.project, q.project_cwd) for q in questions}):
            for number, query in enumerate(OFF_TOPIC):
                asked = service.search_options(limit=10, explain=True, cwd=cwd, track_access=False,
                                               include_weak=True)
                found = service.search(query, asked)
                add(None, f"off-topic/{name}/{number}", name, cwd, "search", found)
    return probe


def collect(args: argparse.Namespace) -> list[dict[str, Any]]:
    from cems_cli.config import get_settings
    from cems_cli.evaluation.sessions import run_sessions

    rows: list[dict[str, Any]] = []
    settings = get_settings()
    if args.data is None:
        from cems_cli.evaluation.sessions_data import load_session_set

        dataset = load_session_set(args.sessions, None)
        run_sessions(dataset, settings, probe=_probe(args.sessions.name, rows))
        return rows
    from cems_cli.evaluation.agent_sessions import chosen_sets, load_set

    with tempfile.TemporaryDirectory(prefix="cems-confidence-") as work:
        for spec in chosen_sets(args.sessions, args.set or None):
            loaded: SessionSet = load_set(spec, args.data, args.sessions, Path(work),
                                          swebench_per_repo=args.swebench_per_repo)
            run_sessions(loaded, settings, probe=_probe(spec.name, rows))
            print(f"{spec.name}: {len(rows)} candidates so far", flush=True)
    return rows


# --------------------------------------------------------------------------- fitting and judging


def fit_scaled(x: np.ndarray, y: np.ndarray, scale: np.ndarray, ridge: float = 1e-3,
               steps: int = 200) -> np.ndarray:
    """Intercept and coefficients of p = scale · σ(w0 + x·w) by Newton's method on the log loss with the
    expected (Fisher) Hessian: the product multiplies a captured memory's σ by CAPTURED_PRIOR, so the
    logistic is fitted with that factor in place (with scale 1 this is bench/confidence_fit.py's fit)."""
    design = np.hstack([np.ones((len(x), 1)), x])
    weights = fit_logistic(x, y)  # a good start
    for _ in range(steps):
        sigma = 1 / (1 + np.exp(-design @ weights))
        p = np.clip(scale * sigma, 1e-9, 1 - 1e-9)
        dp = scale * sigma * (1 - sigma)  # dp/dz
        gradient = design.T @ ((p - y) / (p * (1 - p)) * dp) + ridge * weights
        fisher = dp * dp / (p * (1 - p))
        hessian = (design * fisher[:, None]).T @ design + ridge * np.eye(len(weights))
        step = np.linalg.solve(hessian, gradient)
        weights -= step
        if np.abs(step).max() < 1e-8:
            break
    return weights


def model(weights: np.ndarray, x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    return scale * predict(weights, x)


def _prepared(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from cems_cli.retrieval.confidence import CAPTURED_PRIOR

    x = np.array([features(r) for r in rows])
    y = np.array([float(r["useful"]) for r in rows])
    scale = np.array([CAPTURED_PRIOR if r["captured"] else 1.0 for r in rows])
    return x, y, scale


def held_out(rows: list[dict[str, Any]]) -> np.ndarray:
    """Each candidate's confidence from a fit that never saw its project."""
    x, y, scale = _prepared(rows)
    projects = np.array([f"{r['set']}/{r['project']}" for r in rows])
    p = np.zeros(len(rows))
    for project in sorted(set(projects)):
        out = projects == project
        p[out] = model(fit_scaled(x[~out], y[~out], scale[~out]), x[out], scale[out])
    return p


def simulate(rows: list[dict[str, Any]], p: np.ndarray, floor: float, limit: int = 3,
             budget: int = 1000) -> dict[str, float]:
    """The hook at this confidence floor: fact recall, noise, lines per question, questions with lines
    although none of their candidates holds a fact."""
    questions: dict[tuple[str, str], list[tuple[dict[str, Any], float]]] = {}
    for row, prob in zip(rows, p, strict=True):
        if row.get("path", "recall") != "recall":
            continue
        questions.setdefault((row["set"], row["qid"]), [])
        if row["rank"] >= 0:
            questions[(row["set"], row["qid"])].append((row, prob))
    facts = present = tokens = noise = lines = unanswerable_lines = unanswerable = 0
    for (_set, _qid), candidates in questions.items():
        chosen, used = [], 0
        for row, prob in candidates:
            if row["floors"] and prob >= floor and len(chosen) < limit and used + row["tokens"] <= budget:
                chosen.append(row)
                used += row["tokens"]
        total = candidates[0][0]["facts"] if candidates else 0
        facts += total
        present += len({i for row in chosen for i in row["facts_present"]})
        tokens += used
        noise += sum(row["tokens"] for row in chosen if not row["useful"])
        lines += len(chosen)
        if not any(row["useful"] for row, _ in candidates):
            unanswerable += 1
            unanswerable_lines += len(chosen)
    return {"fact_recall": present / facts if facts else 0.0, "noise": noise / tokens if tokens else 0.0,
            "lines": lines / len(questions), "questions": len(questions),
            "lines_no_answer": unanswerable_lines / unanswerable if unanswerable else 0.0}


def report(rows: list[dict[str, Any]], p: np.ndarray, label: str) -> None:
    print(f"\n=== {label}")
    for name in sorted({r["set"] for r in rows}):
        mine = [i for i, r in enumerate(rows) if r["set"] == name]
        for path in ("recall", "search"):
            ranked = [i for i in mine if rows[i]["rank"] >= 0 and rows[i].get("path", "recall") == path]
            if not ranked:
                continue
            y = np.array([float(rows[i]["useful"]) for i in ranked])
            ece, loss, table = calibration(p[ranked], y)
            print(f"\n{name}, {path} path: {len(ranked)} candidates, {int(y.sum())} useful; "
                  f"ECE {ece:.3f}, log loss {loss:.3f}")
            for span, count, predicted, observed in table:
                print(f"  {span:>9} n={count:>5} predicted {predicted:.3f} useful {observed:.3f}")
        tops = [i for i in mine if rows[i]["qid"].startswith("off-topic/") and rows[i]["rank"] == 0]
        if tops:
            print(f"  off-topic questions' best result: confidence max {p[tops].max():.3f}, "
                  f"mean {p[tops].mean():.3f} ({len(tops)} questions)")
        subset = [rows[i] for i in mine]
        print(f"  {'floor':>6} {'recall':>7} {'noise':>6} {'lines/q':>8} {'lines/q no fact':>16}")
        for floor in FLOORS:
            s = simulate(subset, p[mine], floor)
            print(f"  {floor:>6.2f} {s['fact_recall']:>7.3f} {s['noise']:>6.3f} {s['lines']:>8.2f} "
                  f"{s['lines_no_answer']:>16.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=Path, help="a session set (or, with --data, their questions)")
    parser.add_argument("--data", type=Path, help="the sets recorded by others (one sub-folder per set)")
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--swebench-per-repo", type=int, default=None)
    parser.add_argument("--out", type=Path, help="write the candidates here (JSONL)")
    parser.add_argument("--load", type=Path, action="append", default=[], help="candidates written before")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    for path in args.load:
        rows.extend(json.loads(line) for line in path.read_text().splitlines() if line.strip())
    if args.sessions:
        collected = collect(args)
        if args.out:
            args.out.write_text("".join(json.dumps(r) + "\n" for r in collected))
        rows.extend(collected)
    if not rows:
        parser.error("nothing to fit: give --sessions or --load")
    ranked = [r for r in rows if r["rank"] >= 0]
    x, y, scale = _prepared(ranked)
    weights = fit_scaled(x, y, scale)
    print("fitted on every project: " + ", ".join(
        f"{n} {w:+.3f}" for n, w in zip(("intercept", *FEATURES), weights, strict=True)))
    shipped = np.array([r.get("shipped", 0.0) for r in rows])
    report(rows, shipped, "shipped confidence (what the candidates carried)")
    p = np.zeros(len(rows))
    index = [i for i, r in enumerate(rows) if r["rank"] >= 0]
    p[index] = held_out(ranked)
    report(rows, p, "refit, each project scored by a fit that never saw it")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
