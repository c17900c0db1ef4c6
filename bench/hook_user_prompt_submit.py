"""Benchmark: the UserPromptSubmit hook as a whole process, with 10k memories behind the warm search server.

A throwaway CEMS_HOME gets --memories templated developer memories (bench/_common.py) through the `cems
import` engine: the first BASE texts are embedded with the local model, the rest get noisy copies of those
vectors (as in search_latency.py; full-text search sees every real text). Then hooks/user_prompt_submit.py
runs --runs times as Claude Code would run it (stdin payload, a distinct prompt each time); the first call
starts the search server (`cems serve`), warm-up calls are not timed. Prints median / p95 and how many runs
injected memories; writes bench/results/user_prompt_submit.json. Target: p50 ≤ 250 ms at 10k memories.

    python bench/hook_user_prompt_submit.py [--memories 10000] [--runs 30]
"""

from __future__ import annotations

import argparse
import time

from _common import memory_texts, percentile, print_table, prompt_hook_runs, query_texts, throwaway_home
from _common import write_results as write
from search_latency import CATEGORIES, synthetic_vectors

BASE = 2000
WARMUP = 3
TARGET_MS = 250.0


def load(home, count: int) -> float:
    """Store `count` memories for user "bench"; returns the seconds it took."""
    from cems_cli.config import load_settings
    from cems_cli.engine.bulk import embed_all, import_memories
    from cems_cli.engine.service import MemoryService
    from cems_cli.store.records import NewMemory

    settings = load_settings(home=home, user="bench", team=None, database_url=None, llm_base_url=None,
                             llm_api_key=None, project="project:bench/app", embedding_backend="local",
                             embedding_model=None, embedding_dim=None)
    texts = memory_texts(count)
    started = time.perf_counter()
    svc = MemoryService(settings)
    try:
        vectors = synthetic_vectors(embed_all(texts[:BASE], svc.embedder.embed), len(texts))
        row_of = {text: i for i, text in enumerate(texts)}
        memories = [NewMemory(content=text, category=CATEGORIES[i % len(CATEGORIES)], source="bench",
                              source_ref=settings.project) for i, text in enumerate(texts)]
        import_memories(svc, memories, embed=lambda batch: vectors[[row_of[t] for t in batch]])
    finally:
        svc.close()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()

    with throwaway_home() as home:
        load_seconds = load(home, args.memories)
        prompts = query_texts(WARMUP + args.runs, seed=11)
        try:
            samples, injected = prompt_hook_runs(home, prompts, WARMUP)
        finally:
            from cems_cli.server.daemon import stop_server

            stop_server(home)

    p50, p95 = percentile(samples, 50), percentile(samples, 95)
    print_table(f"UserPromptSubmit hook, whole process, {args.memories:,} memories, warm search server",
                ["runs", "p50 ms", "p95 ms", "min ms", "runs that injected memories", "target p50"],
                [[len(samples), f"{p50:.1f}", f"{p95:.1f}", f"{min(samples):.1f}", injected,
                  f"≤ {TARGET_MS:.0f} ms"]])
    path = write("user_prompt_submit", {
        "memories": args.memories, "load_seconds": round(load_seconds, 1), "runs": len(samples),
        "p50_ms": round(p50, 2), "p95_ms": round(p95, 2), "min_ms": round(min(samples), 2),
        "injected_runs": injected, "target_p50_ms": TARGET_MS, "meets_target": p50 <= TARGET_MS,
        "samples_ms": [round(s, 2) for s in samples],
    })
    print(f"results: {path}")


if __name__ == "__main__":
    main()
