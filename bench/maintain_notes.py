"""Benchmark: what `cems maintain` would merge among generated developer notes, every one a distinct fact.

The notes are bench/_common.memory_texts: templates filled with a technology, a component, a person, an
error, … ("We decided to use Redis for the billing service because …"). Two notes of one template that
differ in one slot are two facts, so a correct consolidation merges none of them; by cosine alone (>= 0.92)
it merged most. Stored through the library's import (local embedding model), then the dry run of
engine/maintain.py, and for comparison the merges the cosine alone would make (the same pair search and
grouping, without the value check). Results: bench/results/maintain_notes.json.

    python bench/maintain_notes.py [--notes 1500]
"""

from __future__ import annotations

import argparse
import time

from _common import memory_texts, print_table, throwaway_home, write_results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--notes", type=int, default=1500)
    args = parser.parse_args()

    import cems
    from cems_cli.engine.maintain import SIMILARITY_THRESHOLD, plan_merges, run_maintenance
    from cems_cli.store import lifecycle

    texts = memory_texts(args.notes)
    results: dict = {"notes": args.notes, "threshold": SIMILARITY_THRESHOLD}
    with throwaway_home() as home:
        memory = cems.open(home=home, user="bench", team=None)
        started = time.perf_counter()
        # Notes written by hand, as the benchmark means them: the import is ours, so trusted.
        memory.import_records([{"content": text, "source": "manual"} for text in texts], trusted=True)
        results["import_seconds"] = round(time.perf_counter() - started, 1)
        svc = memory._service
        with svc.conn.transaction():
            scored = lifecycle.near_duplicate_pairs(svc.conn, "bench", SIMILARITY_THRESHOLD)
            found = lifecycle.candidates(svc.conn, "bench", [i for a, b, _ in scored for i in (a, b)],
                                         lock=False)
        by_cosine = plan_merges(found, [(a, b) for a, b, _ in scored])
        results["pairs_alike"] = len(scored)
        results["merged_by_cosine_alone"] = sum(len(merged) for _, merged in by_cosine)
        started = time.perf_counter()
        report = run_maintenance(svc.conn, svc.live_settings(), dry_run=True)
        results["dry_run_seconds"] = round(time.perf_counter() - started, 1)
        results["merged_now"] = report.merged
        results["examples_now"] = [
            {"kept": group.kept_text, "merged": group.merged_texts} for group in report.consolidated[:5]
        ]
        memory.close()
    print_table(f"cems maintain --dry-run on {args.notes:,} generated notes (each a distinct fact)",
                ["decision", "memories merged"],
                [(f"cosine >= {SIMILARITY_THRESHOLD} alone (before)", results["merged_by_cosine_alone"]),
                 ("cosine and the same values (now)", results["merged_now"])])
    for example in results["examples_now"]:
        print(f"  kept: {example['kept']}\n    merged: {example['merged']}")
    path = write_results("maintain_notes", results)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
