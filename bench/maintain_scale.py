"""Benchmark: `cems maintain` (expiry, consolidation, pruning) on one user's 10k memories.

The vectors are the clustered ones of bench/hnsw_recall.py (near neighbours at cosine ≈ 0.8, well below the
0.92 of a near duplicate), plus PLANTED pairs: a copy of an existing vector with a little noise (cosine
≈ 0.98). Some memories are past their expiry, some were archived long ago. Written straight into the tables
with the bulk COPY path; then the maintenance of engine/maintain.py runs dry, for real, and once more (a
daily run that finds nothing new). Also timed: the near-duplicate search alone, and
compared with an exact (brute-force) count of the pairs. Another user's memories of
the same size share the index, as on a team server.
Results: bench/results/maintain_scale.json.

    python bench/maintain_scale.py [--memories 10000] [--planted 200]
"""

from __future__ import annotations

import argparse
import time
import uuid
from datetime import UTC, datetime, timedelta

import numpy as np
from _common import print_table, throwaway_home, write_results
from hnsw_recall import DIM, hierarchical

EXPIRED = 100
LONG_ARCHIVED = 100


def exact_pairs(vectors: np.ndarray, first_live: int, threshold: float, block: int = 1000) -> int:
    """Pairs of live memories at least `threshold` alike, by brute force (what HNSW should find)."""
    live = vectors[first_live:]
    found = 0
    for start in range(0, len(live), block):
        scores = live[start:start + block] @ live.T
        for offset in range(scores.shape[0]):
            found += int((scores[offset, start + offset + 1:] >= threshold).sum())
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--planted", type=int, default=200)
    args = parser.parse_args()

    from cems_cli.config import load_settings
    from cems_cli.engine.maintain import SIMILARITY_THRESHOLD, run_maintenance
    from cems_cli.engine.service import MemoryService
    from cems_cli.store import bulk as store
    from cems_cli.store import lifecycle
    from cems_cli.store.records import NewMemory

    base, _ = hierarchical(args.memories - args.planted, 0)
    rng = np.random.default_rng(5)
    sources = rng.choice(len(base), args.planted, replace=False)
    jitter = rng.normal(size=(args.planted, DIM)).astype(np.float32)
    jitter *= 0.2 / np.linalg.norm(jitter, axis=1, keepdims=True)
    planted = base[sources] + jitter
    planted /= np.linalg.norm(planted, axis=1, keepdims=True)
    vectors = np.concatenate([base, planted])
    past = datetime.now(UTC) - timedelta(days=1)
    exact = exact_pairs(vectors, first_live=EXPIRED + LONG_ARCHIVED, threshold=SIMILARITY_THRESHOLD)

    results: dict = {"memories": args.memories, "planted_pairs": args.planted, "dim": DIM,
                     "threshold": SIMILARITY_THRESHOLD, "expired": EXPIRED, "long_archived": LONG_ARCHIVED}
    with throwaway_home() as home:
        settings = load_settings(home=home, user="bench", team=None, database_url=None,
                                 embedding_backend="local", embedding_model=None, embedding_dim=DIM)
        svc = MemoryService(settings)
        for user, noise in (("bench", 0), ("neighbour", 1)):
            # A planted copy says what its source says (consolidation merges only texts of the same
            # values): the source's text, one word added.
            texts = [f"{user} memory {i}" for i in range(len(base))]
            texts += [f"{user} memory {int(j)} copy" for j in sources]
            docs = [store.DocumentRow(uuid.uuid4(), NewMemory(
                        content=texts[i], source="bench",
                        expires_at=past if i < EXPIRED and not noise else None), f"{user}-{i}", None)
                    for i in range(args.memories)]
            shifted = vectors if not noise else np.roll(vectors, 1, axis=1)
            chunks = [store.ChunkRow(d.id, 0, d.memory.content, shifted[i]) for i, d in enumerate(docs)]
            with svc.conn.transaction():
                store.write_documents(svc.conn, user, docs, chunks, rebuild_indexes=True)
            if not noise:
                svc.conn.execute(
                    "UPDATE memory_documents SET archived = true WHERE id = ANY(%s::uuid[])",
                    ([d.id for d in docs[EXPIRED:EXPIRED + LONG_ARCHIVED]],))
                svc.conn.execute(
                    "UPDATE memory_documents SET archived_at = now() - interval '60 days' "
                    "WHERE id = ANY(%s::uuid[])", ([d.id for d in docs[EXPIRED:EXPIRED + LONG_ARCHIVED]],))
        store.analyze(svc.conn)

        print(f"loaded {2 * args.memories:,} memories", flush=True)
        started = time.perf_counter()
        with svc.conn.transaction():
            pairs = lifecycle.near_duplicate_pairs(svc.conn, "bench", SIMILARITY_THRESHOLD)
        results["pair_search_seconds"] = round(time.perf_counter() - started, 2)
        results["pairs_found"] = len(pairs)
        results["pairs_exact"] = exact
        rows = [("near-duplicate search", results["pair_search_seconds"],
                 f"{len(pairs)} pairs of {exact} (exact search)")]
        for name, dry in (("dry run", True), ("first run", False), ("second run", False)):
            started = time.perf_counter()
            report = run_maintenance(svc.conn, settings, dry_run=dry)
            elapsed = round(time.perf_counter() - started, 2)
            results[name.replace(" ", "_")] = {"seconds": elapsed, "merged": report.merged,
                                               "groups": len(report.consolidated), "expired": report.expired,
                                               "pruned": report.pruned}
            rows.append((name, elapsed, f"{report.merged} merged, {report.expired} expired, "
                                        f"{report.pruned} pruned"))
        svc.close()
    print_table(f"cems maintain on {args.memories:,} memories (+ {args.memories:,} of another user)",
                ["run", "seconds", "result"], rows)
    path = write_results("maintain_scale", results)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
