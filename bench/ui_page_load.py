"""Benchmark: page load time of `cems ui` with 10k memories (the whole request, over TCP to uvicorn).

A throwaway store gets COUNT synthetic memories (bench/_common.py texts through the import engine, a tenth
of them tagged with one of 100 sessions; as in bench/search_latency.py, BASE texts are embedded for real and
the others get perturbed copies of their vectors, so loading takes seconds, not minutes); the viewer runs
as `cems ui` runs it (uvicorn on 127.0.0.1, live updates on), and an HTTP client with the session cookie
loads each page REPEAT times after a warm-up: the memories list (newest 50), a search, one memory with its
explain, one memory with its history (ten edits), sessions, the next-session preview and rules. Reported:
p50 and p95 in ms per page. Target: the memories page p50 under 100 ms.

    python bench/ui_page_load.py [--count 10000] [--repeat 30]
"""

from __future__ import annotations

import argparse
import socket
import threading
import time
from typing import Any

from _common import memory_texts, percentile, print_table, query_texts, throwaway_home, write_results
from search_latency import synthetic_vectors  # the same store as the latency bench

TARGET_MS = 100.0
BASE = 1000
CATEGORIES = ("decisions", "learnings", "preferences", "context")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()

    import httpx
    import uvicorn

    from cems_cli.api import Memory
    from cems_cli.config import load_settings
    from cems_cli.engine.bulk import embed_all, import_memories
    from cems_cli.engine.service import MemoryService
    from cems_cli.store.records import NewMemory
    from cems_cli.ui.app import create_app
    from cems_cli.ui.server import bind

    with throwaway_home() as home:
        settings = load_settings(home=home, user="bench", team=None, database_url=None, llm_base_url=None,
                                 llm_api_key=None, project="project:acme/api", embedding_backend="local",
                                 embedding_model=None, embedding_dim=None)
        service = MemoryService(settings)
        memory = Memory(settings, service=service)
        texts = memory_texts(args.count)
        started = time.perf_counter()
        vectors = synthetic_vectors(embed_all(texts[:BASE], service.embedder.embed), len(texts))
        row_of = {text: i for i, text in enumerate(texts)}
        memories = [NewMemory(content=text, category=CATEGORIES[i % len(CATEGORIES)], source="bench",
                              tags=[f"session:bench{i % 100:04d}"] if i % 10 == 0 else [],
                              source_ref=settings.project if i % 2 else None)
                    for i, text in enumerate(texts)]
        report = import_memories(service, memories, embed=lambda batch: vectors[[row_of[t] for t in batch]])
        for n in range(10):  # a memory with a history of edits (sql/020_memory_edits.sql)
            memory.edit(report.ids[124], f"{texts[124]} (revision {n})")
        load_seconds = time.perf_counter() - started
        print(f"loaded {len(report.ids)} memories in {load_seconds:.1f} s", flush=True)
        memory.warm_up()

        port = _free_port()
        token = "bench"
        app = create_app(memory, token=token, port=port)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on",
                                               timeout_graceful_shutdown=1))
        sock = bind(port)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        query = query_texts(1)[0]
        pages = {
            "memories (list)": "/memories",
            "memories (search)": f"/memories?q={query}",
            "memory (explain)": f"/memories/{report.ids[123]}?q={query}",
            "memory (history)": f"/memories/{report.ids[124]}",
            "sessions": "/sessions",
            "preview": f"/preview?prompt={query}&folder={home}",
            "rules": "/rules",
        }
        rows, results = [], {}
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", cookies={f"cems_ui_{port}": token},
                              timeout=60) as client:
                for name, path in pages.items():
                    for _ in range(3):
                        assert client.get(path).status_code == 200, path
                    latencies = []
                    for _ in range(args.repeat):
                        begin = time.perf_counter()
                        answer = client.get(path)
                        latencies.append((time.perf_counter() - begin) * 1000)
                        assert answer.status_code == 200
                    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
                    rows.append((name, p50, p95, len(answer.content) / 1024))
                    results[name] = {"p50_ms": round(p50, 2), "p95_ms": round(p95, 2),
                                     "bytes": len(answer.content)}
        finally:
            server.should_exit = True
            thread.join(timeout=10)
            sock.close()
            memory.close()
    print_table(f"cems ui page load, {args.count:,} memories, {args.repeat} loads each (ms)",
                ["page", "p50", "p95", "KiB"], rows)
    met = results["memories (list)"]["p50_ms"] <= TARGET_MS
    print(f"memories page p50 {results['memories (list)']['p50_ms']:.1f} ms "
          f"({'meets' if met else 'misses'} the {TARGET_MS:g} ms target)")
    data: dict[str, Any] = {"count": args.count, "repeat": args.repeat,
                            "import_seconds": round(load_seconds, 1), "pages": results,
                            "target_ms": TARGET_MS, "met": met}
    write_results("ui_page_load", data)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
