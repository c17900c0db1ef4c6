"""Run a retrieval benchmark against the real product in a throwaway data folder.

Each corpus is ingested into its own memory space (a distinct CEMS_USER in one temporary CEMS_HOME, never
the user's own memories) through the `cems import` engine, then every scored question is asked through
`cems.Memory.search` — the code `cems search` runs — and its results are mapped back to doc ids.
"""

from __future__ import annotations

import contextlib
import platform
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cems_cli.config import Settings
from cems_cli.evaluation import metrics
from cems_cli.evaluation.datasets import Benchmark, Question, Unit
from cems_cli.evaluation.indexing import MEMORY_TEXT_FORMAT, unit_to_record

SEARCH_LIMIT = 10
MODES = ("vector", "hybrid", "auto")
# Settings that identify a person or a place, or hold secrets: never written into a results file.
_PRIVATE_SETTINGS = frozenset({"home", "user", "team", "project", "database_url", "llm_api_key",
                               "llm_base_url"})

Update = Callable[[int, int], None]
ProgressFactory = Callable[[str], AbstractContextManager[Update]]


@dataclass
class EvalRun:
    summary: dict[str, Any]
    latencies_ms: list[float]
    config: dict[str, Any]
    details: list[dict[str, Any]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """Exactly {"overall", "by_category", "latency_ms", "config"}."""
        return {
            "overall": _rounded(self.summary["overall"]),
            "by_category": {name: _rounded(row) for name, row in self.summary["by_category"].items()},
            "latency_ms": {"p50": round(metrics.percentile(self.latencies_ms, 50), 2),
                           "p95": round(metrics.percentile(self.latencies_ms, 95), 2)},
            "config": self.config,
        }


def _rounded(row: dict[str, float | int]) -> dict[str, float | int]:
    return {key: value if key == "n" else round(value, 4) for key, value in row.items()}


def run_benchmark(bench: Benchmark, base: Settings, *, mode: str, limit_questions: int | None = None,
                  progress: ProgressFactory | None = None, source: str | None = None,
                  as_of: datetime | None = None) -> EvalRun:
    """Ingest the corpora the questions need, ask every scored question, and score the answers.

    Every question is asked at one moment, `as_of` (default: when the run starts): time decay counts whole
    days from it, so questions asked on either side of a day boundary would otherwise see other scores, and
    a fixed `as_of` reproduces a run on any later day."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (expected one of: {', '.join(MODES)})")
    as_of = as_of or datetime.now(UTC)
    progress = progress or _no_progress
    questions = bench.scored_questions()
    if limit_questions is not None:
        questions = questions[:limit_questions]
    units = bench.units_by_corpus()
    needed = list(dict.fromkeys(q.corpus_id for q in questions))
    with throwaway_home() as home, contextlib.ExitStack() as services:
        started = time.perf_counter()
        spaces: dict[str, Corpus] = {}
        with progress("ingesting") as update:
            total = sum(len(units.get(c, [])) for c in needed)
            done = 0
            for corpus_id in needed:
                corpus_units = units.get(corpus_id, [])
                spaces[corpus_id] = services.enter_context(ingest_corpus(
                    corpus_id, corpus_units, base, home, _offset(update, done, len(corpus_units), total)))
                done += len(corpus_units)
        ingest_seconds = time.perf_counter() - started
        latencies: list[float] = []
        scored: list[tuple[str, dict[str, float]]] = []
        details: list[dict[str, Any]] = []
        with progress("questions") as update:
            for index, question in enumerate(questions, start=1):
                ranked, elapsed = spaces[question.corpus_id].ask(question.question, mode, as_of)
                gold = bench.qrels[question.qid]
                row = metrics.question_metrics(ranked, gold)
                latencies.append(elapsed)
                scored.append((question.category, row))
                details.append(_detail(question, gold, ranked, row, elapsed))
                update(index, len(questions))
        query_seconds = sum(latencies) / 1000
    config = _config(bench, base, mode=mode, source=source, questions=questions, corpora=needed,
                     units=sum(len(units.get(c, [])) for c in needed), ingest_seconds=ingest_seconds,
                     query_seconds=query_seconds, limit_questions=limit_questions, as_of=as_of)
    return EvalRun(metrics.summarise(scored), latencies, config, details)


@contextlib.contextmanager
def _no_progress(_label: str) -> Iterator[Update]:
    yield lambda _done, _total: None


def _offset(update: Update, before: int, size: int, total: int) -> Update:
    """One corpus's embedding progress (chunks) as the run's progress (units of all corpora)."""
    def forward(done: int, corpus_total: int) -> None:
        update(before + (size * done // corpus_total if corpus_total else size), total)
    return forward


@dataclass
class Corpus:
    """One ingested memory space: its service, and which doc ids each stored memory stands for."""

    service: Any  # cems_cli.api.Memory (imported lazily: the CLI module must stay cheap to import)
    docs_of: dict[str, list[str]]

    def ask(self, question: str, mode: str, as_of: datetime | None = None) -> tuple[list[str], float]:
        """Ranked doc ids for a question and the search latency in ms (access stats left alone)."""
        started = time.perf_counter()
        results = self.service.search(question, limit=SEARCH_LIMIT, mode=mode, track_access=False, now=as_of)
        elapsed = (time.perf_counter() - started) * 1000
        return [doc for result in results for doc in self.docs_of.get(result.id, [])], elapsed


@contextlib.contextmanager
def ingest_corpus(corpus_id: str, units: list[Unit], base: Settings, home: Path,
                  progress: Update) -> Iterator[Corpus]:
    """Store a corpus as memories of its own user in `home`; the service is closed on exit."""
    from cems_cli.api import Memory

    project = f"project:eval/{corpus_id}"
    settings = base.model_copy(update={"home": home, "user": f"eval:{corpus_id}", "team": None,
                                       "database_url": None, "project": project})
    service = Memory(settings)
    try:
        records = [unit_to_record(unit, project, units[i - 1] if i else None) for i, unit in enumerate(units)]
        report = service.import_records(records, progress=progress)
        docs_of: dict[str, list[str]] = {}
        # Two units with the same text are one memory (dedup): a hit on it counts for both doc ids.
        for unit, memory_id in zip(units, report.ids, strict=True):
            docs_of.setdefault(memory_id, []).append(unit.doc_id)
        yield Corpus(service, docs_of)
    finally:
        service.close()


@contextlib.contextmanager
def throwaway_home() -> Iterator[Path]:
    """A temporary CEMS_HOME (its own embedded server), stopped and deleted afterwards.

    CEMS_HOME is also set in the environment for the duration, so nothing reached through `paths` can
    touch the user's own data folder.
    """
    from cems_cli.paths import pgdata_path, using_home
    from cems_cli.store.server import ServerError, stop_server

    home = Path(tempfile.mkdtemp(prefix="cems-eval-"))
    try:
        with using_home(home):
            yield home
    finally:
        with contextlib.suppress(ServerError, OSError):
            stop_server(pgdata_path(home))
        shutil.rmtree(home, ignore_errors=True)


def _detail(question: Question, gold: tuple[str, ...], ranked: list[str], row: dict[str, float],
            elapsed: float) -> dict[str, Any]:
    return {"qid": question.qid, "category": question.category, "question": question.question,
            "gold": list(gold), "ranked": list(dict.fromkeys(ranked))[:SEARCH_LIMIT],
            "metrics": {k: round(v, 4) for k, v in row.items()}, "latency_ms": round(elapsed, 2)}


def _config(bench: Benchmark, base: Settings, *, mode: str, source: str | None, questions: list[Question],
            corpora: list[str], units: int, ingest_seconds: float, query_seconds: float,
            limit_questions: int | None, as_of: datetime) -> dict[str, Any]:
    settings = {k: v for k, v in base.model_dump(mode="json").items() if k not in _PRIVATE_SETTINGS}
    commit, dirty = git_state()
    from cems_cli import __version__

    return {
        "benchmark": bench.name, "source": source, "mode": mode, "limit": SEARCH_LIMIT,
        "questions": len(questions), "limit_questions": limit_questions, "corpora": len(corpora),
        "as_of": as_of.isoformat(timespec="seconds"),
        "units": units, "memory_text": MEMORY_TEXT_FORMAT,
        "embedding": {"backend": base.embedding_backend, "model": base.resolved_embedding_model,
                      "dim": base.resolved_embedding_dim},
        "llm_configured": base.llm_configured, "settings": settings,
        "ingest_seconds": round(ingest_seconds, 2),
        "ingest_per_second": round(units / ingest_seconds, 1) if ingest_seconds > 0 else None,
        "query_seconds": round(query_seconds, 2),
        "git_commit": commit, "git_dirty": dirty, "cems_version": __version__,
        "python": platform.python_version(), "finished_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def git_state() -> tuple[str | None, bool | None]:
    """(HEAD commit, uncommitted changes?) of the checkout CEMS runs from; (None, None) outside one."""
    repo = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5)
        if head.returncode != 0:
            return None, None
        # --no-optional-locks: a read must not refresh (write) the index of a checkout others work in.
        status = subprocess.run(["git", "--no-optional-locks", "-C", str(repo), "status", "--porcelain",
                                 "--untracked-files=no"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None, None
    return head.stdout.strip(), (bool(status.stdout.strip()) if status.returncode == 0 else None)
