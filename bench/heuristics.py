"""Each ranking heuristic switched off (or on) alone, on LoCoMo and on the capture benchmark.

A heuristic stays on by default only where it helps on more than one data set. Every row runs the real
`cems eval` with one setting changed through the environment (the prompt hook's search server sees it too):

    python bench/heuristics.py --locomo path/to/locomo10.json [--only NAME,...] [--out FILE]

Rows: LoCoMo R@5 / R@10 (hybrid, no LLM, asked at --as-of) and the capture benchmark's fact recall / noise.
Results: bench/results/heuristics.json and a table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import print_table, write_results

ROOT = Path(__file__).resolve().parent.parent
# name -> (what the row changes, environment)
ROWS: dict[str, tuple[str, dict[str, str]]] = {
    "defaults": ("the defaults", {}),
    "session": ("no session context", {"CEMS_SESSION_NEIGHBOUR_WEIGHT": "0", "CEMS_SESSION_WEIGHT": "0"}),
    "coverage": ("BM25 divided by the best match, not a whole-query match", {"CEMS_LEXICAL_COVERAGE": "0"}),
    "phrase": ("no BM25 phrase bonus", {"CEMS_PHRASE_WEIGHT": "0"}),
    "time_answer": ("experiment on: memories that say when lifted on 'when' questions",
                    {"CEMS_EXPERIMENTS": "time_answer"}),
    "time_cue": ("experiment on: memories recorded at a time the query names lifted",
                 {"CEMS_EXPERIMENTS": "time_cue"}),
}


def run_eval(args: list[str], env: dict[str, str]) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "r.json"
        command = [str(Path(sys.executable).with_name("cems")), "eval", *args, "--out", str(out)]
        done = subprocess.run(command, env={**os.environ, **env}, cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command)} failed: {done.stderr.strip()[-500:]}")
        return json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--sessions", type=Path, default=ROOT / "bench" / "sessions")
    parser.add_argument("--as-of", default="2026-11-22")
    parser.add_argument("--only", default=",".join(ROWS))
    args = parser.parse_args()
    results: dict = {}
    table = []
    for name in args.only.split(","):
        what, env = ROWS[name]
        locomo = run_eval(["--locomo", str(args.locomo), "--mode", "hybrid", "--as-of", args.as_of], env)
        sessions = run_eval(["--sessions", str(args.sessions)], env)
        overall, loop = locomo["overall"], sessions["overall"]
        results[name] = {"what": what, "environment": env,
                         "locomo": {k: overall[k] for k in ("recall@5", "recall@10")},
                         "locomo_multi_hop_r10": locomo["by_category"]["multi-hop"]["recall@10"],
                         "sessions": {k: loop[k] for k in ("fact_recall", "noise")}}
        table.append((name, what, f"{overall['recall@5']:.3f} / {overall['recall@10']:.3f}",
                      f"{loop['fact_recall']:.3f} / {loop['noise']:.0%}"))
        print(f"{name}: {json.dumps(results[name])}", flush=True)
    print_table("Heuristics on two data sets", ["row", "change", "LoCoMo R@5 / R@10",
                                                "capture recall / noise"], table)
    print(f"results: {write_results('heuristics', results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
