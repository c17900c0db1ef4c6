"""Helpers shared by the bench scripts (run_all.py skips files starting with "_").

Synthetic data is templated from vocabulary lists with a fixed seed, so every run measures the same texts:
developer memories ("We decided to use Redis for the session cache because …") and questions about them.
"""

from __future__ import annotations

import json
import os
import platform
import random
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# run_all stops a bench that overruns with SIGTERM; as SystemExit it unwinds `finally` blocks, so the
# throwaway home's embedded server is stopped and its folder removed instead of being orphaned.
signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
sys.path.insert(0, str(REPO))

from cems_cli.evaluation.metrics import percentile  # noqa: E402
from cems_cli.evaluation.runner import git_state, throwaway_home  # noqa: E402

__all__ = ["REPO", "RESULTS", "cems", "environment", "exact_top", "hnsw_recall", "memory_texts", "percentile",
           "print_table", "prompt_hook_runs", "query_texts", "throwaway_home", "write_results"]

TECH = ["PostgreSQL", "Redis", "Kafka", "SQLite", "RabbitMQ", "Elasticsearch", "gRPC", "GraphQL",
        "FastAPI", "Django", "React", "Svelte", "Terraform", "Kubernetes", "Docker Compose", "nginx",
        "Celery", "pytest", "ruff", "mypy", "uv", "Poetry", "Rust", "Go", "TypeScript", "S3", "DynamoDB",
        "ClickHouse", "pgvector", "OpenTelemetry"]
COMPONENT = ["billing service", "auth service", "search API", "session cache", "ingest pipeline",
             "admin dashboard", "CLI", "mobile backend", "notification worker", "payment gateway",
             "CI pipeline", "data warehouse", "feature flag service", "rate limiter", "image resizer",
             "export job", "webhook dispatcher", "user profile API", "audit log", "scheduler"]
REASON = ["it keeps operations simple", "latency dropped by half", "the team already knows it",
          "it scales horizontally", "the old setup lost data on restart", "licensing costs were too high",
          "it has first-class async support", "we needed exactly-once delivery",
          "local development got faster", "it removes a moving part", "the vendor SDK was unmaintained",
          "memory usage was too high"]
PERSON = ["Alice", "Bob", "Carmen", "Dmitri", "Erin", "Farid", "Grace", "Hiro", "Ines", "Jonas", "Kemi",
          "Liam"]
STYLE = ["small pure functions", "explicit type hints", "early returns", "dataclasses over dicts",
         "one class per file", "tabs over spaces", "descriptive test names", "no mocks in tests",
         "composition over inheritance", "structured logging"]
ERROR = ["a connection timeout", "a 502 from the proxy", "an out-of-memory kill", "a deadlock",
         "a UnicodeDecodeError", "a stale cache entry", "a race on startup", "a missing migration",
         "an expired certificate", "a DNS lookup failure"]
CONDITION = ["the queue backs up", "two deploys overlap", "the replica lags", "a tenant has no region set",
             "the payload is larger than 1 MB", "the clock skews", "the disk is almost full",
             "the feature flag is off", "requests arrive in bursts", "the token refresh fails"]
FIX = ["adding a retry with jitter", "pinning the client version", "raising the pool size",
       "moving the check before the lock", "normalising input to NFC", "adding an index on created_at",
       "splitting the batch in two", "caching the lookup for a minute", "closing the cursor explicitly",
       "validating the config at startup"]

TEMPLATES = [
    "We decided to use {tech} for the {component} because {reason}.",
    "{person} prefers {style} when working on the {component}.",
    "The {component} fails with {error} when {condition}; fixed by {fix}.",
    "Run the {tech} migration before deploying the {component}, otherwise {error} shows up.",
    "Lesson learned: {error} in the {component} came from {condition}, not from {tech}.",
    "The {component} reads its settings from {tech}; {person} owns that integration.",
    "Convention: the {component} uses {style}, reviewed by {person}.",
    "Postmortem #{n}: {error} in the {component} after {condition}. Action: {fix}.",
]
QUESTION_TEMPLATES = [
    "why did we pick {tech} for the {component}?",
    "what does {person} prefer in the {component}?",
    "how did we fix {error} in the {component}?",
    "what happens to the {component} when {condition}?",
    "who owns the {tech} integration?",
    "which conventions apply to the {component}?",
]


def _fill(template: str, rng: random.Random, n: int) -> str:
    return template.format(tech=rng.choice(TECH), component=rng.choice(COMPONENT), reason=rng.choice(REASON),
                           person=rng.choice(PERSON), style=rng.choice(STYLE), error=rng.choice(ERROR),
                           condition=rng.choice(CONDITION), fix=rng.choice(FIX), n=n)


