"""Benchmark: `cems import` throughput and `cems remember` latency, each as the real command in a new process.

import: MEMORIES distinct templated memories (bench/_common.py) as a JSONL file, into a throwaway CEMS_HOME
whose server is already running. Reported: memories/s over the import's own time (validation, dedup,
chunking, embedding with the local model, COPY: what `cems import --json` reports) and over the whole
process (interpreter start, imports, model load included). Target: ≥ 150 memories/s on 2 cores,
and ≥ 90% of the local embedder's own rate on the same texts, measured in this process right after (the
model loaded first, its batching as the import's: `bulk.embed_all`).
remember: RUNS calls of `cems remember`, one process each: warm = the server is running; cold = `cems db
stop` just before each call (the call starts the server again). Median and max wall time.
Results: bench/results/ingest.json.

    python bench/ingest.py [--memories 2000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from _common import cems, memory_texts, print_table, throwaway_home, write_results

TARGET_PER_SECOND = 150.0
TARGET_SHARE = 0.9


def _embedder_rate(texts: list[str]) -> float:
    """The local model alone on the import's texts, batched as the import batches them."""
    import tempfile
    from pathlib import Path

    from cems_cli.config import load_settings
    from cems_cli.embedding import get_embedder
    from cems_cli.engine.bulk import embed_all

    settings = load_settings(home=Path(tempfile.gettempdir()), embedding_backend="local")
    embedder = get_embedder(settings)
    embedder.embed(["warm up"])
    started = time.perf_counter()
    embed_all(texts, embedder.embed)
    return round(len(texts) / (time.perf_counter() - started), 1)


def _run(args: list[str], env: dict[str, str], stdin: bytes | None = None) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = cems(args, env, stdin=stdin)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"cems {' '.join(args[:2])} failed: {done.stderr.decode(errors='replace').strip()}")
    return elapsed, done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    lines = "".join(json.dumps({"content": text, "category": "learnings", "tags": ["bench"]}) + "\n"
                    for text in memory_texts(args.memories, seed=5))
    results: dict = {"memories": args.memories, "runs": args.runs}
    with throwaway_home() as home:
        env = {"CEMS_HOME": str(home), "CEMS_USER": "bench", "CEMS_PROJECT": "project:bench/app",
               "CEMS_EMBEDDING_BACKEND": "local"}
        _run(["db", "start"], env)
        wall, out = _run(["import", "-", "--json"], env, stdin=lines.encode())
        report = json.loads(out)
        results["import"] = {**report, "wall_seconds": round(wall, 2),
                             "wall_per_second": round(args.memories / wall, 1)}
        warm = [_run(["remember", f"Warm remember number {i}: the cache key includes the tenant id."], env)[0]
                for i in range(args.runs)]
        cold = []
        for i in range(args.runs):
            _run(["db", "stop"], env)
            cold.append(_run(["remember", f"Cold remember number {i}: restart the worker after a deploy."],
                             env)[0])
        _run(["db", "stop"], env)
    results["embedder_alone_per_second"] = _embedder_rate(memory_texts(args.memories, seed=5))
    results["import_share_of_embedder"] = round(results["import"]["per_second"]
                                                / results["embedder_alone_per_second"], 3)
    for name, times in (("remember_warm", warm), ("remember_cold", cold)):
        results[name] = {"median_ms": round(statistics.median(times) * 1000, 1),
                         "max_ms": round(max(times) * 1000, 1),
                         "runs_ms": [round(t * 1000, 1) for t in times]}
    rate = results["import"]["per_second"]
    print_table("cems import (local model)", ["measure", "value", "target", ""], [
        ("memories/s (import's own time)", rate, f"≥ {TARGET_PER_SECOND:.0f}",
         "ok" if rate >= TARGET_PER_SECOND else "MISSED"),
        ("memories/s (whole process)", results["import"]["wall_per_second"], "", ""),
        ("seconds (import's own time)", float(results["import"]["seconds"]), "", ""),
        ("seconds (whole process)", results["import"]["wall_seconds"], "", ""),
        ("the embedder alone, memories/s", results["embedder_alone_per_second"], "", ""),
        ("import / embedder alone", results["import_share_of_embedder"], f"≥ {TARGET_SHARE}",
         "ok" if results["import_share_of_embedder"] >= TARGET_SHARE else "MISSED"),
    ])
    print_table("cems remember, whole process (ms)", ["server", "median", "max"], [
        ("warm (running)", results["remember_warm"]["median_ms"], results["remember_warm"]["max_ms"]),
        ("cold (stopped)", results["remember_cold"]["median_ms"], results["remember_cold"]["max_ms"]),
    ])
    path = write_results("ingest", results)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
