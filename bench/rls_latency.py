"""Benchmark: search latency with row-level security on vs off (sql/009_teams_rls.sql), 10k and 100k memories.

The store is a team server in miniature: USERS users (u0…u9) own the memories in turn, and every
SHARE_EVERY-th memory is shared with team `red`, of which all are members. The searches are u0's, who sees its
own ~9% and the team's 10%: a selective filter, the case where HNSW needs iterative scans to fill its LIMIT.

- off: the server's superuser (row-level security never applies) through CEMS_DATABASE_URL, acting for u0
  in team red through CEMS_USER/CEMS_TEAM: the application's WHERE clause alone, as on the embedded store.
- on: u0's own login role (a member of cems_app, no superuser, no BYPASSRLS) through CEMS_DATABASE_URL on the
  same socket: the same WHERE clause, and the policies; identity and team come from the database.
Both begin and end their searches in the database (sql/025: the audit row, a committed insert, ~0.6 ms;
the ticket the member's search functions ask for; the results added to the row): the team server's cost,
the same on both sides.
Both see the same memories; the bench checks that they return the same results.

Texts as bench/search_latency.py: BASE of them embedded for real, the others perturbed copies of their
vectors. Memories are written with the import engine's COPY (store.bulk.write_documents) per owner, the
HNSW and GIN indexes built once afterwards. Query embeddings are computed once up front (both sides read
them from the cache): what is timed is retrieval. On and off alternate per query, each going first half
the time. Measured: the whole pipeline (`MemoryService.search`, vector and hybrid) and the store's two
candidate queries alone (vector_hits, lexical_hits; u0's search begun untimed before each); EXPLAIN
ANALYZE of both as u0 (row-level security on) is written to bench/results/rls_plans.txt. Target: p50 on ≤
1.10 × p50 off. The audit rows' `calls` (search function calls per search) are summarised too.

    python bench/rls_latency.py [--sizes 10000,100000] [--queries 100] [--hybrid-queries 60]
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from typing import Any

import numpy as np
from _common import RESULTS, memory_texts, percentile, print_table, query_texts, throwaway_home, write_results
from search_latency import CATEGORIES, synthetic_vectors  # the same store as the latency bench

BASE = 2000
USERS = 10
SHARE_EVERY = 10
TEAM = "red"
WARMUP = 5
PROBES = 10  # queries whose results are compared on vs off
DEPTH = 50  # candidates a list fetches in hybrid search (pipeline.MIN_DEPTH)
TARGET_RATIO = 1.10


def load(conn: Any, texts: list[str], vectors: np.ndarray, start: int, stop: int, project: str) -> float:
    """Memories start…stop-1, spread over the users (every SHARE_EVERY-th shared with the team), in one
    transaction: search indexes dropped, one COPY per owner, indexes built again (as a first import does)."""
    from cems_cli.store import bulk
    from cems_cli.store.records import NewMemory
    from cems_cli.text.chunking import chunk_text
    from cems_cli.text.normalize import content_hash

    started = time.perf_counter()
    by_user: dict[str, tuple[list[Any], list[Any]]] = {}
    for i in range(start, stop):
        text = texts[i]
        assert len(chunk_text(text)) == 1, "bench texts are one chunk each"
        shared = (i // USERS) % SHARE_EVERY == 0  # every owner shares one in SHARE_EVERY of theirs
        memory = NewMemory(content=text, category=CATEGORIES[i % len(CATEGORIES)], source="bench",
                           source_ref=project, scope="shared" if shared else "personal")
        doc = bulk.DocumentRow(uuid.uuid4(), memory, content_hash(text, None), TEAM if shared else None)
        docs, chunks = by_user.setdefault(f"u{i % USERS}", ([], []))
        docs.append(doc)
        chunks.append(bulk.ChunkRow(doc.id, 0, text, vectors[i]))
    with conn.transaction():
        dropped = bulk._drop_search_indexes(conn)
        for user, (docs, chunks) in sorted(by_user.items()):
            bulk.write_documents(conn, user, docs, chunks)
        for statement in bulk._BUILD_SETTINGS:
            conn.execute(statement)
        for definition in dropped:
            conn.execute(definition)
    bulk.analyze(conn)
    return time.perf_counter() - started


def summary(latencies: list[float]) -> dict[str, float]:
    return {"p50": round(percentile(latencies, 50), 3), "p95": round(percentile(latencies, 95), 3),
            "mean": round(sum(latencies) / len(latencies), 3)}


def interleaved(queries: list[Any], on: Any, off: Any, before_on: Any = None) -> dict[str, list[float]]:
    """Each query on both sides, alternating which goes first; the first WARMUP untimed. `before_on(query)`
    runs untimed before each query on."""
    times: dict[str, list[float]] = {"on": [], "off": []}
    for i, query in enumerate(queries):
        order = (("on", on), ("off", off)) if i % 2 else (("off", off), ("on", on))
        for name, run in order:
            if name == "on" and before_on is not None:
                before_on(query)
            started = time.perf_counter()
            run(query)
            if i >= WARMUP:
                times[name].append((time.perf_counter() - started) * 1000)
    return times


class Recorder:
    """A connection stand-in that remembers each statement, to EXPLAIN exactly what the store ran."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.statements: list[tuple[Any, Any]] = []

    def execute(self, query: Any, params: Any = None, **options: Any) -> Any:
        self.statements.append((query, params))
        return self.conn.execute(query, params, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def explain(conn: Any, statements: list[tuple[Any, Any]], marker: str) -> str:
    """EXPLAIN ANALYZE of the last recorded statement containing `marker`."""
    query, params = next(s for s in reversed(statements) if marker in str(s[0]))
    rows = conn.execute("EXPLAIN (ANALYZE, COSTS OFF, BUFFERS OFF) " + query, params).fetchall()
    return "\n".join(r[0] for r in rows)


def explain_inside(admin: Any, role: str, statements: list[tuple[Any, Any]], marker: str) -> str:
    """The plans of what the last recorded statement containing `marker` ran inside the functions it called,
    as `role`. A member's EXPLAIN shows a function scan and nothing more (sql/017_member_functions.sql), so
    the superuser takes the role's identity (SET SESSION AUTHORIZATION sets session_user, which cems_user()
    reads), begins a search as it (the search functions ask for one, sql/025), and auto_explain reports the
    nested statements as warnings (the functions keep notices from their caller, sql/024)."""
    from psycopg import sql

    from cems_cli.store.audit import query_hash

    query, params = next(s for s in reversed(statements) if marker in str(s[0]))
    notices: list[str] = []
    admin.add_notice_handler(lambda diagnostic: notices.append(diagnostic.message_primary or ""))
    admin.execute("LOAD 'auto_explain'")
    admin.execute("SET auto_explain.log_min_duration = 0; SET auto_explain.log_analyze = on; "
                  "SET auto_explain.log_nested_statements = on; SET auto_explain.log_level = warning; "
                  "SET auto_explain.log_timing = off")
    admin.execute(sql.SQL("SET SESSION AUTHORIZATION {}").format(sql.Identifier(role)))
    try:
        admin.execute("SELECT cems_begin_search('search', 'both', %s, %s)", (TEAM, query_hash("explain")))
        admin.execute(query, params).fetchall()
    finally:
        admin.execute("RESET SESSION AUTHORIZATION")
        admin.execute("SET auto_explain.log_min_duration = -1")
    return "\n".join(notices)


def candidates(name: str, svc: Any, filters: Any, vectors_of: dict[str, np.ndarray]) -> Any:
    """One of the store's candidate queries for `svc`, as a function of the query text."""
    from cems_cli.store import lexical as store_lexical
    from cems_cli.store import search as store_search

    if name == "vector_hits":
        return lambda query: store_search.vector_hits(svc.conn, vectors_of[query], filters, DEPTH)
    return lambda query: store_lexical.lexical_hits(svc.conn, query, filters, DEPTH)


def begin(svc: Any, query: str) -> None:
    """The search a member's search functions ask for (sql/025): `MemoryService.search` begins it, so the
    pipeline's times include it; the candidate queries alone are timed after it."""
    from cems_cli.store.audit import begin_search

    begin_search(svc.conn, "search", "both", TEAM, query, "u0")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=100, help="timed vector searches per size and side")
    parser.add_argument("--hybrid-queries", type=int, default=60,
                        help="timed hybrid searches per size and side")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))

    import psycopg

    from cems_cli.api import grant_role
    from cems_cli.config import load_settings
    from cems_cli.engine.bulk import embed_all
    from cems_cli.engine.service import MemoryService
    from cems_cli.paths import pgdata_path
    from cems_cli.store import lexical as store_lexical
    from cems_cli.store import search as store_search
    from cems_cli.store.db import connect
    from cems_cli.store.embedded import ensure_server

    texts = memory_texts(sizes[-1])
    per_size = (WARMUP + args.queries) + (WARMUP + args.hybrid_queries) + (WARMUP + args.queries)
    queries = query_texts((per_size + PROBES) * len(sizes))  # + the probes of each size
    results: dict[str, Any] = {"sizes": {}, "users": USERS, "share_every": SHARE_EVERY, "base_texts": BASE,
                               "target_ratio": TARGET_RATIO}
    rows, store_rows, plans = [], [], []
    with throwaway_home() as home:
        common = dict(home=home, llm_base_url=None, llm_api_key=None, project="project:bench/app",
                      embedding_backend="local", embedding_model=None, embedding_dim=None)
        admin = load_settings(**common, user="u0", team=TEAM, database_url=None)
        conn = connect(admin)  # the superuser: applies the migrations, loads, creates the role and the team
        password = uuid.uuid4().hex
        grant_role(admin, "u0", create=True, password=password)
        conn.execute("SELECT cems_team_create(%s)", (TEAM,))
        for user in range(USERS):
            conn.execute("SELECT cems_team_add(%s, %s, false)", (TEAM, f"u{user}"))
        superuser = ensure_server(pgdata_path(home)).conninfo()
        info = psycopg.conninfo.conninfo_to_dict(superuser)
        info.pop("passfile", None)
        info.update(user="u0", password=password)
        # Both through CEMS_DATABASE_URL, so both take the team server's code path (identity from the
        # database, the search audit): only the role, and so row-level security, differs.
        off = MemoryService(load_settings(**common, user="u0", team=TEAM, database_url=superuser))
        # CEMS_USER says someone else: on a team server the database decides who u0 is.
        on = MemoryService(load_settings(**common, user="not-u0", team=TEAM,
                                         database_url=psycopg.conninfo.make_conninfo(**info)))
        assert on.restricted and on.settings.user == "u0" and not off.restricted

        started = time.perf_counter()
        base = embed_all(texts[:BASE], off.embedder.embed)
        results["base_embed_seconds"] = round(time.perf_counter() - started, 1)
        vectors = synthetic_vectors(base, len(texts))
        on._embedder = off.embedder  # one model in memory
        started = time.perf_counter()
        off.query_embedder.embed(queries)  # every query embedded once; both sides hit the cache
        on.query_embedder.embed(queries)
        results["query_embed_seconds"] = round(time.perf_counter() - started, 1)

        pool = iter(queries)
        loaded = 0
        for size in sizes:
            entry: dict[str, Any] = {"load_seconds": round(load(conn, texts, vectors, loaded, size,
                                                                "project:bench/app"), 1)}
            loaded = size
            # u0 holds no privilege on the table (sql/019_member_api.sql): what it may read, by the function.
            visible = on.conn.execute("SELECT count(*) FROM cems_visible_documents()").fetchone()
            entry["visible_to_u0"] = visible[0]
            # The same answers both ways: the policies hide nothing the WHERE clause keeps. (HNSW is
            # approximate and the two plans filter at different places: a near tie may swap.)
            probes = [next(pool) for _ in range(PROBES)]
            for mode in ("vector", "hybrid"):
                shared = []
                for probe in probes:
                    asked = {"limit": 10, "mode": mode, "track_access": False}
                    a = {r.id for r in on.search(probe, on.search_options(**asked))}
                    b = {r.id for r in off.search(probe, off.search_options(**asked))}
                    shared.append(len(a & b) / max(len(a | b), 1))
                entry[f"{mode}_top10_agreement"] = round(sum(shared) / len(shared), 4)
            for mode, count in (("vector", args.queries), ("hybrid", args.hybrid_queries)):
                batch = [next(pool) for _ in range(WARMUP + count)]
                times = interleaved(
                    batch,
                    lambda q, m=mode: on.search(q, on.search_options(limit=10, mode=m, track_access=False)),
                    lambda q, m=mode: off.search(q, off.search_options(limit=10, mode=m, track_access=False)),
                )
                entry[mode] = {side: summary(values) for side, values in times.items()}
                ratio = entry[mode]["on"]["p50"] / entry[mode]["off"]["p50"]
                entry[mode]["ratio_p50"] = round(ratio, 3)
                rows.append((f"{size:,}", mode, entry[mode]["off"]["p50"], entry[mode]["on"]["p50"],
                             entry[mode]["off"]["p95"], entry[mode]["on"]["p95"], f"{ratio:.3f}",
                             "ok" if ratio <= TARGET_RATIO else "MISSED"))

            # The store's candidate queries alone (no pipeline), same filters as a hybrid search.
            batch = [next(pool) for _ in range(WARMUP + args.queries)]
            vectors_of = {q: off.query_embedder.embed([q])[0] for q in batch}
            for svc in (on, off):
                store_search.prepare_session(svc.conn)
            filters = {svc: store_search.SearchFilters(identity=svc.identity) for svc in (on, off)}
            for name in ("vector_hits", "lexical_hits"):
                sides = [candidates(name, svc, filters[svc], vectors_of) for svc in (on, off)]
                times = interleaved(batch, *sides, before_on=lambda query: begin(on, query))
                entry[name] = {side: summary(values) for side, values in times.items()}
                ratio = entry[name]["on"]["p50"] / entry[name]["off"]["p50"]
                entry[name]["ratio_p50"] = round(ratio, 3)
                store_rows.append((f"{size:,}", name, entry[name]["off"]["p50"], entry[name]["on"]["p50"],
                                   f"{ratio:.3f}"))

            # What the planner does with u0's policies: EXPLAIN ANALYZE of the statements the store ran.
            query = batch[0]
            for svc, side in ((on, "on (u0, row-level security)"), (off, "off (superuser)")):
                recorder = Recorder(svc.conn)
                store_lexical.forget_stats(svc.conn)  # so the statistics' statements run and are recorded
                if svc is on:
                    begin(on, query)
                store_search.vector_hits(recorder, vectors_of[query], filters[svc], DEPTH)
                store_lexical.lexical_hits(recorder, query, filters[svc], DEPTH)
                if svc is on:  # through cems_vector_hits: its plan is the superuser's to see
                    store_search.prepare_session(conn)
                    vector_plan = explain_inside(conn, "u0", recorder.statements, "cems_vector_hits")
                else:
                    vector_plan = explain(svc.conn, recorder.statements, "ORDER BY c.embedding <=>")
                # BM25 runs: document frequencies (one GIN probe per query term, kept a minute per
                # connection), then the scoring of the chunks holding the rarer terms (and of every match
                # when those cannot decide the top results; the last statement run is shown).
                if svc is on:  # through cems_fts_counts, cems_fts_chunks, cems_matching_documents
                    stats_plan = explain_inside(conn, "u0", recorder.statements, "cems_fts_counts")
                    lexical_plan = explain_inside(conn, "u0", recorder.statements, "ORDER BY score DESC")
                else:
                    stats_plan = explain(svc.conn, recorder.statements, "WITH ORDINALITY")
                    lexical_plan = explain(svc.conn, recorder.statements, "ORDER BY score DESC")
                plans.append(f"=== {size:,} memories, {side}: vector_hits ===\n{vector_plan}\n")
                plans.append(f"=== {size:,} memories, {side}: lexical_hits, document frequencies "
                             f"===\n{stats_plan}\n")
                plans.append(f"=== {size:,} memories, {side}: lexical_hits, BM25 scoring "
                             f"===\n{lexical_plan}\n")
                entry.setdefault("plans_use", {})[side] = {
                    "hnsw": "memory_chunks_embedding" in vector_plan,
                    "gin_frequencies": "memory_chunks_fts" in stats_plan,
                    "gin_scoring": "memory_chunks_fts" in lexical_plan,
                }
            results["sizes"][str(size)] = entry
            print(f"{size:,}: {json.dumps({k: v for k, v in entry.items() if k != 'plans_use'})}", flush=True)
        on.close()
        off.close()
        results["audit_rows"] = conn.execute("SELECT count(*) FROM cems_audit").fetchone()[0]
        # How many search function calls a member's search made (of the 1000 a search allows, sql/025).
        calls = [int(r[0]) for r in conn.execute(
            "SELECT (detail->>'calls')::int FROM cems_audit WHERE actor = 'u0' AND detail ? 'calls' "
            "AND db_role = 'u0'").fetchall() if r[0] is not None]
        results["search_calls"] = {"searches": len(calls), "p50": percentile(calls, 50) if calls else None,
                                   "max": max(calls, default=None)}
        conn.close()

    print_table("Search latency, RLS off (superuser) vs on (u0's role), warm, in-process (ms)",
                ["memories", "mode", "off p50", "on p50", "off p95", "on p95", "on/off p50", ""], rows)
    print_table("The store's candidate queries alone (ms)", ["memories", "query", "off p50", "on p50",
                                                             "on/off p50"], store_rows)
    print_table("Index use (EXPLAIN ANALYZE)",
                ["memories", "side", "HNSW", "GIN: frequencies", "GIN: scoring"],
                [(f"{int(s):,}", side, str(use["hnsw"]), str(use["gin_frequencies"]), str(use["gin_scoring"]))
                 for s, e in results["sizes"].items() for side, use in e["plans_use"].items()])
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "rls_plans.txt").write_text("\n".join(plans), encoding="utf-8")
    print(f"search function calls per member search: {results['search_calls']}")
    path = write_results("rls_latency", results)
    print(f"results: {path}; plans: {RESULTS / 'rls_plans.txt'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
