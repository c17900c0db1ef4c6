"""Benchmark: warm in-process search latency at 10k and 100k memories, vector and hybrid (no LLM).

Data: distinct templated developer memories (bench/_common.py, fixed seed). Embedding 100k texts with the
local model takes 5-10 minutes on 2 cores, so only the first BASE texts are embedded for real; every other
memory gets the vector of base text (i mod BASE) plus Gaussian noise, renormalised (cosine ≈ 0.71 to its
base). Full-text search sees every real text. Memories are loaded through the `cems import` engine
(`bulk.import_memories` fed those vectors): the COPY path, with the index rebuild of a first big load. The
texts are generated clean, so `prepare()` (redaction, ~3k/s) is skipped to keep the bench short.

Queries are distinct templated questions, embedded by the search itself (no query-cache hits). Each size and
mode runs WARMUP untimed queries, then --queries (vector) or --hybrid-queries timed ones through
`MemoryService.search` (what `cems search` runs). Also measured: the bare vector query of the store (HNSW,
precomputed query vector), the pipeline's own stage timings (from --explain), and recall@10 of the product's
HNSW query against exact search for these real query embeddings at several ef_search values.
Targets: vector p50 ≤ 15 ms at 10k, ≤ 30 ms at 100k. Results: bench/results/search_latency.json.

    python bench/search_latency.py [--sizes 10000,100000] [--queries 100] [--hybrid-queries 40]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _common import (
    exact_top,
    hnsw_recall,
    memory_texts,
    percentile,
    print_table,
    query_texts,
    throwaway_home,
    write_results,
)

BASE = 2000
# Noise norm before renormalising: cosine to the base ≈ 1 / sqrt(1 + 1²) ≈ 0.71. Much tighter copies (0.5,
# cosine 0.89) form islands of ~50 near-duplicates that HNSW navigates badly (recall@10 ≈ 0.4 at 100k):
# a property of that construction, not of real text.
NOISE = 1.0
WARMUP = 5
STAGE_SAMPLES = 10
RECALL_QUERIES = 50
EF_SEARCH = (40, 64, 100, 200, 400)
CATEGORIES = ["decisions", "preferences", "patterns", "learnings", "context", "general"]
TARGETS_MS = {10_000: 15.0, 100_000: 30.0}


def synthetic_vectors(base: np.ndarray, count: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = np.empty((count, base.shape[1]), dtype=np.float32)
    vectors[: len(base)] = base
    for start in range(len(base), count, 10_000):
        stop = min(start + 10_000, count)
        noise = rng.normal(size=(stop - start, base.shape[1])).astype(np.float32)
        noise *= NOISE / np.linalg.norm(noise, axis=1, keepdims=True)
        block = base[np.arange(start, stop) % len(base)] + noise
        vectors[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return vectors


def timed_searches(svc, queries: list[str], mode: str) -> list[float]:
    for query in queries[:WARMUP]:
        svc.search(query, svc.search_options(limit=10, mode=mode, track_access=False, include_weak=True))
    latencies = []
    for query in queries[WARMUP:]:
        started = time.perf_counter()
        svc.search(query, svc.search_options(limit=10, mode=mode, track_access=False, include_weak=True))
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def stage_medians(svc, queries: list[str], mode: str) -> dict[str, float]:
    """Median per-stage time the pipeline reports under --explain (empty if it reports none)."""
    samples: dict[str, list[float]] = {}
    for query in queries:
        options = svc.search_options(limit=10, mode=mode, explain=True, track_access=False, include_weak=True)
        results = svc.search(query, options)
        timings = (results[0].explain.get("pipeline", {}).get("timings_ms", {}) if results else {}) or {}
        for stage, value in timings.items():
            samples.setdefault(stage, []).append(float(value))
    return {stage: round(statistics.median(values), 2) for stage, values in samples.items()}


def summary(latencies: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(latencies, 50), 2), "p95": round(percentile(latencies, 95), 2),
            "mean": round(sum(latencies) / len(latencies), 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=100, help="timed vector searches per size")
    # Hybrid runs the lexical probe over every matching memory: ~1 s a query at 100k templated memories.
    parser.add_argument("--hybrid-queries", type=int, default=40, help="timed hybrid searches per size")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))

    from cems_cli.config import load_settings
    from cems_cli.engine.bulk import embed_all, import_memories
    from cems_cli.engine.service import MemoryService
    from cems_cli.store.records import NewMemory
    from cems_cli.store.search import HNSW_EF_SEARCH

    texts = memory_texts(sizes[-1])
    timed = {"vector": args.queries, "hybrid": args.hybrid_queries}
    per_size = sum(WARMUP + n + STAGE_SAMPLES for n in timed.values()) + RECALL_QUERIES
    queries = query_texts(per_size * len(sizes))
    rows, stage_rows, recall_rows = [], [], []
    results: dict = {"sizes": {}, "base_texts_embedded": BASE, "noise": NOISE, "queries": timed,
                     "product_ef_search": HNSW_EF_SEARCH}
    with throwaway_home() as home:
        settings = load_settings(home=home, user="bench", team=None, database_url=None, llm_base_url=None,
                                 llm_api_key=None, project="project:bench/app", embedding_backend="local",
                                 embedding_model=None, embedding_dim=None)
        svc = MemoryService(settings)
        started = time.perf_counter()
        base = embed_all(texts[:BASE], svc.embedder.embed)
        results["base_embed_per_second"] = round(BASE / (time.perf_counter() - started), 1)
        vectors = synthetic_vectors(base, len(texts))
        memories = [NewMemory(content=text, category=CATEGORIES[i % len(CATEGORIES)], source="bench",
                              source_ref=settings.project) for i, text in enumerate(texts)]
        row_of = {text: i for i, text in enumerate(texts)}
        index_of: dict[str, int] = {}
        loaded = 0
        pool = iter(range(len(queries)))
        for size in sizes:
            started = time.perf_counter()
            report = import_memories(svc, memories[loaded:size],
                                     embed=lambda batch: vectors[[row_of[t] for t in batch]])
            entry: dict = {"load_seconds": round(time.perf_counter() - started, 1), "loaded": report.created}
            index_of.update({memory_id: loaded + i for i, memory_id in enumerate(report.ids)})
            loaded = size
            for mode in ("vector", "hybrid"):
                batch = [queries[next(pool)] for _ in range(WARMUP + timed[mode])]
                entry[mode] = summary(timed_searches(svc, batch, mode))
                samples = [queries[next(pool)] for _ in range(STAGE_SAMPLES)]
                entry[mode]["stages_ms"] = stage_medians(svc, samples, mode)
                target = TARGETS_MS.get(size) if mode == "vector" else None
                verdict = ("ok" if entry[mode]["p50"] <= target else "MISSED") if target else ""
                rows.append((f"{size:,}", mode, entry[mode]["p50"], entry[mode]["p95"],
                             f"≤ {target:.0f}" if target else "—", verdict))
                stage_rows.append((f"{size:,}", mode, " ".join(f"{k} {v:.1f}" for k, v in
                                                               entry[mode]["stages_ms"].items())))
            recall_queries = [queries[next(pool)] for _ in range(RECALL_QUERIES)]
            query_vectors = svc.embedder.embed(recall_queries)
            exact = exact_top(query_vectors, vectors[:size])
            entry["store_vector_query"] = {}
            entry["hnsw_recall@10_real_queries"] = {}
            for ef in EF_SEARCH:
                recall, latencies = hnsw_recall(svc, query_vectors, exact, index_of, ef_search=ef)
                entry["hnsw_recall@10_real_queries"][str(ef)] = round(recall, 4)
                entry["store_vector_query"][str(ef)] = summary(latencies)
                recall_rows.append((f"{size:,}", ef, f"{recall:.3f}", summary(latencies)["p50"]))
            results["sizes"][str(size)] = entry
        svc.close()
    print_table("Search latency, warm, in-process, whole pipeline (ms)",
                ["memories", "mode", "p50", "p95", "target p50", ""], rows)
    print_table("Pipeline stages, median ms (--explain)", ["memories", "mode", "stages"], stage_rows)
    print_table("Store vector query alone (precomputed real query embeddings; corpus: embedded texts and "
                "their perturbed copies)",
                ["memories", "ef_search", "recall@10 vs exact", "p50 ms"], recall_rows)
    print_table("Loading through the import engine", ["memories", "load s"],
                [(f"{int(s):,}", e["load_seconds"]) for s, e in results["sizes"].items()])
    path = write_results("search_latency", results)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