def memory_texts(count: int, seed: int = 42) -> list[str]:
    """`count` distinct memory texts; a ticket number keeps them distinct once the combinations run out."""
    rng = random.Random(seed)
    seen: set[str] = set()
    texts: list[str] = []
    while len(texts) < count:
        text = _fill(rng.choice(TEMPLATES), rng, len(texts))
        if text in seen:
            text = f"{text} (ticket {len(texts)})"
        seen.add(text)
        texts.append(text)
    return texts


def query_texts(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    queries: list[str] = []
    while len(queries) < count:
        query = _fill(rng.choice(QUESTION_TEMPLATES), rng, 0)
        if query not in queries:
            queries.append(query)
    return queries


def exact_top(query_vectors: Any, vectors: Any, k: int = 10) -> Any:
    """Exact cosine top-k row indices (vectors are normalised, so cosine is the dot product)."""
    import numpy as np

    scores = query_vectors @ vectors.T
    top = np.argpartition(-scores, k, axis=1)[:, :k]
    order = np.take_along_axis(scores, top, axis=1).argsort(axis=1)[:, ::-1]
    return np.take_along_axis(top, order, axis=1)


def hnsw_recall(svc: Any, query_vectors: Any, exact: Any, index_of: dict[str, int],
                ef_search: int | None = None, k: int = 10) -> tuple[float, list[float]]:
    """Recall@k of the product's vector query (store.search.vector_hits: HNSW with its filters and iterative
    scan) against exact search, and its latencies in ms. `ef_search` overrides the product's setting."""
    import time

    from cems_cli.store import search as store_search

    store_search.prepare_session(svc.conn)
    if ef_search is not None:
        svc.conn.execute(f"SET hnsw.ef_search = {int(ef_search)}")
    filters = store_search.SearchFilters(identity=svc.identity)
    found, latencies = 0, []
    for row, query_vector in enumerate(query_vectors):
        started = time.perf_counter()
        hits = store_search.vector_hits(svc.conn, query_vector, filters, k)
        latencies.append((time.perf_counter() - started) * 1000)
        found += len({index_of[h.document_id] for h in hits} & set(exact[row][:k].tolist()))
    return found / (k * len(query_vectors)), latencies


def prompt_hook_runs(home: Path, prompts: Sequence[str], warmup: int) -> tuple[list[float], int]:
    """hooks/user_prompt_submit.py as Claude Code runs it (a process per prompt, the payload on stdin) for
    user "bench" of `home`; the first call starts the search server, the first `warmup` are not timed.
    Returns the timed wall times in ms and how many runs injected memories. The caller stops the server."""
    import time

    env = {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")}
    env.update(CEMS_HOME=str(home), CEMS_USER="bench", CEMS_PROJECT="project:bench/app")
    samples: list[float] = []
    injected = 0
    for index, prompt in enumerate(prompts):
        payload = {"session_id": "bench", "hook_event_name": "UserPromptSubmit", "prompt": prompt,
                   "cwd": str(home), "transcript_path": str(home / "none.jsonl")}
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, str(REPO / "hooks" / "user_prompt_submit.py")],
                              input=json.dumps(payload).encode(), capture_output=True, env=env, timeout=120)
        elapsed = (time.perf_counter() - started) * 1000
        if proc.returncode != 0:
            raise SystemExit(f"hook exited {proc.returncode}: {proc.stderr[-500:]!r}")
        if index >= warmup:
            samples.append(elapsed)
            injected += b"memory-recall" in proc.stdout
    return samples, injected


def environment() -> dict[str, Any]:
    commit, dirty = git_state()
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "machine": platform.machine(),
            "load_average_1m": round(os.getloadavg()[0], 2), "git_commit": commit, "git_dirty": dirty}


def write_results(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps({**data, "environment": environment()}, indent=2) + "\n", encoding="utf-8")
    return path


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    # Piped output (run_all, CI logs) would otherwise wrap every table at 80 columns.
    console = Console(width=None if sys.stdout.isatty() else 140)
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index == 0 else "right")
    for row in rows:
        table.add_row(*(f"{v:,.1f}" if isinstance(v, float) else str(v) for v in row))
    console.print(table)


def cems(args: Sequence[str], env: dict[str, str], stdin: bytes | None = None,
         timeout: float = 300) -> subprocess.CompletedProcess[bytes]:
    """The real `cems` entry point in a child process, with only the given CEMS_* variables."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("CEMS_")}
    full.update(env)
    return subprocess.run([sys.executable, "-m", "cems_cli.cli.app", *args], input=stdin, env=full,
                          capture_output=True, timeout=timeout, cwd=str(REPO))
