"""Benchmark: CEMS at 100k, 300k and 1M memories of text that looks like memories; each figure as a curve.

Corpus (bench/_scale_corpus.py): sentences the capture engine would keep, mined from the three session sets
written by others (--data) and the project's own set (~82k), then templated memories up to --real texts, all
embedded for real with the local model once and cached outside the repository (~17 min for 200k on 2 cores,
alone; three times that beside other work). Sizes
above --real are filled with templated texts whose vectors are noisy copies of the real ones (cosine ≈ 0.71
to their base, as in search_latency.py): embedding 1M texts would take ~80 min.

Questions: the questions of the session sets (bench/agent-sessions/*.jsonl, bench/sessions/questions.jsonl),
then templated ones; embedded by the search itself (no query cache hits).

Per size, a store of its own (a throwaway home), loaded through the `cems import` engine with the vectors
given (as `cems import --trusted` of an export made with `--embeddings` would): committed batches, search
indexes dropped before and built once after. Then:
- load seconds (COPY, then the index build), and the size on disk of the tables, the HNSW and GIN indexes;
- recall@10 of the product's vector query (store.search.vector_hits: HNSW, iterative scan, the product's
  ef_search) against exact search for real question embeddings; also at other ef_search values;
- vector and hybrid p50/p95 through `MemoryService.search` (what `cems search` and the server run);
- the UserPromptSubmit hook as Claude Code runs it (a process per prompt) against the warm search server,
  p50/p95, and the server's RSS after those prompts.
Results: bench/results/scale.json.

    python bench/scale.py --data DIR [--sizes 100000,300000,1000000] [--real 200000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from _common import (
    REPO,
    exact_top,
    hnsw_recall,
    memory_texts,
    print_table,
    prompt_hook_runs,
    query_texts,
    throwaway_home,
    write_results,
)
from _scale_corpus import embedded_corpus
from search_latency import CATEGORIES, NOISE, summary, timed_searches

EF_SEARCH = (40, 100, 200, 400, 800)
TARGETS = {"recall": 0.95, "vector_p50": 20.0, "hybrid_p50": 60.0, "hook_p50": 100.0, "rss_mb": 400.0}


def filler(real: np.ndarray, count: int, seed: int = 5) -> np.ndarray:
    """`count` noisy copies of real vectors (each of a random real one), renormalised."""
    rng = np.random.default_rng(seed)
    out = np.empty((count, real.shape[1]), dtype=np.float32)
    for start in range(0, count, 20_000):
        stop = min(start + 20_000, count)
        noise = rng.normal(size=(stop - start, real.shape[1])).astype(np.float32)
        noise *= NOISE / np.linalg.norm(noise, axis=1, keepdims=True)
        block = real[rng.integers(0, len(real), stop - start)] + noise
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def questions(count: int) -> list[str]:
    found: list[str] = []
    for path in sorted((REPO / "bench" / "agent-sessions").glob("*.jsonl")) + \
            [REPO / "bench" / "sessions" / "questions.jsonl"]:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                question = json.loads(line).get("question")
                if isinstance(question, str) and question not in found:
                    found.append(question)
    extra = [q for q in query_texts(count + len(found), seed=23) if q not in found]
    return (found + extra)[:count]


def sizes_on_disk(conn) -> dict[str, float]:
    """Tables (heap and TOAST), HNSW and GIN indexes (what `cems status` reports), and the whole database,
    in MB."""
    from cems_cli.store.footprint import page_cache

    mb = 1024 * 1024
    cache = page_cache(conn)
    database = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]
    return {"tables_mb": round(cache["tables_bytes"] / mb, 1), "hnsw_mb": round(cache["hnsw_bytes"] / mb, 1),
            "gin_mb": round(cache["gin_bytes"] / mb, 1), "database_mb": round(database / mb, 1)}


@contextlib.contextmanager
def kept_home(keep: str, size: int) -> Iterator[Path]:
    """A throwaway home, or with --keep DIR one kept at DIR/SIZE (loaded once, measured again later)."""
    if not keep:
        with throwaway_home() as home:
            yield home
        return
    from cems_cli.paths import pgdata_path, using_home
    from cems_cli.store.embedded import stop_server

    home = Path(keep).expanduser().resolve() / str(size)
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        with using_home(home):
            yield home
    finally:
        stop_server(pgdata_path(home))


def hnsw_with(conn, options: str) -> None:
    """The (empty) HNSW index again with other build options (`m=24,ef_construction=128`), before the load
    that builds it: a variant to compare."""
    import re

    if not re.fullmatch(r"(\w+=\d+)(,\w+=\d+)*", options):
        raise SystemExit(f"--index-with: expected name=number,…, got {options!r}")
    conn.execute("DROP INDEX memory_chunks_embedding")
    conn.execute("CREATE INDEX memory_chunks_embedding ON memory_chunks USING hnsw "
                 f"(embedding vector_cosine_ops) WITH ({options})")


def load(svc, texts: list[str], vectors: np.ndarray) -> tuple[dict[str, float], list[str]]:
    from cems_cli.engine.bulk import ImportLine, import_memories
    from cems_cli.store.records import NewMemory

    marks: dict[str, float] = {}
    started = time.perf_counter()

    def progress(done: int, total: int) -> None:
        if done == total:
            marks["copied"] = time.perf_counter()

    lines = [ImportLine(NewMemory(content=text, category=CATEGORIES[i % len(CATEGORIES)], source="bench",
                                  source_ref=svc.settings.project), vectors=vectors[i : i + 1])
             for i, text in enumerate(texts)]
    built = time.perf_counter()
    report = import_memories(svc, lines, progress=progress)
    done = time.perf_counter()
    assert report.created == len(texts), report.to_json()
    return {"load_seconds": round(done - started, 1), "prepare_seconds": round(built - started, 1),
            "copy_seconds": round(marks.get("copied", done) - built, 1),
            "index_seconds": round(done - marks.get("copied", done), 1)}, report.ids


def server_rss_mb(home: Path) -> float | None:
    from cems_cli.plumbing.procinfo import resident_bytes
    from cems_cli.server.daemon import server_pid

    pid = server_pid(home)
    rss = resident_bytes(pid) if pid is not None else None
    return round(rss / (1024 * 1024), 1) if rss is not None else None


def measure(size: int, texts: list[str], vectors: np.ndarray, asked: list[str], args, log) -> dict:
    from cems_cli.config import load_settings
    from cems_cli.engine.service import MemoryService
    from cems_cli.server.daemon import stop_server
    from cems_cli.store.search import ef_search_for

    product_ef = ef_search_for(size)
    entry: dict = {"product_ef_search": product_ef}
    with kept_home(args.keep, size) as home:
        settings = load_settings(home=home, user="bench", team=None, database_url=None, llm_base_url=None,
                                 llm_api_key=None, project="project:bench/app", embedding_backend="local",
                                 embedding_model=None, embedding_dim=None)
        svc = MemoryService(settings)
        try:
            stored = [str(r[0]) for r in svc.conn.execute("SELECT id FROM memory_documents ORDER BY seq")]
            if len(stored) == size:  # a kept store (--keep) from an earlier run: measure it again
                ids = stored
                log(f"{size:,}: kept store, loaded earlier")
            else:
                if args.index_with:  # the load builds the index from its definition: these options included
                    hnsw_with(svc.conn, args.index_with)
                log(f"{size:,}: loading")
                timings, ids = load(svc, texts[:size], vectors[:size])
                entry.update(timings)
            entry["disk"] = sizes_on_disk(svc.conn)
            log(f"{size:,}: loaded in {entry.get('load_seconds', '(kept)')} s {entry['disk']}")
            pool = iter(asked)
            recall_questions = [next(pool) for _ in range(args.recall_queries)]
            query_vectors = svc.embedder.embed(recall_questions)
            exact = exact_top(query_vectors, vectors[:size])
            index_of = {memory_id: i for i, memory_id in enumerate(ids)}
            entry["recall@10"], entry["vector_query_ms"] = {}, {}
            for ef in sorted(set(EF_SEARCH) | {product_ef}):
                recall, latencies = hnsw_recall(svc, query_vectors, exact, index_of, ef_search=ef)
                entry["recall@10"][str(ef)] = round(recall, 4)
                entry["vector_query_ms"][str(ef)] = summary(latencies)
            svc.conn.execute(f"SET hnsw.ef_search = {product_ef}")
            log(f"{size:,}: recall {entry['recall@10']}")
            if args.recall_only:
                return entry
            for mode, count in (("vector", args.queries), ("hybrid", args.hybrid_queries)):
                batch = [next(pool) for _ in range(5 + count)]
                entry[mode] = summary(timed_searches(svc, batch, mode))
            log(f"{size:,}: vector {entry['vector']} hybrid {entry['hybrid']}")
        finally:
            svc.close()
        try:
            samples, injected = prompt_hook_runs(home, [next(pool) for _ in range(3 + args.hook_runs)], 3)
            entry["hook"] = {**summary(samples), "injected": injected, "runs": len(samples)}
            entry["server_rss_mb"] = server_rss_mb(home)
        finally:
            stop_server(home)
        log(f"{size:,}: hook {entry['hook']} server RSS {entry['server_rss_mb']} MB")
    return entry


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--real", type=int, default=200_000, help="texts embedded for real (cached)")
    parser.add_argument("--data", type=Path, default=None,
                        help="the agent-sessions sets' folder (bench/agent-sessions/README.md); without it, "
                        "only the project's own sessions are mined")
    parser.add_argument("--recall-queries", type=int, default=100)
    parser.add_argument("--queries", type=int, default=60, help="timed vector searches per size")
    parser.add_argument("--hybrid-queries", type=int, default=40, help="timed hybrid searches per size")
    # The hook's p50 over 20 prompts moved by 30 ms run to run at a million memories; over 75, by 20.
    parser.add_argument("--hook-runs", type=int, default=75)
    parser.add_argument("--index-with", default="",
                        help="build HNSW WITH these options, e.g. m=24,ef_construction=128")
    parser.add_argument("--out", default="scale", help="results name under bench/results/")
    parser.add_argument("--keep", default="", help="keep each size's store under this folder (reused)")
    parser.add_argument("--recall-only", action="store_true", help="load and recall only (index variants)")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))

    from cems_cli.config import load_settings
    from cems_cli.embedding import get_embedder
    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)

    with throwaway_home() as home:
        settings = load_settings(home=home, user="bench", team=None, database_url=None,
                                 embedding_backend="local", embedding_model=None, embedding_dim=None)
        embedder = get_embedder(settings)
        real_texts, real_vectors, mined = embedded_corpus(args.real, settings.resolved_embedding_model,
                                                          embedder.embed, args.data, log)
    total = max(sizes)
    texts, vectors = list(real_texts[:total]), real_vectors[:total]
    if total > len(texts):
        seen = {t.lower() for t in texts}
        extra = [t for t in memory_texts(total + 50_000, seed=77) if t.lower() not in seen]
        texts += extra[: total - len(texts)]
        vectors = np.concatenate([vectors, filler(real_vectors, total - len(real_vectors))])
    asked = questions(args.recall_queries + args.queries + args.hybrid_queries + args.hook_runs + 20)
    results: dict = {"index_with": args.index_with or "defaults (m=16, ef_construction=64)",
                     "real_texts": len(real_texts), "mined_from_sessions": mined, "filler_noise": NOISE,
                     "questions": len(asked), "sizes": {}}
    for size in sizes:
        results["sizes"][str(size)] = measure(size, texts, vectors, asked, args, log)
        write_results(args.out, results)

    if args.recall_only:
        print(json.dumps({s: {k: e.get(k) for k in ("load_seconds", "index_seconds", "disk", "recall@10")}
                          for s, e in results["sizes"].items()}, indent=1))
        return 0
    rows = []
    for size, e in results["sizes"].items():
        recall = e["recall@10"][str(e["product_ef_search"])]
        rows.append((f"{int(size):,}", e["product_ef_search"], f"{recall:.3f}",
                     e["vector"]["p50"],
                     e["vector"]["p95"], e["hybrid"]["p50"], e["hybrid"]["p95"], e["hook"]["p50"],
                     e.get("load_seconds", "kept"), e["disk"]["tables_mb"], e["disk"]["hnsw_mb"],
                     e["disk"]["gin_mb"], e["server_rss_mb"]))
    print_table(f"Scale (real texts {len(real_texts):,}, {mined:,} mined from sessions)",
                ["memories", "ef_search", "recall@10", "vector p50", "p95", "hybrid p50", "p95", "hook p50",
                 "load s", "tables MB", "HNSW MB", "GIN MB", "server RSS MB"], rows)
    print_table("Recall@10 against exact search by ef_search",
                ["memories", *map(str, EF_SEARCH)],
                [(f"{int(s):,}", *(f'{e["recall@10"][str(ef)]:.3f}' if str(ef) in e["recall@10"] else ""
                                   for ef in EF_SEARCH))
                 for s, e in results["sizes"].items()])
    print(f"results: {write_results(args.out, results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
