"""Benchmark: HNSW recall@10 against exact search at 100k vectors, and the ef_search that reaches 0.95.

Uniformly random normalised vectors are a needlessly harsh test (in 384 dimensions every point is nearly
equidistant from every other); real embeddings are clustered, at several scales. So the vectors are drawn
hierarchically: TOPICS random directions, SUBTOPICS around each, points around each subtopic (Gaussian
noise, renormalised at every level). Queries are fresh draws with more noise (a question is further from
any one memory than memories of one subtopic are from each other): a query's top 10 sit at cosine ≈ 0.70-0.73,
its 50th neighbour at ≈ 0.40, a random pair at ≈ 0.

The vectors are written straight into memory_chunks with the bulk COPY path (index built after the load, as
a first big import does) and queried through the product's own vector query (`store.search.vector_hits`:
HNSW with iterative scan and the visibility filters) at several ef_search values; exact top-10 by numpy.
Real query embeddings: bench/search_latency.py reports the same sweep for real MiniLM queries.
Results: bench/results/hnsw_recall.json.

    python bench/hnsw_recall.py [--vectors 100000] [--queries 200]
"""

from __future__ import annotations

import argparse
import time
import uuid

import numpy as np
from _common import exact_top, hnsw_recall, percentile, print_table, throwaway_home, write_results

DIM = 384
TOPICS = 200
SUBTOPICS = 20  # per topic: 4,000 subtopics, 25 vectors each at 100k
TOPIC_NOISE = 1.0  # noise norm before renormalising, at each level
POINT_NOISE = 0.5
QUERY_NOISE = 0.8
EF_SEARCH = (40, 64, 100, 200, 400)
TARGET = 0.95


def _around(centres: np.ndarray, count: int, noise: float, rng: np.random.Generator) -> np.ndarray:
    """`count` points, each around a random one of `centres`, noise of norm `noise`, renormalised."""
    jitter = rng.normal(size=(count, centres.shape[1])).astype(np.float32)
    jitter *= noise / np.linalg.norm(jitter, axis=1, keepdims=True)
    points = centres[rng.integers(0, len(centres), count)] + jitter
    return points / np.linalg.norm(points, axis=1, keepdims=True)


def hierarchical(count: int, queries: int, seed: int = 11) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(TOPICS, DIM)).astype(np.float32)
    topics /= np.linalg.norm(topics, axis=1, keepdims=True)
    subtopics = np.concatenate([_around(topics[t : t + 1], SUBTOPICS, TOPIC_NOISE, rng)
                                for t in range(TOPICS)])
    return _around(subtopics, count, POINT_NOISE, rng), _around(subtopics, queries, QUERY_NOISE, rng)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()

    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService
    from cems_cli.store import bulk as store
    from cems_cli.store.records import NewMemory

    vectors, queries = hierarchical(args.vectors, args.queries)
    exact = exact_top(queries, vectors)
    similarity = queries @ vectors.T
    results: dict = {"vectors": args.vectors, "queries": args.queries, "dim": DIM, "topics": TOPICS,
                     "subtopics_per_topic": SUBTOPICS, "noise": {"topic": TOPIC_NOISE, "point": POINT_NOISE,
                                                                 "query": QUERY_NOISE},
                     "query_similarity": {"top1_mean": round(float(similarity.max(axis=1).mean()), 3),
                                          "top10_mean": round(float(np.take_along_axis(
                                              similarity, exact, axis=1).mean()), 3)},
                     "ef_search": {}}
    rows = []
    with throwaway_home() as home:
        settings = load_settings(home=home, user="bench", team=None, database_url=None,
                                 embedding_backend="local", embedding_model=None, embedding_dim=DIM)
        svc = MemoryService(settings)
        docs = [store.DocumentRow(uuid.uuid4(), NewMemory(content=f"vector {i}", source="bench"),
                                  f"bench-{i}", None) for i in range(args.vectors)]
        chunks = [store.ChunkRow(d.id, 0, d.memory.content, vectors[i]) for i, d in enumerate(docs)]
        started = time.perf_counter()
        with svc.conn.transaction():
            store.write_documents(svc.conn, settings.user, docs, chunks, rebuild_indexes=True)
        store.analyze(svc.conn)
        results["load_and_build_seconds"] = round(time.perf_counter() - started, 1)
        index_of = {str(d.id): i for i, d in enumerate(docs)}
        for ef in EF_SEARCH:
            recall, latencies = hnsw_recall(svc, queries, exact, index_of, ef_search=ef)
            entry = {"recall@10": round(recall, 4), "p50_ms": round(percentile(latencies, 50), 2),
                     "p95_ms": round(percentile(latencies, 95), 2)}
            results["ef_search"][str(ef)] = entry
            rows.append((ef, f"{recall:.3f}", entry["p50_ms"], entry["p95_ms"],
                         "ok" if recall >= TARGET else "below"))
        svc.close()
    reaching = [int(ef) for ef, e in results["ef_search"].items() if e["recall@10"] >= TARGET]
    results["smallest_ef_search_reaching_target"] = min(reaching) if reaching else None
    print_table(f"HNSW recall@10 vs exact, {args.vectors:,} hierarchically clustered vectors (dim {DIM}), "
                f"load+build {results['load_and_build_seconds']:.0f} s",
                ["ef_search", "recall@10", "p50 ms", "p95 ms", f"≥ {TARGET}"], rows)
    print(f"smallest ef_search reaching {TARGET}: {results['smallest_ef_search_reaching_target']}")
    path = write_results("hnsw_recall", results)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
